package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	"google.golang.org/protobuf/proto"

	"github.com/statsblob/statsblob/export/internal/fixture"
)

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sbc")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "statsblob-collector")
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		panic(string(out))
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func TestUsage(t *testing.T) {
	f := func(want int, msg string, args ...string) {
		t.Helper()
		var stderr bytes.Buffer
		require.Equal(t, want, run(context.Background(), args, &stderr), stderr.String())
		require.Contains(t, stderr.String(), msg)
	}
	f(2, "-templates FILE is required")
	f(2, `unexpected argument "x"`, "-templates", "t.json", "x")
	f(2, "needs -window", "-templates", "t.json", "-otlp-temporality", "delta")
	f(2, `-otlp-temporality "sideways"`, "-templates", "t.json", "-otlp-temporality", "sideways")
	f(2, `-quantiles: "x" is not a number`, "-templates", "t.json", "-quantiles", "0.5,x")
	f(2, "want VOI=UNIT", "-unit", "rtt")
	f(2, `-remote-write-histograms "sparse": auto, native or classic`, "-templates", "t.json", "-remote-write-histograms", "sparse")
	f(2, "want NAME=VALUE", "-remote-write-label", "collector")
	f(0, "usage: statsblob-collector", "-h")
	f(1, "no such file", "-templates", filepath.Join(t.TempDir(), "none.json"))
	bad := filepath.Join(t.TempDir(), "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte("[{}]"), 0o644))
	good := filepath.Join(t.TempDir(), "good.json")
	tj, err := json.Marshal(fixture.Kitchen())
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(good, tj, 0o644))
	f(1, "-remote-write: remotewrite: URL", "-templates", good, "-remote-write", "ftp://x")
	f(1, `-remote-write: remotewrite: export: label name "le" is reserved`, "-templates", good, "-remote-write", "http://h/w", "-remote-write-label", "le=1")
	f(1, "bad.json: collector: template 0", "-templates", bad)
}

// The binary serves posts and scrapes, and on SIGTERM finishes, pushes the
// window under way over OTLP (delta) and exits 0.
func TestServeAndTerminate(t *testing.T) {
	tp := fixture.Kitchen()
	tj, err := json.Marshal(tp)
	require.NoError(t, err)
	tfile := filepath.Join(t.TempDir(), "templates.json")
	require.NoError(t, os.WriteFile(tfile, tj, 0o644))

	var mu sync.Mutex
	var pushed []*colmetricpb.ExportMetricsServiceRequest
	otlp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		req := &colmetricpb.ExportMetricsServiceRequest{}
		if proto.Unmarshal(body, req) != nil {
			http.Error(w, "bad", http.StatusBadRequest)
			return
		}
		mu.Lock()
		pushed = append(pushed, req)
		mu.Unlock()
		out, _ := proto.Marshal(&colmetricpb.ExportMetricsServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	defer otlp.Close()

	cmd := exec.Command(binary, "-listen", "127.0.0.1:0", "-templates", tfile, "-window", "1h",
		"-otlp", otlp.URL+"/v1/metrics", "-otlp-temporality", "delta", "-unit", "rtt=microseconds")
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Process.Kill() }()
	lines := bufio.NewScanner(stderr)
	require.True(t, lines.Scan())
	m := regexp.MustCompile(`listening on (\S+), templates "KITCHEN":\d+`).FindStringSubmatch(lines.Text())
	require.NotNil(t, m, lines.Text())
	base := "http://" + strings.TrimSuffix(m[1], ",")

	resp, err := http.Post(base+"/v1/blobs?host=web1", "application/octet-stream", bytes.NewReader(fixture.KitchenBlob(tp).Bytes()))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	resp, err = http.Get(base + "/metrics")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Contains(t, string(body), `kitchen_bytes_total{host="web1"} 1448`)
	require.Contains(t, string(body), `kitchen_rtt_microseconds_tdigest_count{host="web1"} 4`)

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	// Read stderr to its end before Wait: Wait closes the pipe once the
	// process has exited, and a line still in the pipe would be lost.
	drained := make(chan []string, 1)
	go func() {
		var rest []string
		for lines.Scan() {
			rest = append(rest, lines.Text())
		}
		drained <- rest
	}()
	var rest []string
	select {
	case rest = <-drained:
	case <-time.After(20 * time.Second):
		t.Fatal("no exit after SIGTERM")
	}
	require.NoError(t, cmd.Wait(), "exit status 0; stderr %q", rest)
	require.Equal(t, []string{"statsblob-collector: stopped"}, rest)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, pushed, 1, "the last window, pushed on the way out")
	var found bool
	for _, sm := range pushed[0].ResourceMetrics[0].ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == "kitchen.bytes" {
				found = true
				require.Equal(t, 1448.0, m.GetSum().DataPoints[0].GetAsDouble())
			}
		}
	}
	require.True(t, found)
}
