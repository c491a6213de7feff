package peers

import (
	"math"
	"testing"

	"github.com/statsblob/statsblob/internal/accuracy"
	"github.com/statsblob/statsblob/tdigest"
	"github.com/statsblob/statsblob/voi"
)

// The modes table has a cell per stream, every estimator measured; the
// accurate mode keeps sorted and discrete streams where the C's clustering
// does not.
func TestTDigestModes(t *testing.T) {
	cells := TDigestModes(voi.TDgstClust32, []uint32{20}, []int{5000}, 1, nil)
	if len(cells) != 6 {
		t.Fatalf("%d cells, want 6", len(cells))
	}
	by := map[string]ModeCell{}
	for _, c := range cells {
		if c.Bytes != 340 || !(c.Ratio() > 0) || !(c.RatioRounded() > 0) {
			t.Fatalf("cell %+v: bytes or ratio", c)
		}
		// Rounding an answer on integer samples never moves it away in
		// rank.
		if c.CaioRounded > c.Caio || c.InfluxRounded > c.Influx {
			t.Errorf("cell %+v: a rounded answer further off", c)
		}
		by[c.Stream] = c
	}
	if s := by["sorted"]; s.Accurate >= 0.01 || s.C <= 0.1 {
		t.Errorf("sorted: accurate %g, C %g", s.Accurate, s.C)
	}
	// (20 slots split 7 of the 8 values' runs: p90 falls in the eighth.)
	if z := by["zipf"]; z.Accurate >= 0.005 || z.C <= 0.01 {
		t.Errorf("zipf: accurate %g, C %g", z.Accurate, z.C)
	}
}

// Over several seeds a cell holds each estimator's worst error over the
// seeds (TDigestModesOf), or their mean (TDigestModesMean): the seeds'
// own cells, one by one.
func TestTDigestModesOverSeeds(t *testing.T) {
	st := []accuracy.Stream{accuracy.Streams[0]}
	worst := TDigestModesOf(st, voi.TDgstClust32, []uint32{20}, []int{1000}, 3, nil)
	mean := TDigestModesMean(st, voi.TDgstClust32, []uint32{20}, []int{1000}, 3, nil)
	if len(worst) != 1 || len(mean) != 1 {
		t.Fatalf("%d and %d cells, want 1", len(worst), len(mean))
	}
	var want [2]ModeCell
	for seed := 1; seed <= 3; seed++ {
		c := seedCell(st[0], voi.TDgstClust32, 20, 1000, seed)
		for i, e := range c.errs() {
			*want[0].errs()[i] = max(*want[0].errs()[i], *e)
			*want[1].errs()[i] += *e / 3
		}
	}
	for k, got := range []ModeCell{worst[0], mean[0]} {
		for i, e := range got.errs() {
			if *e != *want[k].errs()[i] {
				t.Errorf("aggregate %d, estimator %d: %g, want %g", k, i, *e, *want[k].errs()[i])
			}
		}
		if got.Bytes != 340 || got.Stream != st[0].Name || got.Slots != 20 || got.Samples != 1000 {
			t.Errorf("cell %+v", got)
		}
	}
	// The seeds differ: the worst is above the mean somewhere.
	if worst[0].Accurate <= mean[0].Accurate && worst[0].Caio <= mean[0].Caio {
		t.Errorf("worst %+v not above mean %+v", worst[0], mean[0])
	}
}

// The equal-centroids cells over seeds: one seed's mean is its worst, and
// over three seeds the mean lies at or below the worst, above a third of
// it, and not all of it.
func TestTDigestEqualCentroidsOverSeeds(t *testing.T) {
	st := []accuracy.Stream{accuracy.Streams[0]}
	cells := func(f func([]accuracy.Stream, voi.DType, []uint32, []int, int, func(CentroidCell)) []CentroidCell, seeds int) CentroidCell {
		cs := f(st, voi.TDgstClust32, []uint32{20}, []int{1000}, seeds, nil)
		if len(cs) != 1 {
			t.Fatalf("%d cells, want 1", len(cs))
		}
		return cs[0]
	}
	if w, m := cells(TDigestEqualCentroids, 1), cells(TDigestEqualCentroidsMean, 1); w != m {
		t.Errorf("one seed: worst %+v, mean %+v", w, m)
	}
	w, m := cells(TDigestEqualCentroids, 3), cells(TDigestEqualCentroidsMean, 3)
	for _, e := range [][2]float64{{w.Accurate, m.Accurate}, {w.Caio, m.Caio}, {w.Influx, m.Influx}} {
		if !(e[1] <= e[0] && e[1] >= e[0]/3) {
			t.Errorf("worst %g, mean %g", e[0], e[1])
		}
	}
	if w == m || w.CaioMax != m.CaioMax || w.CaioBytes != m.CaioBytes {
		t.Errorf("three seeds: worst %+v, mean %+v", w, m)
	}
}

// TestAccurateTarget asserts issue 20's target 2 where the tests state it:
// on each of the six streams at 10^5 samples, 20 and 50 slots of
// TDGSTCLUST32(·,4), the accurate mode's worst rank error over p50..p99.9
// and seeds 1 to 3 is within 1.25 times the better of caio/go-tdigest
// and influxdata/tdigest serialized to the same bytes, and the geometric
// mean of those ratios is at most 1. (make accuracy runs it; the full
// tables, 10^3 to 10^7 samples and 100 slots, are bench/README.md's.)
func TestAccurateTarget(t *testing.T) {
	if testing.Short() {
		t.Skip("about two minutes")
	}
	cells := TDigestModes(voi.TDgstClust32, []uint32{20, 50}, []int{100_000}, 3, nil)
	if len(cells) != 12 {
		t.Fatalf("%d cells, want 12", len(cells))
	}
	logSum := 0.0
	for _, c := range cells {
		r := c.Ratio()
		t.Logf("%s, %d slots: accurate %.3f%%, caio %.3f%%, influx %.3f%%: ratio %.2f",
			c.Stream, c.Slots, 100*c.Accurate, 100*c.Caio, 100*c.Influx, r)
		if r > 1.25 {
			t.Errorf("%s, %d slots: %.2f times the better peer's rank error", c.Stream, c.Slots, r)
		}
		logSum += math.Log(r)
	}
	if g := math.Exp(logSum / float64(len(cells))); g > 1 {
		t.Errorf("geometric mean of the ratios %.2f, want at most 1", g)
	}
}

// TestTDigestEqualCentroids: at equal centroids (the peers keeping no
// more than the digest has slots, whatever their bytes) the accurate
// mode's clustering is better than caio's and influx's on each of the
// six streams at 10^5 samples and 20 slots, seed 1 (the table, 10^3 to
// 10^6 samples and 100 slots, is bench/README.md's): where it loses at
// equal bytes, it loses to the C layout's 16 bytes a centroid.
func TestTDigestEqualCentroids(t *testing.T) {
	if testing.Short() {
		t.Skip("about 20 seconds")
	}
	cells := TDigestEqualCentroids(accuracy.Streams, voi.TDgstClust32, []uint32{20}, []int{100_000}, 1, nil)
	if len(cells) != 6 {
		t.Fatalf("%d cells, want 6", len(cells))
	}
	for _, c := range cells {
		t.Logf("%s: accurate %.3f%%, caio %.3f%% (%d centroids), influx %.3f%% (%d): ratio %.2f",
			c.Stream, 100*c.Accurate, 100*c.Caio, c.CaioMax, 100*c.Influx, c.InfluxMax, c.Ratio())
		if c.CaioMax < 1 || c.CaioMax > 20 || c.InfluxMax < 1 || c.InfluxMax > 20 {
			t.Errorf("%s: the peers kept %d and %d centroids, want 1..20", c.Stream, c.CaioMax, c.InfluxMax)
		}
		if r := c.Ratio(); r >= 1 {
			t.Errorf("%s: %.2f times the better peer's rank error at equal centroids", c.Stream, r)
		}
	}
}

// The fleet table has a cell per mode, stream and geometry; the accurate
// mode's Zipf fleets merge exactly, and every estimator's errors on a
// lognormal fleet are small and measured.
func TestFleetModes(t *testing.T) {
	streams := []accuracy.Stream{accuracy.StreamByName("zipf"), accuracy.StreamByName("lognormal")}
	cells := FleetModes(streams, []tdigest.Mode{tdigest.C, tdigest.Accurate}, []uint32{50, 100}, 200, 1, nil)
	if len(cells) != 8 {
		t.Fatalf("%d cells, want 8", len(cells))
	}
	for _, c := range cells {
		if c.Bytes != tdigest.Size(voi.TDgstClust64, c.Slots) {
			t.Errorf("%+v: bytes", c)
		}
		switch {
		case c.Stream == "zipf" && c.Mode == tdigest.Accurate:
			if c.One != 0 || c.Two != 0 {
				t.Errorf("%+v: the accurate mode's Zipf fleet not exact", c)
			}
		case c.Stream == "lognormal":
			for _, e := range []float64{c.One, c.Two, c.Caio, c.Influx} {
				if !(e > 0 && e < 0.01) {
					t.Errorf("%+v: an error outside (0, 1%%)", c)
				}
			}
		}
		if !(c.Ratio() > 0) {
			t.Errorf("%+v: ratio", c)
		}
	}
}
