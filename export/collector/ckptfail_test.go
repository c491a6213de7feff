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
