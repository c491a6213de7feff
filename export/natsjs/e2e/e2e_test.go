// Package e2e runs a fleet through NATS JetStream end to end: a real
// 3-node JetStream cluster (nats-server processes), three statsblob
// collectors (this module's statsblob-collector, processes) and shippers
// under load; one NATS node and one collector are killed with SIGKILL
// mid-run and started again. At the end the exported totals, read from
// the collectors' /metrics, equal exactly what the shippers recorded, and
// every series is exported by exactly one collector.
//
// It runs with STATSBLOB_E2E_NATS=1 and the binaries in NATS_SERVER and
// COLLECTOR (make e2e-nats builds both).
package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/export/natsjs"
	"github.com/statsblob/statsblob/hist"
	"github.com/statsblob/statsblob/ship"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

const (
	partitions = 12
	shippers   = 24
	stream     = "E2E"
)

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// proc is a child process that can be killed and started again.
type proc struct {
	t    *testing.T
	name string
	args []string
	log  *os.File
	cmd  *exec.Cmd
}

func (p *proc) start() {
	p.t.Helper()
	p.cmd = exec.Command(p.args[0], p.args[1:]...)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	require.NoError(p.t, p.cmd.Start(), p.name)
}

func (p *proc) kill() {
	if p.cmd != nil && p.cmd.Process != nil {
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		_ = p.cmd.Wait()
		p.cmd = nil
	}
}

func (p *proc) term() {
	if p.cmd != nil && p.cmd.Process != nil {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = p.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = p.cmd.Process.Kill()
			<-done
		}
		p.cmd = nil
	}
}

func newProc(t *testing.T, dir, name string, args ...string) *proc {
	f, err := os.Create(filepath.Join(dir, name+".log"))
	require.NoError(t, err)
	p := &proc{t: t, name: name, args: args, log: f}
	t.Cleanup(func() { p.kill(); f.Close() })
	return p
}

// fleetTemplate: a byte counter, and a latency with a histogram and a
// t-digest.
func fleetTemplate(t *testing.T, reg *tpl.Registry) *tpl.Template {
	tp, err := reg.New("FLEET")
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "req_bytes", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}))
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 1, Name: "lat_us", DType: voi.IntU32, Stats: []tpl.StatSpec{
		tpl.Histogram(hist.Spec{DType: voi.CRHist32, Scheme: hist.Lin, LB: 0, UB: 1000, StepInc: 100}),
		tpl.TDigest(voi.TDgstClust32, 20, 4)}}))
	return tp
}

// recorded is what the shippers recorded per host label.
type recorded struct {
	mu    sync.Mutex
	bytes map[string]uint64
	lats  map[string]uint64
}

func (r *recorded) add(host string, bytes uint64, lats uint64) {
	r.mu.Lock()
	r.bytes[host] += bytes
	r.lats[host] += lats
	r.mu.Unlock()
}

func TestE2ENATS(t *testing.T) {
	if os.Getenv("STATSBLOB_E2E_NATS") == "" {
		t.Skip("set STATSBLOB_E2E_NATS=1 with NATS_SERVER and COLLECTOR (make e2e-nats)")
	}
	natsBin, collBin := os.Getenv("NATS_SERVER"), os.Getenv("COLLECTOR")
	require.NotEmpty(t, natsBin, "NATS_SERVER")
	require.NotEmpty(t, collBin, "COLLECTOR")
	dir, err := os.MkdirTemp("", "statsblob-e2e-nats")
	require.NoError(t, err)
	t.Cleanup(func() {
		if !t.Failed() {
			os.RemoveAll(dir)
		}
	})
	t.Logf("logs in %s (kept if the test fails)", dir)

	// The cluster: three nats-server processes on loopback ports.
	clientPorts := make([]int, 3)
	routePorts := make([]int, 3)
	for i := range 3 {
		clientPorts[i], routePorts[i] = freePort(t), freePort(t)
	}
	var routes, urls []string
	for i := range 3 {
		routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", routePorts[i]))
		urls = append(urls, fmt.Sprintf("nats://127.0.0.1:%d", clientPorts[i]))
	}
	url := strings.Join(urls, ",")
	nodes := make([]*proc, 3)
	for i := range 3 {
		conf := filepath.Join(dir, fmt.Sprintf("n%d.conf", i))
		require.NoError(t, os.WriteFile(conf, fmt.Appendf(nil, `server_name: n%d
listen: 127.0.0.1:%d
max_payload: 8MB
jetstream { store_dir: %q }
cluster { name: statsblob, listen: 127.0.0.1:%d, routes: [%s] }
`, i, clientPorts[i], filepath.Join(dir, fmt.Sprintf("store%d", i)), routePorts[i], strings.Join(routes, ", ")), 0o644))
		nodes[i] = newProc(t, dir, fmt.Sprintf("nats%d", i), natsBin, "-c", conf)
		nodes[i].start()
	}

	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond), nats.RetryOnFailedConnect(true))
	require.NoError(t, err)
	defer nc.Close()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	setup := natsjs.Setup{Stream: stream, Partitions: partitions, Replicas: 3, LeaseTTL: 3 * time.Second}
	require.Eventually(t, func() bool {
		c, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		return setup.Ensure(c, js) == nil
	}, 2*time.Minute, 200*time.Millisecond, "the cluster's JetStream never became ready")

	reg := tpl.NewRegistry()
	tp := fleetTemplate(t, reg)
	tj, err := tp.MarshalJSON()
	require.NoError(t, err)
	tfile := filepath.Join(dir, "templates.json")
	require.NoError(t, os.WriteFile(tfile, tj, 0o644))

	// Three collectors.
	metricsAddrs := make([]string, 3)
	colls := make([]*proc, 3)
	for i := range 3 {
		metricsAddrs[i] = fmt.Sprintf("127.0.0.1:%d", freePort(t))
		colls[i] = newProc(t, dir, fmt.Sprintf("collector%d", i), collBin,
			"-nats", url, "-stream", stream, "-partitions", fmt.Sprint(partitions), "-replicas", "3",
			"-id", fmt.Sprintf("c%d", i), "-templates", tfile, "-listen", metricsAddrs[i],
			"-lease", "3s", "-checkpoint", "500ms")
		colls[i].start()
	}

	// Shippers under load: each its own connection, blob and host label.
	rec := &recorded{bytes: map[string]uint64{}, lats: map[string]uint64{}}
	shipCtx, stopShipping := context.WithCancel(ctx)
	var wg sync.WaitGroup
	stats := make([]ship.Stats, shippers)
	for s := range shippers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			host := fmt.Sprintf("web%02d", s)
			snc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
			if err != nil {
				t.Error(err)
				return
			}
			defer snc.Close()
			sjs, _ := jetstream.New(snc)
			sh, err := ship.New(&natsjs.Transport{JS: sjs, Partitions: partitions}, ship.Options{
				Labels: []ship.Label{{Name: "host", Value: host}}, MinBackoff: 50 * time.Millisecond, MaxBackoff: time.Second})
			if err != nil {
				t.Error(err)
				return
			}
			b := blob.New(tp, nil)
			var mu sync.Mutex
			if err := sh.AddBlob(b, &mu); err != nil {
				t.Error(err)
				return
			}
			r := rand.New(rand.NewPCG(uint64(s), 1))
			for shipCtx.Err() == nil {
				var bytes, n uint64
				mu.Lock()
				for range 50 {
					v := uint64(r.IntN(1500))
					if b.UpdateU64(0, v) == nil {
						bytes += v
					}
					if b.UpdateU32(1, uint32(r.IntN(1200))) == nil {
						n++
					}
				}
				mu.Unlock()
				rec.add(host, bytes, n)
				sctx, c := context.WithTimeout(shipCtx, 5*time.Second)
				_ = sh.Ship(sctx) // what fails stays in the backlog
				c()
				time.Sleep(time.Duration(20+r.IntN(40)) * time.Millisecond)
			}
			cctx, c := context.WithTimeout(ctx, 2*time.Minute)
			defer c()
			if err := sh.Close(cctx); err != nil {
				t.Error(host, err)
			}
			stats[s] = sh.Stats()
		}()
	}

	time.Sleep(4 * time.Second)
	t.Log("SIGKILL nats node 2")
	nodes[2].kill()
	time.Sleep(3 * time.Second)
	t.Log("SIGKILL collector 1")
	colls[1].kill()
	time.Sleep(2 * time.Second)
	t.Log("restart nats node 2")
	nodes[2].start()
	time.Sleep(4 * time.Second)
	t.Log("restart collector 1")
	colls[1].start()
	time.Sleep(4 * time.Second)
	stopShipping()
	wg.Wait()
	for s, st := range stats {
		require.Zero(t, st.Dropped+st.Rejected+uint64(st.Pending), "shipper %d: %+v", s, st)
	}

	// Every series by exactly one collector, and the totals exact.
	var last string
	ok := false
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(time.Second) {
		got, owners, err := scrape(metricsAddrs)
		if err != nil {
			last = err.Error()
			continue
		}
		last = compare(rec, got, owners)
		if last == "" {
			ok = true
			break
		}
	}
	if !ok {
		for p := range partitions {
			c, err := js.Consumer(ctx, stream, fmt.Sprintf("p%d", p))
			if err != nil {
				t.Logf("partition %d: %v", p, err)
				continue
			}
			ci, err := c.Info(ctx)
			if err != nil {
				t.Logf("partition %d: %v", p, err)
				continue
			}
			t.Logf("partition %d: pending %d, ack pending %d, redelivered %d, waiting %d, delivered %d, ack floor %d",
				p, ci.NumPending, ci.NumAckPending, ci.NumRedelivered, ci.NumWaiting, ci.Delivered.Stream, ci.AckFloor.Stream)
		}
	}
	require.True(t, ok, "the collectors never converged: %s", last)
	for _, c := range colls {
		c.term()
	}
}

// series is one exported series' value by name and host.
type series map[string]float64

// scrape reads every collector's /metrics: the fleet's series and how
// many collectors exported each.
func scrape(addrs []string) (series, map[string]int, error) {
	got, owners := series{}, map[string]int{}
	parts := 0
	for _, a := range addrs {
		resp, err := http.Get("http://" + a + "/metrics")
		if err != nil {
			return nil, nil, err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, nil, err
		}
		parser := expfmt.NewTextParser(model.LegacyValidation)
		mfs, err := parser.TextToMetricFamilies(bufio.NewReader(strings.NewReader(string(body))))
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", a, err)
		}
		for name, mf := range mfs {
			if name == "statsblob_nats_partitions_owned" {
				parts += int(mf.Metric[0].GetGauge().GetValue())
			}
			if !strings.HasPrefix(name, "fleet_") {
				continue
			}
			for _, m := range mf.Metric {
				key, v := seriesOf(name, m)
				if key == "" {
					continue
				}
				got[key] += v
				owners[key]++
			}
		}
	}
	if parts != partitions {
		return nil, nil, fmt.Errorf("%d partitions owned in all, want %d", parts, partitions)
	}
	return got, owners, nil
}

func seriesOf(name string, m *dto.Metric) (string, float64) {
	host := ""
	for _, l := range m.Label {
		if l.GetName() == "host" {
			host = l.GetValue()
		}
	}
	switch {
	case m.Counter != nil:
		return name + "/" + host, m.Counter.GetValue()
	case m.Histogram != nil:
		return name + "_count/" + host, float64(m.Histogram.GetSampleCount())
	case m.Summary != nil:
		return name + "_count/" + host, float64(m.Summary.GetSampleCount())
	}
	return "", 0
}

// compare returns "" when the scraped series equal what was recorded and
// each was exported once, or what differs.
func compare(rec *recorded, got series, owners map[string]int) string {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	want := series{}
	for host, b := range rec.bytes {
		want["fleet_req_bytes_total/"+host] = float64(b)
		want["fleet_lat_us_hist_count/"+host] = float64(rec.lats[host])
		want["fleet_lat_us_tdigest_count/"+host] = float64(rec.lats[host])
	}
	for k, n := range owners {
		if n != 1 {
			return fmt.Sprintf("%s exported by %d collectors", k, n)
		}
	}
	var diffs []string
	for k, v := range want {
		if got[k] != v {
			diffs = append(diffs, fmt.Sprintf("%s = %v, want %v", k, got[k], v))
		}
	}
	if len(diffs) > 0 {
		slices.Sort(diffs)
		return strings.Join(diffs, "; ")
	}
	if len(got) != len(want) {
		return fmt.Sprintf("%d series, want %d", len(got), len(want))
	}
	return ""
}
