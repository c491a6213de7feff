package aggregate_test

import (
	"bytes"
	"errors"
	"fmt"
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
	runtime.KeepAlive(st)
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
