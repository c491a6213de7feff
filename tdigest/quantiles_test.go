package tdigest_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/tdigest"
	"github.com/statsblob/statsblob/voi"
)

// Quantiles gives exactly Quantile's and QuantileBounded's estimates.
func TestQuantilesEqualsQuantile(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	qs := []float64{0.999, 0, 0.5, 0.9, 0.99, 1, 0.001, 0.25}
	for k := range 30 {
		dt, slots := voi.TDgstClust32, uint32(20)
		if k%2 == 1 {
			dt, slots = voi.TDgstClust64, 80
		}
		vals := make([]uint64, 1+r.IntN(3000))
		for i := range vals {
			vals[i] = uint64(r.ExpFloat64() * 1000 * float64(1+k%4))
		}
		d := digestOf(t, dt, slots, 4, uint32(k), vals...)
		got, err := tdigest.Quantiles(d, dt, qs, math.NaN(), math.NaN(), nil)
		require.NoError(t, err)
		lo, hi := 0.0, 1e9
		gotB, err := tdigest.Quantiles(d, dt, qs, lo, hi, nil)
		require.NoError(t, err)
		for i, q := range qs {
			want, err := tdigest.Quantile(d, dt, q)
			require.NoError(t, err)
			require.Equal(t, want, got[i], "q=%v", q)
			wantB, err := tdigest.QuantileBounded(d, dt, q, lo, hi)
			require.NoError(t, err)
			require.Equal(t, wantB, gotB[i], "bounded q=%v", q)
		}
	}
	empty := mustBuild(t, voi.TDgstClust32, 20, 4)
	_, err := tdigest.Quantiles(empty, voi.TDgstClust32, qs, math.NaN(), math.NaN(), nil)
	require.ErrorIs(t, err, tdigest.ErrEmpty)
	_, err = tdigest.Quantiles(empty, voi.TDgstClust32, []float64{1.5}, math.NaN(), math.NaN(), nil)
	require.ErrorIs(t, err, voi.ErrInvalid)
}
