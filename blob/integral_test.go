package blob_test

import (
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/internal/accuracy"
	"github.com/statsblob/statsblob/tdigest"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// TestIntegerVOIQuantile: a t-digest of an integer VOI answers the
// nearest integer, never further from q in rank than the digest's own
// estimate, and its CDF is the digest's at floor(x)+1/2; with many
// samples on each integer (10^5 lognormal samples, about 40 per µs
// around the median) the rounding takes the median's error to 0.
func TestIntegerVOIQuantile(t *testing.T) {
	for _, mode := range []tdigest.Mode{tdigest.C, tdigest.Accurate} {
		tp, err := tpl.NewRegistry().New("INT")
		require.NoError(t, err)
		td := tpl.TDigestOf(tpl.TDigestSpec{DType: voi.TDgstClust32, NCtds: 50, Prec: 4, Mode: mode})
		require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "rtt", DType: voi.IntU32, Stats: []tpl.StatSpec{td}}))
		bl := blob.New(tp, fixedEnv())
		vals := accuracy.StreamByName("lognormal").Gen(100_000, 1)
		sorted := make([]float64, len(vals))
		for i, v := range vals {
			require.NoError(t, bl.UpdateU32(0, v))
			sorted[i] = float64(v)
		}
		slices.Sort(sorted)
		st, err := bl.Fetch(0, voi.TDgst)
		require.NoError(t, err)
		for i := range 1001 {
			q := float64(i) / 1000
			raw, err := tdigest.Quantile(st.Data, st.DType, q)
			require.NoError(t, err)
			got, err := st.Quantile(q)
			require.NoError(t, err)
			require.Equal(t, math.Round(raw), got, "%v, q %v", mode, q)
			require.LessOrEqual(t, accuracy.RankError(sorted, q, got), accuracy.RankError(sorted, q, raw), "%v, q %v", mode, q)
		}
		if mode == tdigest.Accurate {
			p50, err := st.Quantile(0.5)
			require.NoError(t, err)
			require.Zero(t, accuracy.RankError(sorted, 0.5, p50), "p50 %v", p50)
			raw, err := tdigest.Quantile(st.Data, st.DType, 0.5)
			require.NoError(t, err)
			require.Greater(t, accuracy.RankError(sorted, 0.5, raw), 0.0, "the digest's own p50 %v", raw)
		}
		for _, x := range []float64{0, 999, 999.2, 999.5, 999.9, 1000, 2500.5, 1e9} {
			want, err := tdigest.CDF(st.Data, st.DType, math.Floor(x)+0.5)
			require.NoError(t, err)
			got, err := st.CDF(x)
			require.NoError(t, err)
			require.Equal(t, want, got, "%v, x %v", mode, x)
		}
	}
}

// TestQVOIQuantileNotRounded: a Q-number VOI's samples are not integers;
// its digest's estimate is answered as it is.
func TestQVOIQuantileNotRounded(t *testing.T) {
	tp, err := tpl.NewRegistry().New("Q")
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "ratio", DType: voi.QS64, Stats: []tpl.StatSpec{tpl.TDigest(voi.TDgstClust64, 20, 8)}}))
	bl := blob.New(tp, fixedEnv())
	for i := range 1000 {
		require.NoError(t, bl.UpdateFloat(0, float64(i%97)/7))
	}
	st, err := bl.Fetch(0, voi.TDgst)
	require.NoError(t, err)
	raw, err := tdigest.Quantile(st.Data, st.DType, 0.3)
	require.NoError(t, err)
	got, err := st.Quantile(0.3)
	require.NoError(t, err)
	require.Equal(t, raw, got)
	require.NotEqual(t, math.Round(raw), got)
}

// TestQVOIAnswersWithinMinMax: a C-mode t-digest finer than its Q VOI
// holds the VOI's raw fraction bits (the C's Q_QCPYVALQ: 2.5 at 2 bits is
// 2.125 at 4), means below MIN; Quantile and CDF still answer within
// [MIN, MAX], as they say (before: Quantile(0) 2.125, CDF(2.25) 0.54).
func TestQVOIAnswersWithinMinMax(t *testing.T) {
	tp, err := tpl.NewRegistry().New("Q")
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "q", DType: voi.QS64, Prec: 2, Stats: []tpl.StatSpec{
		tpl.Max(), tpl.Min(), tpl.TDigest(voi.TDgstClust64, 8, 4)}}))
	b := blob.New(tp, fixedEnv())
	for _, x := range []float64{2.5, 2.5, 3.75} {
		require.NoError(t, b.UpdateFloat(0, x))
	}
	for _, c := range []struct{ q, want float64 }{{0, 2.5}, {1, 3.75}} {
		got, err := b.Quantile(0, c.q)
		require.NoError(t, err)
		require.Equal(t, c.want, got, "q %v", c.q)
	}
	s, err := b.Fetch(0, voi.TDgst)
	require.NoError(t, err)
	ps, err := s.CDFs(nil, []float64{2.25, 2.4, 3.75, 4})
	require.NoError(t, err)
	require.Equal(t, []float64{0, 0}, ps[:2], "below MIN")
	require.Equal(t, []float64{1, 1}, ps[2:], "at or above MAX")
	p, err := b.CDF(0, 2.25)
	require.NoError(t, err)
	require.Equal(t, 0.0, p)
}

// TestIntegerVOIDiscreteExact: an integer VOI of eight values (Zipf's law
// over 1..8) in a 20-slot accurate t-digest, too few slots to pin both
// sides of every run of equal samples (22): one blob, a merge of 300 small
// blobs into one of the same template and a Sharded snapshot of 8 shards
// all answer every quantile exactly (tdigest's exactRuns matches the runs'
// neighbouring pieces, which the merge of an integer VOI's digests does
// too), and the CDF at each integer is the fraction of samples at most
// it.
func TestIntegerVOIDiscreteExact(t *testing.T) {
	tp, err := tpl.NewRegistry().New("ZIPF")
	require.NoError(t, err)
	td := tpl.TDigestOf(tpl.TDigestSpec{DType: voi.TDgstClust32, NCtds: 20, Prec: 4, Mode: tdigest.Accurate})
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "retries", DType: voi.IntU32, Stats: []tpl.StatSpec{td}}))
	vals := accuracy.StreamByName("zipf").Gen(60_000, 7)
	sorted := make([]float64, len(vals))
	for i, v := range vals {
		sorted[i] = float64(v)
	}
	slices.Sort(sorted)

	one := blob.New(tp, fixedEnv())
	small := make([]*blob.Blob, 300)
	sh := blob.NewSharded(tp, 8, nil)
	for i, v := range vals {
		require.NoError(t, one.UpdateU32(0, v))
		if small[i%300] == nil {
			small[i%300] = blob.New(tp, fixedEnv())
		}
		require.NoError(t, small[i%300].UpdateU32(0, v))
		require.NoError(t, sh.UpdateU32(0, v))
	}
	merged, err := blob.MergeAll(fixedEnv(), small...)
	require.NoError(t, err)
	snap, err := sh.Snapshot(false)
	require.NoError(t, err)
	for name, bl := range map[string]*blob.Blob{"one blob": one, "merged": merged, "sharded": snap} {
		st, err := bl.Fetch(0, voi.TDgst)
		require.NoError(t, err)
		for i := range 2001 {
			q := float64(i) / 2000
			got, err := st.Quantile(q)
			require.NoError(t, err)
			require.Zero(t, accuracy.RankError(sorted, q, got), "%s: q %v: %v", name, q, got)
		}
		for k := 1.0; k <= 8; k++ {
			at, _ := slices.BinarySearch(sorted, k+0.5)
			got, err := st.CDF(k)
			require.NoError(t, err)
			require.InDelta(t, float64(at)/float64(len(sorted)), got, 1e-12, "%s: CDF(%v)", name, k)
		}
	}
}

// TestStatCDFs: CDFs answers what CDF answers at each point, for
// t-digests of integer and Q-number VOIs, with and without MIN and MAX,
// and for a histogram; it refuses points that do not ascend or are NaN,
// leaving out as it was. Quantiles likewise answers what Quantile answers.
func TestStatCDFs(t *testing.T) {
	for _, c := range []struct {
		name   string
		dt     voi.DType
		bounds bool
		hist   bool
	}{
		{"int", voi.IntS64, false, false},
		{"int bounded", voi.IntS64, true, false},
		{"q", voi.QS64, false, false},
		{"q bounded", voi.QS64, true, false},
		{"histogram", voi.IntS64, true, true},
	} {
		tp, err := tpl.NewRegistry().New("CDFS")
		require.NoError(t, err)
		stats := []tpl.StatSpec{tpl.TDigestOf(tpl.TDigestSpec{DType: voi.TDgstClust64, NCtds: 30, Prec: 8, Mode: tdigest.Accurate})}
		if c.hist {
			stats = []tpl.StatSpec{tpl.HistLin(voi.CRHist64, int64(-5000), 5000, 200, 0)}
		}
		if c.bounds {
			stats = append(stats, tpl.StatSpec{Type: voi.Min}, tpl.StatSpec{Type: voi.Max})
		}
		require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "v", DType: c.dt, Prec: 8, Stats: stats}))
		bl := blob.New(tp, fixedEnv())
		for _, v := range accuracy.StreamByName("lognormal").Gen(5000, 3) {
			x := float64(v%4000) - 1000.25
			if c.dt == voi.QS64 {
				require.NoError(t, bl.UpdateFloat(0, x))
			} else {
				require.NoError(t, bl.UpdateS64(0, int64(x)))
			}
		}
		st, err := bl.Fetch(0, stats[0].Type)
		require.NoError(t, err)
		xs := []float64{-2e3, -1000.5, -1000, -3.2, 0, 0, 0.4, 17, 999.5, 2999, 1e6}
		got, err := st.CDFs([]float64{42}, xs)
		require.NoError(t, err, c.name)
		require.Equal(t, 42.0, got[0])
		for i, x := range xs {
			want, err := st.CDF(x)
			require.NoError(t, err)
			require.Equal(t, want, got[1+i], "%s: x %v", c.name, x)
		}
		for _, bad := range [][]float64{{1, 0}, {0, math.NaN()}} {
			out, err := st.CDFs([]float64{42}, bad)
			require.ErrorIs(t, err, voi.ErrInvalid, "%s: %v", c.name, bad)
			require.Equal(t, []float64{42}, out)
		}

		// Quantiles answers what Quantile answers at each q.
		qs := []float64{0, 0.001, 0.25, 0.5, 0.9, 0.99, 0.999, 1}
		got, err = st.Quantiles([]float64{42}, qs)
		require.NoError(t, err, c.name)
		require.Len(t, got, 1+len(qs))
		for i, q := range qs {
			want, err := st.Quantile(q)
			require.NoError(t, err)
			require.Equal(t, want, got[1+i], "%s: q %v", c.name, q)
		}
		out, err := st.Quantiles([]float64{42}, []float64{0.5, 2})
		require.ErrorIs(t, err, voi.ErrInvalid, c.name)
		require.Equal(t, []float64{42}, out)
	}
}

// TestStatCDFNoAllocs: CDF of a t-digest (one point of CDFs' walk) takes
// no allocation, for integer and Q-number VOIs, with and without MIN and
// MAX.
func TestStatCDFNoAllocs(t *testing.T) {
	for _, dt := range []voi.DType{voi.IntU32, voi.QS64} {
		for _, bounded := range []bool{false, true} {
			tp, err := tpl.NewRegistry().New("T")
			require.NoError(t, err)
			stats := []tpl.StatSpec{tpl.TDigestOf(tpl.TDigestSpec{DType: voi.TDgstClust64, NCtds: 20, Prec: 8, Mode: tdigest.Accurate})}
			if bounded {
				stats = append(stats, tpl.StatSpec{Type: voi.Min}, tpl.StatSpec{Type: voi.Max})
			}
			require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "v", DType: dt, Prec: 8, Stats: stats}))
			bl := blob.New(tp, blob.NewEnv(nil, 1))
			for i := range 500 {
				if dt == voi.IntU32 {
					require.NoError(t, bl.UpdateU32(0, uint32(i*7%300)))
				} else {
					require.NoError(t, bl.UpdateFloat(0, float64(i%300)/3))
				}
			}
			st, err := bl.Fetch(0, voi.TDgst)
			require.NoError(t, err)
			require.Zero(t, testing.AllocsPerRun(100, func() { _, _ = st.CDF(100.5) }), "%v, MIN and MAX %v", dt, bounded)
		}
	}
}
