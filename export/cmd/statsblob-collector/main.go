// Command statsblob-collector receives statsblob blobs over HTTP and serves
// their aggregates to Prometheus and OpenTelemetry:
//
//	statsblob-collector -templates FILE [-listen ADDR] [-window D] [-otlp URL] [-remote-write URL]
//
// Services POST each blob's bytes to /v1/blobs?LABEL=VALUE&...; Prometheus
// scrapes /metrics; with -otlp the aggregates are pushed to an OTLP/HTTP
// receiver; with -remote-write they are sent with Prometheus remote write
// (package remotewrite): each window once it closes with -window, else
// every -remote-write-interval. SIGTERM or SIGINT stops it gracefully: requests under way
// finish, and a last OTLP push ships what was not yet shipped. See package
// collector for the protocol and package export for the mapping.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/statsblob/statsblob/export"
	"github.com/statsblob/statsblob/export/collector"
	"github.com/statsblob/statsblob/export/remotewrite"
	"github.com/statsblob/statsblob/tpl"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stderr))
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

func run(ctx context.Context, args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("statsblob-collector", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:9129", "`ADDR` to serve POST /v1/blobs and GET /metrics on")
	templates := fs.String("templates", "", "templates `FILE`: a template's JSON form or an array of them (required)")
	window := fs.Duration("window", 0, "aggregates start afresh every `D` (0: never)")
	otlp := fs.String("otlp", "", "OTLP/HTTP metrics endpoint `URL` to push to (e.g. http://127.0.0.1:4318/v1/metrics)")
	otlpEvery := fs.Duration("otlp-interval", 10*time.Second, "push interval `D` with cumulative temporality")
	temporality := fs.String("otlp-temporality", "cumulative", "`cumulative` (the current window every interval) or delta (each window once it closes; needs -window)")
	namespace := fs.String("namespace", "", "metric name `PREFIX`")
	quantiles := fs.String("quantiles", "0.5,0.9,0.99,0.999", "t-digest summary quantiles, comma-separated `LIST`")
	native := fs.Bool("native", false, "also export t-digests as native (exponential) histograms")
	otlpSummary := fs.Bool("otlp-summary", false, "push t-digests over OTLP as Summaries instead of exponential histograms")
	maxAggs := fs.Int("max-aggregates", collector.DefaultMaxAggregates, "at most `N` label sets per window")
	rwURL := fs.String("remote-write", "", "Prometheus remote write `URL` to send to (e.g. http://127.0.0.1:9090/api/v1/write)")
	rwEvery := fs.Duration("remote-write-interval", 15*time.Second, "remote write interval `D` without -window (with -window: each window once it closes)")
	rwHist := fs.String("remote-write-histograms", "auto", "t-digests as `auto` (native histograms unless the server refuses them), native or classic buckets")
	rwQueue := fs.Int("remote-write-queue", remotewrite.DefaultQueueSize, "at most `N` snapshots waiting for remote write (the oldest is dropped and counted)")
	rwLabels := labelFlag{}
	fs.Var(&rwLabels, "remote-write-label", "`NAME=VALUE` added to every remote-written series: one per collector of a fleet (repeatable)")
	us := units{}
	fs.Var(us, "unit", "`VOI=UNIT`: a VOI's unit, a Prometheus word or UCUM code (seconds or s), replacing the template's and a unit suffix of the VOI's name; values unscaled (repeatable)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: statsblob-collector -templates FILE [-listen ADDR] [-window D] [-otlp URL] [flags]\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	usage := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "statsblob-collector: "+format+"\n", a...)
		return 2
	}
	if fs.NArg() > 0 {
		return usage("unexpected argument %q", fs.Arg(0))
	}
	if *templates == "" {
		return usage("-templates FILE is required")
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
	fail := func(err error) int {
		fmt.Fprintf(stderr, "statsblob-collector: %v\n", err)
		return 1
	}
	data, err := os.ReadFile(*templates)
	if err != nil {
		return fail(err)
	}
	reg := tpl.NewRegistry()
	ts, err := collector.LoadTemplates(reg, data)
	if err != nil {
		return fail(fmt.Errorf("%s: %w", *templates, err))
	}
	eopts := export.Options{Namespace: *namespace, Units: us, Quantiles: qs, NativeHistogram: *native, Summary: *otlpSummary}
	s, err := collector.New(collector.Config{Templates: reg, Window: *window, MaxAggregates: *maxAggs, Export: eopts})
	if err != nil {
		return fail(err)
	}
	var pusher *collector.Pusher
	if *otlp != "" {
		exp, err := otlpmetrichttp.New(ctx, otlpmetrichttp.WithEndpointURL(*otlp))
		if err != nil {
			return fail(fmt.Errorf("-otlp: %w", err))
		}
		pusher = s.NewPusher(exp, temp)
		if temp == metricdata.CumulativeTemporality {
			go pusher.Run(ctx, *otlpEvery)
		}
	}
	var rw *remotewrite.Writer
	if *rwURL != "" {
		rw, err = remotewrite.New(remotewrite.Config{URL: *rwURL, Options: eopts, Histograms: rwMode,
			Labels: rwLabels, QueueSize: *rwQueue})
		if err != nil {
			return fail(fmt.Errorf("-remote-write: %w", err))
		}
		s.Registry().MustRegister(rw.Collectors()...)
		if *window > 0 {
			s.OnClose(func(c collector.Closed) { _ = rw.Enqueue(c.Blobs, c.End, c.Start) })
		} else {
			go rw.Run(ctx, s, *rwEvery, time.Now)
		}
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fail(err)
	}
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second}
	go s.RunWindows(ctx)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	var names []string
	for _, t := range ts {
		names = append(names, t.Spec())
	}
	fmt.Fprintf(stderr, "statsblob-collector: listening on %s, templates %s\n", ln.Addr(), strings.Join(names, ", "))

	code := 0
	select {
	case <-ctx.Done():
	case err := <-served:
		code = fail(err)
	}
	// Finish the requests under way, then push what is left.
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		code = fail(fmt.Errorf("shutdown: %w", err))
	}
	if pusher != nil {
		if err := pusher.Close(sctx); err != nil {
			code = fail(fmt.Errorf("last OTLP push: %w", err))
		}
	}
	if rw != nil {
		// The last state: the window under way closes (unless a delta
		// OTLP push closed it already, which the writer saw), or the
		// current aggregates.
		switch {
		case *window > 0 && !(pusher != nil && temp == metricdata.DeltaTemporality):
			s.Rotate()
		case *window <= 0:
			_ = rw.Enqueue(s.Blobs(), time.Now(), time.Time{})
		}
		if err := rw.Close(sctx); err != nil {
			code = fail(fmt.Errorf("last remote write: %w", err))
		}
	}
	fmt.Fprintln(stderr, "statsblob-collector: stopped")
	return code
}
