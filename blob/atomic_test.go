package blob_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/qmath"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// qtpl has a Q VOI with relative updates at 16 fractional bits: its state
// starts as a 2-bit Q, so a relative update fails with ERANGE before
// touching any statistic (the C's behaviour).
func qtpl(t *testing.T) *tpl.Template {
	t.Helper()
	tp, err := tpl.NewRegistry().New("Q")
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "q", DType: voi.QS64, Prec: 16, Flags: voi.FlagRelUpdate, Stats: []tpl.StatSpec{tpl.Sum(), tpl.Max()}}))
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 1, Name: "u", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}))
	return tp
}

// TestFailedCallsChangeNothing: every public mutating call that returns an
// error (outside the C's per-statistic update semantics, where a failing
// statistic counts its error) leaves the blob byte-identical.
func TestFailedCallsChangeNothing(t *testing.T) {
	q16 := qmath.Ini(qmath.S64, 3, 16)
	cases := []struct {
		name string
		call func(b *blob.Blob, other *blob.Blob) error
		want error
	}{
		{"UpdateU64 negative id", func(b, _ *blob.Blob) error { return b.UpdateU64(-1, 1) }, voi.ErrInvalid},
		{"UpdateU64 id beyond", func(b, _ *blob.Blob) error { return b.UpdateU64(9, 1) }, voi.ErrInvalid},
		{"UpdateU32 wrong type", func(b, _ *blob.Blob) error { return b.UpdateU32(1, 1) }, voi.ErrInvalid},
		{"UpdateS32 wrong type", func(b, _ *blob.Blob) error { return b.UpdateS32(1, 1) }, voi.ErrInvalid},
		{"UpdateS64 wrong type", func(b, _ *blob.Blob) error { return b.UpdateS64(1, 1) }, voi.ErrInvalid},
		{"UpdateSLong wrong type", func(b, _ *blob.Blob) error { return b.UpdateSLong(1, 1) }, voi.ErrInvalid},
		{"UpdateULong wrong type", func(b, _ *blob.Blob) error { return b.UpdateULong(1, 1) }, voi.ErrInvalid},
		{"UpdateQ wrong kind", func(b, _ *blob.Blob) error { return b.UpdateQ(0, qmath.Ini(qmath.U64, 1, 16)) }, voi.ErrInvalid},
		{"UpdateRelU64 without state", func(b, _ *blob.Blob) error { return b.UpdateRelU64(1, 1) }, voi.ErrInvalid},
		{"UpdateRelS32 wrong type", func(b, _ *blob.Blob) error { return b.UpdateRelS32(0, 1) }, voi.ErrInvalid},
		{"UpdateRelU32 wrong type", func(b, _ *blob.Blob) error { return b.UpdateRelU32(0, 1) }, voi.ErrInvalid},
		{"UpdateRelS64 wrong type", func(b, _ *blob.Blob) error { return b.UpdateRelS64(0, 1) }, voi.ErrInvalid},
		{"UpdateRelSLong wrong type", func(b, _ *blob.Blob) error { return b.UpdateRelSLong(0, 1) }, voi.ErrInvalid},
		{"UpdateRelULong wrong type", func(b, _ *blob.Blob) error { return b.UpdateRelULong(0, 1) }, voi.ErrInvalid},
		{"UpdateRelQ precision mismatch", func(b, _ *blob.Blob) error { return b.UpdateRelQ(0, q16) }, voi.ErrRange},
		{"Update unknown dtype", func(b, _ *blob.Blob) error { return b.Update(1, 77, 1, false) }, voi.ErrInvalid},
		{"Update histogram dtype", func(b, _ *blob.Blob) error { return b.Update(1, voi.CRHist64, 1, false) }, voi.ErrInvalid},
		{"CloneInto tiny destination", func(b, _ *blob.Blob) error { return b.CloneInto(make([]byte, 64), 7) }, voi.ErrInvalid},
		{"CloneInto short destination", func(b, _ *blob.Blob) error { return b.CloneInto(make([]byte, 64), 64) }, voi.ErrOverflow},
		{"SnapshotInto short destination with reset", func(b, _ *blob.Blob) error { return b.SnapshotInto(make([]byte, 64), 64, true) }, voi.ErrOverflow},
		{"Merge of another template", func(b, other *blob.Blob) error { return blob.Merge(b, other) }, voi.ErrInvalid},
		{"UnmarshalBinary of garbage", func(b, _ *blob.Blob) error { return b.UnmarshalBinary([]byte{1, 2, 3}) }, voi.ErrInvalid},
		{"UnmarshalBinary of another ABI", func(b, other *blob.Blob) error {
			p := append([]byte(nil), other.Bytes()...)
			p[0] = 2
			return b.UnmarshalBinary(p)
		}, voi.ErrNotSupported},
	}
	other := blob.New(manpage(t), fixedEnv())
	for _, c := range cases {
		b := blob.New(qtpl(t), fixedEnv())
		require.NoError(t, b.UpdateQ(0, qmath.Ini(qmath.S64, 2, 16)))
		require.NoError(t, b.UpdateU64(1, 5))
		before := append([]byte(nil), b.Bytes()...)
		err := c.call(b, other)
		require.ErrorIs(t, err, c.want, c.name)
		require.Equal(t, before, b.Bytes(), c.name)
	}

	// Sharded: failed updates change no shard.
	s := blob.NewSharded(qtpl(t), 2, func() int64 { return blob.SBinTime(1000, 0) })
	require.NoError(t, s.UpdateU64(1, 5))
	before, err := s.Snapshot(false)
	require.NoError(t, err)
	require.ErrorIs(t, s.UpdateU32(1, 1), voi.ErrInvalid)
	require.ErrorIs(t, s.UpdateU64(-5, 1), voi.ErrInvalid)
	require.ErrorIs(t, s.UpdateQ(1, q16), voi.ErrInvalid)
	after, err := s.Snapshot(false)
	require.NoError(t, err)
	require.Equal(t, before.Bytes(), after.Bytes())
}
