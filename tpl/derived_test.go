package tpl_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// TestAppendDerived: the derived value is made once per version of the
// template, from exactly the bytes returned beside it.
func TestAppendDerived(t *testing.T) {
	tp, err := tpl.NewRegistry().New("D")
	require.NoError(t, err)
	calls := 0
	mk := func(b []byte) any { calls++; return len(b) }
	for range 3 {
		b, hash, v := tp.AppendDerived([]byte("x"), mk)
		require.Equal(t, 1+tp.Size(), len(b))
		require.Equal(t, tp.Hash(), hash)
		require.Equal(t, tp.Size(), v)
	}
	require.Equal(t, 1, calls)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 3, Name: "v", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}))
	b, hash, v := tp.AppendDerived(nil, mk)
	require.Equal(t, 2, calls)
	require.Equal(t, len(b), v)
	want, wantHash := tp.AppendBytes(nil)
	require.Equal(t, want, b)
	require.Equal(t, wantHash, hash)
}
