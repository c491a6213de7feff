package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/family"
	"github.com/statsblob/statsblob/hist"
	"github.com/statsblob/statsblob/ship"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

var faultDuration = flag.Duration("fault.d", 3*time.Second, "how long TestFault loads the collector (make fault: 60s)")

// faultProxy forwards the shippers' posts to the collector of the moment,
// dropping, losing the answer of, duplicating and delaying some.
type faultProxy struct {
	backend atomic.Pointer[string] // the collector's base URL; nil while it is down
	mu      sync.Mutex
	rnd     *rand.Rand
	client  *http.Client
	counts  [5]atomic.Int64 // dropped, answer lost, duplicated, delayed, backend down
}

func (p *faultProxy) roll() (float64, time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.rnd.Float64(), time.Duration(p.rnd.IntN(20)) * time.Millisecond
}

func (p *faultProxy) forward(r *http.Request, body []byte) (int, error) {
	base := p.backend.Load()
	if base == nil {
		p.counts[4].Add(1)
		return 0, fmt.Errorf("collector down")
	}
	req, err := http.NewRequestWithContext(r.Context(), r.Method, *base+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header = r.Header.Clone()
	resp, err := p.client.Do(req)
	if err != nil {
		p.counts[4].Add(1)
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

func (p *faultProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		w.WriteHeader(http.StatusBadGateway)
		return
	}
	x, delay := p.roll()
	switch {
	case x < 0.10: // dropped on the way
		p.counts[0].Add(1)
		w.WriteHeader(http.StatusBadGateway)
		return
	case x < 0.20: // delivered, the answer lost
		p.counts[1].Add(1)
		_, _ = p.forward(r, body)
		w.WriteHeader(http.StatusBadGateway)
		return
	case x < 0.30: // delivered twice
		p.counts[2].Add(1)
		_, _ = p.forward(r, body)
	case x < 0.50:
		p.counts[3].Add(1)
		time.Sleep(delay)
	}
	code, err := p.forward(r, body)
	if err != nil {
		w.WriteHeader(http.StatusBadGateway)
		return
	}
	w.WriteHeader(code)
}

// collectorProc runs the binary on dataDir and templates file tfile.
func collectorProc(t *testing.T, tfile, dataDir string) (*exec.Cmd, string) {
	cmd := exec.Command(binary, "-listen", "127.0.0.1:0", "-templates", tfile, "-data-dir", dataDir,
		"-checkpoint-interval", "150ms", "-label-ttl", "0")
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	lines := bufio.NewScanner(stderr)
	re := regexp.MustCompile(`listening on (\S+),`)
	for lines.Scan() {
		if m := re.FindStringSubmatch(lines.Text()); m != nil {
			go func() { // keep the pipe drained
				for lines.Scan() {
				}
			}()
			return cmd, "http://" + m[1]
		}
	}
	t.Fatal("the collector did not start")
	return nil, ""
}

// TestFault is issue 21's fault test: shippers (package ship) under load
// post through a proxy that drops, loses answers of, duplicates and delays
// requests, while the collector (-data-dir) is killed with SIGKILL and
// restarted twice; at the end its totals (SUM, histogram count, t-digest
// count, per label set) equal exactly what the shippers recorded.
func TestFault(t *testing.T) {
	reg := tpl.NewRegistry()
	tp, err := reg.New("SVC")
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "lat", DType: voi.IntU64, Stats: []tpl.StatSpec{
		tpl.Sum(), tpl.Histogram(hist.Spec{DType: voi.CRHist64, Scheme: hist.Lin, LB: 0, UB: 1000, StepInc: 100}),
		tpl.TDigest(voi.TDgstClust64, 20, 8)}}))
	tj, err := json.Marshal([]*tpl.Template{tp})
	require.NoError(t, err)
	dir := t.TempDir()
	tfile := filepath.Join(dir, "templates.json")
	require.NoError(t, os.WriteFile(tfile, tj, 0o644))
	dataDir := filepath.Join(dir, "data")

	proxy := &faultProxy{rnd: rand.New(rand.NewPCG(21, 5)), client: &http.Client{Timeout: 5 * time.Second}}
	cmd, base := collectorProc(t, tfile, dataDir)
	proxy.backend.Store(&base)
	ps := httptest.NewServer(proxy)
	defer ps.Close()

	const shippers, routes = 4, 3
	type tally struct{ sum, n uint64 }
	want := make([][routes]tally, shippers)
	var shs []*ship.Shipper
	ran := make(chan error, shippers)
	stop := make(chan struct{})
	var load sync.WaitGroup
	for i := range shippers {
		fam, err := family.New(tp, []string{"route"}, family.Options{})
		require.NoError(t, err)
		sh, err := ship.New(&ship.HTTP{URL: ps.URL + "/v1/blobs", Client: &http.Client{Timeout: 5 * time.Second}},
			ship.Options{Interval: 5 * time.Millisecond, MinBackoff: 2 * time.Millisecond, MaxBackoff: 100 * time.Millisecond,
				Labels: []ship.Label{{Name: "shipper", Value: strconv.Itoa(i)}}})
		require.NoError(t, err)
		require.NoError(t, sh.AddFamily(fam))
		shs = append(shs, sh)
		go func() { ran <- sh.Run(context.Background()) }()
		load.Add(1)
		go func() {
			defer load.Done()
			rnd := rand.New(rand.NewPCG(uint64(i), 7))
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				r := rnd.IntN(routes)
				v := uint64(rnd.IntN(1200))
				b, err := fam.With("r" + strconv.Itoa(r))
				if err != nil {
					t.Error(err)
					return
				}
				if err := b.UpdateU64(0, v); err != nil {
					t.Error(err)
					return
				}
				want[i][r].sum += v
				want[i][r].n++
				if n%50 == 0 {
					time.Sleep(time.Millisecond)
				}
			}
		}()
	}
	// Two kills mid-run, each followed by a restart on the same directory.
	for k := range 2 {
		time.Sleep(*faultDuration / 3)
		proxy.backend.Store(nil)
		require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
		_ = cmd.Wait()
		time.Sleep(100 * time.Millisecond) // posts fail meanwhile: the shippers hold and retry
		cmd, base = collectorProc(t, tfile, dataDir)
		proxy.backend.Store(&base)
		t.Logf("kill %d: restarted", k+1)
	}
	time.Sleep(*faultDuration / 3)
	close(stop)
	load.Wait()
	for _, sh := range shs {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		require.NoError(t, sh.Close(ctx))
		cancel()
		require.NoError(t, <-ran)
		st := sh.Stats()
		require.Zero(t, st.Dropped, "the backlog never overflowed")
		require.Zero(t, st.Rejected)
		t.Logf("shipper %s: sent %d, retried %d", sh.Sender(), st.Sent, st.Retried)
	}
	t.Logf("proxy: dropped %d, answers lost %d, duplicated %d, delayed %d, collector down %d",
		proxy.counts[0].Load(), proxy.counts[1].Load(), proxy.counts[2].Load(), proxy.counts[3].Load(), proxy.counts[4].Load())
	require.Positive(t, proxy.counts[1].Load())
	require.Positive(t, proxy.counts[2].Load())

	metrics := scrape(t, base)
	value := func(name string, i, r int) uint64 {
		re := regexp.MustCompile(`(?m)^` + name + `\{route="r` + strconv.Itoa(r) + `",shipper="` + strconv.Itoa(i) + `"\} (\S+)$`)
		m := re.FindStringSubmatch(metrics)
		require.NotNil(t, m, "%s r%d shipper %d", name, r, i)
		v, err := strconv.ParseFloat(m[1], 64)
		require.NoError(t, err)
		return uint64(v)
	}
	var total uint64
	for i := range shippers {
		for r := range routes {
			w := want[i][r]
			require.Equal(t, w.sum, value("svc_lat_total", i, r), "SUM, shipper %d route %d", i, r)
			require.Equal(t, w.n, value("svc_lat_hist_count", i, r), "histogram count, shipper %d route %d", i, r)
			require.Equal(t, w.n, value("svc_lat_tdigest_count", i, r), "t-digest count, shipper %d route %d", i, r)
			total += w.n
		}
	}
	t.Logf("%d values recorded and counted exactly once", total)
	require.True(t, strings.Contains(metrics, "statsblob_collector_duplicates_total"))
}
