package history_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/hist"
	"github.com/statsblob/statsblob/history"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

func latencyTemplate(t testing.TB) *tpl.Template {
	t.Helper()
	tp, err := tpl.NewRegistry().New("LAT")
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "lat", DType: voi.IntU64, Stats: []tpl.StatSpec{
		tpl.Sum(), tpl.Min(), tpl.Max(), tpl.TDigest(voi.TDgstClust64, 20, 8)}}))
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 1, Name: "size", DType: voi.IntU32, Stats: []tpl.StatSpec{
		tpl.Sum(), tpl.Histogram(hist.Spec{DType: voi.CRHist32, Scheme: hist.Lin, LB: 0, UB: 100, StepInc: 10})}}))
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 3, Name: "bytes", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}))
	return tp
}

func TestRing(t *testing.T) {
	b := blob.New(latencyTemplate(t), nil)
	r, err := history.NewRing(func() (*blob.Blob, error) { return b.Snapshot(true), nil }, time.Minute, 3, time.Unix(0, 0))
	require.NoError(t, err)
	periods := [][]uint64{{10, 20, 30}, {5}, {}, {100, 200}}
	for i, vals := range periods {
		for _, v := range vals {
			require.NoError(t, b.UpdateU64(0, v))
			require.NoError(t, b.UpdateU32(1, uint32(v)))
		}
		require.NoError(t, r.Rotate(time.Unix(int64(60*(i+1)), 0)))
	}
	require.Equal(t, 3, r.Len())
	_, ok := r.At(-4) // the first period left the ring
	require.False(t, ok)
	_, ok = r.At(0)
	require.False(t, ok)

	var starts []int64
	for p := range r.All() {
		starts = append(starts, p.Start.Unix())
		require.Equal(t, p.Start.Add(time.Minute), p.End)
	}
	require.Equal(t, []int64{60, 120, 180}, starts)

	p, ok := r.At(-1)
	require.True(t, ok)
	s, err := history.Summarize(p.Blob, 0)
	require.NoError(t, err)
	require.Equal(t, uint64(2), s.Count)
	require.Equal(t, []float64{100, 150, 200}, []float64{s.Min, s.Avg, s.Max})
	for _, q := range []float64{s.P50, s.P90, s.P99} {
		require.True(t, q >= 100 && q <= 200, q)
	}
	// the histogram counts, the SUM averages
	s, err = history.Summarize(p.Blob, 1)
	require.NoError(t, err)
	require.Equal(t, uint64(2), s.Count)
	require.Equal(t, 150.0, s.Avg)
	require.True(t, math.IsNaN(s.Min) && math.IsNaN(s.Max))

	p, _ = r.At(-3) // the period with the one sample 5
	s, err = history.Summarize(p.Blob, 0)
	require.NoError(t, err)
	require.Equal(t, history.Summary{Count: 1, Min: 5, Avg: 5, Max: 5, P50: 5, P90: 5, P99: 5}, s)

	p, _ = r.At(-2) // the empty period
	s, err = history.Summarize(p.Blob, 0)
	require.NoError(t, err)
	require.Equal(t, uint64(0), s.Count)
	for _, f := range []float64{s.Min, s.Avg, s.Max, s.P50, s.P90, s.P99} {
		require.True(t, math.IsNaN(f))
	}
	// a VOI with a SUM only has neither count nor quantiles
	s, err = history.Summarize(p.Blob, 3)
	require.NoError(t, err)
	require.True(t, math.IsNaN(s.Avg) && math.IsNaN(s.P50))
	_, err = history.Summarize(p.Blob, 2)
	require.ErrorIs(t, err, voi.ErrNotFound)
}

func TestRingFailedSnapshot(t *testing.T) {
	fail := errors.New("boom")
	r, err := history.NewRing(func() (*blob.Blob, error) { return nil, fail }, 0, 2, time.Unix(0, 0))
	require.NoError(t, err)
	require.ErrorIs(t, r.Rotate(time.Unix(1, 0)), fail)
	require.Equal(t, 0, r.Len())
	require.Equal(t, uint64(1), r.Failed())

	for _, n := range []int{0, -1} {
		_, err = history.NewRing(func() (*blob.Blob, error) { return nil, nil }, 0, n, time.Time{})
		require.ErrorIs(t, err, voi.ErrInvalid)
		_, err = history.NewRaw(n)
		require.ErrorIs(t, err, voi.ErrInvalid)
	}
	_, err = history.NewRing(nil, 0, 1, time.Time{})
	require.ErrorIs(t, err, voi.ErrInvalid)
}

func TestRingRun(t *testing.T) {
	b := blob.New(latencyTemplate(t), nil)
	r, err := history.NewRing(func() (*blob.Blob, error) { return b.Snapshot(true), nil }, time.Millisecond, 4, time.Now())
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Run(ctx, nil); close(done) }()
	require.Eventually(t, func() bool { return r.Len() >= 2 }, 10*time.Second, time.Millisecond)
	cancel()
	<-done
}

func TestRaw(t *testing.T) {
	r, err := history.NewRaw(3)
	require.NoError(t, err)
	for i := range 5 {
		r.Add(time.Unix(int64(i), 0), float64(i*10))
	}
	var got []float64
	for s := range r.Samples() {
		got = append(got, s.Value)
		require.Equal(t, int64(s.Value/10), s.Time.Unix())
	}
	require.Equal(t, []float64{20, 30, 40}, got)
	require.Equal(t, uint64(2), r.Dropped())
	require.Zero(t, testing.AllocsPerRun(100, func() { r.Add(time.Time{}, 1) }))
}

// An age no period has is answered ok = false, down to the most negative
// int (whose negation is itself).
func TestRingAtOutOfRange(t *testing.T) {
	b := blob.New(latencyTemplate(t), nil)
	r, err := history.NewRing(func() (*blob.Blob, error) { return b.Snapshot(true), nil }, 0, 2, time.Unix(0, 0))
	require.NoError(t, err)
	require.NoError(t, r.Rotate(time.Unix(60, 0)))
	for _, age := range []int{math.MinInt, math.MinInt + 1, -3, -2, 0, 1, math.MaxInt} {
		_, ok := r.At(age)
		require.False(t, ok, age)
	}
	p, ok := r.At(-1)
	require.True(t, ok)
	require.Equal(t, time.Unix(60, 0), p.End)
}

// Samples a histogram holds outside its buckets (its out-of-band counter:
// below a CRHIST's first bucket, between or beyond a DRHIST's ranges) are
// samples all the same: they are in the count that the SUM is averaged
// over, not left out of it.
func TestSummarizeCountsOutOfBand(t *testing.T) {
	tp, err := tpl.NewRegistry().New("OOB")
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "cr", DType: voi.IntU32, Stats: []tpl.StatSpec{
		tpl.Sum(), tpl.HistLin(voi.CRHist32, uint32(10), uint32(100), 10, 0)}}))
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 1, Name: "dr", DType: voi.IntU64, Stats: []tpl.StatSpec{
		tpl.Sum(), tpl.HistRanges(voi.DRHist64, 0, [2]uint64{0, 10}, [2]uint64{20, 30})}}))
	b := blob.New(tp, nil)
	for _, v := range []uint32{5, 50} { // 5 is below the first bucket
		require.NoError(t, b.UpdateU32(0, v))
	}
	for _, v := range []uint64{5, 15, 25, 100} { // 15 and 100 are in no range
		require.NoError(t, b.UpdateU64(1, v))
	}
	for _, c := range []struct {
		id    int32
		count uint64
		avg   float64
	}{{0, 2, 27.5}, {1, 4, 36.25}} {
		s, err := history.Summarize(b, c.id)
		require.NoError(t, err)
		require.Equal(t, c.count, s.Count, c.id)
		require.Equal(t, c.avg, s.Avg, c.id)
	}
}

// A rotation at a time before the open period started (times given out of
// order) closes no period: the samples stay for the next one.
func TestRotateBackwards(t *testing.T) {
	b := blob.New(latencyTemplate(t), nil)
	r, err := history.NewRing(func() (*blob.Blob, error) { return b.Snapshot(true), nil }, 0, 3, time.Unix(60, 0))
	require.NoError(t, err)
	require.NoError(t, b.UpdateU64(0, 7))
	require.ErrorIs(t, r.Rotate(time.Unix(30, 0)), voi.ErrInvalid)
	require.Equal(t, 0, r.Len())
	require.Equal(t, uint64(1), r.Failed())
	require.NoError(t, r.Rotate(time.Unix(120, 0)))
	p, ok := r.At(-1)
	require.True(t, ok)
	require.Equal(t, []time.Time{time.Unix(60, 0), time.Unix(120, 0)}, []time.Time{p.Start, p.End})
	s, err := history.Summarize(p.Blob, 0)
	require.NoError(t, err)
	require.Equal(t, uint64(1), s.Count)
	require.NoError(t, r.Rotate(time.Unix(120, 0))) // an empty period of no time is a period
}

// A VOI with SUM, MIN and MAX whose updates a count VOI counts (the
// metadata's Count, blob.CountedOf) summarizes with that count: number,
// min, average, max, as Linux's range type. Summarize, without the
// template, cannot know it.
func TestSummarizeWithDeclaredCount(t *testing.T) {
	tp, err := tpl.NewRegistry().New("RANGE")
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "lat", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum(), tpl.Min(), tpl.Max()}}))
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 1, Name: "requests", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}))
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 2, Name: "rtt", DType: voi.IntU32, Stats: []tpl.StatSpec{tpl.Sum(), tpl.TDigest(voi.TDgstClust64, 20, 8)}}))
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 3, Name: "rtts", DType: voi.IntU32, Stats: []tpl.StatSpec{tpl.Sum()}}))
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 4, Name: "odd", DType: voi.IntS64, Stats: []tpl.StatSpec{tpl.Sum()}}))
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 5, Name: "signed", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}))
	require.NoError(t, tp.SetVOIMeta(0, tpl.VOIMeta{Unit: "us", Count: "requests"}))
	require.NoError(t, tp.SetVOIMeta(2, tpl.VOIMeta{Count: "rtts"}))
	require.NoError(t, tp.SetVOIMeta(5, tpl.VOIMeta{Count: "odd"}))
	h, err := blob.CountedOf(tp, 0)
	require.NoError(t, err)
	b := blob.New(tp, nil)
	require.NoError(t, h.UpdateU64(b, 10))
	require.NoError(t, h.UpdateU64(b, 30))

	s, err := history.SummarizeWith(tp, b, 0)
	require.NoError(t, err)
	require.Equal(t, history.Summary{Count: 2, Min: 10, Avg: 20, Max: 30, P50: -1, P90: -1, P99: -1}, nanAs(s, -1)) // no quantiles
	old, err := history.Summarize(b, 0)                                                                             // unchanged: it cannot see the count
	require.NoError(t, err)
	require.Equal(t, uint64(0), old.Count)
	require.True(t, math.IsNaN(old.Avg))

	// A declared count (an INT_U32 SUM here) is the count, also beside a
	// t-digest: it counts every update the SUM took.
	require.NoError(t, b.UpdateU32(2, 5))
	require.NoError(t, b.UpdateU32(2, 7))
	require.NoError(t, b.UpdateU32(3, 2))
	s, err = history.SummarizeWith(tp, b, 2)
	require.NoError(t, err)
	require.Equal(t, uint64(2), s.Count)
	require.Equal(t, 6.0, s.Avg)

	// Without a declared count, Summarize's answer.
	s, err = history.SummarizeWith(tp, b, 1)
	require.NoError(t, err)
	s1, err := history.Summarize(b, 1)
	require.NoError(t, err)
	require.Equal(t, nanAs(s1, -1), nanAs(s, -1))

	// Errors.
	_, err = history.SummarizeWith(nil, b, 0)
	require.ErrorIs(t, err, voi.ErrInvalid)
	_, err = history.SummarizeWith(latencyTemplate(t), b, 0)
	require.ErrorIs(t, err, voi.ErrInvalid)
	_, err = history.SummarizeWith(tp, b, 9)
	require.ErrorIs(t, err, voi.ErrNotFound)
	_, err = history.SummarizeWith(tp, b, 5) // counted by a signed SUM
	require.ErrorIs(t, err, voi.ErrTypeMismatch)
}

// nanAs returns s with NaN fields set to x, so that require.Equal
// compares them.
func nanAs(s history.Summary, x float64) history.Summary {
	for _, f := range []*float64{&s.Min, &s.Avg, &s.Max, &s.P50, &s.P90, &s.P99} {
		if math.IsNaN(*f) {
			*f = x
		}
	}
	return s
}
