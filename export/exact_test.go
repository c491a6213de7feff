package export_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/export"
	"github.com/statsblob/statsblob/hist"
	"github.com/statsblob/statsblob/qmath"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// numType says how to make patterns and updates of one VOI data type.
type numType struct {
	dt   voi.DType
	prec int // Q: fractional bits of every bound and value
}

// pattern returns the pattern of the number x units (x / 2^prec for Q).
func (n numType) pattern(x int64) uint64 {
	switch {
	case n.dt.IsQ():
		return qmath.Ini(voi.QKind(n.dt), 0, n.prec).SetIFVal(qmath.I64(x)).Raw
	case n.dt.Is32():
		return uint64(uint32(x))
	}
	return uint64(x)
}

func (n numType) float(x int64) float64 { return float64(x) / math.Exp2(float64(n.prec)) }

func (n numType) update(b *blob.Blob, x int64) error {
	switch n.dt {
	case voi.IntS32:
		return b.UpdateS32(0, int32(x))
	case voi.IntU32:
		return b.UpdateU32(0, uint32(x))
	case voi.IntS64:
		return b.UpdateS64(0, x)
	case voi.IntU64:
		return b.UpdateU64(0, uint64(x))
	}
	return b.UpdateQ(0, qmath.Ini(voi.QKind(n.dt), 0, n.prec).SetIFVal(qmath.I64(x)))
}

// TestHistogramBoundsExact checks the promise of the le bounds against the
// raw samples: for every bound, the cumulative count equals the number of
// samples at or below it (of those the histogram counts), the total equals
// the samples counted, the out-of-range counter the rest, and the sum the
// samples' sum. Bounds and samples are random, in units of the VOI's
// resolution.
func TestHistogramBoundsExact(t *testing.T) {
	types := []numType{
		{dt: voi.IntU32}, {dt: voi.IntS32}, {dt: voi.IntU64}, {dt: voi.IntS64},
		{dt: voi.QS32, prec: 4}, {dt: voi.QU32, prec: 2}, {dt: voi.QS64, prec: 16}, {dt: voi.QU64, prec: 8},
	}
	hdts := []voi.DType{voi.CRHist32, voi.CRHist64, voi.DRHist32, voi.DRHist64, voi.DVHist32, voi.DVHist64}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, nt := range types {
		for _, hdt := range hdts {
			for trial := 0; trial < 4; trial++ {
				name := fmt.Sprintf("%v/%v/%d", nt.dt, hdt, trial)
				t.Run(name, func(t *testing.T) {
					lo := int64(0)
					if nt.dt.Signed() {
						lo = -200
					}
					// Ascending bounds: consecutive for DV (integers only), gaps of 1..20 otherwise.
					nb := 1 + rng.IntN(8)
					var xs []int64
					x := lo + rng.Int64N(50)
					for range nb + 1 {
						xs = append(xs, x)
						if hdt.IsHist() && (hdt == voi.DVHist32 || hdt == voi.DVHist64) {
							x++
						} else {
							x += 1 + rng.Int64N(20)
						}
					}
					spec := hist.Spec{DType: hdt, Scheme: hist.Usr}
					for i := range nb {
						spec.Buckets = append(spec.Buckets, hist.Bound{LB: nt.pattern(xs[i]), UB: nt.pattern(xs[i+1])})
					}
					dv := hdt == voi.DVHist32 || hdt == voi.DVHist64
					if dv && nt.dt.IsQ() {
						t.Skip("DVHIST on Q VOIs exports counters (the C's Q_QEQ compares integer parts)")
					}
					reg := tpl.NewRegistry()
					tp, err := reg.New("T")
					require.NoError(t, err)
					require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "v", DType: nt.dt, Prec: nt.prec,
						Stats: []tpl.StatSpec{tpl.Sum(), tpl.Histogram(spec)}}))
					b := blob.New(tp, blob.NewEnv(nil, 1))
					var samples []int64
					for range 300 {
						s := xs[0] - 10 + rng.Int64N(xs[nb]-xs[0]+20)
						if s < lo {
							s = lo
						}
						samples = append(samples, s)
						require.NoError(t, nt.update(b, s))
					}
					m, err := export.NewMapper(export.Options{})
					require.NoError(t, err)
					ms, err := m.Append(nil, export.Named{Blob: b, Template: tp})
					require.NoError(t, err)
					var h *export.HistogramPoint
					var oob float64 = -1
					for _, mt := range ms {
						switch mt.Name {
						case "t_v_hist":
							h = mt.Histogram
						case "t_v_hist_outofrange":
							oob = mt.Value
						}
					}
					require.NotNil(t, h, "exported as a histogram")
					// What the histogram counts: CR everything (below lb[0] in
					// the under-range bucket); DR [lb0, ub_last); DV the values.
					in := func(s int64) bool {
						if hdt == voi.CRHist32 || hdt == voi.CRHist64 {
							return true
						}
						if dv {
							return s >= xs[0] && s < xs[nb]
						}
						return s >= xs[0] && s < xs[nb]
					}
					var counted uint64
					sum := 0.0
					for _, s := range samples {
						if in(s) {
							counted++
						}
						sum += nt.float(s)
					}
					require.Equal(t, counted, h.Count)
					if hdt == voi.CRHist32 || hdt == voi.CRHist64 {
						require.Equal(t, -1.0, oob, "CRHIST keeps no out-of-range counter")
						require.Equal(t, sum, h.Sum)
					} else {
						require.Equal(t, float64(uint64(len(samples))-counted), oob)
					}
					var cum uint64
					for k, le := range h.Bounds {
						cum += h.Counts[k]
						var want uint64
						for _, s := range samples {
							if in(s) && nt.float(s) <= le {
								want++
							}
						}
						require.Equal(t, want, cum, "le %v", le)
					}
					require.Equal(t, h.Count, cum+h.Counts[len(h.Bounds)])
				})
			}
		}
	}
}
