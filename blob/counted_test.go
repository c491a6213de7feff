package blob_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/internal/alloctest"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

func countedTemplate(t testing.TB) *tpl.Template {
	tp, err := tpl.NewRegistry().New("HTTP")
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "latency_us", DType: voi.IntU32, Stats: []tpl.StatSpec{tpl.Sum(), tpl.Max()}}))
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 1, Name: "requests", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}))
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 2, Name: "size", DType: voi.IntS64, Stats: []tpl.StatSpec{tpl.Sum()}}))
	require.NoError(t, tp.SetVOIMeta(0, tpl.VOIMeta{Unit: "us", Count: "requests"}))
	return tp
}

func TestCounted(t *testing.T) {
	tp := countedTemplate(t)
	h, err := blob.CountedOf(tp, 0)
	require.NoError(t, err)
	require.Equal(t, int32(1), h.CountID())
	bl := blob.New(tp, nil)
	for _, v := range []uint32{120, 80, 1000} {
		require.NoError(t, h.UpdateU32(bl, v))
	}
	st, err := bl.Fetch(0, voi.Sum)
	require.NoError(t, err)
	sum, _ := st.Value()
	n, _ := bl.FetchU64(1, voi.Sum)
	require.Equal(t, 1200.0, sum)
	require.Equal(t, uint64(3), n)

	// Refused updates are not counted; off VOIs neither.
	require.ErrorIs(t, h.UpdateU64(bl, 5), voi.ErrInvalid)
	var c blob.Control
	require.NoError(t, c.Set(0, false))
	bl.SetControl(&c)
	require.NoError(t, h.UpdateU32(bl, 5))
	n, _ = bl.FetchU64(1, voi.Sum)
	require.Equal(t, uint64(3), n)
	require.NoError(t, h.Update(bl, voi.IntU32, 5), "the untyped form, off too")
	n, _ = bl.FetchU64(1, voi.Sum)
	require.Equal(t, uint64(3), n)
	bl.SetControl(nil)
	require.NoError(t, h.Update(bl, voi.IntU32, 800), "the untyped form")
	require.ErrorIs(t, h.Update(bl, voi.IntU64, 1), voi.ErrInvalid, "another type: refused, not counted")
	require.ErrorIs(t, h.UpdateFloat(bl, 1.5), voi.ErrInvalid, "not a Q VOI: refused, not counted")
	n, _ = bl.FetchU64(1, voi.Sum)
	require.Equal(t, uint64(4), n)
	require.Zero(t, alloctest.Bytes(100, func() { _ = h.UpdateU32(bl, 7) }))

	_, err = blob.CountedOf(tp, 2)
	require.ErrorIs(t, err, voi.ErrNotFound)
	require.NoError(t, tp.SetVOIMeta(1, tpl.VOIMeta{Count: "size"}))
	_, err = blob.CountedOf(tp, 1)
	require.ErrorIs(t, err, voi.ErrTypeMismatch)
}
