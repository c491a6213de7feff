// Package collector receives statsblob blobs over HTTP, merges them per
// template and label set, and serves the aggregates to Prometheus (GET
// /metrics) and, optionally, OpenTelemetry (OTLP push): the server behind
// the statsblob-collector command.
//
// POST /v1/blobs takes one blob's bytes as the request body; the query
// parameters are the blob's labels (?host=web1&svc=api). The blob is
// validated (blob.FromBytes), its template found by hash among the
// configured templates, and added to the aggregate of its template and
// labels for the current window (package export/aggregate: in the
// template's wide form, at one MergeAll's accuracy, never refused for
// overflow); the answer is 204 No Content. POST /v1/batch takes many
// blobs in one body (see DecodeBatch). A post with the headers
// Statsblob-Sender and Statsblob-Seq (aggregate.HeaderSender, HeaderSeq)
// is added once: a retry of a post already added is answered 204 and
// counted, not added again.
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
//	429 limit     a new label set beyond MaxAggregates
//	400 sender    a Statsblob-Sender without a Statsblob-Seq or the other way round, or either malformed
//	400 batch     a batch body DecodeBatch rejects
//
// An aggregate's fixed-width fields never make it refuse a blob: a
// statistic that would pass even 64 bits saturates at its limit, counts
// an error in the statistic and in statsblob_collector_saturated_total.
// Readers (the /metrics handler, OTLP pushes) read published aggregates
// without copying or waiting for adds.
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
// statsblob_collector_aggregates, statsblob_collector_windows_total,
// statsblob_collector_saturated_total, statsblob_collector_duplicates_total
// and statsblob_collector_untracked_senders_total.
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

	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/export"
	"github.com/statsblob/statsblob/export/aggregate"
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
var Reasons = []string{"method", "size", "labels", "blob", "template", "layout", "limit", "sender", "batch"}

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

// Closed is a window that has ended: its aggregates and its span.
type Closed = aggregate.Closed

// Server is the collector: an http.Handler for /v1/blobs and /metrics, and
// an export.Source of the current window's aggregates. It is safe for
// concurrent use.
type Server struct {
	cfg Config

	set *aggregate.Set // the aggregates of the current window

	onClose []func(Closed)

	reg      *prometheus.Registry // own and the aggregates (promexport)
	own      *prometheus.Registry // the server's own metrics
	text     *promexport.Text     // /metrics without native histograms
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
	var err error
	if s.set, err = aggregate.New(aggregate.Config{MaxAggregates: cfg.MaxAggregates}, cfg.Now()); err != nil {
		return nil, err
	}
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
	s.own = prometheus.NewRegistry()
	s.own.MustRegister(s.accepted, s.rejected, s.bytesIn, s.mergeDur, s.windows, aggs)
	s.own.MustRegister(s.aggregateMetrics()...)
	s.reg.MustRegister(s.own, pc)
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("/v1/blobs", s.post)
	s.mux.HandleFunc("/v1/batch", s.postBatch)
	if cfg.Export.NativeHistogram { // the protobuf format, negotiated by promhttp
		s.mux.Handle("/metrics", promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	} else {
		s.text = pc.NewText()
		s.mux.HandleFunc("/metrics", s.metrics)
	}
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
	k := key(b.TplHash(), labels)
	return s.once(r, []string{k}, func([]bool) *rejection {
		if rej := s.merge(k, t, labels, b); rej != nil {
			return rej
		}
		s.accepted.Inc()
		s.bytesIn.Add(float64(len(body)))
		return nil
	})
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

// merge adds b, of template t, to the aggregate of t and labels, whose
// key is k.
func (s *Server) merge(k string, t *tpl.Template, labels []export.Label, b *blob.Blob) *rejection {
	t0 := time.Now()
	err := s.set.Add(k, t, labels, b)
	s.mergeDur.Observe(time.Since(t0).Seconds())
	return addRejection(err, t)
}

// addRejection is the rejection of an aggregate.Set's error.
func addRejection(err error, t *tpl.Template) *rejection {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, aggregate.ErrLimit):
		return reject(http.StatusTooManyRequests, "limit", "%v", err)
	}
	return reject(http.StatusUnprocessableEntity, "layout", "blob does not fit its template (hash %d): %v", t.Hash(), err)
}

// Blobs returns the current window's aggregates, sorted by template hash
// and labels, each starting at the window's start, as blobs of their
// template's wide form (tpl.Widen). The blobs are never modified
// afterwards. Blobs makes the Server an export.Source.
func (s *Server) Blobs() []export.Named { return s.set.Blobs() }

// Aggregates returns the number of aggregates in the current window.
func (s *Server) Aggregates() int { return s.set.Len() }

// Merged returns how many blobs the current window's aggregates hold, by
// aggregate key order (see Blobs).
func (s *Server) Merged() []uint64 { return s.set.Merged() }

// Rotate closes the current window and starts the next: the aggregates
// start afresh. It waits for posts under way, which land in the closed
// window. The closed window goes to the OnClose functions, if any, and is
// returned.
func (s *Server) Rotate() Closed {
	c := s.set.Rotate(s.cfg.Now())
	s.windows.Inc()
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
