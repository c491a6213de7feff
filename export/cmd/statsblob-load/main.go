// Command statsblob-load measures statsblob-collector's ingest: it starts a
// collector in a child process (pinned to -server-cpus with taskset when
// that is installed), posts TCP_DEFAULT blobs to it over HTTP/1.1
// keep-alive connections from 1, 8 and 64 posters, in batches, and with
// 10,000 aggregates while /metrics is scraped back to back, and prints
// for each run the blobs per second (per wall second and per second of
// the collector's CPU), the POST latency p50/p99, the scrape time (back to
// back: the median and the number of scrapes; periodic: min/median/max)
// and the collector's RSS (now/peak, MB). Every run checks that the collector accepted exactly
// the blobs it was sent.
//
// The run "ingest" posts from 1, 8 and 64 posters to the collector's
// second listener, its IngestServer (statsblob-collector -ingest-listen),
// whose HTTP server is fasthttp; every other run posts to its net/http
// listener.
//
// The first run, "net/http alone", posts the same blobs from 8 posters to
// a child that only reads each body and answers 204, as the collector
// answers an accepted post: the most any Go HTTP server takes per CPU
// second on the machine as it is during the run (loopback system calls
// and net/http's own work), beside which the collector's figures are
// read: a shared machine's speed varies by a quarter from hour to hour.
//
//	statsblob-load [-d 5s] [-server-cpus 0] [-runs baseline,posters,ingest,batch,aggregates] [-data-dir DIR]
//
// With -data-dir the collector is durable (its -data-dir: every post in a
// write-ahead log, fsynced before the 204), which `make load-durable`
// measures.
//
// `make load` runs it with the load generator on CPU 1 and the collector
// on CPU 0.
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/export/collector"
	"github.com/statsblob/statsblob/internal/stream"
	"github.com/statsblob/statsblob/internal/tcpsim"
	"github.com/statsblob/statsblob/internal/tcpstats"
	"github.com/statsblob/statsblob/tpl"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	fs := flag.NewFlagSet("statsblob-load", flag.ContinueOnError)
	serve := fs.String("serve", "", "internal: serve a collector on `ADDR` and print its address")
	serveBare := fs.String("serve-bare", "", "internal: serve net/http alone (read the body, answer 204) on `ADDR` and print its address")
	cpuprofile := fs.String("cpuprofile", "", "write the collector's CPU profile to `FILE`")
	d := fs.Duration("d", 5*time.Second, "duration `D` of each run")
	cpus := fs.String("server-cpus", "0", "CPUs to pin the collector to (taskset -c `LIST`; empty: no pinning)")
	runs := fs.String("runs", "baseline,posters,ingest,batch,aggregates", "comma-separated `LIST` of runs: baseline, posters, ingest, batch, aggregates")
	nblobs := fs.Int("blobs", 2000, "distinct TCP_DEFAULT blobs to post, `N`")
	dataDir := fs.String("data-dir", "", "run the collector with -data-dir `DIR` (durable posts: a write-ahead log, fsynced)")
	ckptEvery := fs.Duration("checkpoint-interval", collector.DefaultCheckpointInterval, "with -data-dir, checkpoint every `D`")
	queueBytes := fs.Int64("queue-bytes", collector.DefaultQueueBytes, "the collector's -queue-bytes `N`: blobs queued before they fold")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *serve != "" {
		return serveCollector(*serve, child{*cpuprofile, *dataDir, *ckptEvery, *queueBytes})
	}
	if *serveBare != "" {
		return serveBareHTTP(*serveBare)
	}
	blobs := demoBlobs(*nblobs)
	srv, err := startServer(*cpus, "-serve", child{*cpuprofile, *dataDir, *ckptEvery, *queueBytes})
	if err != nil {
		fmt.Fprintln(os.Stderr, "statsblob-load:", err)
		return 1
	}
	defer srv.stop()
	durable := "not durable"
	if *dataDir != "" {
		durable = fmt.Sprintf("-data-dir %s, checkpoints every %v", *dataDir, *ckptEvery)
	}
	fmt.Printf("collector pid %d on %s, ingest listener on %s (CPUs %q, %s, -queue-bytes %d); %d TCP_DEFAULT blobs of %d bytes; %v per run\n\n",
		srv.cmd.Process.Pid, srv.addr, srv.ingestAddr, *cpus, durable, *queueBytes, len(blobs), len(blobs[0]), *d)
	fmt.Printf("%-34s %10s %12s %10s %10s %20s %9s\n", "run", "blobs/s", "blobs/CPU-s", "p50", "p99", "scrape", "RSS MB")
	status := 0
	for _, r := range strings.Split(*runs, ",") {
		var err error
		switch r {
		case "baseline":
			err = measureBaseline(*cpus, blobs, *d)
		case "posters":
			for _, p := range []int{1, 8, 64} {
				if err = srv.measure(fmt.Sprintf("%d posters, 100 aggregates", p), p, 1, 100, blobs, *d, 0); err != nil {
					break
				}
			}
		case "ingest":
			for _, p := range []int{1, 8, 64} {
				if err = srv.measureAt(srv.ingestAddr, fmt.Sprintf("ingest listener, %d posters", p), p, 1, 100, blobs, *d, 0); err != nil {
					break
				}
			}
			if err == nil {
				err = srv.measureAt(srv.ingestAddr, "ingest listener, batches of 100", 8, 100, 100, blobs, *d, 0)
			}
		case "batch":
			err = srv.measure("8 posters, batches of 100", 8, 100, 100, blobs, *d, 0)
		case "aggregates":
			if err = srv.fill(10000, blobs[0]); err == nil {
				err = srv.measure("8 posters, 10,000 aggregates", 8, 1, 10000, blobs, *d, 0)
				if err == nil {
					err = srv.measureAt(srv.ingestAddr, "  the same, ingest listener", 8, 1, 10000, blobs, *d, 0)
				}
				if err == nil {
					if err = srv.measure("  the same, scraped every 5 s", 8, 1, 10000, blobs, max(*d, 20*time.Second), 5*time.Second); err == nil {
						err = srv.measure("  the same, scraped back to back", 8, 1, 10000, blobs, *d, time.Nanosecond)
					}
				}
			}
		default:
			err = fmt.Errorf("unknown run %q", r)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "statsblob-load:", err)
			status = 1
		}
	}
	return status
}

// demoBlobs returns n TCP_DEFAULT connection blobs of the demo's workload.
func demoBlobs(n int) [][]byte {
	tp, err := tcpstats.New(tpl.NewRegistry())
	if err != nil {
		panic(err)
	}
	s := stream.Stream(7)
	out := make([][]byte, n)
	for i := range out {
		b := blob.New(tp, blob.NewEnv(nil, uint32(i+1)))
		tcpsim.SimulateConn(b, &s, nil)
		out[i] = b.Bytes()
	}
	return out
}

// serveCollector is the child: a collector of TCP_DEFAULT on addr.
func serveCollector(addr string, c child) int {
	reg := tpl.NewRegistry()
	if _, err := tcpstats.New(reg); err != nil {
		panic(err)
	}
	s, err := collector.New(collector.Config{Templates: reg, MaxAggregates: 20000, DataDir: c.dataDir,
		CheckpointInterval: c.ckptEvery, QueueBytes: c.queueBytes})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.RunWindows(ctx) // -data-dir's checkpoints
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	iln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	in := s.IngestServer()
	go func() { _ = in.Serve(iln) }()
	defer in.Close()
	if c.cpuprofile != "" {
		f, err := os.Create(c.cpuprofile)
		if err != nil {
			panic(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			panic(err)
		}
		defer pprof.StopCPUProfile()
	}
	serveUntilSignalled(ln, s, iln.Addr().String())
	if err := s.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// serveBareHTTP is the baseline's child: net/http alone on addr, reading
// each body into a pooled buffer and answering 204 without a Date header,
// as the collector answers an accepted post.
func serveBareHTTP(addr string) int {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	bufs := sync.Pool{New: func() any { return new([64 << 10]byte) }}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b := bufs.Get().(*[64 << 10]byte)
		defer bufs.Put(b)
		if _, err := io.ReadFull(r.Body, b[:min(max(r.ContentLength, 0), int64(len(b)))]); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.Header()["Date"] = nil
		w.WriteHeader(http.StatusNoContent)
	})
	serveUntilSignalled(ln, h, "-")
	return 0
}

// serveUntilSignalled prints ln's address and the ingest listener's ("-":
// none) on a line (the parent reads it) and serves h on ln until SIGTERM
// or SIGINT, then closes the server.
func serveUntilSignalled(ln net.Listener, h http.Handler, ingestAddr string) {
	fmt.Println(ln.Addr().String(), ingestAddr)
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	_ = hs.Close()
}

// measureBaseline runs 8 posters against net/http alone (serveBareHTTP)
// on the collector's CPUs.
func measureBaseline(cpus string, blobs [][]byte, d time.Duration) error {
	srv, err := startServer(cpus, "-serve-bare", child{})
	if err != nil {
		return err
	}
	defer srv.stop()
	srv.bare = true
	return srv.measure("net/http alone, 8 posters", 8, 1, 100, blobs, d, 0)
}

// server is the child process.
type server struct {
	cmd        *exec.Cmd
	addr       string
	ingestAddr string        // the collector's IngestServer
	sent       atomic.Uint64 // blobs accepted (204) over all runs
	bare       bool          // net/http alone: nothing to check
}

// child is what the collector child is run with.
type child struct {
	cpuprofile string        // its CPU profile's file, if any
	dataDir    string        // its -data-dir, if any
	ckptEvery  time.Duration // with dataDir, its checkpoint interval
	queueBytes int64         // its -queue-bytes
}

// startServer starts the child that mode (-serve or -serve-bare) makes.
func startServer(cpus, mode string, c child) (*server, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	argv := []string{self, mode, "127.0.0.1:0"}
	if c.cpuprofile != "" {
		argv = append(argv, "-cpuprofile", c.cpuprofile)
	}
	if c.dataDir != "" {
		argv = append(argv, "-data-dir", c.dataDir, "-checkpoint-interval", c.ckptEvery.String())
	}
	if c.queueBytes != 0 {
		argv = append(argv, "-queue-bytes", strconv.FormatInt(c.queueBytes, 10))
	}
	if cpus != "" {
		if ts, err := exec.LookPath("taskset"); err == nil {
			argv = append([]string{ts, "-c", cpus}, argv...)
		}
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		_ = cmd.Process.Kill()
		return nil, fmt.Errorf("collector did not start: %w", err)
	}
	addr, ingestAddr, _ := strings.Cut(strings.TrimSpace(line), " ")
	return &server{cmd: cmd, addr: addr, ingestAddr: ingestAddr}, nil
}

func (s *server) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	_ = s.cmd.Wait()
}

// cpu returns the collector's CPU time (user + system).
func (s *server) cpu() time.Duration {
	p, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(p[bytes.LastIndexByte(p, ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * (time.Second / 100) // USER_HZ
}

// rss returns the collector's resident and peak resident set, in MB.
func (s *server) rss() (cur, peak float64) {
	p, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		return 0, 0
	}
	for _, l := range strings.Split(string(p), "\n") {
		f := strings.Fields(l)
		if len(f) >= 2 && (f[0] == "VmRSS:" || f[0] == "VmHWM:") {
			kb, _ := strconv.ParseFloat(f[1], 64)
			if f[0] == "VmRSS:" {
				cur = kb / 1024
			} else {
				peak = kb / 1024
			}
		}
	}
	return cur, peak
}

// conn is a minimal HTTP/1.1 keep-alive client: a request is written in
// one piece and its answer read without allocating.
type conn struct {
	c net.Conn
	r *bufio.Reader
	w *bufio.Writer
}

func dial(addr string) (*conn, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	return &conn{c, bufio.NewReaderSize(c, 4096), bufio.NewWriterSize(c, 70000)}, nil
}

// post sends a POST of body to path and returns the status.
func (c *conn) post(path string, body []byte) (int, error) {
	fmt.Fprintf(c.w, "POST %s HTTP/1.1\r\nHost: collector\r\nContent-Length: %d\r\n\r\n", path, len(body))
	_, _ = c.w.Write(body)
	if err := c.w.Flush(); err != nil {
		return 0, err
	}
	line, err := c.r.ReadSlice('\n')
	if err != nil {
		return 0, err
	}
	if len(line) < 12 {
		return 0, fmt.Errorf("bad status line %q", line)
	}
	code, _ := strconv.Atoi(string(line[9:12]))
	n := 0
	for {
		h, err := c.r.ReadSlice('\n')
		if err != nil {
			return 0, err
		}
		if len(h) <= 2 {
			break
		}
		if k, v, ok := bytes.Cut(h, []byte(":")); ok && strings.EqualFold(string(k), "Content-Length") {
			n, _ = strconv.Atoi(strings.TrimSpace(string(v)))
		}
	}
	if _, err := c.r.Discard(n); err != nil {
		return 0, err
	}
	return code, nil
}

// fill posts one blob to each of n label sets.
func (s *server) fill(n int, b []byte) error {
	c, err := dial(s.addr)
	if err != nil {
		return err
	}
	defer c.c.Close()
	for i := range n {
		code, err := c.post(fmt.Sprintf("/v1/blobs?host=h%d", i), b)
		if err != nil || code != http.StatusNoContent {
			return fmt.Errorf("fill: %d %v", code, err)
		}
		s.sent.Add(1)
	}
	return nil
}

// measure runs posters posting for d (batch blobs per post, spread over
// aggs label sets), with a scraper every scrape (0: none), prints a line
// and checks the collector's accepted count.
func (s *server) measure(name string, posters, batch, aggs int, blobs [][]byte, d time.Duration, scrape time.Duration) error {
	return s.measureAt(s.addr, name, posters, batch, aggs, blobs, d, scrape)
}

// measureAt is measure with the posts sent to addr (the ingest listener's,
// say); scrapes and the check go to the collector's own.
func (s *server) measureAt(addr, name string, posters, batch, aggs int, blobs [][]byte, d time.Duration, scrape time.Duration) error {
	var bodies [][]byte // per post
	var paths []string
	var counts []uint64 // blobs per post
	if batch == 1 {
		for i, b := range blobs {
			bodies = append(bodies, b)
			paths = append(paths, fmt.Sprintf("/v1/blobs?host=h%d", i%aggs))
			counts = append(counts, 1)
		}
	} else {
		for i := 0; i < len(blobs); i += batch {
			body := []byte(collector.BatchMagic)
			for j := i; j < min(i+batch, len(blobs)); j++ {
				body, _ = collector.AppendBatchFrame(body, fmt.Sprintf("host=h%d", j%aggs), blobs[j])
			}
			bodies = append(bodies, body)
			paths = append(paths, "/v1/batch")
			counts = append(counts, uint64(min(i+batch, len(blobs))-i))
		}
	}
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		lats    []time.Duration
		posted  atomic.Uint64
		firstEr error
		stop    atomic.Bool
	)
	cpu0 := s.cpu()
	t0 := time.Now()
	for p := range posters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := dial(addr)
			if err != nil {
				mu.Lock()
				firstEr = cmpOr(firstEr, err)
				mu.Unlock()
				return
			}
			defer c.c.Close()
			my := make([]time.Duration, 0, 1<<16)
			for i := p; !stop.Load(); i += posters {
				k := i % len(bodies)
				t := time.Now()
				code, err := c.post(paths[k], bodies[k])
				my = append(my, time.Since(t))
				if err != nil || code != http.StatusNoContent {
					mu.Lock()
					firstEr = cmpOr(firstEr, fmt.Errorf("post: %d %v", code, err))
					mu.Unlock()
					return
				}
				posted.Add(counts[k])
			}
			mu.Lock()
			lats = append(lats, my...)
			mu.Unlock()
		}()
	}
	var scrapes []time.Duration
	var scrapeBytes int
	if scrape > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Periodic scrapes start one interval in, as Prometheus'
			// do, not right after the last run's check (a scrape too,
			// which the next one would wait for: -scrape-share).
			next := time.Now()
			if scrape > time.Millisecond {
				next = next.Add(scrape)
			}
			for ; !stop.Load(); next = next.Add(scrape) {
				time.Sleep(time.Until(next))
				t := time.Now()
				resp, err := http.Get("http://" + s.addr + "/metrics")
				if err != nil {
					mu.Lock()
					firstEr = cmpOr(firstEr, err)
					mu.Unlock()
					return
				}
				n, _ := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				scrapes = append(scrapes, time.Since(t))
				scrapeBytes = int(n)
			}
		}()
	}
	time.Sleep(d)
	stop.Store(true)
	wg.Wait()
	wall := time.Since(t0)
	cpu := s.cpu() - cpu0
	if firstEr != nil {
		return fmt.Errorf("%s: %w", name, firstEr)
	}
	n := posted.Load()
	s.sent.Add(n)
	slices.Sort(lats)
	pct := func(q float64) time.Duration { return lats[min(int(q*float64(len(lats))), len(lats)-1)] }
	scr := "-"
	if len(scrapes) > 0 {
		slices.Sort(scrapes)
		scr = fmt.Sprintf("%v (%d, %.0f MB)", scrapes[len(scrapes)/2].Round(time.Millisecond), len(scrapes), float64(scrapeBytes)/1e6)
		if scrape > time.Millisecond {
			scr = fmt.Sprintf("%v/%v/%v", scrapes[0].Round(time.Millisecond), scrapes[len(scrapes)/2].Round(time.Millisecond), scrapes[len(scrapes)-1].Round(time.Millisecond))
		}
	}
	cur, peak := s.rss()
	perCPU := 0.0
	if cpu > 0 {
		perCPU = float64(n) / cpu.Seconds()
	}
	fmt.Printf("%-34s %10.0f %12.0f %10v %10v %20s %4.0f/%4.0f\n", name, float64(n)/wall.Seconds(), perCPU,
		pct(0.5).Round(time.Microsecond), pct(0.99).Round(time.Microsecond), scr, cur, peak)
	return s.check()
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// check compares the collector's accepted count with the blobs sent.
func (s *server) check() error {
	if s.bare {
		return nil
	}
	resp, err := http.Get("http://" + s.addr + "/metrics")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "statsblob_collector_blobs_accepted_total "); ok {
			got, _ := strconv.ParseFloat(v, 64)
			if uint64(got) != s.sent.Load() {
				return fmt.Errorf("collector accepted %d blobs, %d were sent", uint64(got), s.sent.Load())
			}
			return nil
		}
	}
	return errors.New("no statsblob_collector_blobs_accepted_total in /metrics")
}
