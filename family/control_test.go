package family_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/family"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// One Control switches a VOI off in every label set, and ResetVOI resets
// it in all of them.
func TestFamilyControlAndReset(t *testing.T) {
	tp, err := tpl.NewRegistry().New("REQ")
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "bytes", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}))
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 1, Name: "n", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}))
	var ctl blob.Control
	f, err := family.New(tp, []string{"code"}, family.Options{Control: &ctl})
	require.NoError(t, err)
	fb, err := family.NewBlobs(tp, []string{"code"}, family.Options{Control: &ctl})
	require.NoError(t, err)
	for _, code := range []string{"200", "500"} {
		s, err := f.With(code)
		require.NoError(t, err)
		b, err := fb.With(code)
		require.NoError(t, err)
		require.NoError(t, s.UpdateU64(0, 100))
		require.NoError(t, b.UpdateU64(0, 100))
		require.NoError(t, ctl.Set(0, false))
		require.NoError(t, s.UpdateU64(0, 7))
		require.NoError(t, b.UpdateU64(0, 7))
		require.NoError(t, s.UpdateU64(1, 1))
		require.NoError(t, b.UpdateU64(1, 1))
		require.NoError(t, ctl.Set(0, true))
	}
	sums := func() []uint64 {
		var out []uint64
		for _, snaps := range [][]family.Snap{f.Snapshot(false), fb.Snapshot(false)} {
			for _, sn := range snaps {
				for _, id := range []int32{0, 1} {
					v, err := sn.Blob.FetchU64(id, voi.Sum)
					require.NoError(t, err)
					out = append(out, v)
				}
			}
		}
		return out
	}
	require.Equal(t, []uint64{100, 1, 100, 1, 100, 1, 100, 1}, sums())
	require.NoError(t, f.ResetVOI(0))
	require.NoError(t, fb.ResetVOI(1))
	require.Equal(t, []uint64{0, 1, 0, 1, 100, 0, 100, 0}, sums())
	require.ErrorIs(t, f.ResetVOI(5), voi.ErrInvalid)
}
