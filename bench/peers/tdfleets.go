package peers

import (
	influx "github.com/influxdata/tdigest"

	"github.com/statsblob/statsblob/internal/accuracy"
	"github.com/statsblob/statsblob/tdigest"
	"github.com/statsblob/statsblob/voi"
)

// FleetCell is one cell of the merged-fleet table: fleets of blobs of one
// stream (accuracy.NewStreamFleetMode: blobs of 50 to 500 samples), each
// blob's TDGSTCLUST64(slots, 8) digest fed in one mode, merged by
// tdigest.MergeAll in one step (One) and in two levels (Two: groups of 8,
// then the groups), and the same digests merged by caio/go-tdigest and by
// influxdata/tdigest, each at the largest compression whose result fits in
// the merged digest's bytes. Each error is the worst rank error (a
// fraction of the samples) over Quantiles and seeds of the digest's own
// estimate (tdigest.Quantile; the peers' Quantile).
type FleetCell struct {
	Stream                 string
	Mode                   tdigest.Mode
	Slots                  uint32
	Blobs                  int
	Bytes                  int
	One, Two, Caio, Influx float64
}

// fleetFloor is the smallest error the fleet ratios count (0.01% of rank,
// as tdigest's TestMergeFleetVsCaio): fleets of 2,000 blobs hold about
// 550,000 samples, and below it a ratio compares luck.
const fleetFloor = 1e-4

// Ratio is the worse of the two merges' errors over the better of caio's
// and influx's (errors below fleetFloor count as fleetFloor).
func (c FleetCell) Ratio() float64 {
	return max(c.One, c.Two, fleetFloor) / max(min(c.Caio, c.Influx), fleetFloor)
}

// FleetModes measures the fleet cells of streams for each mode and each of
// slots: fleets of blobs blobs, seeds 1..seeds. progress, if not nil, is
// called after each cell.
func FleetModes(streams []accuracy.Stream, modes []tdigest.Mode, slots []uint32, blobs, seeds int, progress func(FleetCell)) []FleetCell {
	var cells []FleetCell
	for _, m := range modes {
		for _, st := range streams {
			for _, s := range slots {
				g := accuracy.Geometry{DType: voi.TDgstClust64, Slots: s, Prec: 8}
				cell := FleetCell{Stream: st.Name, Mode: m, Slots: s, Blobs: blobs}
				for seed := 1; seed <= seeds; seed++ {
					f := accuracy.NewStreamFleetMode(g, m, st, blobs, accuracy.FleetSize, uint64(seed))
					if f.Lost != 0 {
						panic("peers: a fleet lost samples")
					}
					one := g.Build()
					if err := tdigest.MergeAll(one, g.DType, f.Digests...); err != nil {
						panic(err)
					}
					two, err := accuracy.MergeTwoLevels(g, f.Digests)
					if err != nil {
						panic(err)
					}
					cell.Bytes = len(one)
					cell.One = max(cell.One, accuracy.Max(accuracy.Errors(f.Sorted, one, g.DType)))
					cell.Two = max(cell.Two, accuracy.Max(accuracy.Errors(f.Sorted, two, g.DType)))
					td, _ := accuracy.CaioMergedBytes(f.Digests, g.DType, len(one))
					cell.Caio = max(cell.Caio, accuracy.Max(accuracy.CaioErrors(f.Sorted, td)))
					in := influxMerged(f.Digests, g.DType, len(one))
					for _, q := range Quantiles {
						cell.Influx = max(cell.Influx, accuracy.RankError(f.Sorted, q, in.Quantile(q)))
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

// influxMerged returns the digests (of type dt) merged by
// influxdata/tdigest, each digest's centroids added as its centroids, at
// the largest compression whose centroids fit in target bytes (see
// influxAt).
func influxMerged(ds [][]byte, dt voi.DType, target int) *influx.TDigest {
	var cs influx.CentroidList
	for _, d := range ds {
		for c := range tdigest.Centroids(d, dt) {
			cs = append(cs, influx.Centroid{Mean: c.Mean(), Weight: float64(c.Count)})
		}
	}
	td, _ := influxAt(target, func(td *influx.TDigest) { td.AddCentroidList(cs) })
	return td
}
