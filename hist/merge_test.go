package hist_test

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/hist"
	"github.com/statsblob/statsblob/voi"
)

func TestMerge(t *testing.T) {
	spec := hist.Spec{DType: voi.CRHist32, Scheme: hist.Lin, LB: 5, UB: 35, StepInc: 10}
	a, err := spec.Build(voi.IntU32)
	require.NoError(t, err)
	b, err := spec.Build(voi.IntU32)
	require.NoError(t, err)
	for _, v := range []uint64{1, 15, 25, 100} {
		require.NoError(t, hist.Update(a, voi.CRHist32, voi.IntU32, v))
	}
	for _, v := range []uint64{2, 3, 7, 100} {
		require.NoError(t, hist.Update(b, voi.CRHist32, voi.IntU32, v))
	}
	sat, err := hist.Merge(a, b, voi.CRHist32)
	require.NoError(t, err)
	require.False(t, sat)
	var got []uint64
	for i := 0; i < hist.NumBuckets(voi.CRHist32, len(a)); i++ {
		_, _, c := hist.Bucket(a, voi.CRHist32, voi.IntU32, i)
		got = append(got, c)
	}
	require.Equal(t, []uint64{1, 1, 1, 2}, got) // [5,15) [15,25) [25,35) [35,max)
	require.Equal(t, uint64(3), hist.OOB(a, voi.CRHist32))
	require.Equal(t, uint64(2), hist.OOB(b, voi.CRHist32), "src is not modified")

	// Saturation at the 32-bit maximum.
	binary.LittleEndian.PutUint32(a[8+8:], 0xFFFFFFFF)
	sat, err = hist.Merge(a, b, voi.CRHist32)
	require.NoError(t, err)
	require.True(t, sat)
	_, _, c := hist.Bucket(a, voi.CRHist32, voi.IntU32, 0)
	require.Equal(t, uint64(0xFFFFFFFF), c)

	// Different layouts change nothing.
	other, err := hist.Spec{DType: voi.CRHist32, Scheme: hist.Lin, LB: 5, UB: 35, StepInc: 5}.Build(voi.IntU32)
	require.NoError(t, err)
	before := append([]byte(nil), a...)
	_, err = hist.Merge(a, other, voi.CRHist32)
	require.ErrorIs(t, err, voi.ErrInvalid)
	shifted, err := hist.Spec{DType: voi.CRHist32, Scheme: hist.Lin, LB: 6, UB: 36, StepInc: 10}.Build(voi.IntU32)
	require.NoError(t, err)
	_, err = hist.Merge(a, shifted, voi.CRHist32)
	require.ErrorIs(t, err, voi.ErrInvalid)
	_, err = hist.Merge(a, b[:len(b)-16], voi.CRHist32)
	require.ErrorIs(t, err, voi.ErrInvalid)
	_, err = hist.Merge(a, b, voi.DRHist32) // 72 bytes are not 8 + n*24
	require.ErrorIs(t, err, voi.ErrInvalid)
	_, err = hist.Merge(a, b, voi.IntU32)
	require.ErrorIs(t, err, voi.ErrInvalid)
	require.Equal(t, before, a)
}
