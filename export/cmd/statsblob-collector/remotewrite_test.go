package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/klauspost/compress/snappy"
	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/export/internal/fixture"
)

// With -window, remote write ships each window once it closes; on SIGTERM
// the window under way closes once, seen by both the delta OTLP pusher and
// the remote writer, and the writer sends it before the exit.
func TestRemoteWriteOnTerminate(t *testing.T) {
	tj, err := json.Marshal(fixture.Kitchen())
	require.NoError(t, err)
	tfile := filepath.Join(t.TempDir(), "templates.json")
	require.NoError(t, os.WriteFile(tfile, tj, 0o644))
	var mu sync.Mutex
	var rw [][]byte
	otlpPushes := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		if r.URL.Path == "/v1/metrics" {
			otlpPushes++
			w.Header().Set("Content-Type", "application/x-protobuf")
			return
		}
		raw, err := snappy.Decode(nil, body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rw = append(rw, raw)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()

	cmd := exec.Command(binary, "-listen", "127.0.0.1:0", "-templates", tfile, "-window", "1h",
		"-otlp", srv.URL+"/v1/metrics", "-otlp-temporality", "delta", "-remote-write", srv.URL+"/api/v1/write",
		"-remote-write-label", "collector=c1")
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Process.Kill() }()
	lines := bufio.NewScanner(stderr)
	require.True(t, lines.Scan())
	m := regexp.MustCompile(`listening on (\S+),`).FindStringSubmatch(lines.Text())
	require.NotNil(t, m, lines.Text())
	resp, err := http.Post("http://"+m[1]+"/v1/blobs?host=web1", "application/octet-stream", bytes.NewReader(fixture.KitchenBlob(fixture.Kitchen()).Bytes()))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	mu.Lock()
	require.Empty(t, rw, "nothing before the window closes")
	mu.Unlock()

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	done := make(chan []string, 1)
	go func() {
		var rest []string
		for lines.Scan() {
			rest = append(rest, lines.Text())
		}
		done <- rest
	}()
	select {
	case rest := <-done:
		require.NoError(t, cmd.Wait(), "%q", rest)
		require.Equal(t, []string{"statsblob-collector: stopped"}, rest)
	case <-time.After(20 * time.Second):
		t.Fatal("no exit after SIGTERM")
	}
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, 1, otlpPushes)
	require.Len(t, rw, 1, "one window, one request")
	for _, s := range []string{"kitchen_bytes_total", "collector", "c1", "web1", "kitchen_rtt_tdigest_native"} {
		require.Contains(t, string(rw[0]), s)
	}
}
