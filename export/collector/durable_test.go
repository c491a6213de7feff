package collector_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/statsblob/statsblob/export/aggregate"
	"github.com/statsblob/statsblob/export/collector"
	"github.com/statsblob/statsblob/export/internal/fixture"
)

// aggLines is what /metrics says of the aggregates (not of the server).
func aggLines(t *testing.T, s *collector.Server) []string {
	t.Helper()
	lines, _ := scrapeLines(t, s, false)
	return slices.DeleteFunc(lines, func(l string) bool {
		return strings.HasPrefix(l, "#") || strings.HasPrefix(l, "statsblob_collector_")
	})
}

// TestDurableRecovery: with a DataDir, what was acknowledged is there
// after a crash (Crash: the log left as the process left it), through log
// replay and through checkpoints; a retry of an acknowledged post is
// still a duplicate; a refused post was not logged; a rotation's
// checkpoint keeps the closed window's posts out of the new one; a closed
// log refuses posts with 503.
func TestDurableRecovery(t *testing.T) {
	dir := t.TempDir()
	c := &clock{t: time.Unix(1700000000, 0)}
	cfg := collector.Config{DataDir: dir, Now: c.now, MaxAggregates: 4}
	s1, tp := newServer(t, cfg)
	kb := fixture.KitchenBlob(tp).Bytes()
	hdr := func(id, seq string) map[string]string {
		return map[string]string{aggregate.HeaderSender: id, aggregate.HeaderSeq: seq}
	}
	for _, p := range []struct {
		path, query string
		body        []byte
		h           map[string]string
		code        int
	}{
		{"/v1/blobs", "host=a", kb, nil, 204},
		{"/v1/blobs", "host=a", kb, hdr("web1", "1"), 204},
		{"/v1/blobs", "host=a", kb, hdr("web1", "1"), 204}, // a duplicate
		{"/v1/batch", "svc=x", batch(t, "host=a", kb, "host=b", kb), hdr("web1", "2"), 204},
		{"/v1/blobs", "host=c", kb, nil, 204},
		{"/v1/blobs", "host=d", kb, nil, 429}, // over -max-aggregates: not logged
		{"/v1/blobs", "host=a", []byte("junk"), nil, 400},
	} {
		code, body := postH(t, s1, p.path, p.query, p.body, p.h)
		require.Equal(t, p.code, code, body)
	}
	want, wantN := aggLines(t, s1), s1.Merged()
	require.Equal(t, []uint64{2, 1, 1, 1}, wantN) // host=a, svc=x host=a, svc=x host=b, host=c

	// A crash: a new Server on the same directory replays the log.
	collector.Crash(s1)
	s2, _ := newServer(t, cfg)
	require.Equal(t, want, aggLines(t, s2))
	require.Equal(t, wantN, s2.Merged())
	code, _ := postH(t, s2, "/v1/blobs", "host=a", kb, hdr("web1", "1"))
	require.Equal(t, 204, code)
	require.Equal(t, wantN, s2.Merged(), "a retry of an acknowledged post stays a duplicate")
	code, _ = postH(t, s2, "/v1/blobs", "host=d", kb, nil)
	require.Equal(t, 429, code, "the limits are where they were")

	// A checkpoint, posts after it, a crash.
	require.NoError(t, s2.Checkpoint())
	code, _ = postH(t, s2, "/v1/blobs", "host=c", kb, hdr("web2", "7"))
	require.Equal(t, 204, code)
	want, wantN = aggLines(t, s2), s2.Merged()
	require.Equal(t, []uint64{2, 1, 1, 2}, wantN)
	collector.Crash(s2)
	s3, _ := newServer(t, cfg)
	require.Equal(t, wantN, s3.Merged())
	require.Equal(t, want, aggLines(t, s3))
	code, _ = postH(t, s3, "/v1/blobs", "host=c", kb, hdr("web2", "7"))
	require.Equal(t, 204, code)
	require.Equal(t, wantN, s3.Merged(), "the checkpoint keeps the senders' marks")

	// A rotation is a checkpoint: its posts are not replayed into the new
	// window.
	c.set(c.now().Add(time.Minute))
	closed := s3.Rotate()
	require.Equal(t, uint64(6), closed.Posts)
	code, _ = postH(t, s3, "/v1/blobs", "host=e", kb, nil)
	require.Equal(t, 204, code)
	collector.Crash(s3)
	s4, _ := newServer(t, cfg)
	require.Equal(t, []uint64{1}, s4.Merged())
	require.Equal(t, aggLines(t, s3), aggLines(t, s4))
	require.Equal(t, c.now(), s4.Blobs()[0].Start, "the window's start is kept")

	// Close checkpoints; a closed log refuses.
	require.NoError(t, s4.Close())
	code, body := postH(t, s4, "/v1/blobs", "host=e", kb, nil)
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Equal(t, "the collector cannot store posts (its -data-dir log failed): not acknowledged\n", body)
	code, body, _ = get(t, s4, "/readyz", nil)
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Equal(t, "the -data-dir log is closed: posts are refused\n", body)
	segs, _ := filepath.Glob(filepath.Join(dir, "seg-*.wal"))
	ckpts, _ := filepath.Glob(filepath.Join(dir, "ckpt-*.ckpt"))
	require.Len(t, ckpts, 1)
	require.Len(t, segs, 1, "the segments a checkpoint covers are deleted")
	fi, err := os.Stat(segs[0])
	require.NoError(t, err)
	require.Zero(t, fi.Size())
	s5, _ := newServer(t, cfg)
	require.Equal(t, []uint64{1}, s5.Merged())
	lines, _ := scrapeLines(t, s5, false)
	require.Contains(t, lines, "statsblob_collector_log_replayed_records 0", "Close's checkpoint covered every record")
	require.Contains(t, lines, "statsblob_collector_log_records_total 0")
	code, _ = postH(t, s5, "/v1/blobs", "host=e", kb, nil)
	require.Equal(t, 204, code)
	require.NoError(t, s5.Checkpoint())
	lines, _ = scrapeLines(t, s5, false)
	require.Contains(t, lines, "statsblob_collector_log_records_total 1")
	require.Contains(t, lines, "statsblob_collector_checkpoints_total 1")
	code, _ = postH(t, s5, "/v1/blobs", "host=e", kb, nil)
	require.Equal(t, 204, code)
	collector.Crash(s5)
	s6, _ := newServer(t, cfg)
	require.Equal(t, []uint64{3}, s6.Merged())
	lines, _ = scrapeLines(t, s6, false)
	require.Contains(t, lines, "statsblob_collector_log_replayed_records 1")
	require.Contains(t, lines, "statsblob_collector_log_replay_failures 0")
}

// TestDurableConcurrent: posts, checkpoints and rotations at once; a
// restart has the current window's posts, exactly (run with -race).
func TestDurableConcurrent(t *testing.T) {
	dir := t.TempDir()
	cfg := collector.Config{DataDir: dir, NoSync: true}
	s, tp := newServer(t, cfg)
	kb := fixture.KitchenBlob(tp).Bytes()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if i%5 == 4 {
				s.Rotate()
			} else {
				require.NoError(t, s.Checkpoint())
			}
			time.Sleep(time.Millisecond)
		}
	}()
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 60 {
				h := map[string]string{aggregate.HeaderSender: fmt.Sprintf("w%d", w), aggregate.HeaderSeq: strconv.Itoa(i)}
				code, body := postH(t, s, "/v1/blobs", fmt.Sprintf("host=h%d", i%3), kb, h)
				if code != 204 {
					t.Errorf("%d %s", code, body)
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-done
	want := aggLines(t, s)
	wantN := s.Merged()
	_, err := collector.New(collector.Config{Templates: tp.Registry(), DataDir: dir})
	require.ErrorContains(t, err, "is in use by another collector", "two collectors never share a log")
	collector.Crash(s)
	s2, _ := newServer(t, cfg)
	require.Equal(t, wantN, s2.Merged())
	require.Equal(t, len(want), len(aggLines(t, s2)))
}

// TestDurableClosedWindow: a window closed before a crash and not yet
// pushed (delta OTLP, the endpoint down) is pushed by the restarted
// collector's pusher, once; its file goes once it is pushed.
func TestDurableClosedWindow(t *testing.T) {
	dir := t.TempDir()
	ck := &clock{t: time.Unix(1000, 0)}
	cfg := collector.Config{DataDir: dir, Window: time.Minute, Now: ck.now, NoSync: true}
	s, tp := newServer(t, cfg)
	down := &blackHole{}
	p := s.NewPusher(down, collector.PushConfig{Temporality: metricdata.DeltaTemporality, Timeout: 5 * time.Millisecond})
	kb := fixture.KitchenBlob(tp).Bytes()
	for range 2 {
		code, body := post(t, s, http.MethodPost, "h=a", kb)
		require.Equal(t, 204, code, body)
	}
	ck.set(time.Unix(1060, 0))
	s.Rotate()
	code, body := post(t, s, http.MethodPost, "h=a", kb) // the next window: in the log
	require.Equal(t, 204, code, body)
	files, _ := filepath.Glob(filepath.Join(dir, "closed-*.win"))
	require.Len(t, files, 1)
	collector.Crash(s)

	s2, _ := newServer(t, cfg)
	require.Equal(t, []uint64{1}, s2.Merged(), "the window under way, replayed")
	up := &blackHole{}
	up.up.Store(true)
	p2 := s2.NewPusher(up, collector.PushConfig{Temporality: metricdata.DeltaTemporality})
	require.Eventually(t, func() bool { return up.count() == 1 }, 10*time.Second, time.Millisecond)
	up.mu.Lock()
	sum := bytesSum(t, up.got[0])
	up.mu.Unlock()
	require.Equal(t, time.Unix(1000, 0), sum.DataPoints[0].StartTime)
	require.Equal(t, time.Unix(1060, 0), sum.DataPoints[0].Time)
	require.Equal(t, 2*1448.0, sum.DataPoints[0].Value)
	require.Eventually(t, func() bool {
		files, _ := filepath.Glob(filepath.Join(dir, "closed-*.win"))
		return len(files) == 0
	}, 10*time.Second, time.Millisecond, "the pushed window's file is removed")
	ck.set(time.Unix(1070, 0))
	require.NoError(t, p2.Close(context.Background()))
	require.Equal(t, 2, up.count(), "and the window under way at Close")
	up.mu.Lock()
	require.Equal(t, 1448.0, bytesSum(t, up.got[1]).DataPoints[0].Value)
	up.mu.Unlock()
	_ = p
}

// TestRecoveredWindowPushedWithTheConfig: the pusher starts pushing a
// recovered closed window as it is made, so its settings come with it
// (before, the command set Timeout and MaxPending on the Pusher after
// NewPusher had started the push: a data race, and a first push with the
// default 10 s timeout).
func TestRecoveredWindowPushedWithTheConfig(t *testing.T) {
	ck := &clock{t: time.Unix(1000, 0)}
	cfg := collector.Config{DataDir: t.TempDir(), Window: time.Minute, Now: ck.now, NoSync: true}
	s, tp := newServer(t, cfg)
	p := s.NewPusher(&blackHole{}, collector.PushConfig{Temporality: metricdata.DeltaTemporality, Timeout: time.Millisecond})
	code, body := post(t, s, http.MethodPost, "h=a", fixture.KitchenBlob(tp).Bytes())
	require.Equal(t, 204, code, body)
	ck.set(time.Unix(1060, 0))
	s.Rotate() // a closed window, unpushed, in DataDir
	collector.Crash(s)
	_ = p

	s2, _ := newServer(t, cfg)
	down := &blackHole{}
	p2 := s2.NewPusher(down, collector.PushConfig{Temporality: metricdata.DeltaTemporality, Timeout: 5 * time.Millisecond, MaxPending: 4})
	require.Eventually(t, func() bool { return down.tries.Load() >= 3 }, 5*time.Second, time.Millisecond,
		"5 ms pushes, retried: not the default 10 s")
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var ns *collector.NotShipped
	require.ErrorAs(t, p2.Close(ctx), &ns, "the endpoint stays down")
}

// A batch's log record holds its URL's labels once: a batch well within
// MaxBatchBody (2 MiB of 64-byte blobs here) under 16 long URL labels is
// acknowledged and replayed. The labels were in every frame's record, 130
// MB for this batch, past the log's 64 MiB record limit: the log refused
// it, and the collector took that for a failed log, answered 503 and
// marked the log broken (/readyz 503, every later post refused) for the
// life of the process, while the log was whole.
func TestBigBatchDoesNotBreakTheLog(t *testing.T) {
	reg, body, frames, query := longLabelsBatch(t)
	_, bb := tinyBlob(t)
	cfg := collector.Config{Templates: reg, DataDir: t.TempDir(), NoSync: true}
	s, err := collector.New(cfg)
	require.NoError(t, err)
	code, msg := postH(t, s, "/v1/batch", query, body, nil)
	require.Equal(t, http.StatusNoContent, code, msg)
	code, msg, _ = get(t, s, "/readyz", nil)
	require.Equal(t, http.StatusOK, code, msg)
	code, msg = postH(t, s, "/v1/blobs", "host=a", bb, nil)
	require.Equal(t, http.StatusNoContent, code, "the log still works: %s", msg)

	collector.Crash(s)
	s2, err := collector.New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s2.Close() })
	require.Equal(t, []uint64{1, uint64(frames)}, s2.Merged()) // host=a, then the batch's labels
}

// A label of 64 KiB or more (-max-label-bytes raised past it) survives a
// restart: the log record wrote a label's length as a uint16, which
// wrapped, so that a post acknowledged before a crash made the restart on
// the same DataDir fail ("bad log record: cut short"). Version 2 of the
// record writes lengths as uint32.
func TestLongLabelSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	cfg := collector.Config{DataDir: dir, NoSync: true, MaxLabelBytes: 1 << 17}
	s, tp := newServer(t, cfg)
	long := strings.Repeat("v", 66000)
	code, body := post(t, s, http.MethodPost, "host="+long, fixture.KitchenBlob(tp).Bytes())
	require.Equal(t, http.StatusNoContent, code, body)
	collector.Crash(s)
	s2, _ := newServer(t, cfg)
	require.Equal(t, []uint64{1}, s2.Merged())
	require.Equal(t, long, s2.Blobs()[0].Labels[0].Value)
}

// widestBatch is a server on dir and a batch within every default limit
// that makes its state as large as the limits allow: DefaultMaxAggregates
// label sets (one frame each, `z=i`) under DefaultMaxLabels-1 URL labels
// of DefaultMaxLabelBytes names and values. The batch is about 740 KB;
// the aggregates' keys and labels take nearly all of its checkpoint,
// 79.5 MB (the blobs are of a one-VOI template; aggregate's
// BenchmarkAppendState, limit-aggregates, is 99.4 MB with 2 KB blobs).
func widestBatch(t *testing.T, dir string) (cfg collector.Config, query string, body []byte) {
	t.Helper()
	reg, bb := tinyBlob(t)
	q := url.Values{}
	for i := 0; i < collector.DefaultMaxLabels-1; i++ {
		name := fmt.Sprintf("l%02d_", i)
		q.Set(name+strings.Repeat("n", collector.DefaultMaxLabelBytes-len(name)), strings.Repeat("v", collector.DefaultMaxLabelBytes))
	}
	body = []byte(collector.BatchMagic)
	for i := 0; i < collector.DefaultMaxAggregates; i++ {
		var err error
		body, err = collector.AppendBatchFrame(body, fmt.Sprintf("z=%d", i), bb)
		require.NoError(t, err)
	}
	return collector.Config{Templates: reg, DataDir: dir, NoSync: true}, q.Encode(), body
}

// A checkpoint is not capped by the log's record limit (wal.MaxRecord, 64
// MiB), which bounds one post's record: the state the collector's limits
// allow passes it, and one batch of 740 KB within every limit made every
// checkpoint fail ("wal: snapshot: wal: record too large: a
// 79457803-byte checkpoint") for as long as those label sets lived. The
// checkpoint is written and a restart loads it.
func TestCheckpointPastRecordLimit(t *testing.T) {
	dir := t.TempDir()
	cfg, q, body := widestBatch(t, dir)
	s, err := collector.New(cfg)
	require.NoError(t, err)
	code, msg := postH(t, s, "/v1/batch", q, body, nil)
	require.Equal(t, http.StatusNoContent, code, msg)
	t.Logf("one batch: %d bytes of body, %d of URL", len(body), len(q))

	require.NoError(t, s.Checkpoint(), "a checkpoint of aggregates within every limit")
	ckpts, err := filepath.Glob(filepath.Join(dir, "ckpt-*.ckpt"))
	require.NoError(t, err)
	require.Len(t, ckpts, 1)
	fi, err := os.Stat(ckpts[0])
	require.NoError(t, err)
	require.Greater(t, fi.Size(), int64(64<<20), "the state is past the record limit")
	lines, _ := scrapeLines(t, s, false)
	require.Contains(t, lines, "statsblob_collector_checkpoints_total 1")
	require.Contains(t, lines, "statsblob_collector_checkpoint_failures_total 0")

	collector.Crash(s)
	s2, err := collector.New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s2.Close() })
	require.Len(t, s2.Merged(), collector.DefaultMaxAggregates, "the checkpoint loads")
	lines, _ = scrapeLines(t, s2, false)
	require.Contains(t, lines, "statsblob_collector_log_replayed_records 0", "the checkpoint covered the batch")
}

// The log is cut at every checkpoint, whatever the size of the state: with
// the checkpoints of such a state refused, no segment was ever deleted
// (with -window 0, the default, for as long as the label sets were posted
// to), so every post since was kept on disk and replayed at the next
// start, and each attempt built the 79.5 MB state under the Set's lock
// for nothing.
func TestBigStateCheckpointCutsTheLog(t *testing.T) {
	dir := t.TempDir()
	cfg, q, body := widestBatch(t, dir)
	s, err := collector.New(cfg)
	require.NoError(t, err)
	defer s.Close()
	logBytes := func() int64 {
		var n int64
		ents, err := os.ReadDir(dir)
		require.NoError(t, err)
		for _, e := range ents {
			if fi, err := e.Info(); err == nil && !e.IsDir() {
				n += fi.Size()
			}
		}
		return n
	}
	var sizes []int64
	for range 4 {
		code, msg := postH(t, s, "/v1/batch", q, body, nil)
		require.Equal(t, http.StatusNoContent, code, msg)
		require.NoError(t, s.Checkpoint()) // RunWindows every -checkpoint-interval
		sizes = append(sizes, logBytes())
	}
	t.Logf("DataDir bytes after each post and checkpoint: %v", sizes)
	require.Less(t, sizes[3], 2*sizes[0], "the log is cut at each checkpoint")
	segs, err := filepath.Glob(filepath.Join(dir, "seg-*.wal"))
	require.NoError(t, err)
	require.Len(t, segs, 1)
}

// A checkpoint that fails is logged and counted
// (statsblob_collector_checkpoint_failures_total), and the log stays
// whole: a restart replays the posts it did not cut, and the next
// checkpoint that succeeds cuts them.
func TestFailedCheckpointLoggedAndCounted(t *testing.T) {
	dir := t.TempDir()
	var logged bytes.Buffer
	cfg := collector.Config{DataDir: dir, NoSync: true, Log: slog.New(slog.NewTextHandler(&logged, nil))}
	s, tp := newServer(t, cfg)
	kb := fixture.KitchenBlob(tp).Bytes()
	code, msg := postH(t, s, "/v1/blobs", "host=a", kb, nil)
	require.Equal(t, http.StatusNoContent, code, msg)
	unblock := blockCheckpoints(t, dir) // the next checkpoint's temporary file cannot be created
	require.Error(t, s.Checkpoint())
	require.Contains(t, logged.String(), `level=ERROR msg="checkpoint failed: the log is not cut until one succeeds, a restart replays it"`)
	lines, _ := scrapeLines(t, s, false)
	require.Contains(t, lines, "statsblob_collector_checkpoint_failures_total 1")
	require.Contains(t, lines, "statsblob_collector_checkpoints_total 0")
	code, msg = postH(t, s, "/v1/blobs", "host=a", kb, nil)
	require.Equal(t, http.StatusNoContent, code, "the log goes on: %s", msg)

	collector.Crash(s)
	unblock()
	cfg.Log = nil
	s2, _ := newServer(t, cfg)
	require.Equal(t, []uint64{2}, s2.Merged())
	lines, _ = scrapeLines(t, s2, false)
	require.Contains(t, lines, "statsblob_collector_log_replayed_records 3", "the failed checkpoint cut nothing: the window's start and the two posts")
	require.NoError(t, s2.Checkpoint())
	segs, err := filepath.Glob(filepath.Join(dir, "seg-*.wal"))
	require.NoError(t, err)
	require.Len(t, segs, 1, "a checkpoint that succeeds cuts the log")
}

// TestClosedWindowNotCheckpointedPushedOnce: a rotation writes the closed
// window's file for the delta pusher and a rotation record, then the
// checkpoint that leaves the window's posts out of the log. When that
// checkpoint is not written (a full disk; kill -9 between the two), the
// restart replays the log, whose rotation record keeps the closed
// window's posts out of the window under way: the file is pushed once and
// every post is pushed once. Before rotations were log records, the
// restarted collector pushed the file and then the replayed window
// holding the same posts: 5 posts' worth of 3.
func TestClosedWindowNotCheckpointedPushedOnce(t *testing.T) {
	dir := t.TempDir()
	ck := &clock{t: time.Unix(1000, 0)}
	cfg := collector.Config{DataDir: dir, Window: time.Minute, Now: ck.now, NoSync: true}
	s, tp := newServer(t, cfg)
	_ = s.NewPusher(&blackHole{}, collector.PushConfig{Temporality: metricdata.DeltaTemporality, Timeout: 5 * time.Millisecond})
	kb := fixture.KitchenBlob(tp).Bytes()
	postOne := func(s *collector.Server) {
		code, body := post(t, s, http.MethodPost, "h=a", kb)
		require.Equal(t, 204, code, body)
	}
	postOne(s)
	require.NoError(t, s.Checkpoint())
	postOne(s)
	unblock := blockCheckpoints(t, dir) // the rotation's checkpoint cannot be written
	ck.set(time.Unix(1060, 0))
	require.Equal(t, uint64(2), s.Rotate().Posts)
	files, _ := filepath.Glob(filepath.Join(dir, "closed-*.win"))
	require.Len(t, files, 1)
	postOne(s) // the next window
	collector.Crash(s)
	unblock()

	s2, _ := newServer(t, cfg)
	require.Equal(t, []uint64{1}, s2.Merged(), "the rotation's record ends the closed window's posts in the log")
	pushed := pushedAtNextRotation(t, s2, ck, time.Unix(1120, 0))
	require.Equal(t, 3*1448.0, pushed, "each post pushed once")
	files, _ = filepath.Glob(filepath.Join(dir, "closed-*.win"))
	require.Empty(t, files)
}

// TestClosedWindowWhoseRotationDidNotReachTheLog: a rotation writes the
// closed window's file for the delta pusher, then appends its record to
// the log. A kill -9 between the two (the file synced, the record not)
// leaves a log whose replay keeps the closed window's posts in the window
// under way, with its start, and the file too: the restarted collector
// pushed the file, then the same posts again when the window under way
// closed (4 posts' worth of 2). The file of a window the log's replay
// did not close is now dropped at the start: its posts are in the window
// under way, pushed once when it closes.
func TestClosedWindowWhoseRotationDidNotReachTheLog(t *testing.T) {
	dir := t.TempDir()
	ck := &clock{t: time.Unix(1000, 0)}
	cfg := collector.Config{DataDir: dir, Window: time.Minute, Now: ck.now, NoSync: true}
	s, tp := newServer(t, cfg)
	_ = s.NewPusher(&blackHole{}, collector.PushConfig{Temporality: metricdata.DeltaTemporality, Timeout: 5 * time.Millisecond})
	kb := fixture.KitchenBlob(tp).Bytes()
	postOne := func(s *collector.Server) {
		code, body := post(t, s, http.MethodPost, "h=a", kb)
		require.Equal(t, 204, code, body)
	}
	postOne(s)
	require.NoError(t, s.Checkpoint())
	postOne(s)
	segs, err := filepath.Glob(filepath.Join(dir, "seg-*.wal"))
	require.NoError(t, err)
	require.Len(t, segs, 1)
	seg := segs[0]
	unblock := blockCheckpoints(t, dir) // the rotation's checkpoint is not written
	fi, err := os.Stat(seg)
	require.NoError(t, err)
	ck.set(time.Unix(1060, 0))
	require.Equal(t, uint64(2), s.Rotate().Posts)
	files, _ := filepath.Glob(filepath.Join(dir, "closed-*.win"))
	require.Len(t, files, 1)
	collector.Crash(s)
	unblock()
	// The crash came before the rotation's record was synced: the log
	// ends with the posts.
	fi2, err := os.Stat(seg)
	require.NoError(t, err)
	require.Equal(t, fi.Size()+8+1+8, fi2.Size(), "the rotation's record ends the segment")
	require.NoError(t, os.Truncate(seg, fi.Size()))

	s2, _ := newServer(t, cfg)
	require.Equal(t, []uint64{2}, s2.Merged(), "the log's replay keeps the posts in the window under way")
	require.Equal(t, time.Unix(1000, 0), s2.Blobs()[0].Start)
	pushed := pushedAtNextRotation(t, s2, ck, time.Unix(1120, 0))
	require.Equal(t, 2*1448.0, pushed, "each post pushed once")
	files, _ = filepath.Glob(filepath.Join(dir, "closed-*.win"))
	require.Empty(t, files)
}

// A checkpoint lets go of the queued blobs its state held as soon as it
// is written, or has failed: they count against QueueBytes until then
// (aggregate.Set.State), not until the garbage collector finds the
// state. Here a scrape that folds the queue (nine blobs) after the
// checkpoint leaves no queued bytes. (A state written lets go of the
// queue of an aggregate not posted to since as it publishes its fold; one
// whose file could not be made is only released.)
func TestCheckpointLetsGoOfQueuedBlobs(t *testing.T) {
	for _, fail := range []bool{false, true} {
		t.Run(fmt.Sprint("failed=", fail), func(t *testing.T) {
			dir := t.TempDir()
			s, tp := newServer(t, collector.Config{DataDir: dir, NoSync: true})
			defer s.Close()
			kb := fixture.KitchenBlob(tp).Bytes()
			for range 9 {
				code, msg := postH(t, s, "/v1/blobs", "host=a", kb, nil)
				require.Equal(t, http.StatusNoContent, code, msg)
			}
			queued := collector.QueuedBytes(s)
			require.Equal(t, int64(9*len(kb)), queued)
			if fail { // the checkpoint's temporary file cannot be created
				unblock := blockCheckpoints(t, dir)
				require.Error(t, s.Checkpoint())
				unblock()
			} else {
				require.NoError(t, s.Checkpoint())
			}
			require.Equal(t, queued, collector.QueuedBytes(s), "the queue's")
			aggLines(t, s) // folds the queue
			require.Zero(t, collector.QueuedBytes(s))
		})
	}
}

// pushedAtNextRotation pushes s's closed windows (those recovered first)
// as deltas when the clock ck, set to at, closes the window under way,
// and returns the bytes SUM pushed in all.
func pushedAtNextRotation(t *testing.T, s *collector.Server, ck *clock, at time.Time) float64 {
	t.Helper()
	up := &blackHole{}
	up.up.Store(true)
	p := s.NewPusher(up, collector.PushConfig{Temporality: metricdata.DeltaTemporality})
	ck.set(at)
	s.Rotate()
	require.NoError(t, p.Close(context.Background()))
	up.mu.Lock()
	defer up.mu.Unlock()
	pushed := 0.0
	for _, rm := range up.got {
		for _, dp := range bytesSum(t, rm).DataPoints {
			pushed += dp.Value
		}
	}
	return pushed
}

// A restart from a checkpoint expires the same idle label sets
// (-label-ttl) at the same expiries as the server that never stopped:
// the checkpoint holds each label set's last post's time (aggregate's
// state, version 3), the posts replayed after it take their records'
// times, and so does a live post (single or batch). Here the checkpoint
// at 25 s holds a (0 s), b (10 s) and c (20 s, a batch), posted without
// sender headers (a state without senders, which the aggregate state
// wrote as version 1, without times); a's post at 28 s and d's at 35 s
// (with a sender) are replayed by the restart at 110 s. Before, every
// label set took the restart's time: none expired before 210 s, a
// minute and a half after b's TTL, the four series exported all that
// while; it fails at the expiry at 110 s.
func TestCheckpointedLabelSetsExpireAsLive(t *testing.T) {
	t0 := time.Unix(1700000000, 0)
	ck := &clock{t: t0}
	cfg := collector.Config{Now: ck.now, NoSync: true, LabelTTL: 100 * time.Second}
	liveCfg, crashCfg := cfg, cfg
	liveCfg.DataDir, crashCfg.DataDir = t.TempDir(), t.TempDir()
	live, tp := newServer(t, liveCfg)
	s1, _ := newServer(t, crashCfg)
	kb := fixture.KitchenBlob(tp).Bytes()
	at := func(sec int) { ck.set(t0.Add(time.Duration(sec) * time.Second)) }
	postAt := func(sec int, host string, hdr map[string]string, servers ...*collector.Server) {
		t.Helper()
		at(sec)
		for _, s := range servers {
			path, query, body := "/v1/blobs", "host="+host, kb
			if host == "c" {
				path, query, body = "/v1/batch", "", batch(t, "host=c", kb)
			}
			code, msg := postH(t, s, path, query, body, hdr)
			require.Equal(t, http.StatusNoContent, code, msg)
		}
	}
	hosts := func(s *collector.Server) []string {
		var out []string
		for _, n := range s.Blobs() {
			for _, l := range n.Labels {
				if l.Name == "host" {
					out = append(out, l.Value)
				}
			}
		}
		return out
	}
	postAt(0, "a", nil, live, s1)
	postAt(10, "b", nil, live, s1)
	postAt(20, "c", nil, live, s1)
	at(25)
	require.NoError(t, live.Checkpoint())
	require.NoError(t, s1.Checkpoint())
	postAt(28, "a", nil, live, s1)
	postAt(35, "d", map[string]string{aggregate.HeaderSender: "web", aggregate.HeaderSeq: "1"}, live, s1)
	collector.Crash(s1)

	at(110)
	s2, _ := newServer(t, crashCfg)
	lines, _ := scrapeLines(t, s2, false)
	require.Contains(t, lines, "statsblob_collector_log_replayed_records 2", "a's and d's posts; a, b and c are the checkpoint's")
	require.Equal(t, []string{"a", "b", "c", "d"}, hosts(s2))
	var steps []string
	for _, step := range []struct {
		sec  int
		post string
	}{
		{sec: 109},            // none: the cutoff is 9 s
		{sec: 110},            // b (10 s)
		{sec: 119},            // none
		{sec: 120},            // c (20 s)
		{sec: 127},            // none: a was posted to at 28 s
		{sec: 128},            // a
		{sec: 130, post: "e"}, // (a post, no expiry)
		{sec: 135},            // d (35 s)
		{sec: 229},            // none
		{sec: 230},            // e (130 s)
	} {
		if step.post != "" {
			postAt(step.sec, step.post, nil, live, s2)
			continue
		}
		at(step.sec)
		n := live.Expire()
		require.Equal(t, n, s2.Expire(), "at %d s", step.sec)
		require.Equal(t, hosts(live), hosts(s2), "at %d s", step.sec)
		require.Equal(t, live.Merged(), s2.Merged(), "at %d s", step.sec)
		steps = append(steps, fmt.Sprintf("%d s: %d expired, %v left", step.sec, n, hosts(s2)))
	}
	require.Equal(t, []string{
		"109 s: 0 expired, [a b c d] left",
		"110 s: 1 expired, [a c d] left",
		"119 s: 0 expired, [a c d] left",
		"120 s: 1 expired, [a d] left",
		"127 s: 0 expired, [a d] left",
		"128 s: 1 expired, [d] left",
		"135 s: 1 expired, [e] left",
		"229 s: 0 expired, [e] left",
		"230 s: 1 expired, [] left",
	}, steps)
	require.NoError(t, live.Close())
	require.NoError(t, s2.Close())
}

// A restart from a checkpoint recovers the senders' sequence marks with
// the times of their posts and the windows rotated since, as it recovers
// a replayed post's (TestReplayedMarksAgeAsLive): the later rotations
// age them out as they do in the server that never stopped, whatever the
// downtime. Before, the checkpoint held no times: its marks took the
// restart's time (200 s) in the window under way, and outlived
// -sequence-mark-age by the downtime, here a's (posted at 0 s) and b's
// (25 s), kept after the rotations at 205 s and 206 s that age them out,
// and a retry of b's post after them was a duplicate, when in the server
// that never stopped it is added.
func TestCheckpointedMarksAgeAsLive(t *testing.T) {
	t0 := time.Unix(1700000000, 0)
	ck := &clock{t: t0}
	cfg := collector.Config{DataDir: t.TempDir(), Now: ck.now, NoSync: true, SequenceMarkAge: time.Minute}
	s1, tp := newServer(t, cfg)
	kb := fixture.KitchenBlob(tp).Bytes()
	postAt := func(s *collector.Server, sec int, id string) {
		t.Helper()
		ck.set(t0.Add(time.Duration(sec) * time.Second))
		code, body := postH(t, s, "/v1/blobs", "host="+id, kb, map[string]string{aggregate.HeaderSender: id, aggregate.HeaderSeq: "1"})
		require.Equal(t, http.StatusNoContent, code, body)
	}
	rotateAt := func(s *collector.Server, sec int) {
		ck.set(t0.Add(time.Duration(sec) * time.Second))
		s.Rotate() // and a checkpoint
	}
	postAt(s1, 0, "a")
	rotateAt(s1, 10)
	rotateAt(s1, 20)
	postAt(s1, 25, "b")
	rotateAt(s1, 30) // the last checkpoint: a's mark, three rotations old, and b's, one
	postAt(s1, 35, "c")
	require.Equal(t, 3, collector.SequenceMarks(s1))

	ck.set(t0.Add(200 * time.Second))
	restart := cfg
	restart.DataDir = copyDir(t, cfg.DataDir) // what a crash would leave; s1 goes on
	s2, _ := newServer(t, restart)
	lines, _ := scrapeLines(t, s2, false)
	require.Contains(t, lines, "statsblob_collector_log_replayed_records 1", "c's post; a's and b's marks are the checkpoint's")
	require.Equal(t, 3, collector.SequenceMarks(s2))

	for _, step := range []struct {
		sec   int
		marks int
	}{
		{205, 2}, // a's goes (0 s, four rotations old); b's is two rotations old
		{206, 1}, // b's goes (25 s)
		{207, 0}, // c's goes (35 s)
	} {
		rotateAt(s1, step.sec)
		rotateAt(s2, step.sec)
		require.Equal(t, step.marks, collector.SequenceMarks(s1), "at %d s", step.sec)
		require.Equal(t, step.marks, collector.SequenceMarks(s2), "at %d s", step.sec)
	}
	for i, id := range []string{"a", "b", "c"} { // retries after their marks aged out: added again
		postAt(s2, 210, id)
		require.Equal(t, slices.Repeat([]uint64{1}, i+1), s2.Merged(), "a retry of %s's post (host=%[1]s)", id)
	}
	require.NoError(t, s1.Close())
	require.NoError(t, s2.Close())
}
