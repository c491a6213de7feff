package aggregate_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/export"
	"github.com/statsblob/statsblob/export/aggregate"
)

// A checkpoint's memory is its references and a chunk of folds, whatever
// the number of aggregates: Len folds nothing, WriteTo folds a chunk at a
// time and keeps no fold it could not publish. Before, Len folded every
// aggregate posted to since its last fold at once, and the State kept
// each fold it could not publish (the aggregate changed since: ingest
// goes on) until it was dropped, a second wide copy of every active
// aggregate: Len grew the live heap by 25 MB here, WriteTo kept as much.
func TestStateMemoryBounded(t *testing.T) {
	const n = 10000
	tp := latTpl(t)
	blobs, _ := fleet(t, tp, "bimodal", 4, 11)
	s, err := aggregate.New(aggregate.Config{}, time.Unix(0, 0))
	require.NoError(t, err)
	items := make([]aggregate.Item, n)
	for i := range items {
		key := fmt.Sprintf("k%05d", i)
		items[i] = aggregate.Item{Key: key, T: tp, Labels: []export.Label{{Name: "k", Value: key}}}
	}
	post := func(b *blob.Blob) {
		for i := range items {
			items[i].B = b
		}
		require.NoError(t, s.AddAll(items))
	}
	post(blobs[0])
	post(blobs[1])
	st := s.State()
	want := s.AppendState(nil)
	post(blobs[2]) // every aggregate changed since: no fold is published
	wide := len(s.Blobs()[0].Blob.Bytes())
	require.Greater(t, n*wide, 16<<20, "the folds of all aggregates are what a bound must exclude")
	post(blobs[3]) // (changed since the scrape too)

	w := newPeakWriter()
	require.Equal(t, int64(len(want)), st.Len())
	w.sample()
	require.Less(t, w.peak, uint64(1<<20), "Len folded nothing")
	got := &peakSaver{peakWriter: w}
	k, err := st.WriteTo(got)
	require.NoError(t, err)
	require.Equal(t, int64(len(want)), k)
	require.True(t, bytes.Equal(want, got.b), "the state of the moment")
	kept := int64(liveHeap()) - int64(w.base)
	t.Logf("%d aggregates of %d-byte wide blobs: a state of %.1f MB; the live heap grew by at most %.2f MB while it was written (%.2f MB kept after)",
		n, wide, float64(len(want))/1e6, float64(w.peak)/1e6, float64(kept)/1e6)
	// A chunk of folds (1 MiB), the 64 KiB buffer and the writer's 1 MiB
	// of bytes kept between two samples (what got keeps is not counted).
	require.Less(t, w.peak, uint64(3<<20), "WriteTo held more than a chunk of folds")
	require.Less(t, kept, int64(1<<20), "the State kept the folds it wrote")
	st.Release()
	runtime.KeepAlive(s)
	runtime.KeepAlive(got)
	runtime.KeepAlive(want)
}

// peakSaver keeps what is written, outside the heap peakWriter samples:
// its bytes are taken off the base as they come.
type peakSaver struct {
	*peakWriter
	b []byte
}

func (w *peakSaver) Write(p []byte) (int, error) {
	if len(w.b) == 0 {
		w.b = make([]byte, 0, 64<<20) // counted in the base once, before the first sample
		w.base += uint64(cap(w.b))
	}
	w.b = append(w.b, p...)
	return w.peakWriter.Write(p)
}

// The queued blobs a State holds count against Config.PendingBytes until
// it lets them go, even once the Set has folded them: the Set and its
// States together hold no more than the budget. Before, the Set gave
// their bytes back when it folded them, and queued as much again while a
// checkpoint was written: twice the budget.
func TestStateHoldsQueuedBytes(t *testing.T) {
	tp := latTpl(t)
	blobs, _ := fleet(t, tp, "bimodal", 8, 13)
	sz := int64(blobs[0].CurSz())
	type env struct {
		s   *aggregate.Set
		add func(key string, k int) // k more blobs to key
	}
	newEnv := func(t *testing.T, cfg aggregate.Config) env {
		s, err := aggregate.New(cfg, time.Unix(0, 0))
		require.NoError(t, err)
		next := 0
		return env{s: s, add: func(key string, k int) {
			for range k {
				require.NoError(t, s.Add(key, tp, []export.Label{{Name: "k", Value: key}}, blobs[next%len(blobs)]))
				next++
			}
		}}
	}
	pending := func(e env) int64 { return e.s.Stats().PendingBytes / sz }

	t.Run("folded while held", func(t *testing.T) {
		e := newEnv(t, aggregate.Config{Batch: 4})
		e.add("a", 3)
		st := e.s.State()
		e.add("a", 1) // a batch: the queue folds
		require.Equal(t, int64(3), pending(e), "the State's three, the queue's none")
		e.add("a", 1)
		require.Equal(t, int64(4), pending(e))
		n := st.Len()
		st.Release()
		require.Equal(t, n, st.Len(), "Len reads no blob")
		require.Equal(t, int64(1), pending(e))
		st.Release() // (once)
		require.Equal(t, int64(1), pending(e))
		_, err := st.WriteTo(io.Discard)
		require.ErrorIs(t, err, aggregate.ErrReleased)
	})
	t.Run("still queued when released", func(t *testing.T) {
		e := newEnv(t, aggregate.Config{Batch: 4})
		e.add("a", 3)
		st := e.s.State()
		st.Release()
		require.Equal(t, int64(3), pending(e), "the queue's")
		e.add("a", 1)
		require.Equal(t, int64(0), pending(e))
	})
	t.Run("two States", func(t *testing.T) {
		for _, laterFirst := range []bool{false, true} {
			e := newEnv(t, aggregate.Config{Batch: 4})
			e.add("a", 2)
			st1 := e.s.State()
			e.add("a", 1)
			st2 := e.s.State() // holds the first's two and one more
			e.add("a", 1)      // folds
			require.Equal(t, int64(3), pending(e))
			if laterFirst {
				st1, st2 = st2, st1
			}
			st1.Release()
			require.Equal(t, int64(3), pending(e), "counted until the last State lets go")
			st2.Release()
			require.Equal(t, int64(0), pending(e))
		}
	})
	t.Run("two States, two queues", func(t *testing.T) {
		e := newEnv(t, aggregate.Config{Batch: 4})
		e.add("a", 2)
		st1 := e.s.State()
		e.add("a", 2) // folds: st1's two held
		e.add("a", 3)
		st2 := e.s.State()
		e.add("a", 1) // folds: st2's three held
		require.Equal(t, int64(5), pending(e))
		st2.Release()
		require.Equal(t, int64(2), pending(e))
		st1.Release()
		require.Equal(t, int64(0), pending(e))
	})
	t.Run("rotated, dropped", func(t *testing.T) {
		e := newEnv(t, aggregate.Config{})
		e.add("a", 3)
		e.add("b", 2)
		st := e.s.State()
		require.Equal(t, 1, e.s.Drop("b"))
		e.s.Rotate(time.Unix(60, 0))
		require.Equal(t, int64(5), pending(e), "the State's")
		st.Release()
		require.Equal(t, int64(0), pending(e))
	})
	t.Run("published", func(t *testing.T) {
		e := newEnv(t, aggregate.Config{Batch: 4})
		e.add("a", 3)
		e.add("b", 3)
		st := e.s.State()
		e.add("b", 1) // folds: b changed since
		_, err := st.WriteTo(io.Discard)
		require.NoError(t, err)
		// a's fold is published, and the State lets go of a's queue, which
		// the Set counts alone; it still holds b's, the Set folded.
		require.Equal(t, int64(3+3), pending(e))
		e.add("a", 1)
		require.Equal(t, int64(3), pending(e))
		_, err = st.WriteTo(io.Discard) // (again: the same)
		require.NoError(t, err)
		st.Release()
		require.Equal(t, int64(0), pending(e))
	})
	t.Run("dropped unreleased", func(t *testing.T) {
		e := newEnv(t, aggregate.Config{Batch: 4})
		e.add("a", 3)
		st := e.s.State()
		e.add("a", 1)
		require.Equal(t, int64(3), pending(e))
		runtime.KeepAlive(st)
		st = nil
		require.Eventually(t, func() bool {
			runtime.GC()
			return pending(e) == 0
		}, 5*time.Second, 10*time.Millisecond, "let go when the State is collected")
	})
	t.Run("the budget", func(t *testing.T) {
		e := newEnv(t, aggregate.Config{PendingBytes: 4 * sz})
		e.add("a", 4)
		st := e.s.State()
		e.s.Rotate(time.Unix(60, 0))
		folds := e.s.Stats().Folds
		e.add("b", 1) // over the budget with the State's four: folds at once
		require.Equal(t, folds+1, e.s.Stats().Folds)
		require.Equal(t, int64(4), pending(e))
		st.Release()
		e.add("b", 1)
		require.Equal(t, folds+1, e.s.Stats().Folds)
		require.Equal(t, int64(1), pending(e))
	})
}

// A State's WriteTo stops at its writer's first error, and returns it.
func TestStateWriteError(t *testing.T) {
	tp := latTpl(t)
	blobs, _ := fleet(t, tp, "bimodal", 3, 17)
	s, err := aggregate.New(aggregate.Config{}, time.Unix(0, 0))
	require.NoError(t, err)
	for i := range 2000 {
		key := fmt.Sprint("k", i)
		require.NoError(t, s.Add(key, tp, []export.Label{{Name: "k", Value: key}}, blobs[i%3]))
	}
	st := s.State()
	defer st.Release()
	boom := errors.New("disk full")
	w := &failingWriter{after: 100 << 10, err: boom}
	n, err := st.WriteTo(w)
	require.ErrorIs(t, err, boom)
	require.Equal(t, w.n, n)
	require.Less(t, w.calls, 4, "no write after the error")
}

type failingWriter struct {
	n, after int64
	calls    int
	err      error
}

func (w *failingWriter) Write(p []byte) (int, error) {
	w.calls++
	if w.n+int64(len(p)) > w.after {
		return 0, w.err
	}
	w.n += int64(len(p))
	return len(p), nil
}
