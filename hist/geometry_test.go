package hist_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/hist"
	"github.com/statsblob/statsblob/voi"
)

// TestGeometry: the C's bucket structs, and agreement with DataSize,
// NumBuckets and the data Build makes.
func TestGeometry(t *testing.T) {
	for dt, want := range map[voi.DType]hist.Geometry{
		voi.CRHist32: {Header: 8, Size: 16, Bounds: 1, CountOff: 8, Count32: true},
		voi.DRHist32: {Header: 8, Size: 24, Bounds: 2, CountOff: 16, Count32: true},
		voi.DVHist32: {Header: 8, Size: 16, Bounds: 1, CountOff: 8, Count32: true},
		voi.CRHist64: {Header: 8, Size: 16, Bounds: 1, CountOff: 8},
		voi.DRHist64: {Header: 8, Size: 24, Bounds: 2, CountOff: 16},
		voi.DVHist64: {Header: 8, Size: 16, Bounds: 1, CountOff: 8},
	} {
		g, ok := hist.GeometryOf(dt)
		require.True(t, ok, "%v", dt)
		require.Equal(t, want, g, "%v", dt)
		require.Equal(t, g.Header+5*g.Size, hist.DataSize(dt, 5))
		require.Equal(t, 5, hist.NumBuckets(dt, g.Header+5*g.Size+3))
		d, err := hist.Spec{DType: dt, Scheme: hist.Usr, Buckets: []hist.Bound{{LB: 1, UB: 2}, {LB: 5, UB: 9}}}.Build(voi.IntU64)
		require.NoError(t, err)
		require.Len(t, d, g.Header+2*g.Size)
		// The second bucket's first bound is 5 (both bounds for DR).
		require.Equal(t, byte(5), d[g.Header+g.Size])
	}
	_, ok := hist.GeometryOf(voi.IntU64)
	require.False(t, ok)
}
