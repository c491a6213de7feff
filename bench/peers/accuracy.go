package peers

import (
	"slices"
	"sort"
)

// Quantiles are the accuracy table's q.
var Quantiles = []float64{0.5, 0.9, 0.99, 0.999}

// Sketch is a quantile estimator filled with one stream, for the accuracy
// table.
type Sketch struct {
	Setting   string                  // the setting used, e.g. "compression 37.5"
	Bytes     int                     // serialized size
	Lost      int                     // values the estimator rejected
	Centroids int                     // centroids kept, for the t-digests sized by their centroids
	Quantile  func(q float64) float64 // estimate of the q-quantile
}

// AccuracyRow is one estimator on one stream.
type AccuracyRow struct {
	Dist, Peer string
	Sketch
	PPM []float64 // RankErrorPPM at each of Quantiles
}

// Accuracy fills every digest and sketch with each stream of Dists (one
// ring, bench.RingSize values) and measures its rank error at Quantiles.
// The statsblob digest has its benchmark configuration; the others are
// tuned, per stream, to the finest setting whose serialization fits in the
// statsblob blob's bytes: caio's compression and DDSketch's relative
// accuracy by bisection, HDR's significant digits (1..5) by trial.
func Accuracy() []AccuracyRow {
	var rows []AccuracyRow
	for _, d := range Dists() {
		vals := d.Ring()
		sorted := slices.Clone(vals)
		slices.Sort(sorted)
		sb := statsblobSketch(vals)
		for _, p := range []struct {
			name string
			sk   Sketch
		}{
			{"statsblob-tdigest", sb},
			{"caio", caioSketch(vals, sb.Bytes)},
			{"ddsketch", ddsketchSketch(vals, sb.Bytes)},
			{"hdr", hdrSketch(vals, sb.Bytes)},
		} {
			row := AccuracyRow{Dist: d.Name, Peer: p.name, Sketch: p.sk}
			for _, q := range Quantiles {
				row.PPM = append(row.PPM, RankErrorPPM(sorted, q, p.sk.Quantile(q)))
			}
			rows = append(rows, row)
		}
	}
	return rows
}

// RankErrorPPM returns how far, in parts per million of the sample count,
// the estimate v lies from rank q·n among the n sorted samples: 0 if some
// sample equal to v (or the gap v falls in) has that rank, else the
// distance to the nearest rank v could have.
func RankErrorPPM(sorted []uint64, q, v float64) float64 {
	lo := sort.Search(len(sorted), func(i int) bool { return float64(sorted[i]) >= v })
	hi := sort.Search(len(sorted), func(i int) bool { return float64(sorted[i]) > v })
	n := float64(len(sorted))
	rank := q * n
	switch {
	case rank < float64(lo):
		return (float64(lo) - rank) / n * 1e6
	case rank > float64(hi):
		return (rank - float64(hi)) / n * 1e6
	}
	return 0
}

// bisect returns the largest x in [lo, hi] (to 24 halvings) for which ok
// holds, ok being true below some point and false above it; lo if ok(lo)
// is false.
func bisect(lo, hi float64, ok func(float64) bool) float64 {
	if !ok(lo) {
		return lo
	}
	if ok(hi) {
		return hi
	}
	for range 24 {
		mid := (lo + hi) / 2
		if ok(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// bisectScan is bisect for an ok that is not monotone (a t-digest's
// centroid count does not grow steadily with its compression): from
// bisect's answer it tries 50 settings up to twice it and returns the
// largest for which ok holds.
func bisectScan(lo, hi float64, ok func(float64) bool) float64 {
	x := bisect(lo, hi, ok)
	best := x
	for k := 1; k <= 50; k++ {
		if y := min(x*(1+float64(k)/50), hi); y > best && ok(y) {
			best = y
		}
	}
	return best
}
