package blob_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/qmath"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// TestHandles: a handle is made only for a VOI of its type, and its
// updates are the typed updates by id.
func TestHandles(t *testing.T) {
	tp := manpage(t) // VOI 0 INT_S64 (relative, MIN), VOI 2 INT_U32 (SUM, MAX)
	s64, err := blob.S64Of(tp, 0)
	require.NoError(t, err)
	u32, err := blob.U32Of(tp, 2)
	require.NoError(t, err)
	require.Equal(t, int32(2), u32.ID())

	_, err = blob.U64Of(tp, 2)
	require.ErrorIs(t, err, voi.ErrTypeMismatch)
	require.EqualError(t, err, `blob: handle of VOI 2 of "MANPAGE":1055273817: the VOI is INT_U32, the handle INT_U64: wrong data type`)
	_, err = blob.U32Of(tp, 1)
	require.ErrorIs(t, err, voi.ErrNotFound)
	_, err = blob.QOf(tp, 0)
	require.ErrorIs(t, err, voi.ErrTypeMismatch)

	byHandle, byID := blob.New(tp, fixedEnv()), blob.New(tp, fixedEnv())
	require.NoError(t, u32.Update(byHandle, 7))
	require.NoError(t, byID.UpdateU32(2, 7))
	require.NoError(t, s64.UpdateRel(byHandle, -3))
	require.NoError(t, byID.UpdateRelS64(0, -3))
	require.NoError(t, s64.Update(byHandle, 9))
	require.NoError(t, byID.UpdateS64(0, 9))
	require.Equal(t, byID.Bytes(), byHandle.Bytes())

	qt := qtemplate(t) // VOI 0 Q_S64/16 SUM MAX MIN
	q, err := blob.QOf(qt, 0)
	require.NoError(t, err)
	qh, qi := blob.New(qt, fixedEnv()), blob.New(qt, fixedEnv())
	require.NoError(t, q.Update(qh, 2.5))
	require.NoError(t, qi.UpdateFloat(0, 2.5))
	require.NoError(t, q.UpdateQ(qh, qmath.Ini(qmath.S64, 1, 16)))
	require.NoError(t, qi.UpdateQ(0, qmath.Ini(qmath.S64, 1, 16)))
	require.Equal(t, qi.Bytes(), qh.Bytes())
}

func ExampleU32Of() {
	t, _ := tpl.NewRegistry().New("CONN")
	_ = t.AddVOI(tpl.VOIDef{ID: 1, Name: "rtt", DType: voi.IntU32, Stats: []tpl.StatSpec{tpl.Max()}})
	rtt, err := blob.U32Of(t, 1) // checked once: VOI 1 is INT_U32
	if err != nil {
		panic(err)
	}
	b := blob.New(t, nil)
	_ = rtt.Update(b, 180) // takes a uint32 only: rtt.Update(b, int64(180)) does not compile
	max, _ := b.FetchU32(rtt.ID(), voi.Max)
	fmt.Println(max)
	_, err = blob.U64Of(t, 1)
	fmt.Println(err)
	// Output:
	// 180
	// blob: handle of VOI 1 of "CONN":2933984922: the VOI is INT_U32, the handle INT_U64: wrong data type
}

// TestHandlesOnSharded: a typed handle updates a Sharded as it updates a
// Blob, and a Sharded takes float updates: one shard ends up with the bytes
// of one blob given the same updates.
func TestHandlesOnSharded(t *testing.T) {
	tp := qtemplate(t) // VOI 0 Q_S64 prec 16 (SUM, MAX, MIN), VOI 4 INT_U64 (SUM)
	q, err := blob.QOf(tp, 0)
	require.NoError(t, err)
	u64, err := blob.U64Of(tp, 4)
	require.NoError(t, err)

	clock := func() int64 { return 0 }
	sh := blob.NewSharded(tp, 1, clock)
	one := blob.New(tp, blob.NewEnv(clock, 1))
	for _, x := range []float64{1.5, -0.25, 2.125} {
		require.NoError(t, q.Update(sh, x))
		require.NoError(t, sh.UpdateFloat(0, x/2))
		require.NoError(t, q.Update(one, x))
		require.NoError(t, one.UpdateFloat(0, x/2))
	}
	require.NoError(t, u64.Update(sh, 40))
	require.NoError(t, u64.Update(one, 40))
	require.NoError(t, q.UpdateQ(sh, qmath.Ini(qmath.S64, 2, 16)))
	require.NoError(t, q.UpdateQ(one, qmath.Ini(qmath.S64, 2, 16)))
	require.ErrorIs(t, sh.UpdateFloat(4, 1), voi.ErrInvalid, "an integer VOI")

	snap, err := sh.Snapshot(false)
	require.NoError(t, err)
	for _, st := range []voi.SType{voi.Sum, voi.Max, voi.Min} {
		want, err := one.Fetch(0, st)
		require.NoError(t, err)
		got, err := snap.Fetch(0, st)
		require.NoError(t, err)
		wv, _ := want.Value()
		gv, _ := got.Value()
		require.Equal(t, wv, gv, "%v", st)
	}
	s, err := snap.Fetch(4, voi.Sum)
	require.NoError(t, err)
	v, _ := s.Value()
	require.Equal(t, 40.0, v)
	require.Zero(t, testing.AllocsPerRun(100, func() { _ = u64.Update(sh, 1) }))
}
