// Command statsblob-collector, built from this module, is the collector of
// a fleet whose shippers publish to NATS JetStream (package natsjs): it
// takes its share of the stream's partitions, merges their blobs and
// serves the aggregates of the partitions it owns on GET /metrics, so that
// every series is exported by exactly one collector.
//
//	statsblob-collector -nats nats://n1:4222,nats://n2:4222 -stream STATSBLOB \
//	    -templates templates.json -listen :9129
//
// -max-age sizes the stream's retention (24 h: at least the longest time
// all collectors may be down) and -max-state the largest partition state
// (8 MiB; the server's max_payload must take it: a nats-server without a
// configuration takes 1 MiB, and the collector logs a -max-state past it at
// start). Every collector of a stream must be given the same.
//
// It exports its partitions as statsblob_nats_partition{partition="3"} 1
// and counts its work in statsblob_nats_* counters, there (at 0) from the
// start. As the HTTP collector's, GET /healthz answers 200 "ok" while the
// process serves, and GET /readyz 200 "ready" while the collector works
// with the stream (its last heartbeat stored), else 503 with why: the
// stream not reached or not made yet, its buckets unreachable since
// (the partitions owned are given up as their leases pass), stopping. SIGHUP adds the
// templates file's new templates (a template once known stays known), so
// that the messages waiting for them are merged. The file lists the
// versions of a template name oldest first: where two versions' series
// share a label set, the older's carry statsblob_template_hash, as the
// HTTP collector's do (package natsjs, Versions). A partition's state
// carries its aggregates' templates: a version dropped from the file is
// learned from it (logged, statsblob_nats_templates_learned_total).
// SIGTERM and SIGINT hand
// the partitions back (after storing their state) before it exits.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/statsblob/statsblob/export"
	"github.com/statsblob/statsblob/export/aggregate"
	"github.com/statsblob/statsblob/export/natsjs"
	"github.com/statsblob/statsblob/export/promexport"
	"github.com/statsblob/statsblob/tpl"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run runs the command: -h prints the help to stdout; everything else
// (usage errors, the log) goes to stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("statsblob-collector", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // parse errors are printed by usage, the help to stdout
	fs.Usage = func() {}
	urls := fs.String("nats", nats.DefaultURL, "NATS server `URLS`, comma-separated")
	stream := fs.String("stream", "STATSBLOB", "the JetStream stream's `NAME`")
	prefix := fs.String("prefix", natsjs.DefaultPrefix, "the stream's subject `PREFIX`")
	parts := fs.Int("partitions", natsjs.DefaultPartitions, "the stream's partition count `N` (every shipper and collector the same)")
	replicas := fs.Int("replicas", 1, "stream and bucket replicas `N` (3 on a 3-node cluster)")
	id := fs.String("id", "", "this collector's `ID`, unique in the fleet (default: host name and a random suffix)")
	templates := fs.String("templates", "", "templates `FILE`: a template's JSON form or an array of them (required)")
	listen := fs.String("listen", "127.0.0.1:9129", "`ADDR` to serve GET /metrics, /healthz and /readyz on")
	lease := fs.Duration("lease", 10*time.Second, fmt.Sprintf("how long a killed collector's partitions stay its (SIGTERM hands them back at once) (`D`, at least %v)", natsjs.MinLeaseTTL))
	checkpoint := fs.Duration("checkpoint", 2*time.Second, fmt.Sprintf("how often partition states are stored and messages acknowledged (`D`, at least %v and at most half -lease; unset, a quarter of -lease if that is shorter)", natsjs.MinCheckpoint))
	namespace := fs.String("namespace", "", "metric name `PREFIX`")
	maxMarks := fs.Int("max-sequence-marks", natsjs.DefaultMaxMarks, "senders' label sets whose sequence is kept per partition (`N`, 32 bytes each of its state)")
	maxWaiting := fs.Int("max-waiting", natsjs.DefaultMaxWaiting, "messages of unknown templates that may wait per partition (`N`, 8 bytes each of its state)")
	maxAge := fs.Duration("max-age", 24*time.Hour, "how long the stream keeps a message (`D`: at least the longest time all collectors may be down; every collector of a stream the same)")
	maxState := fs.Int("max-state", 8<<20, "the largest partition state in `BYTES` (at most the server's max_payload)")
	retry := fs.Duration("template-retry", 10*time.Second, fmt.Sprintf("how often messages of an unknown template are tried again (`D`, at least %v)", natsjs.MinTemplateRetry))
	// As statsblob COMMAND: -h prints the help to stdout, a usage error
	// its message and the synopsis to stderr.
	const synopsis = "statsblob-collector -templates FILE [-nats URLS] [-stream NAME] [-listen ADDR] [flags]"
	usage := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "statsblob-collector: "+format+"\n", a...)
		fmt.Fprintf(stderr, "usage: %s\nRun 'statsblob-collector -h' for help.\n", synopsis)
		return 2
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(stdout, "usage: %s\n\nflags:\n", synopsis)
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return 0
		}
		return usage("%v", err)
	}
	if *templates == "" || fs.NArg() > 0 {
		return usage("-templates FILE is required, and no arguments")
	}
	// Every numeric flag must be positive (the durations have their
	// minimums below): natsjs takes 0 or less for the default, so
	// "-partitions 0" or "-max-waiting -1" quietly meant 16 or 65,536
	// (TestUsageZero checks every numeric flag).
	for _, f := range []struct {
		name string
		v    int
	}{{"partitions", *parts}, {"replicas", *replicas}, {"max-sequence-marks", *maxMarks}, {"max-waiting", *maxWaiting}, {"max-state", *maxState}} {
		if f.v <= 0 {
			return usage("-%s %d: must be positive", f.name, f.v)
		}
	}
	if *lease < natsjs.MinLeaseTTL {
		return usage("-lease %v: want at least %v", *lease, natsjs.MinLeaseTTL)
	}
	ckptSet := false
	fs.Visit(func(f *flag.Flag) { ckptSet = ckptSet || f.Name == "checkpoint" })
	if !ckptSet {
		*checkpoint = min(*checkpoint, *lease/4)
	}
	if *checkpoint < natsjs.MinCheckpoint {
		return usage("-checkpoint %v: want at least %v", *checkpoint, natsjs.MinCheckpoint)
	}
	if *checkpoint > *lease/2 {
		return usage("-checkpoint %v: want at most half -lease (%v): messages are acknowledged at checkpoints, and redelivered if not within the lease", *checkpoint, *lease)
	}
	if *maxState > math.MaxInt32 {
		return usage("-max-state %d: want at most %d", *maxState, math.MaxInt32)
	}
	if *maxAge <= 0 {
		return usage("-max-age %v: must be positive", *maxAge)
	}
	if *retry < natsjs.MinTemplateRetry {
		return usage("-template-retry %v: want at least %v", *retry, natsjs.MinTemplateRetry)
	}
	logger := log.New(stderr, "statsblob-collector: ", log.LstdFlags)
	reg := &natsjs.TemplateSet{}
	if _, err := loadTemplates(reg, *templates); err != nil {
		logger.Print(err)
		return 1
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go reloadTemplates(ctx, hup, reg, *templates, logger)
	if *id == "" {
		host, _ := os.Hostname()
		var r [4]byte
		_, _ = rand.Read(r[:])
		*id = host + "-" + hex.EncodeToString(r[:])
	}

	store := natsjs.NewSetStore(reg, aggregate.Config{})
	store.Logf = logger.Printf
	src := export.SourceFunc(store.Blobs)
	pc, err := promexport.New(src, export.Options{Namespace: *namespace})
	if err != nil {
		logger.Print(err)
		return 1
	}
	promReg := prometheus.NewRegistry()
	// The collector's own metrics are there from the start, at zero
	// until the consumer runs: a stream not reached yet shows as
	// statsblob_nats_partitions_owned 0, not as missing series.
	cm := &consumerMetrics{s: store}
	promReg.MustRegister(pc, cm)
	ready := &readiness{}
	ready.set(errors.New("starting"))

	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		logger.Print(err)
		return 1
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(promReg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { text(w, http.StatusOK, "ok") })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if err := ready.err(); err != nil {
			w.Header().Set("Retry-After", "1")
			text(w, http.StatusServiceUnavailable, err.Error())
			return
		}
		text(w, http.StatusOK, "ready")
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, WriteTimeout: time.Minute}
	go func() { _ = srv.Serve(ln) }()
	logger.Printf("collector %s serving on %s", *id, ln.Addr())

	nc, err := nats.Connect(*urls, nats.Name("statsblob-collector "+*id), nats.MaxReconnects(-1),
		nats.ReconnectWait(250*time.Millisecond), nats.RetryOnFailedConnect(true))
	if err != nil {
		logger.Print(err)
		return 1
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		logger.Print(err)
		return 1
	}
	setup := natsjs.Setup{Stream: *stream, Prefix: *prefix, Partitions: *parts, Replicas: *replicas, LeaseTTL: *lease,
		MaxAge: *maxAge, MaxState: int32(*maxState)}
	// The stream may be unreachable at start: keep serving /metrics and try
	// again.
	for {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err = setup.Ensure(sctx, js)
		cancel()
		if err == nil || ctx.Err() != nil {
			break
		}
		logger.Printf("stream not ready: %v", err)
		ready.set(fmt.Errorf("stream %s not ready: %w", *stream, err))
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
	if ctx.Err() != nil {
		return 0
	}
	ready.set(errors.New("starting the consumer"))
	if mp := nc.MaxPayload(); int64(*maxState) > mp {
		logger.Printf("the server takes messages of at most %d bytes (its max_payload), -max-state is %d: a partition state past %d bytes cannot be stored (raise max_payload in the server's configuration)",
			mp, *maxState, mp)
	}
	cons, err := natsjs.NewConsumer(ctx, natsjs.Config{Setup: setup, JS: js, ID: *id, Store: store,
		Checkpoint: *checkpoint, MaxMarks: *maxMarks, MaxWaiting: *maxWaiting, TemplateRetry: *retry, Logf: logger.Printf})
	if err != nil {
		logger.Print(err)
		return 1
	}
	cm.c.Store(cons)
	ready.cons.Store(cons)
	_ = cons.Run(ctx)
	logger.Print(stopped(cons.Stats()))
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	return 0
}

// stopped is the log line of a consumer stopped with st: what became of
// the partitions it took. Before, it said "partitions handed back" even
// when all had been lost (the stream unreachable) and none was.
func stopped(st natsjs.Stats) string {
	var what string
	switch {
	case st.Taken == 0:
		what = "no partition was taken"
	case st.Released == 0 && st.Lost == st.Taken:
		what = fmt.Sprintf("none of the %d partitions taken handed back: all lost (their leases passed, or another collector took them): the next owner takes each from its last stored state", st.Taken)
	default:
		what = fmt.Sprintf("of %d partitions taken, %d handed back, %d lost", st.Taken, st.Released, st.Lost)
	}
	return fmt.Sprintf("stopped: %s; %+v", what, st)
}

// loadTemplates adds to s the templates of file (tpl.ReadJSONList: one
// template's JSON form or an array of them, versions of one name side by
// side, the last of a name its newest: natsjs.TemplateSet.Add), and
// returns how many were new. A file that cannot be read or parsed adds
// nothing.
func loadTemplates(s *natsjs.TemplateSet, file string) (int, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	ts, err := tpl.ReadJSONList(nil, data) // each in a registry of its own: versions of a name side by side
	if err != nil {
		return 0, fmt.Errorf("%s: %w", file, err)
	}
	return s.Add(ts), nil
}

// reloadTemplates adds the templates file's new templates on every
// SIGHUP.
func reloadTemplates(ctx context.Context, hup <-chan os.Signal, s *natsjs.TemplateSet, file string, logger *log.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
		}
		n, err := loadTemplates(s, file)
		if err != nil {
			logger.Printf("SIGHUP: %v (templates unchanged)", err)
			continue
		}
		logger.Printf("SIGHUP: %d new templates from %s", n, file)
	}
}

// readiness is the answer of /readyz: the consumer's Ready once it
// exists, else why it does not yet (the stream unreachable).
type readiness struct {
	cons     atomic.Pointer[natsjs.Consumer]
	starting atomic.Pointer[error]
}

func (r *readiness) set(err error) { r.starting.Store(&err) }

func (r *readiness) err() error {
	if c := r.cons.Load(); c != nil {
		return c.Ready()
	}
	return *r.starting.Load()
}

// text writes a plain-text answer, as the HTTP collector's /healthz and
// /readyz do.
func text(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, msg+"\n")
}

// consumerMetrics exports the consumer's partitions and counters: zero
// until the consumer exists (c nil).
type consumerMetrics struct {
	c atomic.Pointer[natsjs.Consumer]
	s *natsjs.SetStore
}

var (
	partDesc    = prometheus.NewDesc("statsblob_nats_partition", "A partition this collector owns and exports (1).", []string{"partition"}, nil)
	ownedDesc   = prometheus.NewDesc("statsblob_nats_partitions_owned", "Partitions this collector owns.", nil, nil)
	counterDesc = prometheus.NewDesc("statsblob_nats_messages_total", "Messages taken from the stream, by what became of them.", []string{"outcome"}, nil)
	eventsDesc  = prometheus.NewDesc("statsblob_nats_partition_events_total", "Partitions taken, lost to another collector, or handed back.", []string{"event"}, nil)
	ckptDesc    = prometheus.NewDesc("statsblob_nats_checkpoints_total", "Partition states stored.", nil, nil)
	failDesc    = prometheus.NewDesc("statsblob_nats_checkpoint_failures_total",
		"Partition checkpoints that failed (stream unreachable, a state past its limit): their messages stay unacknowledged.", nil, nil)
	unackedDesc = prometheus.NewDesc("statsblob_nats_unacknowledged_messages",
		"Messages the owned partitions hold until a stored state holds them.", nil, nil)
	waitingDesc = prometheus.NewDesc("statsblob_nats_waiting_messages",
		"Messages of templates this collector does not know, waiting in the owned partitions for them.", nil, nil)
	learnedDesc = prometheus.NewDesc("statsblob_nats_templates_learned_total",
		"Templates learned from partition states (versions the templates file no longer holds): their aggregates exported, their messages merged.", nil, nil)
	gapsDesc = prometheus.NewDesc("statsblob_nats_stream_gaps_total",
		"Times a partition found messages the stream had removed (its limits) before they were read: its own among them never merged.", nil, nil)
)

func (m *consumerMetrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{partDesc, ownedDesc, counterDesc, eventsDesc, ckptDesc, failDesc, unackedDesc, waitingDesc, gapsDesc, learnedDesc} {
		ch <- d
	}
}

func (m *consumerMetrics) Collect(ch chan<- prometheus.Metric) {
	var owned []int
	var st natsjs.Stats
	if c := m.c.Load(); c != nil {
		owned, st = c.Owned(), c.Stats()
	}
	for _, p := range owned {
		ch <- prometheus.MustNewConstMetric(partDesc, prometheus.GaugeValue, 1, strconv.Itoa(p))
	}
	ch <- prometheus.MustNewConstMetric(ownedDesc, prometheus.GaugeValue, float64(len(owned)))
	for o, v := range map[string]uint64{"merged": st.Merged, "refused": st.Refused, "skipped": st.Skipped,
		"duplicate": st.Duplicates, "unchecked": st.Unchecked, "expired": st.Expired, "wait_full": st.WaitFull} {
		ch <- prometheus.MustNewConstMetric(counterDesc, prometheus.CounterValue, float64(v), o)
	}
	for e, v := range map[string]uint64{"taken": st.Taken, "lost": st.Lost, "released": st.Released} {
		ch <- prometheus.MustNewConstMetric(eventsDesc, prometheus.CounterValue, float64(v), e)
	}
	ch <- prometheus.MustNewConstMetric(ckptDesc, prometheus.CounterValue, float64(st.Checkpoints))
	ch <- prometheus.MustNewConstMetric(failDesc, prometheus.CounterValue, float64(st.CheckpointFailures))
	ch <- prometheus.MustNewConstMetric(unackedDesc, prometheus.GaugeValue, float64(st.Unacked))
	ch <- prometheus.MustNewConstMetric(waitingDesc, prometheus.GaugeValue, float64(st.Waiting))
	ch <- prometheus.MustNewConstMetric(gapsDesc, prometheus.CounterValue, float64(st.Gaps))
	ch <- prometheus.MustNewConstMetric(learnedDesc, prometheus.CounterValue, float64(m.s.Learned()))
}
