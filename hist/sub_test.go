package hist_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/hist"
	"github.com/statsblob/statsblob/voi"
)

func TestSub(t *testing.T) {
	for _, hdt := range []voi.DType{voi.CRHist32, voi.CRHist64, voi.DRHist64, voi.DVHist32} {
		spec := hist.Spec{DType: hdt, Scheme: hist.Lin, LB: 5, UB: 35, StepInc: 10}
		old, err := spec.Build(voi.IntU64)
		require.NoError(t, err)
		for _, v := range []uint64{1, 15, 25} {
			require.NoError(t, hist.Update(old, hdt, voi.IntU64, v))
		}
		cur := append([]byte(nil), old...)
		for _, v := range []uint64{2, 15, 15, 35} {
			require.NoError(t, hist.Update(cur, hdt, voi.IntU64, v))
		}
		want, err := spec.Build(voi.IntU64)
		require.NoError(t, err)
		for _, v := range []uint64{2, 15, 15, 35} {
			require.NoError(t, hist.Update(want, hdt, voi.IntU64, v))
		}
		require.NoError(t, hist.Sub(cur, old, hdt), hdt)
		require.Equal(t, want, cur, hdt)

		// out of order: old counts more; cur stays as it was
		before := append([]byte(nil), old...)
		require.ErrorIs(t, hist.Sub(old, cur, hdt), voi.ErrInvalid)
		require.Equal(t, before, old)
	}
	a, err := hist.Spec{DType: voi.CRHist64, Scheme: hist.Lin, LB: 0, UB: 10, StepInc: 5}.Build(voi.IntU64)
	require.NoError(t, err)
	b, err := hist.Spec{DType: voi.CRHist64, Scheme: hist.Lin, LB: 0, UB: 20, StepInc: 5}.Build(voi.IntU64)
	require.NoError(t, err)
	require.ErrorIs(t, hist.Sub(a, b, voi.CRHist64), voi.ErrInvalid)
}
