package blob_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/tdigest"
	"github.com/statsblob/statsblob/voi"
)

// TestSnapshotShipsWithoutRace is the README's snapshot-and-ship pattern:
// the live blob keeps taking t-digest updates on one goroutine while its
// snapshots are merged into (and updated) on another. Run with -race
// (make test does): before, a snapshot shared the live blob's Env, and the
// merge and the updates drew from one random source at once.
func TestSnapshotShipsWithoutRace(t *testing.T) {
	tp := mixed(t)
	live := blob.New(tp, blob.NewEnv(nil, 3))
	sharded := blob.NewSharded(tp, 2, nil)
	snaps := make(chan *blob.Blob, 4)
	var wg sync.WaitGroup
	wg.Add(1)
	var merged uint64
	go func() {
		defer wg.Done()
		other := blob.New(tp, nil)
		feed(t, other, []uint64{5, 50, 500, 5000})
		for s := range snaps {
			if err := blob.Merge(s, other); err != nil {
				t.Error(err)
				return
			}
			if err := s.UpdateU64(3, 7); err != nil {
				t.Error(err)
				return
			}
			st, err := s.Fetch(3, voi.TDgst)
			if err != nil {
				t.Error(err)
				return
			}
			n, err := tdigest.Count(st.Data, st.DType)
			if err != nil {
				t.Error(err)
				return
			}
			merged += n
		}
	}()
	var want uint64
	for i := range uint64(3000) {
		require.NoError(t, live.UpdateU64(3, i*7919%10000))
		require.NoError(t, sharded.UpdateU64(3, i))
		if i%300 == 299 {
			snaps <- live.Snapshot(true)
			s, err := sharded.Snapshot(true)
			require.NoError(t, err)
			snaps <- s
			want += 2 * (300 + 4 + 1)
		}
	}
	close(snaps)
	wg.Wait()
	require.Equal(t, want, merged)
}

// TestCloneHasItsOwnEnv: a clone draws from a copy of the source's random
// source, at the same position: the same draws, independently.
func TestCloneHasItsOwnEnv(t *testing.T) {
	b := blob.New(mixed(t), blob.NewEnv(nil, 9))
	c := b.Clone()
	require.NotSame(t, b.Env(), c.Env())
	require.NotSame(t, b.Env().Rand, c.Env().Rand)
	require.Equal(t, b.Env().Rand.Int31(), c.Env().Rand.Int31())
	for range 10 {
		require.NoError(t, b.UpdateU64(3, 1000))
		require.NoError(t, c.UpdateU64(3, 1000))
	}
	require.Equal(t, b.Bytes(), c.Bytes())
	// Without an Env, each makes a default one of its own.
	d := blob.New(mixed(t), nil)
	require.NotSame(t, d.Clone().Env().Rand, d.Env().Rand)
	require.NotSame(t, d.Clone().Env().Rand, d.Env().Rand)
}
