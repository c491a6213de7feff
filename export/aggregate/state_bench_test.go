package aggregate_test

import (
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/export"
	"github.com/statsblob/statsblob/export/aggregate"
	"github.com/statsblob/statsblob/tpl"
)

// stateCase is a Set to checkpoint: n aggregates of one template, each
// under labels and z=i, with queued blobs posted since the last
// checkpoint, and senders that each posted to every aggregate (a
// sequence mark each).
type stateCase struct {
	name    string
	n       int
	labels  []export.Label
	senders int  // senders posting to every aggregate (the limit cases)
	perSet  int  // the realistic cases: senders posting to each label set
	big     bool // the limit: skipped with -short
}

// widestLabels is DefaultMaxLabels-1 labels of 128-byte names and values
// (the collector's default limits), beside z.
func widestLabels() []export.Label {
	var out []export.Label
	for i := range 15 {
		name := fmt.Sprintf("l%02d_", i)
		out = append(out, export.Label{Name: name + strings.Repeat("n", 128-len(name)), Value: strings.Repeat("v", 128)})
	}
	return out
}

var shortLabels = []export.Label{{Name: "host", Value: "web-0000.example.net"}, {Name: "svc", Value: "api"}}

var stateCases = []stateCase{
	// 10,000 TCP_DEFAULT label sets (host, svc), 1,000 senders posting to 10 each.
	{name: "realistic", n: 10000, labels: shortLabels, perSet: 1},
	// The same label sets, each posted to by 10 of the 1,000 senders (100 each).
	{name: "realistic-10-senders", n: 10000, labels: shortLabels, perSet: 10},
	// The collector's default limits: 10,000 label sets of the widest
	// labels (one batch of 740 KB of a small template's blobs makes
	// them), of a t-digest template whose wide blob is 2 KB, with one
	// sender's 10,000 sequence marks, and with the 1,040,000 of 104
	// senders posting to each (about the 1,048,576 MaxMarks allows).
	{name: "limit-aggregates", n: 10000, labels: widestLabels(), senders: 1},
	{name: "limit-marks", n: 10000, labels: widestLabels(), senders: 104, big: true},
}

// build makes the case's Set, of template tp; post adds one more blob to
// every aggregate. It skips a big case with -short.
func (c stateCase) build(b *testing.B) (s *aggregate.Set, tp *tpl.Template, post func()) {
	b.Helper()
	if c.big && testing.Short() {
		b.Skip("-short")
	}
	var bl *blob.Blob
	if c.perSet > 0 {
		var fleet []*blob.Blob
		tp, fleet = tcpFleet(b, 1)
		bl = fleet[0]
	} else {
		tp = latTpl(b)
		var err error
		bl, err = blob.FromBytes(blob.New(tp, nil).Bytes(), nil)
		require.NoError(b, err)
	}
	s, err := aggregate.New(aggregate.Config{MaxMarks: 1 << 21}, time.Unix(0, 0))
	require.NoError(b, err)
	items := make([]aggregate.Item, c.n)
	keys := make([]string, c.n)
	for i := range items {
		labels := append(append([]export.Label(nil), c.labels...), export.Label{Name: "z", Value: fmt.Sprint(i)})
		var k strings.Builder
		for _, l := range labels {
			k.WriteString(l.Name + "\x00" + l.Value + "\x00")
		}
		keys[i] = k.String()
		items[i] = aggregate.Item{Key: keys[i], T: tp, Labels: labels, B: bl}
	}
	if c.perSet > 0 { // 1,000 senders posting to perSet blocks of 10 label sets each
		for p := range 1000 {
			var part []aggregate.Item
			var pk []string
			for r := range c.perSet {
				blk := (p + r*100) % 1000
				part = append(part, items[blk*10:blk*10+10]...)
				pk = append(pk, keys[blk*10:blk*10+10]...)
			}
			_, err := s.OnceAll(fmt.Sprintf("sender-%04d", p), pk, 1, func([]bool) error { return s.AddAll(part) })
			require.NoError(b, err)
		}
	} else {
		for p := range c.senders {
			_, err := s.OnceAll(fmt.Sprintf("sender-%04d", p), keys, 1, func([]bool) error { return s.AddAll(items) })
			require.NoError(b, err)
		}
	}
	return s, tp, func() { require.NoError(b, s.AddAll(items)) }
}

// BenchmarkAppendState: a checkpoint's state built whole, as AppendState
// returns it; reports its size (state-MB, and state-B exactly). Each op follows a post to every
// aggregate, so that it folds them as a checkpoint after
// CheckpointInterval of posts does. Before Set.State, AppendState held the
// Set's lock (and the collector's log lock: posts waited) for all of it.
func BenchmarkAppendState(b *testing.B) {
	for _, c := range stateCases {
		b.Run(c.name, func(b *testing.B) {
			s, _, post := c.build(b)
			b.ReportAllocs()
			b.ResetTimer()
			var size int
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				post()
				b.StartTimer()
				size = len(s.AppendState(nil))
			}
			b.ReportMetric(float64(size)/1e6, "state-MB")
			b.ReportMetric(float64(size), "state-B")
		})
	}
}

// BenchmarkSnapshot: a checkpoint as the collector takes it: Set.State
// under the Set's lock (and the log's: ns/op and B/op are what posts wait
// for), then Len and WriteTo outside it, to a writer that keeps nothing
// (wal.Log.CheckpointState writes it to the file piece by piece):
// write-ms and write-MB are their time and what they allocate. held-MB is
// the most the live heap grew while they ran (sampled after a GC at each
// MiB written, in a pass of its own), with ingest quiet (quiet: each fold
// published) or going on (ingest: every aggregate posted to after the
// snapshot, so that no fold can be published); pub-MB is what it still
// holds once the State is dropped: the folds published, which the Set
// keeps (the blobs the next scrape serves, which it would fold).
func BenchmarkSnapshot(b *testing.B) {
	for _, c := range stateCases {
		for _, ingest := range []bool{false, true} {
			name := c.name + "/quiet"
			if ingest {
				name = c.name + "/ingest"
			}
			b.Run(name, func(b *testing.B) {
				s, _, post := c.build(b)
				b.ReportAllocs()
				b.ResetTimer()
				var size int64
				var write time.Duration
				var alloc uint64
				var m0, m1 runtime.MemStats
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					post()
					b.StartTimer()
					st := s.State()
					b.StopTimer()
					if ingest {
						post()
					}
					runtime.ReadMemStats(&m0)
					t0 := time.Now()
					size = st.Len()
					n, err := st.WriteTo(io.Discard)
					write += time.Since(t0)
					runtime.ReadMemStats(&m1)
					alloc += m1.TotalAlloc - m0.TotalAlloc
					require.NoError(b, err)
					require.Equal(b, size, n)
					b.StartTimer()
				}
				b.StopTimer()
				post()
				st := s.State()
				if ingest {
					post()
				}
				w := newPeakWriter()
				w.sample()
				size = st.Len()
				w.sample()
				_, err := st.WriteTo(w)
				require.NoError(b, err)
				w.sample()
				runtime.KeepAlive(st)
				st = nil
				kept := int64(liveHeap()) - int64(w.base) // the folds published, the Set's
				runtime.KeepAlive(s)
				b.ReportMetric(float64(size)/1e6, "state-MB")
				b.ReportMetric(float64(write.Milliseconds())/float64(b.N), "write-ms")
				b.ReportMetric(float64(alloc)/1e6/float64(b.N), "write-MB")
				b.ReportMetric(float64(w.peak)/1e6, "held-MB")
				b.ReportMetric(float64(kept)/1e6, "pub-MB")
			})
		}
	}
}

// peakWriter discards what is written, sampling the live heap (after a
// GC) before the first byte and at each MiB: peak is the most it grew
// above the heap when it was made.
type peakWriter struct {
	n, next    int64
	base, peak uint64
}

func newPeakWriter() *peakWriter { return &peakWriter{base: liveHeap()} }

func (w *peakWriter) Write(p []byte) (int, error) {
	if w.n >= w.next {
		w.next = w.n + 1<<20
		w.sample()
	}
	w.n += int64(len(p))
	return len(p), nil
}

func (w *peakWriter) sample() {
	if h := liveHeap(); h > w.base {
		w.peak = max(w.peak, h-w.base)
	}
}

// liveHeap is the heap's live bytes, after a GC.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkLoadState: a restart's load of a checkpoint's state (the
// aggregates' blobs checked, the marks made), into a new Set each op.
func BenchmarkLoadState(b *testing.B) {
	for _, c := range stateCases {
		b.Run(c.name, func(b *testing.B) {
			s, tp, post := c.build(b)
			post()
			state := s.AppendState(nil)
			s = nil
			lookup := func(uint32) (*tpl.Template, error) { return tp, nil }
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				l, err := aggregate.New(aggregate.Config{MaxMarks: 1 << 21}, time.Unix(0, 0))
				require.NoError(b, err)
				require.NoError(b, l.LoadState(state, lookup))
			}
			b.ReportMetric(float64(len(state))/1e6, "state-MB")
		})
	}
}
