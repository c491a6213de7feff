package export_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/export"
	"github.com/statsblob/statsblob/hist"
	"github.com/statsblob/statsblob/qmath"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// q2 is the Q_S64 number x/4 with 2 fractional bits.
func q2(x int64) qmath.Q { return qmath.Ini(qmath.S64, 0, 2).SetIFVal(qmath.I64(x)) }

func usr(dt voi.DType, fl hist.Flags, bounds ...hist.Bound) tpl.StatSpec {
	return tpl.Histogram(hist.Spec{DType: dt, Scheme: hist.Usr, Flags: fl, Buckets: bounds})
}

func cr(vs ...uint64) []hist.Bound {
	var b []hist.Bound
	for _, v := range vs {
		b = append(b, hist.Bound{LB: v, UB: v})
	}
	return b
}

// s32 is the pattern of a signed 32-bit value.
func s32(v int32) uint64 { return uint64(uint32(v)) }

// kitchen is a template with every statistic kind and histogram shape.
func kitchen(t testing.TB) *tpl.Template {
	t.Helper()
	reg := tpl.NewRegistry()
	tp, err := reg.New("KITCHEN")
	require.NoError(t, err)
	defs := []tpl.VOIDef{
		{ID: 0, Name: "bytes", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}},
		{ID: 1, Name: "delta", DType: voi.IntS32, Stats: []tpl.StatSpec{tpl.Sum(), tpl.Max(), tpl.Min()}},
		{ID: 2, Name: "acklen", DType: voi.IntU32, Stats: []tpl.StatSpec{tpl.Max(),
			tpl.Histogram(hist.Spec{DType: voi.CRHist32, Scheme: hist.Lin, LB: 0, UB: 4, StepInc: 1, Flags: hist.UBoundInf})}},
		{ID: 3, Name: "lat", DType: voi.IntU32, Stats: []tpl.StatSpec{tpl.Sum(), usr(voi.CRHist64, 0, cr(10, 20, 50)...)}},
		{ID: 4, Name: "ratio", DType: voi.QS64, Prec: 2, Stats: []tpl.StatSpec{tpl.Sum(), usr(voi.CRHist32, 0, cr(q2(2).Raw, q2(4).Raw, q2(8).Raw)...)}},
		{ID: 5, Name: "win", DType: voi.IntS32, Stats: []tpl.StatSpec{usr(voi.DRHist32, 0,
			hist.Bound{LB: s32(-10), UB: 0}, hist.Bound{LB: 0, UB: 10}, hist.Bound{LB: 10, UB: 100})}},
		{ID: 6, Name: "ranges", DType: voi.IntU32, Stats: []tpl.StatSpec{usr(voi.DRHist64, 0,
			hist.Bound{LB: 0, UB: 10}, hist.Bound{LB: 20, UB: 30})}},
		{ID: 7, Name: "sig", DType: voi.IntU32, Stats: []tpl.StatSpec{usr(voi.DVHist32, 0, cr(1, 2, 4, 8)...)}},
		{ID: 8, Name: "cons", DType: voi.IntU32, Stats: []tpl.StatSpec{usr(voi.DVHist64, 0, cr(3, 4, 5)...)}},
		{ID: 9, Name: "rtt", DType: voi.IntU32, Stats: []tpl.StatSpec{tpl.Max(), tpl.Min(), tpl.TDigest(voi.TDgstClust64, 20, 8)}},
		{ID: 10, Name: "diff", DType: voi.IntS32, Stats: []tpl.StatSpec{usr(voi.CRHist32, hist.LBoundInf, cr(0)...)}},
	}
	for _, d := range defs {
		require.NoError(t, tp.AddVOI(d), d.Name)
	}
	return tp
}

func kitchenBlob(t testing.TB, tp *tpl.Template) *blob.Blob {
	t.Helper()
	clock := blob.SBinTime(1_700_000_000, 0)
	b := blob.New(tp, blob.NewEnv(func() int64 { return clock }, 1))
	must := func(err error) { t.Helper(); require.NoError(t, err) }
	must(b.UpdateU64(0, 1000))
	must(b.UpdateU64(0, 448))
	for _, v := range []int32{5, -12, 3} {
		must(b.UpdateS32(1, v))
	}
	for _, v := range []uint32{0, 1, 1, 4, 5, 13} {
		must(b.UpdateU32(2, v))
	}
	for _, v := range []uint32{3, 10, 19, 20, 49, 50, 900} {
		must(b.UpdateU32(3, v))
	}
	for _, x := range []int64{1, 2, 3, 4, 7, 8, 40} { // 0.25 .. 10
		must(b.UpdateQ(4, q2(x)))
	}
	for _, v := range []int32{-11, -10, -1, 0, 9, 10, 99, 100} {
		must(b.UpdateS32(5, v))
	}
	for _, v := range []uint32{0, 9, 10, 25, 30} {
		must(b.UpdateU32(6, v))
	}
	for _, v := range []uint32{1, 2, 2, 3, 8} {
		must(b.UpdateU32(7, v))
	}
	for _, v := range []uint32{2, 3, 4, 4, 5, 6} {
		must(b.UpdateU32(8, v))
	}
	for _, v := range []uint32{10, 20, 30, 40} {
		must(b.UpdateU32(9, v))
	}
	for _, v := range []int32{-5, 0, 7} {
		must(b.UpdateS32(10, v))
	}
	return b
}

func TestAppendKitchen(t *testing.T) {
	tp := kitchen(t)
	b := kitchenBlob(t, tp)
	m, err := export.NewMapper(export.Options{Namespace: "sb", Units: map[string]string{"rtt": "microseconds"}})
	require.NoError(t, err)
	labels := []export.Label{{"host", "web1"}}
	got, err := m.Append(nil, export.Named{Blob: b, Template: tp, Labels: labels})
	require.NoError(t, err)

	start := time.Unix(1_700_000_000, 0)
	nan := math.NaN()
	help := func(v, what, dt string) string { return "statsblob KITCHEN " + v + ": " + what + " (" + dt + ")" }
	lb := func(bucket string) []export.Label { return []export.Label{{"host", "web1"}, {"bucket", bucket}} }
	want := []export.Metric{
		{Name: "sb_kitchen_bytes", Help: help("bytes", "SUM", "INT_U64"), Kind: export.KindCounter, Value: 1448},
		{Name: "sb_kitchen_delta", Help: help("delta", "SUM", "INT_S32"), Kind: export.KindUpDownCounter, Value: -4},
		{Name: "sb_kitchen_delta_max", Help: help("delta", "MAX", "INT_S32"), Kind: export.KindGauge, Value: 5},
		{Name: "sb_kitchen_delta_min", Help: help("delta", "MIN", "INT_S32"), Kind: export.KindGauge, Value: -12},
		{Name: "sb_kitchen_acklen_max", Help: help("acklen", "MAX", "INT_U32"), Kind: export.KindGauge, Value: 13},
		// LIN 0..4 step 1 with ubinf: [0,1) .. [4,5), [5,max); lb[0] = 0 has nothing below.
		{Name: "sb_kitchen_acklen_hist", Help: help("acklen", "CRHIST32", "INT_U32"), Kind: export.KindHistogram,
			Histogram: &export.HistogramPoint{Bounds: []float64{0, 1, 2, 3, 4}, Counts: []uint64{1, 2, 0, 0, 1, 2}, Count: 6, Sum: nan}},
		{Name: "sb_kitchen_lat", Help: help("lat", "SUM", "INT_U32"), Kind: export.KindCounter, Value: 1051},
		// under-range le = 10-1; [10,20) le 19; [20,50) le 49; [50,max) +Inf.
		{Name: "sb_kitchen_lat_hist", Help: help("lat", "CRHIST64", "INT_U32"), Kind: export.KindHistogram,
			Histogram: &export.HistogramPoint{Bounds: []float64{9, 19, 49}, Counts: []uint64{1, 2, 2, 2}, Count: 7, Sum: 1051}},
		{Name: "sb_kitchen_ratio", Help: help("ratio", "SUM", "Q_S64"), Kind: export.KindUpDownCounter, Value: 16.25},
		// bounds 0.5, 1, 2 in quarters: le 0.25, 0.75, 1.75, +Inf.
		{Name: "sb_kitchen_ratio_hist", Help: help("ratio", "CRHIST32", "Q_S64"), Kind: export.KindHistogram,
			Histogram: &export.HistogramPoint{Bounds: []float64{0.25, 0.75, 1.75}, Counts: []uint64{1, 2, 2, 2}, Count: 7, Sum: 16.25}},
		// [-10,0) [0,10) [10,100): le -11 (empty), -1, 9, 99; -11 and 100 out of range.
		{Name: "sb_kitchen_win_hist", Help: help("win", "DRHIST32", "INT_S32"), Kind: export.KindHistogram,
			Histogram: &export.HistogramPoint{Bounds: []float64{-11, -1, 9, 99}, Counts: []uint64{0, 2, 2, 2, 0}, Count: 6, Sum: nan}},
		{Name: "sb_kitchen_win_hist_outofrange", Help: help("win", "DRHIST32 out-of-range count", "INT_S32"), Kind: export.KindCounter, Value: 2},
		{Name: "sb_kitchen_ranges_hist", Help: help("ranges", "DRHIST64 bucket counts", "INT_U32"), Kind: export.KindCounter, Labels: lb("[0,10)"), Value: 2},
		{Name: "sb_kitchen_ranges_hist", Help: help("ranges", "DRHIST64 bucket counts", "INT_U32"), Kind: export.KindCounter, Labels: lb("[20,30)"), Value: 1},
		{Name: "sb_kitchen_ranges_hist_outofrange", Help: help("ranges", "DRHIST64 out-of-range count", "INT_U32"), Kind: export.KindCounter, Value: 2},
		{Name: "sb_kitchen_sig_hist", Help: help("sig", "DVHIST32 bucket counts", "INT_U32"), Kind: export.KindCounter, Labels: lb("1"), Value: 1},
		{Name: "sb_kitchen_sig_hist", Help: help("sig", "DVHIST32 bucket counts", "INT_U32"), Kind: export.KindCounter, Labels: lb("2"), Value: 2},
		{Name: "sb_kitchen_sig_hist", Help: help("sig", "DVHIST32 bucket counts", "INT_U32"), Kind: export.KindCounter, Labels: lb("4"), Value: 0},
		{Name: "sb_kitchen_sig_hist", Help: help("sig", "DVHIST32 bucket counts", "INT_U32"), Kind: export.KindCounter, Labels: lb("8"), Value: 1},
		{Name: "sb_kitchen_sig_hist_outofrange", Help: help("sig", "DVHIST32 out-of-range count", "INT_U32"), Kind: export.KindCounter, Value: 1},
		// values 3, 4, 5: le 2 (empty), 3, 4, 5; 2 and 6 out of range.
		{Name: "sb_kitchen_cons_hist", Help: help("cons", "DVHIST64", "INT_U32"), Kind: export.KindHistogram,
			Histogram: &export.HistogramPoint{Bounds: []float64{2, 3, 4, 5}, Counts: []uint64{0, 1, 2, 1, 0}, Count: 4, Sum: nan}},
		{Name: "sb_kitchen_cons_hist_outofrange", Help: help("cons", "DVHIST64 out-of-range count", "INT_U32"), Kind: export.KindCounter, Value: 2},
		{Name: "sb_kitchen_rtt_microseconds_max", Help: help("rtt", "MAX", "INT_U32"), Unit: "microseconds", Kind: export.KindGauge, Value: 40},
		{Name: "sb_kitchen_rtt_microseconds_min", Help: help("rtt", "MIN", "INT_U32"), Unit: "microseconds", Kind: export.KindGauge, Value: 10},
		// Four centroids at ranks 0.5, 1.5, 2.5, 3.5; MIN and MAX bound the tails.
		{Name: "sb_kitchen_rtt_microseconds_tdigest", Help: help("rtt", "TDGSTCLUST64 t-digest", "INT_U32"), Unit: "microseconds", Kind: export.KindSummary,
			Summary: &export.SummaryPoint{Count: 4, Sum: 100, Quantiles: []export.QuantileValue{{0.5, 25}, {0.9, 40}, {0.99, 40}, {0.999, 40}}}},
		// lbinf: [min,0) le -1, [0,max) +Inf.
		{Name: "sb_kitchen_diff_hist", Help: help("diff", "CRHIST32", "INT_S32"), Kind: export.KindHistogram,
			Histogram: &export.HistogramPoint{Bounds: []float64{-1}, Counts: []uint64{1, 2}, Count: 3, Sum: nan}},
	}
	for i := range want {
		want[i].Start = start
		if want[i].Labels == nil {
			want[i].Labels = labels
		}
	}
	require.Len(t, got, len(want))
	for i := range want {
		// NaN != NaN: compare sums apart.
		if w, g := want[i].Histogram, got[i].Histogram; w != nil && g != nil && math.IsNaN(w.Sum) {
			require.True(t, math.IsNaN(g.Sum), "%s: sum %v", want[i].Name, g.Sum)
			w.Sum, g.Sum = 0, 0
		}
		require.Equal(t, want[i], got[i], want[i].Name)
	}
}
