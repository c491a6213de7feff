package aggregate_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/export"
	"github.com/statsblob/statsblob/export/aggregate"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// A Set loaded from another's state goes on exactly: the same aggregates
// (every count and sum), and the senders' marks, so a copy of a post
// merged before the state is a duplicate after it.
func TestStateRoundTrip(t *testing.T) {
	tp := latTpl(t)
	lookup := func(h uint32) (*tpl.Template, error) {
		if h == tp.Hash() {
			return tp, nil
		}
		return nil, fmt.Errorf("hash %d: %w", h, voi.ErrNotFound)
	}
	blobs, _ := fleet(t, tp, "bimodal", 300, 7)
	start := time.Unix(1_700_000_000, 0)
	a, err := aggregate.New(aggregate.Config{Batch: 64}, start)
	require.NoError(t, err)
	for i, b := range blobs {
		key := fmt.Sprintf("host=%d", i%3)
		labels := []export.Label{{Name: "host", Value: fmt.Sprint(i % 3)}}
		dup, err := a.Once("s", key, uint64(i+1), func() error { return a.Add(key, tp, labels, b) })
		require.NoError(t, err)
		require.False(t, dup)
	}
	state := a.AppendState(nil)

	b, err := aggregate.New(aggregate.Config{Batch: 64}, time.Unix(0, 0))
	require.NoError(t, err)
	require.NoError(t, b.LoadState(state, lookup))
	na, nb := a.Blobs(), b.Blobs()
	require.Len(t, nb, 3)
	for i := range na {
		require.Equal(t, na[i].Labels, nb[i].Labels)
		require.Equal(t, start, nb[i].Start)
		for _, st := range []voi.SType{voi.Sum, voi.Max} {
			x, err := na[i].Blob.FetchU64(0, st)
			require.NoError(t, err)
			y, err := nb[i].Blob.FetchU64(0, st)
			require.NoError(t, err)
			require.Equal(t, x, y)
		}
		sa, err := na[i].Blob.Fetch(0, voi.TDgst)
		require.NoError(t, err)
		sb, err := nb[i].Blob.Fetch(0, voi.TDgst)
		require.NoError(t, err)
		ca, _ := sa.Count()
		cb, _ := sb.Count()
		require.Equal(t, ca, cb)
	}
	require.Equal(t, a.Merged(), b.Merged())
	// a copy of an earlier post is a duplicate after the load
	dup, err := b.Once("s", "host=0", 1, func() error { t.Fatal("merged twice"); return nil })
	require.NoError(t, err)
	require.True(t, dup)
	// and the state of the loaded set is the same state
	require.Equal(t, len(state), len(b.AppendState(nil)))

	// refusals leave the set as it was
	c, err := aggregate.New(aggregate.Config{}, start)
	require.NoError(t, err)
	for _, bad := range [][]byte{nil, []byte("SBAGG1\n"), state[:len(state)-1], append(append([]byte(nil), state...), 0)} {
		require.ErrorIs(t, c.LoadState(bad, lookup), aggregate.ErrState)
		require.Zero(t, c.Len())
	}
	require.ErrorIs(t, c.LoadState(state, func(uint32) (*tpl.Template, error) { return nil, voi.ErrNotFound }), voi.ErrNotFound)
	require.Zero(t, c.Len())
	require.ErrorIs(t, b.LoadState(state, lookup), voi.ErrInvalid) // b holds aggregates
}

func FuzzLoadState(f *testing.F) {
	tp := latTpl(f)
	blobs, _ := fleet(f, tp, "conn-rtt", 5, 1)
	a, err := aggregate.New(aggregate.Config{}, time.Unix(0, 0))
	require.NoError(f, err)
	for i, b := range blobs {
		_, err := a.Once(fmt.Sprint("s", i%2), "k", uint64(i+1), func() error { return a.Add("k", tp, nil, b) })
		require.NoError(f, err)
	}
	f.Add(a.AppendState(nil))
	lookup := func(h uint32) (*tpl.Template, error) {
		if h == tp.Hash() {
			return tp, nil
		}
		return nil, voi.ErrNotFound
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		s, err := aggregate.New(aggregate.Config{}, time.Unix(0, 0))
		require.NoError(t, err)
		if err := s.LoadState(p, lookup); err != nil {
			require.Zero(t, s.Len())
			return
		}
		// what loads can be written and loaded again to the same aggregates
		s2, err := aggregate.New(aggregate.Config{}, time.Unix(0, 0))
		require.NoError(t, err)
		require.NoError(t, s2.LoadState(s.AppendState(nil), lookup))
		require.Equal(t, s.Merged(), s2.Merged())
	})
}

// The marks a state holds are loaded all, counted in MaxMarks, each key
// kept once: a loaded Set with a smaller MaxMarks keeps every number
// (each a post added, whose retry must stay a duplicate) and tracks no
// new one until places are freed.
func TestStateMarksCountedInMaxMarks(t *testing.T) {
	tp := latTpl(t)
	lookup := func(uint32) (*tpl.Template, error) { return tp, nil }
	a, err := aggregate.New(aggregate.Config{}, time.Unix(0, 0))
	require.NoError(t, err)
	for _, id := range []string{"s1", "s2", "s3"} {
		for _, key := range []string{"k1", "k2"} {
			_, err := a.Once(id, key, 1, func() error { return a.Add(key, tp, nil, blob.New(tp, nil)) })
			require.NoError(t, err)
		}
	}
	b, err := aggregate.New(aggregate.Config{MaxMarks: 4}, time.Unix(0, 0))
	require.NoError(t, err)
	require.NoError(t, b.LoadState(a.AppendState(nil), lookup))
	require.Equal(t, 6, b.Stats().Marks)
	require.Equal(t, 2, aggregate.MarkKeys(b))
	for _, id := range []string{"s1", "s2", "s3"} {
		dup, err := b.Once(id, "k2", 1, func() error { t.Fatal("merged twice"); return nil })
		require.NoError(t, err)
		require.True(t, dup)
	}
	dup, err := b.Once("s4", "k1", 1, func() error { return nil })
	require.NoError(t, err)
	require.False(t, dup)
	require.Equal(t, uint64(1), b.Stats().MarksFull)
	require.Equal(t, 6, b.Stats().Marks)
}
