package tdigest_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/tdigest"
	"github.com/statsblob/statsblob/voi"
)

// centroids returns a digest's centroids in mean order as (mean, count).
func centroidList(d []byte, dt voi.DType) [][2]float64 {
	var out [][2]float64
	for c := range tdigest.Centroids(d, dt) {
		out = append(out, [2]float64{c.Mean(), float64(c.Count)})
	}
	return out
}

func TestMergeAllFromWidensExactly(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	vals := make([]uint64, 5000)
	for i := range vals {
		vals[i] = uint64(r.IntN(1 << 20))
	}
	narrow := digestOf(t, voi.TDgstClust32, 20, 4, 7, vals...)
	wide := mustBuild(t, voi.TDgstClust64, 80, 4)
	require.NoError(t, tdigest.MergeAllFrom(wide, voi.TDgstClust64, voi.TDgstClust32, narrow))
	require.NoError(t, tdigest.Validate(wide, voi.TDgstClust64))
	require.Equal(t, count(t, narrow, voi.TDgstClust32), count(t, wide, voi.TDgstClust64))
	require.Equal(t, centroidList(narrow, voi.TDgstClust32), centroidList(wide, voi.TDgstClust64))
	for _, q := range []float64{0, 0.1, 0.5, 0.9, 0.99, 1} {
		a, err := tdigest.Quantile(narrow, voi.TDgstClust32, q)
		require.NoError(t, err)
		b, err := tdigest.Quantile(wide, voi.TDgstClust64, q)
		require.NoError(t, err)
		require.Equal(t, a, b, "q=%v", q)
	}
	// Many sources merge in one step, in any order, every sample counted.
	// (Not the bytes of the sources widened one by one and merged: a
	// source narrower than the destination spreads its heavy centroids
	// as one of its width does not; see splitCentroids.)
	srcs := [][]byte{narrow, digestOf(t, voi.TDgstClust32, 20, 4, 8, vals[:999]...), digestOf(t, voi.TDgstClust32, 20, 4, 9, 5, 6, 7)}
	direct := mustBuild(t, voi.TDgstClust64, 80, 4)
	require.NoError(t, tdigest.MergeAllFrom(direct, voi.TDgstClust64, voi.TDgstClust32, srcs...))
	reversed := mustBuild(t, voi.TDgstClust64, 80, 4)
	require.NoError(t, tdigest.MergeAllFrom(reversed, voi.TDgstClust64, voi.TDgstClust32, srcs[2], srcs[1], srcs[0]))
	require.Equal(t, reversed, direct)
	require.Equal(t, uint64(5000+999+3), count(t, direct, voi.TDgstClust64))

	// Errors: a source that is not a digest of its type changes nothing.
	before := slices.Clone(direct)
	require.ErrorIs(t, tdigest.MergeAllFrom(direct, voi.TDgstClust64, voi.TDgstClust32, wide), voi.ErrInvalid)
	require.Equal(t, before, direct)
}
