package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/export/internal/fixture"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// aggregateLines is what /metrics says of the aggregates: the lines of
// the kitchen template's metrics, sorted.
func aggregateLines(t *testing.T, base string) []string {
	lines := strings.Split(scrape(t, base), "\n")
	lines = slices.DeleteFunc(lines, func(l string) bool { return !strings.HasPrefix(l, "kitchen_") })
	slices.Sort(lines)
	return lines
}

// requireSameAggregates: every count, sum, bucket, min and max is equal;
// a t-digest's quantile estimates (the kitchen blob's rtt: values 10 to
// 40), which depend on how the digests were merged, and a restart merges
// the checkpoint's digest with the replayed ones in other steps, are
// within 3 (a tenth of the range) of each other.
func requireSameAggregates(t *testing.T, want, got []string, msg string) {
	t.Helper()
	require.Len(t, got, len(want), msg)
	for i := range want {
		if !strings.Contains(want[i], `quantile="`) {
			require.Equal(t, want[i], got[i], msg)
			continue
		}
		ws, wv, _ := strings.Cut(want[i], " ")
		gs, gv, _ := strings.Cut(got[i], " ")
		require.Equal(t, ws, gs, msg)
		w, err := strconv.ParseFloat(wv, 64)
		require.NoError(t, err)
		g, err := strconv.ParseFloat(gv, 64)
		require.NoError(t, err)
		require.InDelta(t, w, g, 3, "%s: %s", msg, ws)
	}
}

// TestKill9: every post the binary acknowledged with -data-dir is on
// /metrics after kill -9 and a restart on the same directory, exactly
// once; twice in a row, with checkpoints in between, and the senders'
// retries of acknowledged posts stay duplicates. Then SIGTERM's last
// checkpoint keeps them too.
func TestKill9(t *testing.T) {
	kb := fixture.KitchenBlob(fixture.Kitchen()).Bytes()
	dir := t.TempDir()
	args := []string{"-data-dir", dir, "-checkpoint-interval", "50ms", "-window", "1h"}
	const workers, perWorker = 8, 40
	posts := 0 // acknowledged, over all runs
	postAll := func(base string, run int) {
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range perWorker {
					req, err := http.NewRequest(http.MethodPost, fmt.Sprintf("%s/v1/blobs?host=h%d", base, (w+i)%5), bytes.NewReader(kb))
					if !assertNoError(t, err) {
						return
					}
					if w%2 == 0 { // half the workers are tracked senders
						req.Header.Set("Statsblob-Sender", fmt.Sprintf("w%d", w))
						req.Header.Set("Statsblob-Seq", strconv.Itoa(run*1000+i))
					}
					resp, err := http.DefaultClient.Do(req)
					if !assertNoError(t, err) {
						return
					}
					resp.Body.Close()
					if resp.StatusCode != http.StatusNoContent {
						t.Errorf("post: %d", resp.StatusCode)
						return
					}
				}
			}()
		}
		wg.Wait()
		posts += workers * perWorker
	}
	total := func(lines []string) int {
		n := 0
		for _, l := range lines {
			if strings.HasPrefix(l, "kitchen_bytes_total{") {
				v, err := strconv.Atoi(l[strings.LastIndexByte(l, ' ')+1:])
				require.NoError(t, err)
				n += v
			}
		}
		return n / 1448 // the kitchen blob's bytes SUM
	}
	cmd, base, _ := start(t, args...)
	for run := range 2 {
		postAll(base, run)
		require.False(t, t.Failed())
		want := aggregateLines(t, base)
		require.Equal(t, posts, total(want))
		require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
		_ = cmd.Wait()
		cmd, base, _ = start(t, args...)
		requireSameAggregates(t, want, aggregateLines(t, base), fmt.Sprintf("run %d: after kill -9", run))
		want = aggregateLines(t, base)
		// A retry of an acknowledged post is a duplicate.
		req, _ := http.NewRequest(http.MethodPost, base+"/v1/blobs?host=h0", bytes.NewReader(kb))
		req.Header.Set("Statsblob-Sender", "w0")
		req.Header.Set("Statsblob-Seq", strconv.Itoa(run*1000))
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusNoContent, resp.StatusCode)
		require.Equal(t, want, aggregateLines(t, base))
		time.Sleep(120 * time.Millisecond) // a checkpoint or two
	}
	want := aggregateLines(t, base)
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, cmd.Wait())
	_, base, _ = start(t, args...)
	requireSameAggregates(t, want, aggregateLines(t, base), "after SIGTERM")
}

func assertNoError(t *testing.T, err error) bool {
	if err != nil {
		t.Error(err)
		return false
	}
	return true
}

// TestSIGHUPReload: SIGHUP adds the templates file's new version of a
// template (two versions of one name in one file) without losing an
// aggregate; a file that does not parse changes nothing.
func TestSIGHUPReload(t *testing.T) {
	k1 := fixture.Kitchen()
	file := filepath.Join(t.TempDir(), "t.json")
	j1, err := json.Marshal([]*tpl.Template{k1})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(file, j1, 0o644))
	cmd, base, lines := start(t, "-templates", file)
	postOne := func(q string, body []byte) int {
		resp, err := http.Post(base+"/v1/blobs?"+q, "application/octet-stream", bytes.NewReader(body))
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	require.Equal(t, 204, postOne("v=1", fixture.KitchenBlob(k1).Bytes()))
	k2, err := tpl.NewRegistry().New("KITCHEN")
	require.NoError(t, err)
	require.NoError(t, k2.AddVOI(tpl.VOIDef{ID: 0, Name: "bytes", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}))
	b2 := blob.New(k2, nil)
	require.NoError(t, b2.UpdateU64(0, 5))
	require.Equal(t, 422, postOne("v=2", b2.Bytes()))

	require.NoError(t, os.WriteFile(file, []byte("[junk"), 0o644))
	require.NoError(t, cmd.Process.Signal(syscall.SIGHUP))
	require.True(t, lines.Scan())
	require.Contains(t, lines.Text(), "statsblob-collector: SIGHUP: "+file+": collector: templates: ")
	require.Contains(t, lines.Text(), "(templates unchanged)")

	j2, err := json.Marshal([]*tpl.Template{k1, k2})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(file, j2, 0o644))
	require.NoError(t, cmd.Process.Signal(syscall.SIGHUP))
	require.True(t, lines.Scan())
	require.Equal(t, "statsblob-collector: SIGHUP: 1 new templates from "+file, lines.Text())
	require.Equal(t, 204, postOne("v=2", b2.Bytes()))
	m := scrape(t, base)
	require.Contains(t, m, `kitchen_bytes_total{v="1"} 1448`)
	require.Contains(t, m, `kitchen_bytes_total{v="2"} 5`)
}
