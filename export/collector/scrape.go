package collector

import (
	"bytes"
	"errors"
	"maps"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/statsblob/statsblob/export"
	"github.com/statsblob/statsblob/export/promexport"
)

// scrapeCollector is the aggregates as Prometheus metrics, at most
// MaxScrapeSeries samples and about MaxScrapeBytes bytes of text per
// scrape: aggregates past either bound (in Blobs' order) are left out of
// that scrape, counted and logged.
type scrapeCollector struct {
	s *Server
	m *export.Mapper
}

func (c *scrapeCollector) Describe(chan<- *prometheus.Desc) {}

func (c *scrapeCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.s
	var ms []export.Metric
	var series, size, omitted int
	var limit string
	for _, n := range s.Blobs() {
		k := len(ms)
		var err error
		if ms, err = c.m.Append(ms, n); err != nil {
			ch <- prometheus.NewInvalidMetric(prometheus.NewInvalidDesc(err), err)
		}
		ns, nb := cost(ms[k:])
		switch {
		case series+ns > s.cfg.MaxScrapeSeries:
			limit = "scrape_series"
		case size+nb > s.cfg.MaxScrapeBytes:
			limit = "scrape_bytes"
		default:
			series, size = series+ns, size+nb
			continue
		}
		ms = ms[:k]
		omitted++
	}
	switch limit {
	case "scrape_series":
		s.noteOmitted(omitted, 0)
	default:
		s.noteOmitted(0, omitted)
	}
	for _, m := range ms {
		pm, err := promexport.Const(m)
		if err != nil {
			pm = prometheus.NewInvalidMetric(prometheus.NewInvalidDesc(err), err)
		}
		ch <- pm
	}
}

// noteOmitted records the aggregates a scrape left out by each bound.
func (s *Server) noteOmitted(bySeries, byBytes int) {
	s.omitted.Set(float64(bySeries + byBytes))
	for _, c := range []struct {
		n     int
		limit string
	}{{bySeries, "scrape_series"}, {byBytes, "scrape_bytes"}} {
		if c.n > 0 {
			s.hit(c.limit)
			s.warn("scrape bounded: aggregates left out", "omitted", c.n, "limit", c.limit,
				"max_series", s.cfg.MaxScrapeSeries, "max_bytes", s.cfg.MaxScrapeBytes)
		}
	}
}

// cost returns the samples of ms and an estimate of their bytes in the
// text exposition format.
func cost(ms []export.Metric) (series, size int) {
	for _, m := range ms {
		n := 1
		switch m.Kind {
		case export.KindHistogram:
			n = len(m.Histogram.Bounds) + 3 // the buckets, +Inf, _sum, _count
		case export.KindSummary:
			n = len(m.Summary.Quantiles) + 2
		}
		line := len(m.Name) + 40 // suffix, braces, a value and a timestamp
		for _, l := range m.Labels {
			line += len(l.Name) + len(l.Value) + 4
		}
		series += n
		size += n * line
	}
	return series, size
}

// metrics serves /metrics: at most MaxScrapes at once (503 with
// Retry-After beyond), each written within WriteTimeout.
func (s *Server) metrics(w http.ResponseWriter, r *http.Request) {
	select {
	case s.scrapes <- struct{}{}:
		defer func() { <-s.scrapes }()
	default:
		s.hit("scrapes")
		w.Header().Set("Retry-After", "1")
		http.Error(w, "too many scrapes under way, at most "+itoa(s.cfg.MaxScrapes)+" (-max-scrapes)", http.StatusServiceUnavailable)
		return
	}
	s.noteScrape(r)
	if !s.pace(r) {
		return // the client left while its scrape waited
	}
	// Render first, then write within WriteTimeout: a reader that stops
	// reading is cut off then, and holds only the rendered text meanwhile,
	// not the scrape's working memory (issue 22, defect 3).
	buf := &bufferedResponse{header: http.Header{}, status: http.StatusOK}
	began := time.Now()
	if s.cfg.Export.NativeHistogram { // the protobuf format, negotiated by promhttp
		s.promHandler.ServeHTTP(buf, r)
	} else {
		s.renderText(buf, r)
	}
	s.paced(began, time.Now())
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
	maps.Copy(w.Header(), buf.header)
	w.Header().Set("Content-Length", strconv.Itoa(buf.body.Len()))
	s.writing.Add(1)
	defer s.writing.Add(-1)
	w.WriteHeader(buf.status)
	_, _ = w.Write(buf.body.Bytes())
}

// pace waits until a scrape may render (see Config.ScrapeShare); false if
// r's client left meanwhile. (A wait refuses nothing: it is not counted
// as a limit's hit, and shows in the scrape's duration.) It reads the real
// clock: it shares out the processor's time.
//
// A Prometheus scrape says how long it waits for its answer
// (X-Prometheus-Scrape-Timeout-Seconds): the wait then leaves it twice
// the last rendering's time, so that pacing never makes a scrape time out
// (a rendering of over a fifth of the scrape interval would otherwise
// wait into the timeout).
func (s *Server) pace(r *http.Request) bool {
	s.paceMu.Lock()
	wait, last := time.Until(s.paceUntil), s.paceLast
	s.paceMu.Unlock()
	if t, err := strconv.ParseFloat(r.Header.Get(scrapeTimeoutHeader), 64); err == nil && t > 0 && t < 1e6 {
		wait = min(wait, time.Duration(t*float64(time.Second))-2*last)
	}
	if wait <= 0 {
		return true
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}

// paced records a rendering from began to end: the next may start
// (1/ScrapeShare - 1) times its length after end.
func (s *Server) paced(began, end time.Time) {
	d := end.Sub(began)
	next := end.Add(time.Duration(float64(d) * (1/s.cfg.ScrapeShare - 1)))
	s.paceMu.Lock()
	if next.After(s.paceUntil) {
		s.paceUntil, s.paceLast = next, d
	}
	s.paceMu.Unlock()
}

// scrapeTimeoutHeader is the header in which Prometheus sends a scrape's
// timeout, in seconds.
const scrapeTimeoutHeader = "X-Prometheus-Scrape-Timeout-Seconds"

// bufferedResponse is a rendered response.
type bufferedResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (b *bufferedResponse) Header() http.Header         { return b.header }
func (b *bufferedResponse) WriteHeader(status int)      { b.status = status }
func (b *bufferedResponse) Write(p []byte) (int, error) { return b.body.Write(p) }

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

// noteScrape records the interval between a client's scrapes and warns,
// once per change, when the window is shorter: then whole windows close
// between two scrapes and Prometheus never sees them.
func (s *Server) noteScrape(r *http.Request) {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	now := s.cfg.Now()
	s.scrapeMu.Lock()
	defer s.scrapeMu.Unlock()
	last, seen := s.lastScrape[host]
	if len(s.lastScrape) >= 64 && !seen {
		clear(s.lastScrape) // bounded: scrapers are few
	}
	s.lastScrape[host] = now
	if !seen {
		return
	}
	iv := now.Sub(last)
	s.scrapeInterval.Set(iv.Seconds())
	short := s.cfg.Window > 0 && iv > s.cfg.Window
	if short && !s.shortWindow {
		s.warn("the window is shorter than the scrape interval: windows close unseen by Prometheus",
			"window", s.cfg.Window, "scrape_interval", iv)
	}
	s.shortWindow = short
	shortTTL := s.expiring() && iv > s.cfg.LabelTTL
	if shortTTL && !s.shortTTL {
		s.warn("the label TTL is shorter than the scrape interval: a label set may expire before it is scraped",
			"label_ttl", s.cfg.LabelTTL, "scrape_interval", iv)
	}
	s.shortTTL = shortTTL
	if short {
		s.windowShort.Set(1)
	} else {
		s.windowShort.Set(0)
	}
}

func (s *Server) warn(msg string, args ...any) {
	if s.cfg.Log != nil {
		s.cfg.Log.Warn(msg, args...)
	}
}

func newScrapeHandler(reg *prometheus.Registry) http.Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}
