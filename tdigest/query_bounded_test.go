package tdigest_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/bsdrand"
	"github.com/statsblob/statsblob/tdigest"
	"github.com/statsblob/statsblob/voi"
)

func TestQuantileBounded(t *testing.T) {
	d, err := tdigest.Build(voi.TDgstClust64, 16, 4)
	require.NoError(t, err)
	env := &tdigest.Env{Rand: bsdrand.New(1)}
	// Two far-apart values: centroids at 10 (rank 0.5) and 30 (rank 1.5).
	require.NoError(t, tdigest.Update(d, voi.TDgstClust64, voi.IntU64, 10, env))
	require.NoError(t, tdigest.Update(d, voi.TDgstClust64, voi.IntU64, 30, env))
	for _, c := range []struct{ q, plain, bounded float64 }{
		{0, 10, 0},      // rank 0: min
		{0.125, 10, 5},  // halfway from min (rank 0) to the first mean (rank 0.5)
		{0.5, 20, 20},   // between the means: unchanged
		{0.875, 30, 35}, // halfway from the last mean (rank 1.5) to max (rank 2)
		{1, 30, 40},     // rank N: max
	} {
		got, err := tdigest.Quantile(d, voi.TDgstClust64, c.q)
		require.NoError(t, err)
		require.InDelta(t, c.plain, got, 1e-9, "q=%v", c.q)
		got, err = tdigest.QuantileBounded(d, voi.TDgstClust64, c.q, 0, 40)
		require.NoError(t, err)
		require.InDelta(t, c.bounded, got, 1e-9, "bounded q=%v", c.q)
	}
	// Bounds that do not bracket the means are ignored on that side.
	got, err := tdigest.QuantileBounded(d, voi.TDgstClust64, 0, 15, 25)
	require.NoError(t, err)
	require.InDelta(t, 10, got, 1e-9)
	got, err = tdigest.QuantileBounded(d, voi.TDgstClust64, 1, 15, 25)
	require.NoError(t, err)
	require.InDelta(t, 30, got, 1e-9)
	_, err = tdigest.QuantileBounded(d, voi.TDgstClust64, 1.5, 0, 40)
	require.ErrorIs(t, err, voi.ErrInvalid)
}

// TestCDFBounded: the inverse of QuantileBounded on the digest of
// TestQuantileBounded (means 10 and 30 at ranks 0.5 and 1.5 of 2, samples
// in [0, 40]).
func TestCDFBounded(t *testing.T) {
	dt := voi.TDgstClust64
	d, err := tdigest.Build(dt, 16, 4)
	require.NoError(t, err)
	env := &tdigest.Env{Rand: bsdrand.New(1)}
	require.NoError(t, tdigest.Update(d, dt, voi.IntU64, 10, env))
	require.NoError(t, tdigest.Update(d, dt, voi.IntU64, 30, env))
	f := func(x, plain, bounded float64) {
		t.Helper()
		got, err := tdigest.CDF(d, dt, x)
		require.NoError(t, err)
		require.InDelta(t, plain, got, 1e-12, "x=%v", x)
		got, err = tdigest.CDFBounded(d, dt, x, 0, 40)
		require.NoError(t, err)
		require.InDelta(t, bounded, got, 1e-12, "bounded x=%v", x)
		if bounded > 0 && bounded < 1 {
			q, err := tdigest.QuantileBounded(d, dt, bounded, 0, 40)
			require.NoError(t, err)
			require.InDelta(t, x, q, 1e-9, "QuantileBounded(CDFBounded(%v))", x)
		}
	}
	f(-1, 0, 0)
	f(0, 0, 0)
	f(5, 0, 0.125) // halfway from min (rank 0) to the first mean (rank 0.5)
	f(10, 0.25, 0.25)
	f(20, 0.5, 0.5)
	f(35, 1, 0.875) // halfway from the last mean (rank 1.5) to max (rank 2)
	f(40, 1, 1)
	// Bounds that do not bracket the means are ignored on that side.
	got, err := tdigest.CDFBounded(d, dt, 5, 8, 25)
	require.NoError(t, err)
	require.Zero(t, got)
	got, err = tdigest.CDFBounded(d, dt, 31, 8, 25)
	require.NoError(t, err)
	require.Equal(t, 1.0, got)
}
