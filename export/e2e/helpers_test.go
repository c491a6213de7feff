package e2e_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/tpl"
)

func e2eEnabled(t *testing.T) {
	t.Helper()
	if os.Getenv("STATSBLOB_E2E") == "" {
		t.Skip("set STATSBLOB_E2E=1 (make e2e) to run against real servers")
	}
}

// latFleet is the latency template's blobs with known samples: n blobs,
// blob i from host h(i % hosts).
type latFleet struct {
	tp      *tpl.Template
	tfile   string         // the templates file
	blobs   [][]*blob.Blob // by host
	samples [][]float64    // by host
}

func newLatFleet(t *testing.T, dir string, n, hosts int, seed uint64) *latFleet {
	t.Helper()
	reg := tpl.NewRegistry()
	f := &latFleet{tp: latTemplate(t, reg), blobs: make([][]*blob.Blob, hosts), samples: make([][]float64, hosts)}
	all, err := json.Marshal([]*tpl.Template{f.tp})
	require.NoError(t, err)
	f.tfile = filepath.Join(dir, "lat-templates.json")
	require.NoError(t, os.WriteFile(f.tfile, all, 0o644))
	rng := rand.New(rand.NewPCG(seed, 4))
	for i := range n {
		h := i % hosts
		b := blob.New(f.tp, blob.NewEnv(nil, uint32(i+1)))
		base := math.Exp(math.Log(2000) + 0.7*rng.NormFloat64())
		for range 50 + rng.IntN(450) {
			v := uint32(base * math.Exp(0.4*rng.NormFloat64()))
			require.NoError(t, b.UpdateU32(0, v))
			f.samples[h] = append(f.samples[h], float64(v))
		}
		f.blobs[h] = append(f.blobs[h], b)
	}
	return f
}

// all returns every sample, sorted.
func (f *latFleet) all() []float64 {
	var xs []float64
	for _, s := range f.samples {
		xs = append(xs, s...)
	}
	slices.Sort(xs)
	return xs
}

// countLE returns the number of the sorted samples xs at or below v.
func countLE(xs []float64, v float64) int {
	i, found := slices.BinarySearch(xs, v)
	for found && i < len(xs) && xs[i] == v {
		i++
	}
	return i
}

// rankOf returns the fraction of the sorted samples xs at or below v.
func rankOf(xs []float64, v float64) float64 { return float64(countLE(xs, v)) / float64(len(xs)) }

// exactQ returns the exact q-quantile of the sorted xs (the smallest
// sample with at least q of the samples at or below it).
func exactQ(xs []float64, q float64) float64 {
	return xs[max(int(math.Ceil(q*float64(len(xs))))-1, 0)]
}

// buildCollector builds statsblob-collector into dir once per test binary.
func buildCollector(t *testing.T, ctx context.Context, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "statsblob-collector")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/statsblob-collector")
	build.Dir = filepath.Join(repoRoot(t), "export")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)
	return bin
}

// collectorProc is a running statsblob-collector.
type collectorProc struct {
	cmd  *exec.Cmd
	addr string
	rest chan []string // the stderr lines after the first, at exit
}

func startCollector(t *testing.T, ctx context.Context, bin string, args ...string) *collectorProc {
	t.Helper()
	cmd := exec.CommandContext(ctx, bin, append([]string{"-listen", "127.0.0.1:0"}, args...)...)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := bufio.NewScanner(stderr)
	require.True(t, lines.Scan())
	m := regexp.MustCompile(`listening on (\S+),`).FindStringSubmatch(lines.Text())
	require.NotNil(t, m, lines.Text())
	p := &collectorProc{cmd: cmd, addr: m[1], rest: make(chan []string, 1)}
	go func() {
		var rest []string
		for lines.Scan() {
			rest = append(rest, lines.Text())
		}
		p.rest <- rest
	}()
	return p
}

// post posts blobs with the query's labels, each answered 204.
func (p *collectorProc) post(t *testing.T, q string, bs ...*blob.Blob) {
	t.Helper()
	for _, b := range bs {
		resp, err := http.Post("http://"+p.addr+"/v1/blobs?"+q, "application/octet-stream", bytes.NewReader(b.Bytes()))
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusNoContent, resp.StatusCode, "%s", body)
	}
}

// stop sends SIGTERM and waits for a clean exit (status 0, "stopped").
func (p *collectorProc) stop(t *testing.T) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	var rest []string
	select {
	case rest = <-p.rest:
	case <-time.After(30 * time.Second):
		t.Fatal("no exit after SIGTERM")
	}
	require.NoError(t, p.cmd.Wait(), "stderr %q", rest)
	require.Equal(t, "statsblob-collector: stopped", rest[len(rest)-1], "%q", rest)
}

// metricsText returns the collector's /metrics.
func (p *collectorProc) metricsText(t *testing.T) string {
	t.Helper()
	resp, err := http.Get("http://" + p.addr + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}

// startPrometheus runs Debian's prometheus on 127.0.0.1 with the remote
// write receiver, and native histograms if native, scraping targets every
// second.
func startPrometheus(t *testing.T, ctx context.Context, dir string, native bool, targets ...string) string {
	t.Helper()
	promBin := os.Getenv("PROMETHEUS")
	if promBin == "" {
		promBin = "prometheus"
	}
	promBin, err := exec.LookPath(promBin)
	require.NoError(t, err, "make e2e installs Debian's prometheus")
	addr := freePort(t)
	cfg := "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
	if len(targets) > 0 {
		cfg += "scrape_configs:\n  - job_name: statsblob\n    static_configs:\n      - targets: ['" + targets[0] + "']\n"
	}
	cfile := filepath.Join(dir, "prometheus-rw.yml")
	require.NoError(t, os.WriteFile(cfile, []byte(cfg), 0o644))
	var promLog bytes.Buffer
	args := []string{"--config.file=" + cfile, "--storage.tsdb.path=" + filepath.Join(dir, "tsdb-rw"),
		"--web.listen-address=" + addr, "--log.level=warn", "--web.enable-remote-write-receiver"}
	if native {
		args = append(args, "--enable-feature=native-histograms")
	}
	prom := exec.CommandContext(ctx, promBin, args...)
	prom.Stdout, prom.Stderr = &promLog, &promLog
	require.NoError(t, prom.Start())
	t.Cleanup(func() { _ = prom.Process.Signal(syscall.SIGTERM); _ = prom.Wait() })
	url := "http://" + addr
	require.Eventually(t, func() bool {
		resp, err := http.Get(url + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 60*time.Second, 100*time.Millisecond, "Prometheus ready; log:\n%s", &promLog)
	return url
}

// pq is fmt.Sprintf, for PromQL.
var pq = fmt.Sprintf
