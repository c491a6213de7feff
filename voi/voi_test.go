package voi_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/voi"
)

func TestDTypeNamesAndSizes(t *testing.T) {
	cases := []struct {
		d    voi.DType
		name string
		size int
	}{
		{voi.VoiState, "VOISTATE", 8},
		{voi.IntS32, "INT_S32", 4},
		{voi.IntULong, "INT_ULONG", 8},
		{voi.QU32, "Q_U32", 4},
		{voi.QS64, "Q_S64", 8},
		{voi.DRHist32, "DRHIST32", 8},
		{voi.TDgstClust32, "TDGSTCLUST32", 20},
		{voi.TDgstClust64, "TDGSTCLUST64", 32},
		{voi.NumDTypes, "dtype(19)", 0},
		{255, "dtype(255)", 0},
	}
	for _, c := range cases {
		require.Equal(t, c.name, c.d.String())
		require.Equal(t, c.size, c.d.Size(), c.name)
		if c.d.Valid() {
			got, ok := voi.ParseDType(c.name)
			require.True(t, ok)
			require.Equal(t, c.d, got)
		}
	}
	d, ok := voi.ParseDType("crhist64")
	require.True(t, ok, "names are case-insensitive")
	require.Equal(t, voi.CRHist64, d)
	_, ok = voi.ParseDType("INT_S16")
	require.False(t, ok)
}

func TestDTypeClasses(t *testing.T) {
	for d := voi.DType(0); d < voi.NumDTypes; d++ {
		n := 0
		for _, in := range []bool{d == voi.VoiState, d.IsNumeric(), d.IsHist(), d.IsTDigest()} {
			if in {
				n++
			}
		}
		require.Equal(t, 1, n, "%v is in exactly one class", d)
		require.Equal(t, d.IsInt() || d.IsQ(), d.IsNumeric(), d.String())
		require.Equal(t, !d.IsNumeric(), d.IsCompound(), d.String())
	}
	require.True(t, voi.IntSLong.Signed())
	require.False(t, voi.QU64.Signed())
	require.True(t, voi.QU32.Is32())
	require.False(t, voi.IntSLong.Is32())
}

func TestSTypeNames(t *testing.T) {
	require.Equal(t, "TDGST", voi.TDgst.String())
	require.Equal(t, "-1", voi.SType(-1).String())
	require.Equal(t, "256", voi.STypeName(256))
	st, ok := voi.ParseSType("min")
	require.True(t, ok)
	require.Equal(t, voi.Min, st)
}

func TestErrno(t *testing.T) {
	require.Equal(t, 0, voi.Errno(nil))
	require.Equal(t, voi.EINVAL, voi.Errno(fmt.Errorf("ctx: %w", voi.ErrInvalid)))
	require.Equal(t, voi.EFTYPE, voi.Errno(voi.ErrTypeMismatch))
	require.Equal(t, voi.ESRCH, voi.Errno(voi.ErrNoTemplate))
	require.Equal(t, -1, voi.Errno(errors.New("other")))
	require.Equal(t, "EOVERFLOW", voi.ErrnoName(84))
	require.Equal(t, "E?", voi.ErrnoName(1))
	require.Same(t, voi.ErrAgain, voi.ErrorOf(voi.EAGAIN))
	require.NoError(t, voi.ErrorOf(0))
}

func TestAppendNumeric(t *testing.T) {
	cases := []struct {
		d    voi.DType
		v    uint64
		want string
	}{
		{voi.IntS32, 0xFFFFFFFF, "-1"},
		{voi.IntS32, 0xFFFFFFFF_7FFFFFFF, "2147483647"}, // high half is padding
		{voi.IntU32, 0xFFFFFFFF, "4294967295"},
		{voi.IntS64, 1 << 63, "-9223372036854775808"},
		{voi.IntULong, ^uint64(0), "18446744073709551615"},
		{voi.CRHist32, 1, ""},
	}
	for _, c := range cases {
		require.Equal(t, c.want, string(voi.AppendNumeric(nil, c.d, c.v)), "%v %#x", c.d, c.v)
	}
}

func TestLimits(t *testing.T) {
	require.Equal(t, uint64(0x80000000), voi.LimitMin(voi.IntS32))
	require.Equal(t, uint64(0xFFFFFFFF), voi.LimitMax(voi.IntU32))
	require.Equal(t, uint64(0xFFFFFFFFFFFFFFF8), voi.LimitMin(voi.QS64))
	require.Equal(t, uint64(0xFFFFFFF8), voi.LimitMax(voi.QU32))
	require.Zero(t, voi.LimitMax(voi.CRHist32))
}

func TestInitial(t *testing.T) {
	cases := []struct {
		st   voi.SType
		d    voi.DType
		ctrl uint64
		want uint64
	}{
		{voi.Sum, voi.IntS32, 5, 0},
		{voi.Max, voi.IntS32, 5, 0x80000000},
		{voi.Min, voi.IntU64, 0, ^uint64(0)},
		{voi.Sum, voi.QS64, 4, 4},
		{voi.Max, voi.QS64, 4, 0xFFFFFFFFFFFFFFFC},
		{voi.Min, voi.QU32, 9, 0xFFFFFFF9}, // control bits are 3 bits
	}
	for _, c := range cases {
		require.Equal(t, c.want, voi.Initial(c.st, c.d, c.ctrl), "%v %v", c.st, c.d)
	}
}

func TestErrnoOfDuplicateVOI(t *testing.T) {
	err := fmt.Errorf("tpl: T: add VOI 0: %w", voi.ErrVOIExists)
	require.ErrorIs(t, err, voi.ErrExists)
	require.Equal(t, voi.EOPNOTSUPP, voi.Errno(err), "the C's errno")
	require.Equal(t, voi.EEXIST, voi.Errno(fmt.Errorf("x: %w", voi.ErrExists)))
	require.EqualError(t, err, "tpl: T: add VOI 0: already exists")
}

func TestFlagsDistinct(t *testing.T) {
	require.NotEqual(t, voi.FlagRelUpdate, voi.FlagReqState)
	require.Equal(t, 0x0001, voi.FlagReqState, "the C's VOI_REQSTATE, stored in blobs")
}

func TestRound(t *testing.T) {
	for _, c := range []struct {
		dt      voi.DType
		x, want float64
	}{
		{voi.IntU32, 2.5, 3},
		{voi.IntU64, 1234.37, 1234},
		{voi.IntS32, -2.5, -3},
		{voi.IntS64, -0.4, 0},
		{voi.QS64, 2.5, 2.5},
		{voi.QU32, 1234.37, 1234.37},
	} {
		require.Equal(t, c.want, c.dt.Round(c.x), "%v %v", c.dt, c.x)
	}
}
