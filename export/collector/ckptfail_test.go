package collector_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/export/aggregate"
	"github.com/statsblob/statsblob/export/collector"
	"github.com/statsblob/statsblob/export/internal/fixture"
)

// blockCheckpoints makes the next checkpoints of the log in dir fail (a
// full disk, an I/O error): the names of their temporary files are taken
// by directories. It returns what undoes it.
func blockCheckpoints(t *testing.T, dir string) func() {
	t.Helper()
	segs, err := filepath.Glob(filepath.Join(dir, "seg-*.wal"))
	require.NoError(t, err)
	require.NotEmpty(t, segs)
	n, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(segs[len(segs)-1]), "seg-"), ".wal"), 16, 64)
	require.NoError(t, err)
	var tmps []string
	for i := uint64(1); i <= 4; i++ {
		tmp := filepath.Join(dir, fmt.Sprintf("ckpt-%016x.ckpt.tmp", n+i))
		require.NoError(t, os.Mkdir(tmp, 0o755))
		tmps = append(tmps, tmp)
	}
	return func() {
		for _, tmp := range tmps {
			require.NoError(t, os.Remove(tmp))
		}
	}
}

// recovered is what a server holds of its current window.
type recovered struct {
	lines  []string
	merged []uint64
	start  time.Time
}

func recoveredOf(t *testing.T, s *collector.Server) recovered {
	t.Helper()
	r := recovered{lines: aggLines(t, s), merged: s.Merged()}
	if bs := s.Blobs(); len(bs) > 0 {
		r.start = bs[0].Start
	}
	return r
}

// A checkpoint whose write fails undoes nothing that ran at its point of
// the log: an expiry of idle label sets (at a checkpoint, or Expire), a
// window's rotation, a reset of VOIs. A restart after it recovers the
// state the server had, the one a restart after the checkpoint written
// recovers. Before, the log was left uncut and the restart replayed the
// old checkpoint and every record since, as if the event had not
// happened: the expired label set came back and took the place of the
// acknowledged post made after the expiry freed it (refused at replay,
// lost: statsblob_collector_log_replay_failures 1), the closed window's
// posts (already shipped) were replayed into the window under way with
// its start, and a reset was answered 500 ("a restart undoes it") and
// undone.
func TestFailedCheckpointUndoesNothing(t *testing.T) {
	t0 := time.Unix(1700000000, 0)
	for _, c := range []struct {
		name  string
		cfg   collector.Config
		event func(t *testing.T, s *collector.Server, fail bool)
		want  []uint64 // Merged after the restart
		start time.Time
	}{
		{
			name: "checkpoint expires",
			cfg:  collector.Config{LabelTTL: time.Minute, MaxAggregates: 2},
			event: func(t *testing.T, s *collector.Server, fail bool) {
				err := s.Checkpoint()
				if fail {
					require.Error(t, err)
				} else {
					require.NoError(t, err)
				}
			},
			want: []uint64{1, 1}, // host=b, host=c: host=a expired
		},
		{
			name: "Expire",
			cfg:  collector.Config{LabelTTL: time.Minute, MaxAggregates: 2},
			event: func(t *testing.T, s *collector.Server, _ bool) {
				require.Equal(t, 1, s.Expire())
			},
			want: []uint64{1, 1},
		},
		{
			name: "rotation",
			cfg:  collector.Config{Window: time.Minute},
			event: func(t *testing.T, s *collector.Server, _ bool) {
				c := s.Rotate()
				require.Equal(t, uint64(3), c.Posts)
			},
			want:  []uint64{1}, // host=c, in the new window
			start: t0.Add(70 * time.Second),
		},
		{
			name: "reset",
			cfg:  collector.Config{},
			event: func(t *testing.T, s *collector.Server, _ bool) {
				code, body := defDo(t, s, http.MethodPost, "tpl=KITCHEN", "", "name=rtt data=reset\nname=bytes data=reset")
				require.Equal(t, http.StatusOK, code, body)
			},
			want:  []uint64{2, 1, 1}, // host=a, host=b, host=c
			start: t0,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got [2]recovered
			for i, fail := range []bool{false, true} {
				dir := t.TempDir()
				ck := &clock{t: t0}
				cfg := c.cfg
				cfg.DataDir, cfg.Now, cfg.NoSync = dir, ck.now, true
				s1, tp := newServer(t, cfg)
				kb := fixture.KitchenBlob(tp).Bytes()
				postAt := func(s *collector.Server, d time.Duration, q string) {
					t.Helper()
					ck.set(t0.Add(d))
					code, body := post(t, s, http.MethodPost, q, kb)
					require.Equal(t, http.StatusNoContent, code, body)
				}
				postAt(s1, 0, "host=a")
				postAt(s1, 5*time.Second, "host=a")
				postAt(s1, 50*time.Second, "host=b")
				ck.set(t0.Add(70 * time.Second)) // a LabelTTL of 1m expires host=a, not host=b
				unblock := func() {}
				if fail {
					unblock = blockCheckpoints(t, dir)
				}
				c.event(t, s1, fail)
				postAt(s1, 71*time.Second, "host=c")
				live := recoveredOf(t, s1)
				collector.Crash(s1)
				unblock()

				s2, _ := newServer(t, cfg)
				got[i] = recoveredOf(t, s2)
				require.Equal(t, live, got[i], "fail=%v: the restart recovers the live state", fail)
				lines, _ := scrapeLines(t, s2, false)
				require.Contains(t, lines, "statsblob_collector_log_replay_failures 0")
				require.NoError(t, s2.Close(), "a checkpoint written: the log is cut")
				s3, _ := newServer(t, cfg)
				require.Equal(t, live, recoveredOf(t, s3), "fail=%v: from the checkpoint written at Close", fail)
				require.NoError(t, s3.Close())
			}
			require.Equal(t, got[0], got[1], "a failed checkpoint recovers as a written one")
			require.Equal(t, c.want, got[1].merged)
		})
	}
}

// A restart that replays the log recovers the senders' sequence marks the
// live server had, not only their numbers: a replayed post's marks take
// the time it was added at (its record holds it), so that the rotations
// replayed after it age them out as they did live. Before, they took the
// restart's time: here the rotation at 70 s, which had dropped a's mark
// (posted at 0 s, past two rotations and the mark age of a minute), kept
// it at the replay, MaxSequenceMarks (2) was then full for c's post,
// replayed unchecked, and a retry of c's post after the restart was
// added a second time.
func TestReplayedMarksAgeAsLive(t *testing.T) {
	t0 := time.Unix(1700000000, 0)
	dir := t.TempDir()
	ck := &clock{t: t0}
	cfg := collector.Config{DataDir: dir, Now: ck.now, NoSync: true, MaxSequenceMarks: 2, SequenceMarkAge: time.Minute}
	s1, tp := newServer(t, cfg)
	kb := fixture.KitchenBlob(tp).Bytes()
	postAt := func(s *collector.Server, d time.Duration, id, host string) {
		t.Helper()
		ck.set(t0.Add(d))
		code, body := postH(t, s, "/v1/blobs", "host="+host, kb, map[string]string{aggregate.HeaderSender: id, aggregate.HeaderSeq: "1"})
		require.Equal(t, http.StatusNoContent, code, body)
	}
	rotateAt := func(s *collector.Server, d time.Duration) {
		ck.set(t0.Add(d))
		s.Rotate()
	}
	unblock := blockCheckpoints(t, dir) // the log keeps every record: the restart replays them all
	postAt(s1, 0, "a", "a")
	rotateAt(s1, 10*time.Second)
	rotateAt(s1, 20*time.Second)
	postAt(s1, 25*time.Second, "b", "b")
	rotateAt(s1, 30*time.Second)
	require.Equal(t, 2, collector.SequenceMarks(s1), "three rotations, not the mark age: a's mark is kept")
	rotateAt(s1, 70*time.Second) // the cutoff is 10 s: a's mark, of 0 s, goes; b's is one rotation old
	require.Equal(t, 1, collector.SequenceMarks(s1))
	postAt(s1, 75*time.Second, "c", "c") // takes a's place
	require.Equal(t, 2, collector.SequenceMarks(s1))
	require.Zero(t, collector.LimitHits(s1, "sequence_marks"))
	lines, _ := scrapeLines(t, s1, false)
	require.Contains(t, lines, "statsblob_collector_checkpoint_failures_total 4")
	live := aggLines(t, s1)
	unblock()

	ck.set(t0.Add(80 * time.Second))
	restart := cfg
	restart.DataDir = copyDir(t, dir) // what a crash would leave; s1 goes on
	s2, _ := newServer(t, restart)
	require.Equal(t, live, aggLines(t, s2))
	require.Equal(t, 2, collector.SequenceMarks(s2), "b's and c's")
	require.Zero(t, collector.LimitHits(s2, "sequence_marks"), "the replay found a place for c's mark")
	lines, _ = scrapeLines(t, s2, false)
	require.Contains(t, lines, "statsblob_collector_log_replay_failures 0")

	// Their times too: a rotation at 200 s (the cutoff 140 s) drops b's
	// mark (25 s, three rotations old) in both, and keeps c's (75 s).
	rotateAt(s1, 200*time.Second)
	rotateAt(s2, 200*time.Second)
	require.Equal(t, 1, collector.SequenceMarks(s1))
	require.Equal(t, 1, collector.SequenceMarks(s2))

	// c's retry is a duplicate; b's and a's, whose marks aged out, are added.
	for _, p := range []struct {
		id   string
		want []uint64
	}{{"c", []uint64{}}, {"b", []uint64{1}}, {"a", []uint64{1, 1}}} {
		postAt(s2, 201*time.Second, p.id, p.id)
		require.Equal(t, p.want, s2.Merged(), "a retry of %s's post", p.id)
	}
	require.NoError(t, s2.Close())
	require.NoError(t, s1.Close())
}

// copyDir copies the files of dir to a new directory: what a crash would
// leave of a data directory now.
func copyDir(t *testing.T, dir string) string {
	t.Helper()
	to := t.TempDir()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		p, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(to, e.Name()), p, 0o644))
	}
	return to
}
