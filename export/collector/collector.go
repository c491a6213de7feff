// Package collector receives statsblob blobs over HTTP, merges them per
// template and label set, and serves the aggregates to Prometheus (GET
// /metrics) and, optionally, OpenTelemetry (OTLP push): the server behind
// the statsblob-collector command.
//
// POST /v1/blobs takes one blob's bytes as the request body; the query
// parameters are the blob's labels (?host=web1&svc=api). The blob is
// validated (blob.FromBytes), its template found by hash among the
// configured templates, and merged (blob.Merge) into the aggregate of its
// template and labels for the current window; the answer is 204 No Content.
// Bad input is answered with a 4xx status and a one-line reason, and changes
// nothing:
//
//	405 method    not a POST
//	413 size      a body over MaxBody bytes
//	400 labels    a label name Prometheus does not accept, a reserved one (le, quantile, bucket),
//	              one given twice, an empty value or one that is not UTF-8, more than
//	              MaxLabels, a name or value over 128 bytes
//	400 blob      bytes blob.FromBytes rejects (the reason names the first defect)
//	422 template  a template hash none of the configured templates has
//	422 layout    a blob whose layout or histogram bounds differ from its template's
//	409 overflow  a merge that would overflow a counter of the aggregate
//	429 limit     a new label set beyond MaxAggregates
//
// A merge works on a copy of the aggregate that replaces it only when every
// statistic merged, so a failed merge changes nothing, and readers (the
// /metrics handler, OTLP pushes) read published aggregates without copying
// or waiting for merges.
//
// Windows: with Window 0 the aggregates accumulate for the life of the
// server (Prometheus counters that only grow). With Window > 0 they start
// afresh every Window: /metrics shows the current window (its start is
// every metric's created timestamp, so Prometheus sees a counter reset), and
// a delta OTLP push ships each window once it has closed. Label sets not
// posted in a window disappear with it.
//
// The server's own metrics, on the same /metrics:
// statsblob_collector_blobs_accepted_total,
// statsblob_collector_blobs_rejected_total{reason},
// statsblob_collector_accepted_bytes_total,
// statsblob_collector_merge_seconds (a histogram),
// statsblob_collector_aggregates and statsblob_collector_windows_total.
package collector

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/export"
	"github.com/statsblob/statsblob/export/promexport"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// Defaults of Config.
const (
	DefaultMaxBody       = 65535 // the largest blob (cursz is a uint16)
	DefaultMaxAggregates = 10000
	DefaultMaxLabels     = 16
	maxLabelLen          = 128
)

// The reasons of a rejection, as the rejected counter labels them.
var Reasons = []string{"method", "size", "labels", "blob", "template", "layout", "overflow", "limit"}

// Config configures a Server.
type Config struct {
	// Templates holds the templates whose blobs are accepted, found by
	// hash. Required.
	Templates *tpl.Registry
	// Window is how long aggregates accumulate before starting afresh; 0:
	// for the life of the server.
	Window time.Duration
	// MaxBody is the largest accepted body in bytes (0: DefaultMaxBody).
	MaxBody int64
	// MaxAggregates bounds the aggregates (template and label set) of a
	// window (0: DefaultMaxAggregates).
	MaxAggregates int
	// MaxLabels bounds the labels of a blob (0: DefaultMaxLabels).
	MaxLabels int
	// Export configures the mapping to metrics.
	Export export.Options
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// aggregate is the merge of one template's blobs with one label set.
type aggregate struct {
	mu     sync.Mutex // serialises merges; readers take b without it
	t      *tpl.Template
	labels []export.Label
	b      *blob.Blob // published: never modified (merges work on a copy)
	blobs  uint64
}

// window is the set of aggregates of one window.
type window struct {
	start time.Time
	mu    sync.Mutex // guards aggs
	aggs  map[string]*aggregate
}

// Closed is a window that has ended: its aggregates and its span.
type Closed struct {
	Start, End time.Time
	Blobs      []export.Named
}

// Server is the collector: an http.Handler for /v1/blobs and /metrics, and
// an export.Source of the current window's aggregates. It is safe for
// concurrent use.
type Server struct {
	cfg Config

	// rot is held shared by posters for the whole of a post and
	// exclusively by Rotate, so that no merge lands in a window that has
	// closed.
	rot sync.RWMutex
	cur *window

	onClose []func(Closed)
	levels  levels // each sender's latest gauges (levels.go)

	reg      *prometheus.Registry
	mux      *http.ServeMux
	accepted prometheus.Counter
	rejected *prometheus.CounterVec
	bytesIn  prometheus.Counter
	mergeDur prometheus.Histogram
	windows  prometheus.Counter
}

// New returns a Server. Errors wrap voi.ErrInvalid: no templates, negative
// limits, or export options export.NewMapper rejects.
func New(cfg Config) (*Server, error) {
	if cfg.Templates == nil {
		return nil, fmt.Errorf("collector: no templates: %w", voi.ErrInvalid)
	}
	if cfg.Window < 0 || cfg.MaxBody < 0 || cfg.MaxAggregates < 0 || cfg.MaxLabels < 0 {
		return nil, fmt.Errorf("collector: negative window or limit: %w", voi.ErrInvalid)
	}
	if cfg.MaxBody == 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	if cfg.MaxAggregates == 0 {
		cfg.MaxAggregates = DefaultMaxAggregates
	}
	if cfg.MaxLabels == 0 {
		cfg.MaxLabels = DefaultMaxLabels
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Server{cfg: cfg, reg: prometheus.NewRegistry()}
	s.cur = &window{start: cfg.Now(), aggs: map[string]*aggregate{}}
	pc, err := promexport.New(s, cfg.Export)
	if err != nil {
		return nil, err
	}
	s.accepted = prometheus.NewCounter(prometheus.CounterOpts{Name: "statsblob_collector_blobs_accepted_total",
		Help: "Blobs merged into an aggregate."})
	s.rejected = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "statsblob_collector_blobs_rejected_total",
		Help: "Blob posts refused, by reason."}, []string{"reason"})
	for _, r := range Reasons {
		s.rejected.WithLabelValues(r)
	}
	s.bytesIn = prometheus.NewCounter(prometheus.CounterOpts{Name: "statsblob_collector_accepted_bytes_total",
		Help: "Bytes of the blobs merged."})
	s.mergeDur = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "statsblob_collector_merge_seconds",
		Help: "Time to merge one blob into its aggregate.", Buckets: prometheus.ExponentialBuckets(1e-6, 4, 10)})
	s.windows = prometheus.NewCounter(prometheus.CounterOpts{Name: "statsblob_collector_windows_total",
		Help: "Windows closed."})
	aggs := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "statsblob_collector_aggregates",
		Help: "Aggregates (template and label set) in the current window."}, func() float64 { return float64(s.Aggregates()) })
	s.reg.MustRegister(s.accepted, s.rejected, s.bytesIn, s.mergeDur, s.windows, aggs, pc)
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("/v1/blobs", s.post)
	s.mux.Handle("/metrics", promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	return s, nil
}

// Registry returns the Prometheus registry /metrics serves: the aggregates
// and the server's own metrics.
func (s *Server) Registry() *prometheus.Registry { return s.reg }

// ServeHTTP serves POST /v1/blobs and GET /metrics.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// OnClose adds a function called with every window Rotate closes (after
// the new window has started, outside the server's locks), in the order
// they were added: an OTLP pusher and a remote writer each ship the closed
// windows. Add them before serving.
func (s *Server) OnClose(f func(Closed)) { s.onClose = append(s.onClose, f) }

// rejection is a refused post: status, reason label, one-line message.
type rejection struct {
	status int
	reason string
	msg    string
}

func reject(status int, reason, format string, args ...any) *rejection {
	msg := fmt.Sprintf(format, args...)
	msg = strings.Map(func(r rune) rune { // one line
		if r == '\n' || r == '\r' {
			return ' '
		}
		return r
	}, msg)
	return &rejection{status, reason, msg}
}

func (s *Server) post(w http.ResponseWriter, r *http.Request) {
	if rej := s.accept(r); rej != nil {
		s.rejected.WithLabelValues(rej.reason).Inc()
		if rej.status == http.StatusMethodNotAllowed {
			w.Header().Set("Allow", http.MethodPost)
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.WriteHeader(rej.status)
		_, _ = io.WriteString(w, rej.msg+"\n")
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// accept handles one post; nil means the blob was merged.
func (s *Server) accept(r *http.Request) *rejection {
	if r.Method != http.MethodPost {
		return reject(http.StatusMethodNotAllowed, "method", "method %s not allowed: POST a blob's bytes", r.Method)
	}
	if r.ContentLength > s.cfg.MaxBody {
		return reject(http.StatusRequestEntityTooLarge, "size", "body of %d bytes over the limit of %d", r.ContentLength, s.cfg.MaxBody)
	}
	labels, rej := s.labels(r.URL.RawQuery)
	if rej != nil {
		return rej
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, s.cfg.MaxBody+1))
	if err != nil {
		return reject(http.StatusBadRequest, "blob", "reading the body: %v", err)
	}
	if int64(len(body)) > s.cfg.MaxBody {
		return reject(http.StatusRequestEntityTooLarge, "size", "body over the limit of %d bytes", s.cfg.MaxBody)
	}
	b, err := blob.FromBytes(body, nil)
	if err != nil {
		return reject(http.StatusBadRequest, "blob", "%v", err)
	}
	t, err := s.cfg.Templates.ByHash(b.TplHash())
	if err != nil {
		return reject(http.StatusUnprocessableEntity, "template", "unknown template hash %d", b.TplHash())
	}
	if rej := s.merge(t, labels, b); rej != nil {
		return rej
	}
	s.levels.record(key(b.TplHash(), labels), r.Header.Get, s.cfg.Now(), b)
	s.accepted.Inc()
	s.bytesIn.Add(float64(len(body)))
	return nil
}

// labels parses and checks the query's labels, sorted by name.
func (s *Server) labels(rawQuery string) ([]export.Label, *rejection) {
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return nil, reject(http.StatusBadRequest, "labels", "query: %v", err)
	}
	if len(q) > s.cfg.MaxLabels {
		return nil, reject(http.StatusBadRequest, "labels", "%d labels, at most %d", len(q), s.cfg.MaxLabels)
	}
	labels := make([]export.Label, 0, len(q))
	for name, vals := range q {
		switch {
		case len(vals) != 1:
			return nil, reject(http.StatusBadRequest, "labels", "label %q given %d times", name, len(vals))
		case vals[0] == "":
			return nil, reject(http.StatusBadRequest, "labels", "label %q has an empty value", name)
		case len(name) > maxLabelLen || len(vals[0]) > maxLabelLen:
			return nil, reject(http.StatusBadRequest, "labels", "label %.40q: name or value over %d bytes", name, maxLabelLen)
		}
		labels = append(labels, export.Label{Name: name, Value: vals[0]})
	}
	slices.SortFunc(labels, func(a, b export.Label) int { return strings.Compare(a.Name, b.Name) })
	if err := export.CheckLabels(labels); err != nil {
		return nil, reject(http.StatusBadRequest, "labels", "%v", err)
	}
	return labels, nil
}

// key identifies an aggregate: template hash and labels.
func key(hash uint32, labels []export.Label) string {
	var sb strings.Builder
	sb.WriteString(strconv.FormatUint(uint64(hash), 16))
	for _, l := range labels {
		sb.WriteByte(0)
		sb.WriteString(l.Name)
		sb.WriteByte(0)
		sb.WriteString(l.Value)
	}
	return sb.String()
}

// mergeInto merges src into a copy of dst and returns the copy, or the
// rejection of a merge that failed (dst is never modified).
func (s *Server) mergeInto(dst, src *blob.Blob) (*blob.Blob, *rejection) {
	next := dst.Clone()
	t0 := time.Now()
	err := blob.Merge(next, src)
	s.mergeDur.Observe(time.Since(t0).Seconds())
	switch {
	case err == nil:
		return next, nil
	case errors.Is(err, voi.ErrOverflow):
		return nil, reject(http.StatusConflict, "overflow", "merge: %v", err)
	}
	return nil, reject(http.StatusUnprocessableEntity, "layout", "blob does not fit its template (hash %d): %v", dst.TplHash(), err)
}

func (s *Server) merge(t *tpl.Template, labels []export.Label, b *blob.Blob) *rejection {
	s.rot.RLock()
	defer s.rot.RUnlock()
	win := s.cur
	k := key(b.TplHash(), labels)
	win.mu.Lock()
	agg := win.aggs[k]
	win.mu.Unlock()
	if agg == nil {
		// A new aggregate starts as the template's empty blob, so that
		// only blobs of the template's layout join it.
		next, rej := s.mergeInto(blob.New(t, blob.NewEnv(nil, 1)), b)
		if rej != nil {
			return rej
		}
		win.mu.Lock()
		if agg = win.aggs[k]; agg == nil {
			if len(win.aggs) >= s.cfg.MaxAggregates {
				win.mu.Unlock()
				return reject(http.StatusTooManyRequests, "limit", "%d aggregates in this window, at most %d", len(win.aggs), s.cfg.MaxAggregates)
			}
			win.aggs[k] = &aggregate{t: t, labels: labels, b: next, blobs: 1}
			win.mu.Unlock()
			return nil
		}
		win.mu.Unlock() // another post created it first: merge into that
	}
	agg.mu.Lock()
	defer agg.mu.Unlock()
	next, rej := s.mergeInto(agg.b, b)
	if rej != nil {
		return rej
	}
	win.mu.Lock()
	agg.b = next
	agg.blobs++
	win.mu.Unlock()
	return nil
}

// Blobs returns the current window's aggregates, sorted by template hash
// and labels, each starting at the window's start. The blobs are never
// modified afterwards. Blobs makes the Server an export.Source.
func (s *Server) Blobs() []export.Named {
	s.rot.RLock()
	defer s.rot.RUnlock()
	return s.withLevels(s.cur.named())
}

func (w *window) named() []export.Named {
	w.mu.Lock()
	keys := make([]string, 0, len(w.aggs))
	for k := range w.aggs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]export.Named, len(keys))
	for i, k := range keys {
		a := w.aggs[k]
		out[i] = export.Named{Blob: a.b, Template: a.t, Labels: a.labels, Start: w.start}
	}
	w.mu.Unlock()
	return out
}

// Aggregates returns the number of aggregates in the current window.
func (s *Server) Aggregates() int {
	s.rot.RLock()
	defer s.rot.RUnlock()
	s.cur.mu.Lock()
	defer s.cur.mu.Unlock()
	return len(s.cur.aggs)
}

// Merged returns how many blobs the current window's aggregates hold, by
// aggregate key order (see Blobs).
func (s *Server) Merged() []uint64 {
	s.rot.RLock()
	defer s.rot.RUnlock()
	w := s.cur
	w.mu.Lock()
	defer w.mu.Unlock()
	keys := make([]string, 0, len(w.aggs))
	for k := range w.aggs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]uint64, len(keys))
	for i, k := range keys {
		out[i] = w.aggs[k].blobs
	}
	return out
}

// Rotate closes the current window and starts the next: the aggregates
// start afresh. It waits for posts under way, which land in the closed
// window. The closed window goes to the OnClose functions, if any, and is
// returned.
func (s *Server) Rotate() Closed {
	s.rot.Lock()
	old := s.cur
	now := s.cfg.Now()
	s.cur = &window{start: now, aggs: map[string]*aggregate{}}
	s.rot.Unlock()
	s.windows.Inc()
	c := Closed{Start: old.start, End: now, Blobs: s.withLevels(old.named())}
	for _, f := range s.onClose {
		f(c)
	}
	return c
}

// LoadTemplates registers in reg the templates of a templates file: one
// template's JSON form or an array of them (what statsblob demo writes).
func LoadTemplates(reg *tpl.Registry, data []byte) ([]*tpl.Template, error) {
	ts, err := tpl.ReadJSONList(reg, data)
	if err != nil {
		return nil, fmt.Errorf("collector: %w", err)
	}
	return ts, nil
}

// RunWindows closes a window every Window until ctx is done (nothing with
// Window 0).
func (s *Server) RunWindows(ctx context.Context) {
	if s.cfg.Window <= 0 {
		return
	}
	tk := time.NewTicker(s.cfg.Window)
	defer tk.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tk.C:
			s.Rotate()
		}
	}
}
