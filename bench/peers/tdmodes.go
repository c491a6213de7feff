package peers

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	influx "github.com/influxdata/tdigest"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/internal/accuracy"
	"github.com/statsblob/statsblob/tdigest"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// ModeCell is one cell of the t-digest modes table: one stream, one
// digest geometry, one sample count, the worst rank error (a fraction of
// the samples) over Quantiles and seeds of each estimator, every peer at
// the largest setting whose serialization fits in the statsblob digest's
// bytes. Each estimator answers as its library does: statsblob's modes
// through blob.Stat.Quantile (the samples are an integer VOI's, so the
// answers are integers), the peers with their own quantile functions.
type ModeCell struct {
	Stream                                   string
	DType                                    voi.DType
	Slots                                    uint32
	Samples                                  int
	Bytes                                    int // the statsblob digest's bytes (either mode)
	C, Accurate, Caio, Influx, DDSketch, HDR float64
	// CaioRounded and InfluxRounded are caio's and influx's errors with
	// their answers rounded to the nearest integer as statsblob's are
	// (which never moves an answer away in rank on integer samples): the
	// sketches compared under the same answer.
	CaioRounded, InfluxRounded float64
}

// Ratio is the accurate mode's error over the better of caio's and
// influx's (errors below one rank count as one rank).
func (c ModeCell) Ratio() float64 {
	return c.ratio(min(c.Caio, c.Influx))
}

// RatioRounded is Ratio against the peers' rounded answers.
func (c ModeCell) RatioRounded() float64 { return c.ratio(min(c.CaioRounded, c.InfluxRounded)) }

func (c ModeCell) ratio(peer float64) float64 {
	floor := 1 / float64(c.Samples)
	return max(c.Accurate, floor) / max(peer, floor)
}

// TDigestModes measures the cells of every stream of accuracy.Streams,
// TDGSTCLUST32(slots, 4) (or TDGSTCLUST64(slots, 8)) for each of slots and
// each sample count of sizes, over seeds 1..seeds. progress, if not nil,
// is called after each cell.
func TDigestModes(dt voi.DType, slots []uint32, sizes []int, seeds int, progress func(ModeCell)) []ModeCell {
	return TDigestModesOf(accuracy.Streams, dt, slots, sizes, seeds, progress)
}

// TDigestModesOf is TDigestModes over the given streams only.
func TDigestModesOf(streams []accuracy.Stream, dt voi.DType, slots []uint32, sizes []int, seeds int, progress func(ModeCell)) []ModeCell {
	return modeCells(streams, dt, slots, sizes, seeds, false, progress)
}

// TDigestModesMean is TDigestModesOf with each estimator's error the
// mean over seeds 1..seeds of its worst rank error over Quantiles,
// instead of the worst over the seeds: the typical error, which the
// worst over a few seeds estimates poorly where errors are a few samples
// of rank (at 10^3 samples a cell's worst over 4 seeds moves by 2x from
// one set of seeds to the next).
func TDigestModesMean(streams []accuracy.Stream, dt voi.DType, slots []uint32, sizes []int, seeds int, progress func(ModeCell)) []ModeCell {
	return modeCells(streams, dt, slots, sizes, seeds, true, progress)
}

// modeCells measures the cells, each estimator's error the worst over
// the seeds, or their mean if mean is set.
func modeCells(streams []accuracy.Stream, dt voi.DType, slots []uint32, sizes []int, seeds int, mean bool, progress func(ModeCell)) []ModeCell {
	var cells []ModeCell
	for _, st := range streams {
		for _, s := range slots {
			for _, n := range sizes {
				cell := ModeCell{Stream: st.Name, DType: dt, Slots: s, Samples: n}
				errs := cell.errs()
				for seed := 1; seed <= seeds; seed++ {
					sc := seedCell(st, dt, s, n, seed)
					cell.Bytes = sc.Bytes
					for i, e := range sc.errs() {
						overSeeds(errs[i], *e, seeds, mean)
					}
				}
				cells = append(cells, cell)
				if progress != nil {
					progress(cell)
				}
			}
		}
	}
	return cells
}

// overSeeds folds one seed's error e into to: the worst over the seeds,
// or with mean set their mean.
func overSeeds(to *float64, e float64, seeds int, mean bool) {
	if mean {
		*to += e / float64(seeds)
	} else {
		*to = max(*to, e)
	}
}

// errs points at c's errors, one per estimator.
func (c *ModeCell) errs() []*float64 {
	return []*float64{&c.C, &c.Accurate, &c.Caio, &c.Influx, &c.DDSketch, &c.HDR, &c.CaioRounded, &c.InfluxRounded}
}

// seedCell is one seed's cell: each estimator's worst rank error over
// Quantiles on n samples of st drawn with seed.
func seedCell(st accuracy.Stream, dt voi.DType, s uint32, n, seed int) ModeCell {
	cell := ModeCell{Stream: st.Name, DType: dt, Slots: s, Samples: n}
	vals, u, worst := seedSamples(st, n, seed)
	rounded := func(q func(float64) float64) func(float64) float64 {
		return func(p float64) float64 { return math.Round(q(p)) }
	}
	var data []byte
	for _, m := range []tdigest.Mode{tdigest.C, tdigest.Accurate} {
		st := modeStat(dt, s, m, vals, uint32(seed))
		e := worst(statQuantile(st))
		if m == tdigest.C {
			cell.C = e
		} else {
			cell.Accurate = e
		}
		data = st.Data
	}
	cell.Bytes = len(data)
	caio, infl := caioSketch(u, len(data)).Quantile, influxSketch(u, len(data)).Quantile
	cell.Caio, cell.Influx = worst(caio), worst(infl)
	cell.CaioRounded, cell.InfluxRounded = worst(rounded(caio)), worst(rounded(infl))
	cell.DDSketch = worst(ddsketchSketch(u, len(data)).Quantile)
	cell.HDR = worst(hdrSketch(u, len(data)).Quantile)
	return cell
}

// seedSamples returns n samples of st drawn with seed, as fed (vals) and
// widened for the peers (u), and worst: the largest rank error, as a
// fraction of the samples, of an estimate's answers at Quantiles.
func seedSamples(st accuracy.Stream, n, seed int) (vals []uint32, u []uint64, worst func(q func(float64) float64) float64) {
	vals = st.Gen(n, uint64(seed))
	u = make([]uint64, n)
	for i, v := range vals {
		u[i] = uint64(v)
	}
	sorted := slices.Clone(u)
	slices.Sort(sorted)
	worst = func(q func(float64) float64) float64 {
		w := 0.0
		for _, p := range Quantiles {
			w = max(w, RankErrorPPM(sorted, p, q(p))/1e6)
		}
		return w
	}
	return vals, u, worst
}

// statQuantile is s.Quantile as an estimate's answers (an error answers 0).
func statQuantile(s blob.Stat) func(float64) float64 {
	return func(q float64) float64 { v, _ := s.Quantile(q); return v }
}

// modeStat returns the t-digest of a blob whose template declares it in
// mode m for an IntU32 VOI, fed vals (env seeded with seed), as a user
// builds and queries one.
func modeStat(dt voi.DType, slots uint32, m tdigest.Mode, vals []uint32, seed uint32) blob.Stat {
	prec := uint32(4)
	if dt == voi.TDgstClust64 {
		prec = 8
	}
	tp, err := tpl.NewRegistry().New("MODES")
	if err != nil {
		panic(err)
	}
	if err := tp.AddVOI(tpl.VOIDef{ID: 0, Name: "v", DType: voi.IntU32, Stats: []tpl.StatSpec{
		tpl.TDigestOf(tpl.TDigestSpec{DType: dt, NCtds: slots, Prec: prec, Mode: m}),
	}}); err != nil {
		panic(err)
	}
	bl := blob.New(tp, blob.NewEnv(nil, seed))
	for _, v := range vals {
		_ = bl.UpdateU32(0, v)
	}
	s, err := bl.Fetch(0, voi.TDgst)
	if err != nil {
		panic(err)
	}
	return s
}

// influxBytes is the size of an influxdata/tdigest digest's centroids
// written compactly (the library has no wire form): a uvarint count of
// centroids, then each centroid's mean as a float64 and its weight as a
// uvarint.
func influxBytes(td *influx.TDigest) int {
	cs := td.Centroids()
	var tmp [binary.MaxVarintLen64]byte
	n := binary.PutUvarint(tmp[:], uint64(len(cs)))
	for _, c := range cs {
		n += 8 + binary.PutUvarint(tmp[:], uint64(math.Round(c.Weight)))
	}
	return n
}

// influxSketch is an influxdata/tdigest digest of vals at the largest
// compression whose centroids fit in target bytes (see influxAt).
func influxSketch(vals []uint64, target int) Sketch {
	return influxSketchOf(influxAt(target, influxAdd(vals)))
}

// influxSketchCentroids is an influxdata/tdigest digest of vals at the
// largest compression (bisectScan) that keeps at most n centroids.
func influxSketchCentroids(vals []uint64, n int) Sketch {
	return influxSketchOf(influxFitted(bisectScan, func(td *influx.TDigest) bool { return len(td.Centroids()) <= n }, influxAdd(vals)))
}

// influxAdd returns a fill that adds each of vals with weight 1.
func influxAdd(vals []uint64) func(*influx.TDigest) {
	return func(td *influx.TDigest) {
		for _, v := range vals {
			td.Add(float64(v), 1)
		}
	}
}

// influxSketchOf is td, built at compression c, as a Sketch.
func influxSketchOf(td *influx.TDigest, c float64) Sketch {
	return Sketch{
		Setting:   fmt.Sprintf("compression %.1f", c),
		Bytes:     influxBytes(td),
		Centroids: len(td.Centroids()),
		Quantile:  td.Quantile,
	}
}

// CentroidCell is one cell of the equal-centroids table: the accurate
// mode's worst rank error (a fraction of the samples, over Quantiles and
// seeds) beside caio's and influx's at the largest compression that keeps
// no more centroids than the digest has slots, whatever their bytes: the
// clusterings compared at equal centroids, where ModeCell compares them
// at equal bytes.
type CentroidCell struct {
	Stream              string
	Slots               uint32
	Samples             int
	Accurate            float64
	Caio, Influx        float64
	CaioMax, InfluxMax  int // the most centroids the peer kept, over the seeds
	CaioBytes, InfBytes int // the most bytes its centroids took
}

// Ratio is the accurate mode's error over the better peer's (errors
// below one rank count as one rank).
func (c CentroidCell) Ratio() float64 {
	floor := 1 / float64(c.Samples)
	return max(c.Accurate, floor) / max(min(c.Caio, c.Influx), floor)
}

// TDigestEqualCentroids measures the cells of the equal-centroids table
// (see CentroidCell) for the given streams, TDGSTCLUST32(slots, 4) (or
// TDGSTCLUST64(slots, 8)) in the accurate mode, each sample count of
// sizes, seeds 1..seeds; progress, if not nil, is called after each cell.
func TDigestEqualCentroids(streams []accuracy.Stream, dt voi.DType, slots []uint32, sizes []int, seeds int, progress func(CentroidCell)) []CentroidCell {
	return centroidCells(streams, dt, slots, sizes, seeds, false, progress)
}

// TDigestEqualCentroidsMean is TDigestEqualCentroids with each
// estimator's error the mean over the seeds of its worst rank error over
// Quantiles (see TDigestModesMean); the centroids and bytes are still the
// most over the seeds.
func TDigestEqualCentroidsMean(streams []accuracy.Stream, dt voi.DType, slots []uint32, sizes []int, seeds int, progress func(CentroidCell)) []CentroidCell {
	return centroidCells(streams, dt, slots, sizes, seeds, true, progress)
}

// centroidCells measures the equal-centroids cells, each estimator's
// error the worst over the seeds, or their mean if mean is set.
func centroidCells(streams []accuracy.Stream, dt voi.DType, slots []uint32, sizes []int, seeds int, mean bool, progress func(CentroidCell)) []CentroidCell {
	var cells []CentroidCell
	for _, st := range streams {
		for _, s := range slots {
			for _, n := range sizes {
				cell := CentroidCell{Stream: st.Name, Slots: s, Samples: n}
				add := func(to *float64, e float64) { overSeeds(to, e, seeds, mean) }
				for seed := 1; seed <= seeds; seed++ {
					vals, u, worst := seedSamples(st, n, seed)
					sa := modeStat(dt, s, tdigest.Accurate, vals, uint32(seed))
					add(&cell.Accurate, worst(statQuantile(sa)))
					cs, is := caioSketchCentroids(u, int(s)), influxSketchCentroids(u, int(s))
					add(&cell.Caio, worst(cs.Quantile))
					add(&cell.Influx, worst(is.Quantile))
					cell.CaioBytes, cell.InfBytes = max(cell.CaioBytes, cs.Bytes), max(cell.InfBytes, is.Bytes)
					cell.CaioMax, cell.InfluxMax = max(cell.CaioMax, cs.Centroids), max(cell.InfluxMax, is.Centroids)
				}
				cells = append(cells, cell)
				if progress != nil {
					progress(cell)
				}
			}
		}
	}
	return cells
}

// influxAt returns the influxdata/tdigest digest that fill gives at the
// largest compression (found by bisection) whose centroids fit in target
// bytes (influxBytes), and that compression.
func influxAt(target int, fill func(*influx.TDigest)) (*influx.TDigest, float64) {
	return influxFitted(bisect, func(td *influx.TDigest) bool { return influxBytes(td) <= target }, fill)
}

// influxFitted returns the influxdata/tdigest digest that fill gives at
// the compression search finds in [1, 5000] (the largest for which fits
// holds of the digest), and that compression.
func influxFitted(search func(lo, hi float64, ok func(float64) bool) float64, fits func(*influx.TDigest) bool, fill func(*influx.TDigest)) (*influx.TDigest, float64) {
	build := func(c float64) *influx.TDigest {
		td := influx.NewWithCompression(c)
		fill(td)
		return td
	}
	c := search(1, 5000, func(c float64) bool { return fits(build(c)) })
	return build(c), c
}
