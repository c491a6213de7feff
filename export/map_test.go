package export_test

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/export"
	"github.com/statsblob/statsblob/export/internal/fixture"
	"github.com/statsblob/statsblob/hist"
	"github.com/statsblob/statsblob/qmath"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

func TestAppendKitchen(t *testing.T) {
	tp := fixture.Kitchen()
	b := fixture.KitchenBlob(tp)
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
		{Name: "sb_kitchen_win_hist_outofrange", Help: help("win", "DRHIST32 out-of-range count", "INT_S32"), ValueCount: true, Kind: export.KindCounter, Value: 2},
		{Name: "sb_kitchen_ranges_hist", Help: help("ranges", "DRHIST64 bucket counts", "INT_U32"), ValueCount: true, Kind: export.KindCounter, Labels: lb("[0,10)"), Value: 2},
		{Name: "sb_kitchen_ranges_hist", Help: help("ranges", "DRHIST64 bucket counts", "INT_U32"), ValueCount: true, Kind: export.KindCounter, Labels: lb("[20,30)"), Value: 1},
		{Name: "sb_kitchen_ranges_hist_outofrange", Help: help("ranges", "DRHIST64 out-of-range count", "INT_U32"), ValueCount: true, Kind: export.KindCounter, Value: 2},
		{Name: "sb_kitchen_sig_hist", Help: help("sig", "DVHIST32 bucket counts", "INT_U32"), ValueCount: true, Kind: export.KindCounter, Labels: lb("1"), Value: 1},
		{Name: "sb_kitchen_sig_hist", Help: help("sig", "DVHIST32 bucket counts", "INT_U32"), ValueCount: true, Kind: export.KindCounter, Labels: lb("2"), Value: 2},
		{Name: "sb_kitchen_sig_hist", Help: help("sig", "DVHIST32 bucket counts", "INT_U32"), ValueCount: true, Kind: export.KindCounter, Labels: lb("4"), Value: 0},
		{Name: "sb_kitchen_sig_hist", Help: help("sig", "DVHIST32 bucket counts", "INT_U32"), ValueCount: true, Kind: export.KindCounter, Labels: lb("8"), Value: 1},
		{Name: "sb_kitchen_sig_hist_outofrange", Help: help("sig", "DVHIST32 out-of-range count", "INT_U32"), ValueCount: true, Kind: export.KindCounter, Value: 1},
		// values 3, 4, 5: le 2 (empty), 3, 4, 5; 2 and 6 out of range.
		{Name: "sb_kitchen_cons_hist", Help: help("cons", "DVHIST64", "INT_U32"), Kind: export.KindHistogram,
			Histogram: &export.HistogramPoint{Bounds: []float64{2, 3, 4, 5}, Counts: []uint64{0, 1, 2, 1, 0}, Count: 4, Sum: nan}},
		{Name: "sb_kitchen_cons_hist_outofrange", Help: help("cons", "DVHIST64 out-of-range count", "INT_U32"), ValueCount: true, Kind: export.KindCounter, Value: 2},
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
		want[i].Template, want[i].TemplateHash = "KITCHEN", tp.Hash()
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

// A t-digest summary takes its sum from the VOI's SUM, exact, rather than
// from the digest's rounded means.
func TestSummarySumFromSUM(t *testing.T) {
	reg := tpl.NewRegistry()
	tp, err := reg.New("S")
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "with", DType: voi.IntU32, Stats: []tpl.StatSpec{tpl.Sum(), tpl.TDigest(voi.TDgstClust32, 4, 1)}}))
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 1, Name: "without", DType: voi.IntU32, Stats: []tpl.StatSpec{tpl.TDigest(voi.TDgstClust32, 4, 1)}}))
	b := blob.New(tp, blob.NewEnv(nil, 1))
	for v := uint32(1); v <= 100; v++ {
		require.NoError(t, b.UpdateU32(0, v))
		require.NoError(t, b.UpdateU32(1, v))
	}
	m, err := export.NewMapper(export.Options{Quantiles: []float64{}})
	require.NoError(t, err)
	ms, err := m.Append(nil, export.Named{Blob: b, Template: tp})
	require.NoError(t, err)
	require.Len(t, ms, 3)
	require.Equal(t, "s_with_tdigest", ms[1].Name)
	require.Equal(t, export.SummaryPoint{Count: 100, Sum: 5050}, *ms[1].Summary)
	// The digest's own sum: 4 centroids with means in halves.
	require.Equal(t, "s_without_tdigest", ms[2].Name)
	require.Equal(t, uint64(100), ms[2].Summary.Count)
	require.NotEqual(t, 5050.0, ms[2].Summary.Sum)
	require.InDelta(t, 5050, ms[2].Summary.Sum, 100*0.5)
}

// A t-digest summary's quantiles are the blob's answers (blob.Stat.Quantile):
// bounded by MIN and MAX when the VOI keeps them, integers for an integer
// VOI, as they are for a Q-number VOI.
func TestSummaryQuantilesAreTheBlobsAnswers(t *testing.T) {
	tp, err := tpl.NewRegistry().New("Q")
	require.NoError(t, err)
	td := tpl.TDigest(voi.TDgstClust32, 8, 4)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "bounded", DType: voi.IntU32, Stats: []tpl.StatSpec{tpl.Max(), tpl.Min(), td}}))
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 1, Name: "plain", DType: voi.IntU32, Stats: []tpl.StatSpec{td}}))
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 2, Name: "ratio", DType: voi.QS64, Stats: []tpl.StatSpec{tpl.TDigest(voi.TDgstClust64, 8, 8)}}))
	b := blob.New(tp, blob.NewEnv(nil, 1))
	for v := uint32(1); v <= 1000; v++ {
		x := v * v % 997
		require.NoError(t, b.UpdateU32(0, x))
		require.NoError(t, b.UpdateU32(1, x))
		require.NoError(t, b.UpdateFloat(2, float64(x)/7))
	}
	qs := []float64{0, 0.25, 0.5, 0.9, 0.99, 1}
	m, err := export.NewMapper(export.Options{Quantiles: qs})
	require.NoError(t, err)
	ms, err := m.Append(nil, export.Named{Blob: b, Template: tp})
	require.NoError(t, err)
	fractional := 0
	for id, name := range []string{"q_bounded_tdigest", "q_plain_tdigest", "q_ratio_tdigest"} {
		i := slices.IndexFunc(ms, func(mt export.Metric) bool { return mt.Name == name })
		require.GreaterOrEqual(t, i, 0, name)
		st, err := b.Fetch(int32(id), voi.TDgst)
		require.NoError(t, err)
		for j, q := range qs {
			want, err := st.Quantile(q)
			require.NoError(t, err)
			got := ms[i].Summary.Quantiles[j]
			require.Equal(t, export.QuantileValue{Q: q, Value: want}, got, "%s q %v", name, q)
			if id < 2 {
				require.Equal(t, math.Round(got.Value), got.Value, "%s q %v", name, q)
			} else if got.Value != math.Round(got.Value) {
				fractional++
			}
		}
	}
	require.Positive(t, fractional, "the Q VOI's answers are not rounded")
}

// A summary's quantiles stay in [MIN, MAX] and are Stat.Quantile's even
// where the digest's means are not: a Q VOI of 4 fractional bits with a
// t-digest of 2 keeps the samples 0.0625, 1.0625, 2.0625 in means
// rounded to quarters (the last at 2.25). The summary used to bound the
// digest's estimate by MIN and MAX without clamping it (Stat.Quantile
// clamps), so its q = 1 read 2.25, above MAX 2.0625.
func TestSummaryQuantilesWithinMinMax(t *testing.T) {
	tp, err := tpl.NewRegistry().New("Q")
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "x", DType: voi.QS64, Prec: 4,
		Stats: []tpl.StatSpec{tpl.Max(), tpl.Min(), tpl.TDigest(voi.TDgstClust64, 20, 2)}}))
	b := blob.New(tp, blob.NewEnv(nil, 1))
	for _, sixteenths := range []int64{1, 17, 33} { // 0.0625, 1.0625, 2.0625
		require.NoError(t, b.UpdateQ(0, qmath.Ini(qmath.S64, 0, 4).SetIFVal(qmath.I64(sixteenths))))
	}
	qs := []float64{0, 0.5, 1}
	m, err := export.NewMapper(export.Options{Quantiles: qs})
	require.NoError(t, err)
	ms, err := m.Append(nil, export.Named{Blob: b, Template: tp})
	require.NoError(t, err)
	i := slices.IndexFunc(ms, func(mt export.Metric) bool { return mt.Name == "q_x_tdigest" })
	require.GreaterOrEqual(t, i, 0)
	require.Equal(t, []export.QuantileValue{{Q: 0, Value: 0.0625}, {Q: 0.5, Value: 1.25}, {Q: 1, Value: 2.0625}}, ms[i].Summary.Quantiles)
	st, err := b.Fetch(0, voi.TDgst)
	require.NoError(t, err)
	for j, q := range qs {
		want, err := st.Quantile(q)
		require.NoError(t, err)
		require.Equal(t, export.QuantileValue{Q: q, Value: want}, ms[i].Summary.Quantiles[j], "q %v", q)
	}
}

// A histogram that counted no value has sum 0, the sum of no values
// (OpenTelemetry's HistogramDataPoint: if count is zero, sum must be
// zero). A contiguous DRHIST whose only value fell out of range, so that
// its VOI's SUM did not see exactly its values, used to export sum NaN.
func TestHistogramSumZeroWhenEmpty(t *testing.T) {
	tp, err := tpl.NewRegistry().New("W")
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "win", DType: voi.IntS32, Stats: []tpl.StatSpec{tpl.Sum(),
		fixture.Usr(voi.DRHist32, 0, hist.Bound{LB: fixture.S32(-10), UB: 0}, hist.Bound{LB: 0, UB: 10})}}))
	b := blob.New(tp, blob.NewEnv(nil, 1))
	require.NoError(t, b.UpdateS32(0, 500)) // out of range
	for conv, name := range []string{"w_win_hist", "w.win.hist"} {
		m, err := export.NewMapper(export.Options{Convention: export.Convention(conv)})
		require.NoError(t, err)
		ms, err := m.Append(nil, export.Named{Blob: b, Template: tp})
		require.NoError(t, err)
		i := slices.IndexFunc(ms, func(mt export.Metric) bool { return mt.Name == name })
		require.GreaterOrEqual(t, i, 0, name)
		require.Equal(t, export.HistogramPoint{Bounds: []float64{-11, -1, 9}, Counts: []uint64{0, 0, 0, 0}, Sum: 0}, *ms[i].Histogram, name)
	}
}
