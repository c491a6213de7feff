// Command statsblob-collector receives statsblob blobs over HTTP and serves
// their aggregates to Prometheus and OpenTelemetry:
//
//	statsblob-collector -templates FILE [-listen ADDR] [-window D] [-otlp URL] [-remote-write URL] [flags]
//
// Services POST each blob's bytes to /v1/blobs?LABEL=VALUE&...; Prometheus
// scrapes /metrics; GET /v1/aggregates lists the aggregates and GET
// /v1/aggregate?tpl=NAME&LABEL=PATTERN... answers their merged blob
// (statsblob fetch saves it; -history N keeps closed windows queryable); /healthz and /readyz answer probes; with -otlp the
// aggregates are pushed to an OTLP/HTTP receiver, each push within
// -otlp-timeout; with -remote-write they are sent with Prometheus remote
// write (package remotewrite): each window once it closes with -window,
// else every -remote-write-interval. Every limit is a flag (-h lists them
// with their defaults); package collector says what a client sees at each.
// -tokens FILE limits posting and reading to bearer tokens (package
// collector, access.go); -tls-cert and -tls-key serve HTTPS.
// GET /v1/definition?tpl=NAME prints which VOIs of template NAME are
// exported, POST changes it (name=V on=0 stops exporting V while it is
// still added up, name=V data=reset resets it; statsblob def is the
// client; package collector, definition.go).
// SIGHUP adds the templates file's new templates (several versions of one
// name may be side by side in it), keeping every aggregate; POST
// /v1/templates adds templates too, GET /v1/templates lists them.
// SIGTERM or SIGINT stops it within -shutdown-grace (20s): /readyz turns
// 503, requests under way finish (or are cut, unacknowledged, when the
// grace less the last pushes' share has passed), and a last OTLP push and
// remote write ship what was not yet shipped. Exit status: 0, or 1 if
// accepted blobs could not be shipped (stderr says how many), 2 for a
// usage error. -pprof ADDR serves net/http/pprof on a listener of its own.
// -ingest-listen ADDR also takes posts (POST /v1/blobs, /v1/batch) and
// answers /healthz and /readyz on a second listener whose HTTP/1.1 server
// is fasthttp (package collector's IngestServer): the same answers and
// limits for a quarter less CPU per post: 57,700–64,200 single posts
// per CPU second (bench/README.md).
//
// With -data-dir DIR every post answered 204 is first in a write-ahead log
// in DIR (fsynced, shared by the posts arriving together), checkpointed
// every -checkpoint-interval, at each window's end and at shutdown: after
// kill -9 or a power loss, a restart on the same DIR has every
// acknowledged post exactly once (package collector, durable.go). If the
// log cannot be written, posts are answered 503 and windows are held
// (not shipped) until a checkpoint of the state in memory succeeds,
// tried at every -checkpoint-interval and window's end: the process
// stays up, /readyz 503 meanwhile (statsblob_collector_log_broken 1).
package main

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/statsblob/statsblob/export"
	"github.com/statsblob/statsblob/export/aggregate"
	"github.com/statsblob/statsblob/export/collector"
	"github.com/statsblob/statsblob/export/remotewrite"
	"github.com/statsblob/statsblob/tpl"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// shutdown stops s within grace: /readyz turns 503, the requests under way
// get until grace less the last pushes' share to finish (then they are
// cut, unacknowledged: their senders send them again), and flush (the last
// OTLP push and remote write, if pushing) gets the rest. It returns 1 if
// accepted blobs could not be shipped.
func shutdown(s *collector.Server, srv *http.Server, in *collector.IngestServer, pushing bool, flush func(context.Context) int, grace, pushTimeout time.Duration, stderr io.Writer) int {
	deadline := time.Now().Add(grace)
	s.Drain()
	var pushShare time.Duration
	if pushing {
		pushShare = min(pushTimeout, grace/2)
	}
	hctx, cancel := context.WithDeadline(context.Background(), deadline.Add(-pushShare))
	defer cancel()
	ingestDone := make(chan error, 1)
	go func() {
		if in == nil {
			ingestDone <- nil
			return
		}
		ingestDone <- in.Shutdown(hctx) // closes what is left at hctx's end
	}()
	err := srv.Shutdown(hctx)
	n := s.InFlight()
	if err != nil {
		_ = srv.Close()
	}
	if ierr := <-ingestDone; err != nil || ierr != nil {
		// Posts on the ingest listener are under way only once their
		// body is in: most cut there were still arriving.
		under := ""
		if n > 0 {
			under = fmt.Sprintf(" (%d posts under way)", n)
		}
		fmt.Fprintf(stderr, "statsblob-collector: the shutdown grace of %v reached: the requests still arriving cut off, none of them acknowledged%s\n", grace, under)
	}
	pctx, pcancel := context.WithDeadline(context.Background(), deadline)
	defer pcancel()
	code := flush(pctx)
	fmt.Fprintln(stderr, "statsblob-collector: stopped")
	return code
}

// reloadTemplates adds the templates of file on every SIGHUP: new
// templates and new versions are accepted from then on; nothing is
// removed and no aggregate is touched. A file that cannot be read or
// parsed changes nothing (stderr says why).
func reloadTemplates(ctx context.Context, hup <-chan os.Signal, s *collector.Server, file string, stderr io.Writer) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
		}
		data, err := os.ReadFile(file)
		var ts []*tpl.Template
		if err == nil {
			ts, err = collector.ParseTemplates(data)
		}
		n := 0
		if err == nil {
			n, err = s.AddTemplates(ts)
		}
		if err != nil {
			fmt.Fprintf(stderr, "statsblob-collector: SIGHUP: %s: %v (templates unchanged)\n", file, err)
			continue
		}
		fmt.Fprintf(stderr, "statsblob-collector: SIGHUP: %d new templates from %s\n", n, file)
	}
}

// pprofMux serves net/http/pprof.
func pprofMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

// units is a repeatable -unit VOI=UNIT flag.
type units map[string]string

func (u units) String() string { return "" }

func (u units) Set(s string) error {
	voi, unit, ok := strings.Cut(s, "=")
	if !ok || voi == "" || unit == "" {
		return errors.New("want VOI=UNIT")
	}
	u[voi] = unit
	return nil
}

// labelFlag is a repeatable NAME=VALUE flag.
type labelFlag []export.Label

func (l *labelFlag) String() string { return "" }

func (l *labelFlag) Set(s string) error {
	name, value, ok := strings.Cut(s, "=")
	if !ok || name == "" || value == "" {
		return errors.New("want NAME=VALUE")
	}
	*l = append(*l, export.Label{Name: name, Value: value})
	return nil
}

// sign is the sign of the value of fs's numeric flag name: -1, 0 or +1.
func sign(fs *flag.FlagSet, name string) int {
	switch v := fs.Lookup(name).Value.(flag.Getter).Get().(type) {
	case int:
		return cmp.Compare(v, 0)
	case int64:
		return cmp.Compare(v, 0)
	case time.Duration:
		return cmp.Compare(v, 0)
	}
	panic("statsblob-collector: -" + name + " is not an integer or a duration")
}

// run runs the command: -h prints the help to stdout; everything else
// (usage errors, the log) goes to stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("statsblob-collector", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // parse errors are printed by usage, the help to stdout
	fs.Usage = func() {}
	listen := fs.String("listen", "127.0.0.1:9129", "`ADDR` to serve POST /v1/blobs and GET /metrics on")
	ingestListen := fs.String("ingest-listen", "", "also serve POST /v1/blobs and /v1/batch on `ADDR` with a leaner HTTP/1.1 server (fasthttp): a quarter less CPU per post (off if empty)")
	templates := fs.String("templates", "", "templates `FILE`: a template's JSON form or an array of them (required)")
	window := fs.Duration("window", 0, "aggregates start afresh every `D` (0: never)")
	otlp := fs.String("otlp", "", "OTLP/HTTP metrics endpoint `URL` to push to (e.g. http://127.0.0.1:4318/v1/metrics)")
	otlpEvery := fs.Duration("otlp-interval", collector.DefaultPushInterval, "push interval `D` with cumulative temporality (> 0)")
	temporality := fs.String("otlp-temporality", "cumulative", "OTLP temporality `cumulative|delta`: push the current window every interval, or each window once it closes (needs -window)")
	namespace := fs.String("namespace", "", "metric name `PREFIX`")
	quantiles := fs.String("quantiles", "0.5,0.9,0.99,0.999", "t-digest summary quantiles, comma-separated `LIST`")
	native := fs.Bool("native", false, "also export t-digests as native (exponential) histograms")
	otlpSummary := fs.Bool("otlp-summary", false, "push t-digests over OTLP as Summaries instead of exponential histograms")
	rwURL := fs.String("remote-write", "", "Prometheus remote write `URL` to send to (e.g. http://127.0.0.1:9090/api/v1/write)")
	rwEvery := fs.Duration("remote-write-interval", remotewrite.DefaultInterval, "remote write interval `D` without -window (with -window: each window once it closes; > 0)")
	rwHist := fs.String("remote-write-histograms", "auto", "t-digests as `auto|native|classic`: native histograms unless the server refuses them, native histograms, or classic buckets")
	rwQueue := fs.Int("remote-write-queue", remotewrite.DefaultQueueSize, "at most `N` snapshots waiting for remote write (the oldest is dropped and counted)")
	rwLookback := fs.Duration("remote-write-lookback", remotewrite.DefaultLookback, "the remote-write server's query lookback `D` (Prometheus's --query.lookback-delta): stale markers not acknowledged are given up that long after their series' last sample")
	rwLabels := labelFlag{}
	fs.Var(&rwLabels, "remote-write-label", "`NAME=VALUE` added to every remote-written series: one per collector of a fleet (repeatable)")
	maxAggs := fs.Int("max-aggregates", collector.DefaultMaxAggregates, "at most `N` label sets per window (then 429)")
	maxAggsTpl := fs.Int("max-aggregates-per-template", 0, "at most `N` label sets of one template per window (then 429; 0: -max-aggregates)")
	maxTemplates := fs.Int("max-templates", collector.DefaultMaxTemplates, "at most `N` templates known, versions apart (then an upload is 429)")
	maxBody := fs.Int64("max-body", collector.DefaultMaxBody, "largest blob body in `BYTES`, after gzip or zstd decoding (then 413)")
	maxLabels := fs.Int("max-labels", collector.DefaultMaxLabels, "at most `N` labels per post (then 400)")
	maxLabelBytes := fs.Int("max-label-bytes", collector.DefaultMaxLabelBytes, "longest label name or value in `BYTES` (then 400)")
	labelTTL := fs.Duration("label-ttl", collector.DefaultLabelTTL, "a label set without a post for `D` is dropped (0: never)")
	maxConns := fs.Int("max-conns", collector.DefaultMaxConns, "at most `N` open connections (then 503 and close)")
	maxHeader := fs.Int("max-header-bytes", collector.DefaultMaxHeaderBytes, "largest request line and headers in `BYTES` (then 431)")
	readHeaderTimeout := fs.Duration("read-header-timeout", collector.DefaultReadHeaderTimeout, "time `D` to read a request's line and headers")
	readTimeout := fs.Duration("read-timeout", collector.DefaultReadTimeout, "time `D` to read a whole request, body included (then 408)")
	writeTimeout := fs.Duration("write-timeout", collector.DefaultWriteTimeout, "time `D` to write a response (a scrape), after which it is cut")
	idleTimeout := fs.Duration("idle-timeout", collector.DefaultIdleTimeout, "an idle keep-alive connection is closed after `D`")
	maxSeries := fs.Int("max-scrape-series", collector.DefaultMaxScrapeSeries, "at most `N` samples per scrape (later aggregates left out)")
	maxScrapeBytes := fs.Int("max-scrape-bytes", collector.DefaultMaxScrapeBytes, "about `BYTES` of text per scrape at most (later aggregates left out)")
	maxScrapes := fs.Int("max-scrapes", collector.DefaultMaxScrapes, "at most `N` scrapes served at once (then 503)")
	queueBytes := fs.Int64("queue-bytes", collector.DefaultQueueBytes, "at most `N` bytes of accepted blobs queued before they fold into their aggregates (then a post folds its aggregate's queue at once)")
	maxReadings := fs.Int("max-level-readings", collector.DefaultMaxLevelReadings, "keep at most `N` senders' levels (gauges) over all label sets (then a new sender's takes the least recently heard one's place)")
	markAge := fs.Duration("sequence-mark-age", aggregate.DefaultMarkAge, "keep a sender's sequence number for a label set at least `D` after its latest post there, however short -window (a retry later than that and two windows is added again; label sets cycling past twice -max-aggregates lose theirs sooner)")
	maxMarks := fs.Int("max-sequence-marks", collector.DefaultMaxSequenceMarks, "keep at most `N` senders' sequence numbers (one per sender and label set) over all senders (then a post is added without the duplicate check)")
	scrapeShare := fs.Float64("scrape-share", collector.DefaultScrapeShare, "scrapes back to back take at most `F` of the time (0 < F <= 1; a scrape waits (1/F - 1) times the last one's rendering after it)")
	otlpTimeout := fs.Duration("otlp-timeout", collector.DefaultPushTimeout, "each OTLP push's deadline `D`")
	otlpPending := fs.Int("otlp-max-pending", collector.DefaultMaxPending, "at most `N` closed windows waiting to be pushed (delta; then the oldest is dropped)")
	grace := fs.Duration("shutdown-grace", 20*time.Second, "on SIGTERM, finish requests and push what is left within `D` (0: none, requests under way are cut and nothing is pushed)")
	dataDir := fs.String("data-dir", "", "keep every acknowledged post in a write-ahead log in `DIR`: it survives kill -9 and a restart on the same DIR (off if empty)")
	ckptEvery := fs.Duration("checkpoint-interval", collector.DefaultCheckpointInterval, "with -data-dir, checkpoint the aggregates every `D` (and at each window's end and at shutdown)")
	tokensFile := fs.String("tokens", "", "bearer tokens `FILE` (JSON): who may post which templates with which forced labels, who may read /metrics and the query API (off if empty)")
	tlsCert := fs.String("tls-cert", "", "serve HTTPS with this certificate `FILE` (PEM; with -tls-key)")
	tlsKey := fs.String("tls-key", "", "the certificate's private key `FILE` (PEM; with -tls-cert)")
	historyN := fs.Int("history", 0, "keep the last `N` closed windows queryable (GET /v1/aggregate?...&window=-1 ... -N; 0: none)")
	pprofAddr := fs.String("pprof", "", "serve net/http/pprof on `ADDR` (off if empty)")
	us := units{}
	fs.Var(us, "unit", "`VOI=UNIT`: a VOI's unit, a Prometheus word or UCUM code (seconds or s), replacing the template's and a unit suffix of the VOI's name; values unscaled (repeatable)")
	// As statsblob COMMAND: -h prints the help to stdout, a usage error
	// its message and the synopsis to stderr.
	const synopsis = "statsblob-collector -templates FILE [-listen ADDR] [-window D] [-otlp URL] [flags]"
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
	if fs.NArg() > 0 {
		return usage("unexpected argument %q", fs.Arg(0))
	}
	if *templates == "" {
		return usage("-templates FILE is required")
	}
	if (*tlsCert == "") != (*tlsKey == "") {
		return usage("-tls-cert and -tls-key go together")
	}
	// A numeric flag whose 0 means something of its own says what in its
	// help and must not be negative; the others must be positive: their
	// Config field takes 0 for the default (which the flag's own default
	// already is), so 0 said the default quietly, or looked like "no
	// limit" (TestUsageZero checks every numeric flag is one or the other).
	for _, name := range []string{"window", "max-aggregates-per-template", "label-ttl", "history", "shutdown-grace"} {
		if sign(fs, name) < 0 {
			return usage("-%s %v: must not be negative", name, fs.Lookup(name).Value)
		}
	}
	for _, name := range []string{"otlp-interval", "remote-write-interval", "remote-write-queue", "remote-write-lookback",
		"max-aggregates", "max-templates", "max-body", "max-labels", "max-label-bytes", "max-conns", "max-header-bytes",
		"read-header-timeout", "read-timeout", "write-timeout", "idle-timeout", "max-scrape-series", "max-scrape-bytes", "max-scrapes",
		"queue-bytes", "max-level-readings", "sequence-mark-age", "max-sequence-marks", "otlp-timeout", "otlp-max-pending", "checkpoint-interval"} {
		if sign(fs, name) <= 0 {
			return usage("-%s %v: must be positive", name, fs.Lookup(name).Value)
		}
	}
	if !(*scrapeShare > 0 && *scrapeShare <= 1) {
		return usage("-scrape-share %v: want 0 < F <= 1", *scrapeShare)
	}
	temp := metricdata.CumulativeTemporality
	switch *temporality {
	case "cumulative":
	case "delta":
		temp = metricdata.DeltaTemporality
		if *window <= 0 {
			return usage("-otlp-temporality delta needs -window")
		}
	default:
		return usage("-otlp-temporality %q: cumulative or delta", *temporality)
	}
	rwMode, ok := map[string]remotewrite.HistogramMode{"auto": remotewrite.HistogramsAuto,
		"native": remotewrite.HistogramsNative, "classic": remotewrite.HistogramsClassic}[*rwHist]
	if !ok {
		return usage("-remote-write-histograms %q: auto, native or classic", *rwHist)
	}
	var qs []float64
	for _, f := range strings.Split(*quantiles, ",") {
		q, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil {
			return usage("-quantiles: %q is not a number", f)
		}
		qs = append(qs, q)
	}
	if *labelTTL == 0 {
		*labelTTL = -1 // never
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "statsblob-collector: %v\n", err)
		return 1
	}
	data, err := os.ReadFile(*templates)
	if err != nil {
		return fail(err)
	}
	ts, err := collector.ParseTemplates(data)
	if err != nil {
		return fail(fmt.Errorf("%s: %w", *templates, err))
	}
	var tokens []collector.Token
	if *tokensFile != "" {
		p, err := os.ReadFile(*tokensFile)
		if err != nil {
			return fail(err)
		}
		if tokens, err = collector.ParseTokens(p); err != nil {
			return fail(fmt.Errorf("-tokens %s: %w", *tokensFile, err))
		}
		if tokens == nil {
			tokens = []collector.Token{} // an empty file: nobody may post
		}
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	eopts := export.Options{Namespace: *namespace, Units: us, Quantiles: qs, NativeHistogram: *native, Summary: *otlpSummary}
	s, err := collector.New(collector.Config{MoreTemplates: ts, Window: *window, MaxAggregates: *maxAggs,
		MaxAggregatesPerTemplate: *maxAggsTpl, MaxTemplates: *maxTemplates, MaxBody: *maxBody, MaxLabels: *maxLabels, MaxLabelBytes: *maxLabelBytes,
		LabelTTL: *labelTTL, MaxConns: *maxConns, MaxHeaderBytes: *maxHeader,
		ReadHeaderTimeout: *readHeaderTimeout, ReadTimeout: *readTimeout, WriteTimeout: *writeTimeout, IdleTimeout: *idleTimeout,
		MaxScrapeSeries: *maxSeries, MaxScrapeBytes: *maxScrapeBytes, MaxScrapes: *maxScrapes, ScrapeShare: *scrapeShare, QueueBytes: *queueBytes, Log: log, Export: eopts,
		MaxLevelReadings: *maxReadings, MaxSequenceMarks: *maxMarks, SequenceMarkAge: *markAge,
		DataDir: *dataDir, CheckpointInterval: *ckptEvery, History: *historyN, Tokens: tokens})
	if err != nil {
		return fail(err)
	}
	var pusher *collector.Pusher
	if *otlp != "" {
		exp, err := otlpmetrichttp.New(ctx, otlpmetrichttp.WithEndpointURL(*otlp), otlpmetrichttp.WithTimeout(*otlpTimeout),
			otlpmetrichttp.WithRetry(otlpmetrichttp.RetryConfig{Enabled: true, InitialInterval: 500 * time.Millisecond,
				MaxInterval: 2 * time.Second, MaxElapsedTime: *otlpTimeout}))
		if err != nil {
			return fail(fmt.Errorf("-otlp: %w", err))
		}
		pusher = s.NewPusher(exp, collector.PushConfig{Temporality: temp, Timeout: *otlpTimeout, MaxPending: *otlpPending})
		if temp == metricdata.CumulativeTemporality {
			go pusher.Run(ctx, *otlpEvery)
			if *labelTTL > 0 && *labelTTL <= *otlpEvery {
				log.Warn("-label-ttl is not longer than -otlp-interval: a label set may expire before its last posts are pushed",
					"label_ttl", *labelTTL, "otlp_interval", *otlpEvery)
			}
		}
	}
	var rw *remotewrite.Writer
	if *rwURL != "" {
		rw, err = remotewrite.New(remotewrite.Config{URL: *rwURL, Options: eopts, Histograms: rwMode,
			Labels: rwLabels, QueueSize: *rwQueue, Lookback: *rwLookback})
		if err != nil {
			return fail(fmt.Errorf("-remote-write: %w", err))
		}
		s.MustRegister(rw.Collectors()...)
		if *window > 0 {
			s.OnClose(func(c collector.Closed) { _ = rw.Enqueue(c.Blobs, c.End, c.Start) })
		} else {
			go rw.Run(ctx, s, *rwEvery, time.Now)
		}
	}
	var certs []tls.Certificate
	if *tlsCert != "" {
		c, err := tls.LoadX509KeyPair(*tlsCert, *tlsKey)
		if err != nil {
			return fail(fmt.Errorf("-tls-cert, -tls-key: %w", err))
		}
		certs = []tls.Certificate{c}
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fail(err)
	}
	var in *collector.IngestServer
	var iln net.Listener
	if *ingestListen != "" {
		if iln, err = net.Listen("tcp", *ingestListen); err != nil {
			return fail(fmt.Errorf("-ingest-listen: %w", err))
		}
		in = s.IngestServer()
	}
	if *pprofAddr != "" {
		pln, err := net.Listen("tcp", *pprofAddr)
		if err != nil {
			return fail(fmt.Errorf("-pprof: %w", err))
		}
		defer pln.Close()
		go func() { _ = (&http.Server{Handler: pprofMux(), ReadHeaderTimeout: 5 * time.Second}).Serve(pln) }()
	}
	srv := s.HTTPServer()
	go s.RunWindows(ctx)
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go reloadTemplates(ctx, hup, s, *templates, stderr)
	served := make(chan error, 2)
	if in != nil {
		if certs != nil {
			iln = tls.NewListener(iln, &tls.Config{Certificates: certs, MinVersion: tls.VersionTLS12})
		}
		go func() {
			if err := in.Serve(iln); err != nil {
				served <- fmt.Errorf("-ingest-listen: %w", err)
			}
		}()
	}
	go func() {
		if certs != nil {
			srv.TLSConfig = &tls.Config{Certificates: certs, MinVersion: tls.VersionTLS12}
			served <- srv.ServeTLS(s.Listener(ln), "", "")
			return
		}
		served <- srv.Serve(s.Listener(ln))
	}()
	var names []string
	for _, t := range ts {
		names = append(names, t.Spec())
	}
	scheme := ""
	if *tlsCert != "" {
		scheme = "https://"
	}
	fmt.Fprintf(stderr, "statsblob-collector: listening on %s%s, templates %s\n", scheme, ln.Addr(), strings.Join(names, ", "))
	if iln != nil {
		fmt.Fprintf(stderr, "statsblob-collector: posts also on %s%s (-ingest-listen)\n", scheme, iln.Addr())
	}

	code := 0
	select {
	case <-ctx.Done():
	case err := <-served:
		code = fail(err)
	}
	// The last pushes: OTLP (a delta pusher closes the window under way,
	// which the remote writer sees too), then remote write.
	flush := func(ctx context.Context) int {
		code := 0
		if pusher != nil {
			if err := pusher.Close(ctx); err != nil {
				fmt.Fprintf(stderr, "statsblob-collector: last OTLP push: %v\n", err)
				code = 1
			}
		}
		if rw != nil {
			switch {
			case *window > 0 && !(pusher != nil && temp == metricdata.DeltaTemporality):
				s.Rotate()
			case *window <= 0:
				_ = rw.Enqueue(s.Blobs(), time.Now(), time.Time{})
			}
			if err := rw.Close(ctx); err != nil {
				fmt.Fprintf(stderr, "statsblob-collector: last remote write: %v\n", err)
				code = 1
			}
		}
		return code
	}
	code |= shutdown(s, srv, in, pusher != nil || rw != nil, flush, *grace, *otlpTimeout, stderr)
	if err := s.Close(); err != nil { // the last checkpoint (-data-dir)
		code = fail(fmt.Errorf("-data-dir: the last checkpoint: %w", err))
	}
	return code
}
