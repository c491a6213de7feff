package export_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/export"
	"github.com/statsblob/statsblob/tdigest"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

func digestBlob(t *testing.T, dt voi.DType, vals ...int64) (*blob.Blob, *tpl.Template) {
	t.Helper()
	reg := tpl.NewRegistry()
	tp, err := reg.New("N")
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "x", DType: dt, Stats: []tpl.StatSpec{tpl.TDigest(voi.TDgstClust64, 20, 8)}}))
	b := blob.New(tp, blob.NewEnv(nil, 1))
	for _, v := range vals {
		if dt == voi.IntS64 {
			require.NoError(t, b.UpdateS64(0, v))
		} else {
			require.NoError(t, b.UpdateU64(0, uint64(v)))
		}
	}
	return b, tp
}

// The native histogram is the digest's CDF at the bucket bounds, times the
// count, rounded: four centroids of count 1 sit at ranks 0.5 .. 3.5.
func TestNativeHistogram(t *testing.T) {
	f := func(name string, dt voi.DType, vals []int64, want export.ExpHistogramPoint) {
		t.Helper()
		b, tp := digestBlob(t, dt, vals...)
		m, err := export.NewMapper(export.Options{NativeHistogram: true, NativeScale: -1, Quantiles: []float64{}})
		require.NoError(t, err)
		ms, err := m.Append(nil, export.Named{Blob: b, Template: tp})
		require.NoError(t, err)
		require.Len(t, ms, 2, name)
		require.Equal(t, "n_x_tdigest_native", ms[1].Name)
		require.Equal(t, export.KindExpHistogram, ms[1].Kind)
		require.Equal(t, want, *ms[1].Exp, name)
	}
	// base 4: 1 in (1/4, 1] (index -1), 2 and 4 in (1, 4], 8 in (4, 16].
	f("positive", voi.IntU64, []int64{1, 2, 4, 8}, export.ExpHistogramPoint{Scale: -1, Count: 4, Sum: 15,
		Positive: export.ExpBuckets{Offset: -1, Counts: []uint64{1, 2, 1}}})
	// Negative buckets mirror the positive ones: -1 in [-1, -1/4) (index
	// -1), -8 in [-16, -4) (index 1).
	f("both signs", voi.IntS64, []int64{-8, -1, 1, 8}, export.ExpHistogramPoint{Scale: -1, Count: 4, Sum: 0,
		Positive: export.ExpBuckets{Offset: -1, Counts: []uint64{1, 0, 1}},
		Negative: export.ExpBuckets{Offset: -1, Counts: []uint64{1, 0, 1}}})
	f("empty", voi.IntU64, nil, export.ExpHistogramPoint{Scale: -1})
}

// A digest whose means span more buckets than MaxNativeBuckets gets a
// coarser scale; the counts still add up.
func TestNativeHistogramCoarsens(t *testing.T) {
	var vals []int64
	for v := int64(1); v < 1<<40; v *= 3 {
		vals = append(vals, v)
	}
	b, tp := digestBlob(t, voi.IntU64, vals...)
	m, err := export.NewMapper(export.Options{NativeHistogram: true, NativeScale: 8})
	require.NoError(t, err)
	ms, err := m.Append(nil, export.Named{Blob: b, Template: tp})
	require.NoError(t, err)
	e := ms[len(ms)-1].Exp
	require.LessOrEqual(t, len(e.Positive.Counts), export.MaxNativeBuckets)
	require.Equal(t, int32(2), e.Scale, "40 octaves: 2^2 buckets each fit 160")
	var n uint64
	for _, c := range e.Positive.Counts {
		n += c
	}
	require.Equal(t, uint64(len(vals)), n+e.ZeroCount)
}

// Scale 0 chooses the finest scale whose buckets tell every two
// neighbouring means apart: 1000 and 1010 are 1% apart, 2^(2^-7) = 1.0054.
func TestNativeHistogramAutoScale(t *testing.T) {
	f := func(vals []int64, want int32) {
		t.Helper()
		b, tp := digestBlob(t, voi.IntU64, vals...)
		m, err := export.NewMapper(export.Options{NativeHistogram: true, Quantiles: []float64{}})
		require.NoError(t, err)
		ms, err := m.Append(nil, export.Named{Blob: b, Template: tp})
		require.NoError(t, err)
		require.Equal(t, want, ms[1].Exp.Scale, "%v", vals)
		var n uint64
		for _, c := range ms[1].Exp.Positive.Counts {
			n += c
		}
		require.Equal(t, uint64(len(vals)), n)
	}
	f([]int64{1000, 1010}, 7)
	f([]int64{10, 20, 30, 40}, 2)        // 40/30: 2^(1/4) = 1.19
	f([]int64{1, 4, 16}, -1)             // 4 apart: base 4
	f([]int64{5}, export.MaxNativeScale) // one mean
	f([]int64{1000, 1001, 1 << 40}, 2)   // 2^-8 would need 10,000 buckets: coarsened to fit 160
}

// An integer VOI's native histogram counts the samples at or below each
// bound as blob.Stat.CDF estimates them: at the bound's integer part plus
// one half. Small integers, kept exact by the accurate mode, with bucket
// bounds (scale 2: 1, 1.19, 1.41, 1.68, 2, 2.38, 2.83, 3.36, 4, 4.76,
// 5.66) between them: the 1s, 2s and 5 land in their own buckets and one
// of the two 3s in the bucket above (the digest's CDF spreads a
// centroid's samples around its mean: at 3.5 it is 8.375 of 10). The
// digest's CDF at the bounds themselves put one 3 in (2.38, 2.83], where
// no sample lies, and the other in (3.36, 4].
func TestNativeHistogramIntegerSamples(t *testing.T) {
	vals := []uint64{1, 1, 1, 1, 2, 2, 2, 3, 3, 5}
	tp, err := tpl.NewRegistry().New("N")
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "x", DType: voi.IntU64, Stats: []tpl.StatSpec{
		tpl.TDigestOf(tpl.TDigestSpec{DType: voi.TDgstClust64, NCtds: 20, Prec: 8, Mode: tdigest.Accurate}),
	}}))
	b := blob.New(tp, blob.NewEnv(nil, 1))
	for _, v := range vals {
		require.NoError(t, b.UpdateU64(0, v))
	}
	m, err := export.NewMapper(export.Options{NativeHistogram: true, NativeScale: 2, Quantiles: []float64{}})
	require.NoError(t, err)
	ms, err := m.Append(nil, export.Named{Blob: b, Template: tp})
	require.NoError(t, err)
	e := ms[1].Exp
	// Bucket j is (2^(j/4), 2^((j+1)/4)]: 1 in j = -1, 2 in 3, 3 in 6, 5
	// in 9.
	require.Equal(t, export.ExpBuckets{Offset: -1, Counts: []uint64{4, 0, 0, 0, 3, 0, 0, 1, 1, 0, 1}}, e.Positive)

	// Each bound's cumulative count is Stat.CDF's, times the count.
	st, err := b.Fetch(0, voi.TDgst)
	require.NoError(t, err)
	for j := -1; j <= 9; j++ {
		p, err := st.CDF(math.Exp2(float64(j+1) / 4))
		require.NoError(t, err)
		var cum uint64
		for _, c := range e.Positive.Counts[:j+2] {
			cum += c
		}
		require.Equal(t, math.Round(p*float64(len(vals))), float64(cum), "bucket %d", j)
	}
}

// signedDigestBlob is a signed VOI with SUM, MAX, MIN and a t-digest fed
// -10..89 ten times: 100 negative samples, 100 zeros, while the digest's
// centroid means are all at or above zero.
func signedDigestBlob(t testing.TB) (*blob.Blob, *tpl.Template) {
	tp, err := tpl.NewRegistry().New("D")
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "x", DType: voi.IntS64,
		Stats: []tpl.StatSpec{tpl.Sum(), tpl.Max(), tpl.Min(), tpl.TDigest(voi.TDgstClust64, 20, 8)}}))
	b := blob.New(tp, blob.NewEnv(func() int64 { return blob.SBinTime(1_700_000_000, 0) }, 1))
	for i := range 1000 {
		require.NoError(t, b.UpdateS64(0, int64(i%100)-10))
	}
	return b, tp
}

// The native histogram's buckets hold every sample of the digest: Count =
// ZeroCount + the positive and negative buckets (OpenTelemetry's
// ExponentialHistogramDataPoint.count; Prometheus validates the same).
// Buckets used to span only the centroid means: with MIN below zero but
// every mean at or above it, the mass the CDF interpolates between MIN and
// the first mean had no negative bucket and was dropped (Count 1000,
// buckets 907). They now reach out to MIN (and MAX).
func TestNativeHistogramHoldsEverySample(t *testing.T) {
	b, tp := signedDigestBlob(t)
	for _, conv := range []export.Convention{export.OpenTelemetry, export.Prometheus} {
		m, err := export.NewMapper(export.Options{Convention: conv, NativeHistogram: true, NativeScale: -2})
		require.NoError(t, err)
		ms, err := m.Append(nil, export.Named{Blob: b, Template: tp})
		require.NoError(t, err)
		e := ms[len(ms)-1].Exp
		require.NotNil(t, e)
		// Base 16: (1, 16] is bucket 0, (16, 256] bucket 1; MIN -10 is in
		// negative bucket 0, which takes the 93 samples the CDF puts
		// between -10 and the first mean, 0.
		require.Equal(t, export.ExpHistogramPoint{Scale: -2, ZeroCount: 10,
			Positive: export.ExpBuckets{Offset: 0, Counts: []uint64{162, 735}},
			Negative: export.ExpBuckets{Offset: 0, Counts: []uint64{93}},
			Count:    1000, Sum: 39500, Min: -10, Max: 89, HasMinMax: true}, *e, "convention %v", conv)
		require.Equal(t, e.Count, e.ZeroCount+162+735+93)
	}
}

// Negative exponential buckets are the positive ones mirrored: bucket i
// holds [-base^(i+1), -base^i) as positive bucket i holds (base^i,
// base^(i+1)] (OpenTelemetry and Prometheus map negative values by their
// magnitude). The negative side used to read the CDF at -base^(i+1)
// itself, which counts the samples at that bound in the bucket above:
// -1, -2, -4, -8 landed one bucket nearer zero than 1, 2, 4, 8.
func TestNativeHistogramNegativeBucketsMirror(t *testing.T) {
	exp := func(vals ...int64) *export.ExpHistogramPoint {
		b, tp := digestBlob(t, voi.IntS64, vals...)
		m, err := export.NewMapper(export.Options{Convention: export.OpenTelemetry, NativeScale: 1})
		require.NoError(t, err)
		ms, err := m.Append(nil, export.Named{Blob: b, Template: tp})
		require.NoError(t, err)
		return ms[len(ms)-1].Exp
	}
	// Base sqrt(2): 1 in (0.71, 1] (index -1), 2 in (1.41, 2] (1), 4 in
	// (2.83, 4] (3), 8 in (5.66, 8] (5).
	want := export.ExpBuckets{Offset: -1, Counts: []uint64{1, 0, 1, 0, 1, 0, 1}}
	pos, neg := exp(1, 2, 4, 8), exp(-1, -2, -4, -8)
	require.Equal(t, want, pos.Positive)
	require.Empty(t, pos.Negative.Counts)
	require.Equal(t, want, neg.Negative)
	require.Empty(t, neg.Positive.Counts)
	require.Equal(t, uint64(0), neg.ZeroCount)
}
