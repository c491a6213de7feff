package collector_test

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/statsblob/statsblob/export/aggregate"
	"github.com/statsblob/statsblob/export/collector"
	"github.com/statsblob/statsblob/export/internal/fixture"
)

// errDisk is the failure of a test's disk.
var errDisk = errors.New("injected disk failure")

// failingDisk fails the -data-dir log's segment writes or fsyncs (op)
// when told to, and then every checkpoint's write too (collector.WithDiskFault).
type failingDisk struct {
	mu sync.Mutex
	op string // "write", "sync"; "": the disk works
}

func (d *failingDisk) set(op string) { d.mu.Lock(); d.op = op; d.mu.Unlock() }

func (d *failingDisk) fault(op, file string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case d.op == "":
		return nil
	case strings.HasPrefix(file, "ckpt-") || op == d.op:
		return errDisk
	}
	return nil
}

// shipLife is one life of a collector process on a DataDir: a delta OTLP
// pusher and an OnClose function (as a remote writer) ship its closed
// windows.
type shipLife struct {
	s       *collector.Server
	p       *collector.Pusher
	up      *blackHole
	mu      sync.Mutex
	onClose uint64 // posts OnClose was given
}

func newShipLife(t *testing.T, cfg collector.Config) *shipLife {
	t.Helper()
	l := &shipLife{up: &blackHole{}}
	l.up.up.Store(true)
	l.s, _ = newServer(t, cfg)
	l.p = l.s.NewPusher(l.up, collector.PushConfig{Temporality: metricdata.DeltaTemporality})
	l.s.OnClose(func(c collector.Closed) { l.mu.Lock(); l.onClose += c.Posts; l.mu.Unlock() })
	return l
}

// shipped returns the posts the life shipped, once the pusher has pushed
// every window queued: by the pusher, by OnClose.
func (l *shipLife) shipped(t *testing.T) (pushed, onClose uint64) {
	t.Helper()
	require.Eventually(t, func() bool { return collector.PushQueue(l.p) == 0 }, 10*time.Second, time.Millisecond)
	l.up.mu.Lock()
	bytes := 0.0
	for _, rm := range l.up.got {
		for _, dp := range bytesSum(t, rm).DataPoints {
			bytes += dp.Value
		}
	}
	l.up.mu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	return uint64(bytes / 1448), l.onClose // a kitchen blob's bytes SUM is 1448
}

// Once a write or an fsync of the -data-dir log has failed, the collector
// counts every post it acknowledged once, over a crash and restart, and
// a sequenced sender's retry of a post it refused (503) too: what it
// ships before the restart (closed windows, to a delta OTLP push and an
// OnClose function) and after add up to the posts, never more. The log
// failed, it takes no post and closes no window (a restart replays their
// posts into the window under way: shipped then, they were shipped
// twice), and holds a window whose rotation's record failed, unshipped;
// at a checkpoint or a rotation it writes a checkpoint of its state (the
// posts refused after they were added among it, with their senders'
// marks) and is whole again, ships the window it held, and takes posts;
// a retry of a post it refused is then a duplicate.
//
// Before, the failed log took no post but its windows went on closing and
// shipping, their rotations not in the log: the restart replayed their
// posts into the window under way and shipped them again (6 posts
// shipped of 3, "post's write fails"); a post refused by a failed fsync
// was added and shipped, and the log never took a post again.
//
// Steps: post (204 expected), refused (a post answered 503, retried by
// retry), fail OP (segment writes or fsyncs fail, and checkpoints), fix,
// rotate (a minute later), checkpoint, crash (kill -9, and a restart with
// the disk fixed). At the end the window under way is closed and shipped.
func TestFailedLogShipsEachPostOnce(t *testing.T) {
	for _, c := range []struct {
		name  string
		steps string
		posts uint64 // acknowledged, at last
		// lost: OnClose (a remote writer) loses the window whose rotation
		// record was on disk but not yet synced at the crash, as any
		// window it had not sent (the delta push keeps its file).
		lost uint64
	}{
		{"post's write fails", "post post | fail write | refused rotate | crash | retry", 3, 0},
		{"post's fsync fails", "post post | fail sync | refused rotate rotate | crash | retry", 3, 0},
		{"rotation's write fails", "post post | fail write | rotate refused | crash | retry", 3, 0},
		{"rotation's fsync fails", "post post | fail sync | rotate refused | crash | retry", 3, 2},
		{"heals at a checkpoint", "post post | fail sync | refused checkpoint | fix | checkpoint retry post rotate | crash", 4, 0},
		{"heals at a rotation", "post post | fail write | refused rotate | fix | rotate retry post | crash", 4, 0},
		{"heals after a rotation's fsync fails", "post | fail sync | rotate refused | fix | checkpoint retry post rotate | crash | post", 4, 0},
		{"heals at the crash's restart", "post | fail sync | refused | fix | crash | retry post", 3, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			t0 := time.Unix(1700000000, 0)
			ck := &clock{t: t0}
			d := &failingDisk{}
			cfg := collector.WithDiskFault(collector.Config{DataDir: t.TempDir(), Window: time.Minute, Now: ck.now, NoSync: true}, d.fault)
			kb := fixture.KitchenBlob(fixture.Kitchen()).Bytes()
			life := newShipLife(t, cfg)
			var seq int
			var refused []int
			send := func(seq, want int) {
				t.Helper()
				code, msg := postH(t, life.s, "/v1/blobs", "host=a", kb,
					map[string]string{aggregate.HeaderSender: "svc", aggregate.HeaderSeq: strconv.Itoa(seq)})
				require.Equal(t, want, code, "seq %d: %s", seq, msg)
			}
			var pushed, onClose uint64
			total := func() {
				p, o := life.shipped(t)
				pushed, onClose = pushed+p, onClose+o
			}
			for _, step := range strings.Fields(strings.ReplaceAll(c.steps, "|", "")) {
				switch step {
				case "post":
					seq++
					send(seq, http.StatusNoContent)
				case "refused":
					seq++
					send(seq, http.StatusServiceUnavailable)
					refused = append(refused, seq)
				case "retry":
					for _, q := range refused {
						send(q, http.StatusNoContent)
					}
					refused = nil
				case "fail":
				case "write", "sync":
					d.set(step)
				case "fix":
					d.set("")
				case "rotate":
					ck.set(ck.now().Add(61 * time.Second))
					life.s.Rotate()
				case "checkpoint":
					_ = life.s.Checkpoint()
				case "crash":
					total()
					collector.Crash(life.s)
					d.set("")
					life = newShipLife(t, cfg)
				default:
					t.Fatalf("step %q", step)
				}
			}
			ck.set(ck.now().Add(61 * time.Second))
			life.s.Rotate()
			total()
			require.NoError(t, life.s.Close())
			require.Equal(t, c.posts, pushed, "pushed (delta OTLP), over both lives")
			require.Equal(t, c.posts-c.lost, onClose, "given to OnClose, over both lives")
		})
	}
}

// A failed log is logged once when it fails and once when it heals, and
// counted: statsblob_collector_log_broken is 1 in between (and /readyz
// 503), _log_failures_total and _log_heals_total count each, the tries
// that fail count in _checkpoint_failures_total, and the window ends it
// holds back in _rotations_held_total.
func TestFailedLogLoggedAndCounted(t *testing.T) {
	var logged bytes.Buffer
	ck := &clock{t: time.Unix(1700000000, 0)}
	d := &failingDisk{}
	cfg := collector.WithDiskFault(collector.Config{DataDir: t.TempDir(), Window: time.Minute, Now: ck.now, NoSync: true,
		Log: slog.New(slog.NewTextHandler(&logged, nil))}, d.fault)
	s, tp := newServer(t, cfg)
	kb := fixture.KitchenBlob(tp).Bytes()
	metrics := func() []string {
		t.Helper()
		lines, _ := scrapeLines(t, s, false)
		var got []string
		for _, l := range lines {
			for _, name := range []string{"log_broken", "log_failures_total", "log_heals_total", "rotations_held_total", "checkpoint_failures_total", "windows_total"} {
				if strings.HasPrefix(l, "statsblob_collector_"+name+" ") {
					got = append(got, strings.TrimPrefix(l, "statsblob_collector_"))
				}
			}
		}
		return got
	}
	count := func(msg string) int { return strings.Count(logged.String(), msg) }
	const failedMsg, healedMsg = `msg="the write-ahead log failed: `, `msg="the write-ahead log healed: `
	postWant := func(want int, msg string) {
		t.Helper()
		code, body := postH(t, s, "/v1/blobs", "host=a", kb, nil)
		require.Equal(t, want, code, body)
		require.Equal(t, msg, body)
	}
	postWant(http.StatusNoContent, "")
	d.set("write")
	const refused = "the collector cannot store posts (its -data-dir log failed): not acknowledged\n"
	postWant(http.StatusServiceUnavailable, refused)
	postWant(http.StatusServiceUnavailable, refused)
	code, body, _ := get(t, s, "/readyz", nil)
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Equal(t, "the -data-dir log failed: posts are refused until it heals\n", body)
	require.ErrorIs(t, s.Checkpoint(), errDisk)
	ck.set(ck.now().Add(time.Minute))
	require.Empty(t, s.Rotate().Blobs, "the window goes on")
	require.Equal(t, []uint64{2}, s.Merged(), "the post refused after its add, and the one before")
	require.Equal(t, []string{"checkpoint_failures_total 2", "log_broken 1", "log_failures_total 1", "log_heals_total 0",
		"rotations_held_total 1", "windows_total 0"}, metrics())
	require.Equal(t, 1, count(failedMsg), logged.String())
	require.Zero(t, count(healedMsg))

	d.set("")
	require.NoError(t, s.Checkpoint())
	postWant(http.StatusNoContent, "")
	code, _, _ = get(t, s, "/readyz", nil)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, []string{"checkpoint_failures_total 2", "log_broken 0", "log_failures_total 1", "log_heals_total 1",
		"rotations_held_total 1", "windows_total 0"}, metrics())
	require.Equal(t, 1, count(healedMsg), logged.String())
	require.Contains(t, logged.String(), `level=INFO `+healedMsg+`a checkpoint of the state in memory was written, posts are taken again" data_dir=`)

	// A rotation's record fails: the window is held, then shipped when the
	// log heals (at Close, here).
	d.set("sync")
	ck.set(ck.now().Add(time.Minute))
	require.Empty(t, s.Rotate().Blobs, "held")
	require.Equal(t, []string{"checkpoint_failures_total 2", "log_broken 1", "log_failures_total 2", "log_heals_total 1",
		"rotations_held_total 2", "windows_total 0"}, metrics())
	var shipped []uint64
	s.OnClose(func(c collector.Closed) { shipped = append(shipped, c.Posts) })
	d.set("")
	require.NoError(t, s.Close())
	require.Equal(t, []uint64{3}, shipped)
	require.Equal(t, []string{"checkpoint_failures_total 2", "log_broken 0", "log_failures_total 2", "log_heals_total 2",
		"rotations_held_total 2", "windows_total 1"}, metrics())
	require.Equal(t, 2, count(failedMsg))
	require.Equal(t, 2, count(healedMsg))
	require.Contains(t, logged.String(), "held_window=true")
	s2, _ := newServer(t, collector.Config{DataDir: cfg.DataDir, NoSync: true, Window: time.Minute, Now: ck.now})
	require.Empty(t, s2.Merged(), "the held window's posts are not replayed")
	require.NoError(t, s2.Close())
}

// Posts, a disk that fails and works again, checkpoints and rotations at
// once (run with -race): every post a sequenced sender retries until it
// is acknowledged is shipped once, over a crash and restart.
func TestFailedLogConcurrent(t *testing.T) {
	for _, op := range []string{"write", "sync"} {
		t.Run(op, func(t *testing.T) {
			ck := &clock{t: time.Unix(1700000000, 0)}
			d := &failingDisk{}
			cfg := collector.WithDiskFault(collector.Config{DataDir: t.TempDir(), Window: time.Minute, Now: ck.now, NoSync: true}, d.fault)
			life := newShipLife(t, cfg)
			kb := fixture.KitchenBlob(fixture.Kitchen()).Bytes()
			stop := make(chan struct{})
			done := make(chan struct{})
			// enough: the log has failed and healed twice (counted by the
			// server, not by the disk's switches: a failure needs a post
			// or a rotation while the disk fails), or 30 s have gone
			// by without (then the checks below fail, not a hang).
			var enough atomic.Bool
			deadline := time.Now().Add(30 * time.Second)
			go func() {
				defer close(done)
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					if f, h := collector.LogFailures(life.s); f >= 2 && h >= 2 || time.Now().After(deadline) {
						enough.Store(true)
					}
					switch i % 6 {
					case 1:
						d.set(op)
					case 3:
						d.set("")
					case 5:
						ck.set(ck.now().Add(time.Second))
						life.s.Rotate()
					default:
						_ = life.s.Checkpoint()
					}
					time.Sleep(300 * time.Microsecond) // pacing, not synchronisation
				}
			}()
			// Each sender posts at least 100 times, and on until the log
			// has failed and healed twice (on a busy machine the posts
			// could otherwise all end before it first fails).
			const senders, minPosts = 4, 100
			var total atomic.Uint64
			var wg sync.WaitGroup
			for w := range senders {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < minPosts || !enough.Load(); i++ {
						total.Add(1)
						h := map[string]string{aggregate.HeaderSender: fmt.Sprintf("w%d", w), aggregate.HeaderSeq: strconv.Itoa(i)}
						for try := 0; ; try++ {
							code, body := postH(t, life.s, "/v1/blobs", fmt.Sprintf("host=h%d", i%3), kb, h)
							if code == http.StatusNoContent {
								break
							}
							if code != http.StatusServiceUnavailable || try > 10000 {
								t.Errorf("%d %s", code, body)
								return
							}
							time.Sleep(100 * time.Microsecond)
						}
					}
				}()
			}
			wg.Wait()
			close(stop)
			<-done
			pushed, onClose := life.shipped(t)
			failures, heals := collector.LogFailures(life.s)
			t.Logf("%v failures, %v heals; shipped %d posts before the crash", failures, heals, pushed)
			require.GreaterOrEqual(t, failures, 2, "the log failed twice")
			require.GreaterOrEqual(t, heals, 2, "and healed twice")
			collector.Crash(life.s)
			d.set("")
			life = newShipLife(t, cfg)
			ck.set(ck.now().Add(time.Minute))
			life.s.Rotate()
			p2, o2 := life.shipped(t)
			require.NoError(t, life.s.Close())
			require.Equal(t, total.Load(), pushed+p2, "pushed (delta OTLP), over both lives")
			require.LessOrEqual(t, onClose+o2, total.Load(), "given to OnClose: never twice (a window held at the crash may be lost)")
		})
	}
}

// A post answered 503 because its log record failed counts once, in
// statsblob_collector_blobs_rejected_total{reason="durability"}, though
// it was added before the record failed; its sequenced retry is then a
// duplicate. So each post counts once, as its answer says: posted =
// accepted + duplicates + rejected (in posts of one blob; a batch's
// blobs count in accepted). Before, the post added and refused counted
// in accepted too: 3 accepted, 2 refused and 1 duplicate of 5 posts.
func TestFailedLogCountsEachPostOnce(t *testing.T) {
	kb := fixture.KitchenBlob(fixture.Kitchen()).Bytes()
	for _, c := range []struct {
		path  string
		body  []byte
		blobs int
	}{
		{"/v1/blobs", kb, 1},
		{"/v1/batch", batch(t, "", kb, "x=1", kb), 2},
	} {
		t.Run(c.path, func(t *testing.T) {
			d := &failingDisk{}
			cfg := collector.WithDiskFault(collector.Config{DataDir: t.TempDir(), NoSync: true}, d.fault)
			s, _ := newServer(t, cfg)
			send := func(seq, want int) {
				t.Helper()
				code, msg := postH(t, s, c.path, "host=a", c.body,
					map[string]string{aggregate.HeaderSender: "svc", aggregate.HeaderSeq: strconv.Itoa(seq)})
				require.Equal(t, want, code, "seq %d: %s", seq, msg)
			}
			metrics := func() []string {
				t.Helper()
				lines, _ := scrapeLines(t, s, false)
				var got []string
				for _, l := range lines {
					for _, name := range []string{"blobs_accepted_total ", "accepted_bytes_total ", `blobs_rejected_total{reason="durability"} `, "duplicates_total "} {
						if strings.HasPrefix(l, "statsblob_collector_"+name) {
							got = append(got, strings.TrimPrefix(l, "statsblob_collector_"))
						}
					}
				}
				return got
			}
			counts := func(accepted, rejected, duplicates int) []string {
				return []string{fmt.Sprintf("accepted_bytes_total %d", accepted*len(kb)), fmt.Sprintf("blobs_accepted_total %d", accepted),
					fmt.Sprintf(`blobs_rejected_total{reason="durability"} %d`, rejected), fmt.Sprintf("duplicates_total %d", duplicates)}
			}
			send(1, http.StatusNoContent)
			d.set("write")
			send(2, http.StatusServiceUnavailable) // added, then its record failed
			send(3, http.StatusServiceUnavailable) // refused by the failed log, not added
			require.Equal(t, slices.Repeat([]uint64{2}, c.blobs), s.Merged(), "posts merged, per label set")
			require.Equal(t, counts(c.blobs, 2, 0), metrics())

			d.set("")
			require.NoError(t, s.Checkpoint()) // heals
			send(2, http.StatusNoContent)      // a duplicate: it is in
			send(3, http.StatusNoContent)
			require.Equal(t, slices.Repeat([]uint64{3}, c.blobs), s.Merged())
			require.Equal(t, counts(2*c.blobs, 2, 1), metrics(), "5 posts: 2 accepted, 2 refused, 1 duplicate")
			require.NoError(t, s.Close())
		})
	}
}
