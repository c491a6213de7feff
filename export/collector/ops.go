package collector

import (
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/statsblob/statsblob/export"
	"github.com/statsblob/statsblob/export/promexport"
)

// ops is the Server's operational state: readiness, scrapes, expiry.
type ops struct {
	draining atomic.Bool

	connSemOnce sync.Once
	connSem     chan struct{} // MaxConns, over every listener (server.go)
	inflight    atomic.Int64  // posts under way

	promHandler    http.Handler
	scrapes        chan struct{} // a semaphore of MaxScrapes
	writing        atomic.Int64  // scrapes rendered, being written
	paceMu         sync.Mutex    // guards paceUntil, paceLast
	paceUntil      time.Time     // when the next scrape may render (ScrapeShare)
	paceLast       time.Duration // the rendering that set paceUntil
	scrapeMu       sync.Mutex    // guards lastScrape, shortWindow, shortTTL
	lastScrape     map[string]time.Time
	shortWindow    bool
	shortTTL       bool
	scrapeInterval prometheus.Gauge
	windowShort    prometheus.Gauge
	omitted        prometheus.Gauge

	wholeWindows atomic.Bool  // closed windows ship (OnClose): no expiry within one
	closedFiles  atomic.Bool  // a delta pusher ships them: written to DataDir until pushed
	nextExpiry   atomic.Int64 // Unix nanoseconds of the next expiry, as of the last sweep (0: none known)
	expired      prometheus.Counter

	connsOpen prometheus.Gauge

	zstd zstdDecoders // of zstd bodies, one per body limit (request.go)
}

// initOps registers the operational endpoints and metrics: /metrics,
// /healthz, /readyz, go_ and process_ metrics.
func (s *Server) initOps(pc *promexport.Collector) {
	m, _ := export.NewMapper(s.cfg.Export) // New checked the options
	s.text = pc.NewText()
	sc := &scrapeCollector{s: s, m: m}
	s.omitted = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "statsblob_collector_scrape_omitted_aggregates",
		Help: "Aggregates the last scrape left out to stay within -max-scrape-series and -max-scrape-bytes."})
	s.scrapes = make(chan struct{}, s.cfg.MaxScrapes)
	s.lastScrape = map[string]time.Time{}
	s.scrapeInterval = prometheus.NewGauge(prometheus.GaugeOpts{Name: "statsblob_collector_scrape_interval_seconds",
		Help: "The last interval seen between two scrapes of /metrics by one client."})
	s.windowShort = prometheus.NewGauge(prometheus.GaugeOpts{Name: "statsblob_collector_window_shorter_than_scrape",
		Help: "1 when the window is shorter than the last scrape interval: whole windows close unseen."})
	s.expired = prometheus.NewCounter(prometheus.CounterOpts{Name: "statsblob_collector_label_sets_expired_total",
		Help: "Aggregates dropped after -label-ttl without a post."})
	s.connsOpen = prometheus.NewGauge(prometheus.GaugeOpts{Name: "statsblob_collector_connections",
		Help: "Open connections (of the Listener)."})
	inflight := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "statsblob_collector_posts_in_flight",
		Help: "Posts under way."}, func() float64 { return float64(s.inflight.Load()) })
	s.reg.MustRegister(sc) // the aggregates, within the scrape bounds
	s.own.MustRegister(s.omitted, inflight, s.scrapeInterval, s.windowShort, s.expired, s.connsOpen,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	s.promHandler = newScrapeHandler(s.reg)
	s.mux.HandleFunc("/metrics", s.metrics)
	s.mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { text(w, http.StatusOK, "ok") })
	s.mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		status, msg, retry := s.readiness()
		if retry {
			w.Header().Set("Retry-After", "1")
		}
		text(w, status, msg)
	})
}

// readiness is the answer of /readyz: 200 until Drain, while the
// -data-dir log works (or has healed again) and until Close closes it;
// retry asks for a Retry-After.
func (s *Server) readiness() (status int, msg string, retry bool) {
	switch {
	case s.draining.Load():
		return http.StatusServiceUnavailable, "shutting down", true
	case s.logBroken.Load():
		return http.StatusServiceUnavailable, "the -data-dir log failed: posts are refused until it heals", false
	case s.logClosed.Load():
		return http.StatusServiceUnavailable, "the -data-dir log is closed: posts are refused", false
	}
	return http.StatusOK, "ready", false
}

// MustRegister registers collectors of the server's own metrics (an
// exporter's counters, say), served on /metrics beside the aggregates. It
// panics as prometheus.Registry.MustRegister does.
func (s *Server) MustRegister(cs ...prometheus.Collector) { s.own.MustRegister(cs...) }

// Drain marks the Server as shutting down: /readyz answers 503 from now
// on, so that load balancers send posts elsewhere. Posts are still taken.
func (s *Server) Drain() { s.draining.Store(true) }

// InFlight returns the number of posts under way.
func (s *Server) InFlight() int64 { return s.inflight.Load() }

func text(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, msg+"\n")
}

func itoa(n int) string { return strconv.Itoa(n) }
