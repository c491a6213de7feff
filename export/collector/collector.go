// Package collector receives statsblob blobs over HTTP, merges them per
// template and label set, and serves the aggregates to Prometheus (GET
// /metrics) and, optionally, OpenTelemetry (OTLP push): the server behind
// the statsblob-collector command.
//
// POST /v1/blobs takes one blob's bytes as the request body (optionally
// gzip or zstd, with Content-Encoding: gzip or zstd); the query
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
// Bad input is answered with a 4xx status and a one-line reason that names
// the limit (by its flag) and never the connection's addresses, and changes
// nothing:
//
//	405 method    not a POST
//	413 size      a body over MaxBody bytes after gzip or zstd decoding, or over MaxBody and 1 KiB before;
//	              with DataDir a post whose log record would pass the log's 64 MiB record limit
//	415 encoding  a Content-Encoding other than gzip or zstd (400 encoding: a bad stream)
//	408 timeout   a body not received within ReadTimeout
//	400 labels    a label name Prometheus does not accept, a reserved one (le, quantile, bucket),
//	              one given twice, an empty value or one that is not UTF-8, more than
//	              MaxLabels, a name or value over MaxLabelBytes
//	400 blob      bytes blob.FromBytes rejects (the reason names the first defect), or a body cut short
//	422 template  a template hash none of the configured templates has
//	422 layout    a blob whose layout or histogram bounds differ from its template's
//	429 limit     a new label set beyond MaxAggregates or MaxAggregatesPerTemplate,
//	              with Retry-After: when the window ends or an idle label set expires
//	400 sender    a Statsblob-Sender without a Statsblob-Seq or the other way round, or either malformed
//	400 batch     a batch body DecodeBatch rejects
//	401 auth      with Tokens: no post token (403 auth: a template or a forced label the token does not allow)
//	503 durability with DataDir: the write-ahead log failed (every later post too, until it heals:
//	              durable.go), with Retry-After
//
// With DataDir every acknowledged post survives a crash (durable.go);
// GET /v1/aggregates and /v1/aggregate read the aggregates back as blobs
// (query.go); GET and POST /v1/templates list and add templates, several
// versions of one name side by side (templates.go); GET and POST
// /v1/definition?tpl=NAME read and change, in Linux's definition-file form
// (package statdef), which VOIs of a template are exported and reset them
// (definition.go); Tokens limit who posts what and who reads (access.go).
//
// Served with HTTPServer on Listener (as the command does), the server
// also bounds connections (MaxConns: 503 with Retry-After, then closed),
// request lines and headers (MaxHeaderBytes: 431) and the time to read a
// request and to write a response. /metrics serves at most MaxScrapes
// scrapes at once (503 with Retry-After beyond), paced so that scrapes
// back to back take at most ScrapeShare of the time, each of at most
// MaxScrapeSeries samples and about MaxScrapeBytes bytes (aggregates past
// either are left out of that scrape, counted and logged). /healthz
// answers 200 while the process serves; /readyz 200 until Drain (SIGTERM),
// then 503. Every limit that refuses or cuts something counts it in
// statsblob_collector_limit_hits_total{limit} (Limits lists them).
//
// The posts may also come in by an IngestServer on a listener of their
// own (the command's -ingest-listen): POST /v1/blobs and /v1/batch and
// the probes, through the same checks and answers, served by fasthttp
// for a quarter less CPU per post (ingestserver.go).
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
// posted in a window disappear with it. With either, a label set not
// posted for LabelTTL is dropped (Expire, which RunWindows calls), except
// within a window a delta push must ship whole. A window shorter than the
// interval between a client's scrapes is warned of (log, and the gauge
// statsblob_collector_window_shorter_than_scrape).
//
// The server's own metrics, on the same /metrics:
// statsblob_collector_blobs_accepted_total (the blobs of posts answered
// 204 that were added), statsblob_collector_blobs_rejected_total{reason}
// (posts answered otherwise, each once: a post answered 503 for
// durability may have been added, see durably),
// statsblob_collector_accepted_bytes_total,
// statsblob_collector_merge_seconds (a histogram),
// statsblob_collector_aggregates, statsblob_collector_windows_total,
// statsblob_collector_saturated_total, statsblob_collector_duplicates_total,
// statsblob_collector_untracked_senders_total,
// statsblob_collector_folds_total, statsblob_collector_queued_bytes,
// statsblob_collector_limit_hits_total{limit},
// statsblob_collector_label_sets_expired_total,
// statsblob_collector_connections, statsblob_collector_posts_in_flight,
// statsblob_collector_scrape_omitted_aggregates,
// statsblob_collector_scrape_interval_seconds,
// statsblob_collector_window_shorter_than_scrape,
// statsblob_collector_definition_changes_total{change}, the OTLP pushes', and
// the go_ and process_ metrics of the Go client.
package collector

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/export"
	"github.com/statsblob/statsblob/export/aggregate"
	"github.com/statsblob/statsblob/export/internal/hashfmt"
	"github.com/statsblob/statsblob/export/internal/wal"
	"github.com/statsblob/statsblob/export/promexport"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// The reasons of a rejection, as the rejected counter labels them.
var Reasons = []string{"method", "size", "labels", "blob", "template", "layout", "limit", "timeout", "encoding", "sender", "batch", "durability", "auth"}

// Config configures a Server. Every limit's zero value means its default
// (the Default... constants); see limits.go for what a client sees when a
// limit is reached.
type Config struct {
	// Templates holds the templates whose blobs are accepted, found by
	// hash. Templates or MoreTemplates is required.
	Templates *tpl.Registry
	// MoreTemplates are accepted too: several versions of one name may be
	// among them and Templates (see ParseTemplates, templates.go).
	MoreTemplates []*tpl.Template
	// Window is how long aggregates accumulate before starting afresh; 0:
	// for the life of the server.
	Window time.Duration
	// MaxBody is the largest accepted body in bytes, after decoding a
	// gzip or zstd Content-Encoding (0: DefaultMaxBody).
	MaxBody int64
	// MaxAggregates bounds the aggregates (template and label set) of a
	// window (0: DefaultMaxAggregates).
	MaxAggregates int
	// MaxAggregatesPerTemplate bounds the aggregates of one template in a
	// window (0: MaxAggregates).
	MaxAggregatesPerTemplate int
	// MaxTemplates bounds the templates the server knows, versions
	// counted apart, those of Templates among them (0:
	// DefaultMaxTemplates): a template once known stays known, so
	// uploads past it are refused.
	MaxTemplates int
	// MaxLabels bounds the labels of a blob (0: DefaultMaxLabels).
	MaxLabels int
	// MaxLabelBytes bounds a label's name and its value, each, in bytes
	// (0: DefaultMaxLabelBytes).
	MaxLabelBytes int
	// LabelTTL is how long a label set may go without a post before its
	// aggregate is dropped (0: DefaultLabelTTL; negative: never).
	LabelTTL time.Duration
	// MaxConns bounds the open connections of Listener (0:
	// DefaultMaxConns).
	MaxConns int
	// MaxHeaderBytes bounds a request's line and headers (0:
	// DefaultMaxHeaderBytes).
	MaxHeaderBytes int
	// Timeouts of HTTPServer (0: the defaults).
	ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	// MaxScrapeSeries and MaxScrapeBytes bound what one scrape of
	// /metrics serves: samples, and bytes of the text format (0: the
	// defaults).
	MaxScrapeSeries, MaxScrapeBytes int
	// MaxScrapes bounds the scrapes served at once (0: DefaultMaxScrapes).
	MaxScrapes int
	// QueueBytes bounds the bytes of accepted blobs queued, not yet folded
	// into their aggregates, over all aggregates (0: DefaultQueueBytes),
	// with those a checkpoint being written still holds once folded.
	// Past it a post folds its aggregate's queue at once: nothing is
	// refused, but a fold of few blobs costs more CPU per blob (each fold
	// merges the aggregate's wide levels). With 10,000 label sets posting
	// in turn the default leaves about four blobs per fold, at about
	// twice the CPU per blob of full batches (bench/README.md); a larger
	// budget buys some of it back with memory and with slower scrapes,
	// which fold the longer queues (four times the default: ingest +10%,
	// twice the RSS, scrapes of them all 0.6 -> 3 s).
	QueueBytes int64
	// MaxLevelReadings bounds the levels kept (levels.go), a reading per
	// sender and label set of a template with relative-update VOIs, over
	// all label sets (0: DefaultMaxLevelReadings; MaxLevelSenders bounds
	// those of one label set). Past it a new sender's reading takes the
	// place of the least recently heard one, whose levels leave the sums;
	// nothing is refused (each eviction is counted as a limit hit). A
	// reading costs about 180 bytes, 300 with a 128-byte sender id (16
	// more per gauge VOI).
	MaxLevelReadings int
	// MaxSequenceMarks bounds the sequence numbers kept for the duplicate
	// check (aggregate.Set.Once), one per sender and label set it posted
	// to, over all senders (0: DefaultMaxSequenceMarks). Past it a post
	// whose sender has no number for a label set is added without the
	// check for that label set (counted as a limit hit and in
	// statsblob_collector_untracked_senders_total): nothing is refused,
	// but a retry of it would be added again. A mark costs under 100
	// bytes (a label set's key is kept once); the senders holding them
	// (at most aggregate.DefaultMaxSenders) up to 500 bytes each.
	MaxSequenceMarks int
	// SequenceMarkAge is how long at least a sender's number for a label
	// set is kept after its latest post there, however short the windows
	// (numbers are also kept for two window rotations): a retry later
	// than both is added again (0: aggregate.DefaultMarkAge, ten minutes,
	// over package ship's longest wait between retries). Label sets
	// cycling through short windows may lose their numbers sooner: see
	// aggregate.Config.MarkAge.
	SequenceMarkAge time.Duration
	// ScrapeShare bounds the share of the time that scrapes coming back to
	// back take from posts: a scrape waits until (1/ScrapeShare - 1) times
	// the last scrape's rendering time has passed since that rendering
	// ended (0: DefaultScrapeShare, 0.2: four times; 1: no wait), but
	// never so long that a Prometheus scrape's timeout (its
	// X-Prometheus-Scrape-Timeout-Seconds) leaves less than twice that
	// rendering's time. On one core, 10,000 aggregates scraped back to
	// back took ingest from 35,000 to 440 blobs a second.
	ScrapeShare float64
	// Export configures the mapping to metrics.
	Export export.Options
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Log receives warnings (nil: none).
	Log *slog.Logger
	// DataDir, if not empty, makes the server durable: every post
	// answered 204 is in a write-ahead log in this directory first, and
	// survives a crash and a restart on the same DataDir (see durable.go's
	// doc: what is kept, what is not). New replays it.
	DataDir string
	// CheckpointInterval is how often RunWindows writes a checkpoint of
	// the aggregates to DataDir, replacing the log records before it (0:
	// DefaultCheckpointInterval).
	CheckpointInterval time.Duration
	// Tokens, if not nil, is the access control (access.go): the bearer
	// tokens that may post, each limited to templates and forcing labels,
	// and those that may read.
	Tokens []Token
	// History is how many closed windows the query API keeps (GET
	// /v1/aggregate?window=-1 ... -History; see query.go). Not kept in
	// DataDir.
	History int
	// NoSync skips the fsyncs of DataDir: posts survive a crash of the
	// process, not of the machine (for tests).
	NoSync bool

	diskFault func(op, file string) error // DataDir's log's wal.Options.Fault (tests: export_test.go)
}

// DefaultCheckpointInterval is Config.CheckpointInterval's default.
const DefaultCheckpointInterval = 30 * time.Second

// Closed is a window that has ended: its aggregates and its span.
type Closed = aggregate.Closed

// Server is the collector: an http.Handler for /v1/blobs and /metrics, and
// an export.Source of the current window's aggregates. It is safe for
// concurrent use.
type Server struct {
	cfg Config

	set *aggregate.Set // the aggregates of the current window

	onClose []func(Closed)
	levels  levels     // each sender's latest gauges (levels.go)
	lcache  labelCache // the labels of recent query strings (labelcache.go)

	reg      *prometheus.Registry // own and the aggregates (promexport)
	own      *prometheus.Registry // the server's own metrics
	text     *promexport.Text     // /metrics without native histograms
	mux      *http.ServeMux
	accepted prometheus.Counter
	rejected *prometheus.CounterVec
	bytesIn  prometheus.Counter
	mergeDur prometheus.Histogram
	windows  prometheus.Counter

	limitHits *prometheus.CounterVec
	ops       // health, scrapes, expiry: ops.go

	tpls templates // the known templates (templates.go)
	acl  *acl      // Config.Tokens (access.go); nil: none
	hist history   // closed windows for the query API (query.go)
	defs defs      // what is exported, /v1/definition (definition.go)

	log          *wal.Log // DataDir's write-ahead log (durable.go); nil without
	lock         *os.File // DataDir's lock (lock_unix.go)
	recoveredMu  sync.Mutex
	recovered    []Closed    // closed windows read from DataDir for the delta pusher (closed.go)
	logBroken    atomic.Bool // the log failed, not yet healed (durable.go)
	logClosed    atomic.Bool // by Close
	brokenMu     sync.Mutex  // logBroken's changes
	logMu        sync.Mutex  // rotations and heals of the log, one at a time
	held         *Closed     // closed, its rotation's record failed: shipped once the log heals (under logMu)
	heldSaved    bool        // its file for the delta pusher written (closed.go)
	logFailures  prometheus.Counter
	logHeals     prometheus.Counter
	rotHeld      prometheus.Counter // rotations the failed log held back
	replayFailed uint64             // of which could not be added again
	replayAt     int64              // the time, Unix nanoseconds, replayed posts of records without theirs take (durable.go)
}

// New returns a Server. Errors wrap voi.ErrInvalid: no templates, negative
// limits, or export options export.NewMapper rejects.
func New(cfg Config) (*Server, error) {
	if cfg.Templates == nil && len(cfg.MoreTemplates) == 0 {
		return nil, fmt.Errorf("collector: no templates: %w", voi.ErrInvalid)
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, reg: prometheus.NewRegistry(), limitHits: newLimitHits()}
	if err := s.initTemplates(); err != nil {
		return nil, err
	}
	if s.acl, err = newACL(cfg.Tokens); err != nil {
		return nil, err
	}
	s.levels.max, s.levels.evicted = cfg.MaxLevelReadings, func() { s.hit("level_readings") }
	if s.set, err = aggregate.New(aggregate.Config{MaxAggregates: cfg.MaxAggregates,
		MaxPerTemplate: cfg.MaxAggregatesPerTemplate, PendingBytes: cfg.QueueBytes, Now: cfg.Now,
		MaxMarks: cfg.MaxSequenceMarks, MarkAge: cfg.SequenceMarkAge, OnMarksFull: func() { s.hit("sequence_marks") }}, cfg.Now()); err != nil {
		return nil, err
	}
	pc, err := promexport.New(s, cfg.Export)
	if err != nil {
		return nil, err
	}
	// Each post counts once, as its answer says: its blobs in accepted
	// (204), none (a duplicate's 204), or the post in rejected.
	s.accepted = prometheus.NewCounter(prometheus.CounterOpts{Name: "statsblob_collector_blobs_accepted_total",
		Help: "Blobs merged into an aggregate and acknowledged (204). A post answered 503 for durability is counted in statsblob_collector_blobs_rejected_total alone, even when its blobs were merged before its -data-dir log record failed (they stay in the aggregates; a sequenced retry of it is then a duplicate)."})
	s.rejected = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "statsblob_collector_blobs_rejected_total",
		Help: "Blob posts refused, by reason: each post answered other than 204, once, and never also in statsblob_collector_blobs_accepted_total (for posts of one blob: posted = accepted + statsblob_collector_duplicates_total + rejected)."}, []string{"reason"})
	for _, r := range Reasons {
		s.rejected.WithLabelValues(r)
	}
	s.bytesIn = prometheus.NewCounter(prometheus.CounterOpts{Name: "statsblob_collector_accepted_bytes_total",
		Help: "Bytes of the blobs counted in statsblob_collector_blobs_accepted_total."})
	s.mergeDur = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "statsblob_collector_merge_seconds",
		Help: "Time to merge one blob into its aggregate.", Buckets: prometheus.ExponentialBuckets(1e-6, 4, 10)})
	s.windows = prometheus.NewCounter(prometheus.CounterOpts{Name: "statsblob_collector_windows_total",
		Help: "Windows closed."})
	aggs := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "statsblob_collector_aggregates",
		Help: "Aggregates (template and label set) in the current window."}, func() float64 { return float64(s.Aggregates()) })
	s.own = prometheus.NewRegistry()
	s.own.MustRegister(s.accepted, s.rejected, s.bytesIn, s.mergeDur, s.windows, aggs, s.limitHits)
	s.own.MustRegister(s.aggregateMetrics()...)
	s.reg.MustRegister(s.own)
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("/v1/blobs", func(w http.ResponseWriter, r *http.Request) { s.servePost(w, r, s.accept) })
	s.mux.HandleFunc("/v1/batch", func(w http.ResponseWriter, r *http.Request) { s.servePost(w, r, s.acceptBatch) })
	s.mux.HandleFunc("/v1/aggregates", s.listAggregates)
	s.mux.HandleFunc("/v1/aggregate", s.getAggregate)
	s.mux.HandleFunc("/v1/templates", s.serveTemplates)
	s.mux.HandleFunc("/v1/definition", s.serveDefinition)
	s.initOps(pc)
	if err := s.initDefs(); err != nil { // before the log locks DataDir
		return nil, err
	}
	if cfg.DataDir != "" {
		if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
			return nil, fmt.Errorf("collector: -data-dir: %w", err)
		}
		// The templates the log's posts may need, then every known one
		// written back, so that the next start finds them all.
		if err := s.loadDataDirTemplates(); err != nil {
			return nil, err
		}
		if err := writeTemplatesFile(filepath.Join(cfg.DataDir, "templates.json"), s.tpls.idx.Load().order); err != nil {
			return nil, err
		}
		if err := s.openLog(); err != nil {
			return nil, err
		}
		if err := s.loadClosed(); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Registry returns the Prometheus registry /metrics serves: the aggregates
// and the server's own metrics.
func (s *Server) Registry() *prometheus.Registry { return s.reg }

// ServeHTTP serves POST /v1/blobs and GET /metrics.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !s.authorizeRead(w, r) {
		return
	}
	s.mux.ServeHTTP(w, r)
}

// OnClose adds a function called with every window Rotate closes (after
// the new window has started, outside the server's locks), in the order
// they were added: an OTLP pusher and a remote writer each ship the closed
// windows. Add them before serving. A window that ships must hold every
// post of its window, so label sets no longer expire within one (see
// Expire).
func (s *Server) OnClose(f func(Closed)) {
	s.wholeWindows.Store(true)
	s.onClose = append(s.onClose, f)
}

// rejection is a refused post: status, reason label, one-line message.
type rejection struct {
	status     int
	reason     string
	msg        string
	retryAfter time.Duration // > 0: a Retry-After header

	authenticate bool // a WWW-Authenticate header (401)
}

func reject(status int, reason, format string, args ...any) *rejection {
	msg := fmt.Sprintf(format, args...)
	msg = strings.Map(func(r rune) rune { // one line
		if r == '\n' || r == '\r' {
			return ' '
		}
		return r
	}, msg)
	return &rejection{status: status, reason: reason, msg: msg}
}

// servePost answers a post over net/http (POST /v1/blobs with accept,
// /v1/batch with acceptBatch) with accept's verdict.
func (s *Server) servePost(w http.ResponseWriter, r *http.Request, accept func(*post) *rejection) {
	rej := s.acceptCounted(fromHTTP(r), accept)
	if rej == nil {
		accepted(w)
		return
	}
	rej.eachHeader(w.Header().Set)
	w.WriteHeader(rej.status)
	_, _ = io.WriteString(w, rej.msg+"\n")
}

// acceptCounted runs accept on p as a post under way (InFlight) and
// counts its refusal by reason, whichever HTTP server received it.
func (s *Server) acceptCounted(p *post, accept func(*post) *rejection) *rejection {
	s.inflight.Add(1)
	defer s.inflight.Add(-1)
	rej := accept(p)
	if rej != nil {
		s.rejected.WithLabelValues(rej.reason).Inc()
	}
	return rej
}

// eachHeader calls set with each header of rej's answer: Allow for a
// 405, Retry-After when set, WWW-Authenticate for a 401, and the text's
// type.
func (rej *rejection) eachHeader(set func(name, value string)) {
	if rej.status == http.StatusMethodNotAllowed {
		set("Allow", http.MethodPost)
	}
	if rej.retryAfter > 0 {
		set("Retry-After", retryAfter(rej.retryAfter))
	}
	if rej.authenticate {
		set("WWW-Authenticate", `Bearer realm="statsblob-collector"`)
	}
	set("Content-Type", "text/plain; charset=utf-8")
	set("X-Content-Type-Options", "nosniff")
}

// accepted answers an accepted post: 204 without a Date header, whose
// formatting costs a post-sized share of the collector's CPU at fleet
// rates and tells a sender nothing (RFC 9110 lets an origin server
// without a clock it trusts to be precise omit it; the collector's own
// metrics carry the time).
func accepted(w http.ResponseWriter) {
	w.Header()["Date"] = nil // net/http's documented way to leave it out
	w.WriteHeader(http.StatusNoContent)
}

// accept handles one post of a blob; nil means the blob was merged.
func (s *Server) accept(r *post) *rejection {
	if r.method != http.MethodPost {
		return reject(http.StatusMethodNotAllowed, "method", "method %s not allowed: POST a blob's bytes", r.method)
	}
	g, rej := s.poster(r.auth)
	if rej != nil {
		return rej
	}
	cl, rej := s.labels(r.query)
	if rej != nil {
		return rej
	}
	bb := getBodyBuf()
	defer putBodyBuf(bb)
	limit, flag := s.postLimit(false)
	body, rej := s.readBodyWithin(r, limit, flag, bb)
	if rej != nil {
		return rej
	}
	b, err := blob.FromBytes(body, nil)
	if err != nil {
		return reject(http.StatusBadRequest, "blob", "%v", err)
	}
	t, err := s.lookup(b.TplHash())
	if err != nil {
		return reject(http.StatusUnprocessableEntity, "template", "unknown template hash %s", hashfmt.String(b.TplHash()))
	}
	labels, rej := g.admit(t, cl.labels)
	if rej != nil {
		return rej
	}
	k := cl.keyOf(b.TplHash(), labels)
	rec := func(at time.Time) *record { return newRecord(r, []frame{{labels: labels, blob: body}}, at) }
	var added tally
	rej = s.durably(rec, func(at time.Time) *rejection {
		return s.once(r, at, []string{k}, func([]bool) *rejection {
			if rej := s.merge(k, t, labels, b, at); rej != nil {
				return rej
			}
			s.levels.record(t, labels, r.header, at, b)
			added = tally{blobs: 1, bytes: len(body)}
			return nil
		})
	})
	if rej == nil {
		s.countAccepted(added)
	}
	return rej
}

// tally is what a post added: its blobs and their bytes.
type tally struct{ blobs, bytes int }

// countAccepted counts an acknowledged post's blobs in
// statsblob_collector_blobs_accepted_total and _accepted_bytes_total.
// Only once it is acknowledged: a post whose log record failed after its
// add (durably) is answered 503 and counted in _blobs_rejected_total
// alone, so that every post counts once, as its answer says.
func (s *Server) countAccepted(t tally) {
	if t.blobs > 0 {
		s.accepted.Add(float64(t.blobs))
		s.bytesIn.Add(float64(t.bytes))
	}
}

// labels returns the query's labels, sorted by name and checked (cached:
// see labelCache).
func (s *Server) labels(rawQuery string) (*cachedLabels, *rejection) {
	if cl := s.lcache.get(rawQuery); cl != nil {
		return cl, nil
	}
	labels, rej := s.parseLabels(rawQuery)
	if rej != nil {
		return nil, rej
	}
	return s.lcache.put(rawQuery, labels), nil
}

// parseLabels parses and checks the query's labels, sorted by name.
func (s *Server) parseLabels(rawQuery string) ([]export.Label, *rejection) {
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return nil, reject(http.StatusBadRequest, "labels", "query: %v", err)
	}
	if len(q) > s.cfg.MaxLabels {
		s.hit("labels")
		return nil, reject(http.StatusBadRequest, "labels", "%d labels, at most %d (-max-labels)", len(q), s.cfg.MaxLabels)
	}
	labels := make([]export.Label, 0, len(q))
	for name, vals := range q {
		switch {
		case len(vals) != 1:
			return nil, reject(http.StatusBadRequest, "labels", "label %q given %d times", name, len(vals))
		case vals[0] == "":
			return nil, reject(http.StatusBadRequest, "labels", "label %q has an empty value", name)
		case len(name) > s.cfg.MaxLabelBytes || len(vals[0]) > s.cfg.MaxLabelBytes:
			s.hit("label_bytes")
			return nil, reject(http.StatusBadRequest, "labels", "label %.40q: name or value over %d bytes (-max-label-bytes)", name, s.cfg.MaxLabelBytes)
		}
		labels = append(labels, export.Label{Name: name, Value: vals[0]})
	}
	slices.SortFunc(labels, func(a, b export.Label) int { return strings.Compare(a.Name, b.Name) })
	copyLabels(labels)
	if err := export.CheckPostedLabels(labels); err != nil {
		return nil, reject(http.StatusBadRequest, "labels", "%v", err)
	}
	return labels, nil
}

// copyLabels makes labels' strings copies, in one allocation: parsed, they
// are substrings of the request line, which an aggregate must not keep
// alive (issue 22, defect 2).
func copyLabels(labels []export.Label) {
	n := 0
	for _, l := range labels {
		n += len(l.Name) + len(l.Value)
	}
	var sb strings.Builder
	sb.Grow(n)
	for _, l := range labels {
		sb.WriteString(l.Name)
		sb.WriteString(l.Value)
	}
	all := sb.String()
	for i := range labels {
		l := &labels[i]
		l.Name, all = all[:len(l.Name)], all[len(l.Name):]
		l.Value, all = all[:len(l.Value)], all[len(l.Value):]
	}
}

// key identifies an aggregate: template hash and labels. Names cannot hold
// NUL or 0x01 (they are Prometheus label names) but values can, so in
// values 0x01 is written 0x01 0x02 and NUL 0x01 0x01: NUL then only ever
// separates, two label sets never share a key, and keys sort as their
// labels do.
func key(hash uint32, labels []export.Label) string {
	n := 8
	for _, l := range labels {
		n += 2 + len(l.Name) + len(l.Value)
	}
	b := make([]byte, 0, n)
	b = strconv.AppendUint(b, uint64(hash), 16)
	for _, l := range labels {
		b = append(b, 0)
		b = append(b, l.Name...)
		b = append(b, 0)
		for i := 0; i < len(l.Value); i++ {
			switch c := l.Value[i]; c {
			case 0, 1:
				b = append(b, 1, c+1)
			default:
				b = append(b, c)
			}
		}
	}
	return string(b)
}

// merge adds b, of template t, posted at time at (its record's), to the
// aggregate of t and labels, whose key is k.
func (s *Server) merge(k string, t *tpl.Template, labels []export.Label, b *blob.Blob, at time.Time) *rejection {
	t0 := time.Now()
	err := s.set.AddAt(k, t, labels, b, at)
	s.mergeDur.Observe(time.Since(t0).Seconds())
	return s.addRejection(err, t)
}

// addRejection is the rejection of an aggregate.Set's error: a label-set
// limit is a 429 with Retry-After, counted by limit.
func (s *Server) addRejection(err error, t *tpl.Template) *rejection {
	var rej *rejection
	switch {
	case err == nil:
		return nil
	case errors.Is(err, aggregate.ErrLimit):
		s.hit("label_sets")
		rej = reject(http.StatusTooManyRequests, "limit", "%v (-max-aggregates)", err)
	case errors.Is(err, aggregate.ErrTemplateLimit):
		s.hit("label_sets_per_template")
		rej = reject(http.StatusTooManyRequests, "limit", "%v (-max-aggregates-per-template)", err)
	default:
		return reject(http.StatusUnprocessableEntity, "layout", "blob does not fit its template (hash %s): %v", hashfmt.String(t.Hash()), err)
	}
	rej.retryAfter = s.freeIn()
	return rej
}

// Blobs returns the current window's aggregates, sorted by template hash
// and labels, each starting at the window's start, as blobs of their
// template's wide form (tpl.Widen), with the sum of the senders' latest
// levels, and VersionLabel where versions of a template share a label set
// (versions.go). The blobs are never modified afterwards. Blobs makes the
// Server an export.Source.
func (s *Server) Blobs() []export.Named {
	return s.withVersions(s.withDefs(s.withLevels(s.set.Blobs())))
}

// posts returns how many blobs the current window's aggregates hold.
func (s *Server) posts() uint64 { return s.set.Posts() }

// Aggregates returns the number of aggregates in the current window.
func (s *Server) Aggregates() int { return s.set.Len() }

// Merged returns how many blobs the current window's aggregates hold, by
// aggregate key order (see Blobs).
func (s *Server) Merged() []uint64 { return s.set.Merged() }

// Rotate closes the current window and starts the next: the aggregates
// start afresh. It waits for posts under way, which land in the closed
// window. The closed window goes to the OnClose functions, if any, and is
// returned.
//
// With DataDir, the rotation is a record of the log, at its point among
// the posts, and a checkpoint follows it: the posts before it are not
// replayed into the new window, even if that checkpoint fails (see
// durable.go's doc for what a crash loses of the closed window). While
// the log is failed (a write or an fsync failed), Rotate first tries to
// heal it (durable.go); if it cannot, the window goes on, and Rotate
// returns an empty Closed: shipped, its posts would be shipped again by
// a restart, which replays them into the window under way. A window
// whose rotation's record fails is closed but held, not shipped, until
// the log heals.
func (s *Server) Rotate() Closed {
	if s.log == nil {
		c, _ := s.closeWindow()
		return s.ship(c)
	}
	s.logMu.Lock()
	defer s.logMu.Unlock()
	if s.healLocked() != nil {
		s.rotHeld.Inc()
		return Closed{}
	}
	var c Closed
	saved := false
	ran, err := s.logEvent(func() [][]byte {
		c, saved = s.closeWindow()
		return [][]byte{appendEvent(nil, &event{kind: recordRotate, at: c.End.UnixNano()})}
	})
	switch {
	case !ran: // the log failed since (or was closed): the window goes on
		if s.log.Failed() != nil {
			s.rotHeld.Inc()
		}
		return Closed{}
	case err != nil: // closed, its record maybe not on disk: held
		s.held, s.heldSaved = &c, saved
		s.rotHeld.Inc()
		return Closed{}
	}
	_ = s.checkpoint() // logged and counted
	return s.ship(c)
}

// closeWindow closes the current window and starts the next, and writes
// the closed one for the delta pusher (closed.go), reporting whether it
// did.
func (s *Server) closeWindow() (Closed, bool) {
	c := s.set.Rotate(s.cfg.Now())
	s.levels.rotate()
	if err := s.saveClosed(c); err != nil {
		s.warn("the closed window could not be saved: a crash before it is pushed loses it", "err", err)
		return c, false
	}
	return c, true
}

// ship hands a closed window to the history and the OnClose functions,
// and returns it as they got it.
func (s *Server) ship(c Closed) Closed {
	s.windows.Inc()
	c.Blobs = s.withVersions(s.withDefs(s.withLevels(c.Blobs)))
	s.hist.add(c, s.cfg.History)
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

// RunWindows closes a window every Window (none with Window 0), the
// first when the current window is Window old (a window recovered from
// DataDir keeps its start), expires idle label sets (Expire) and writes
// DataDir's checkpoints every CheckpointInterval, until ctx is done.
// While DataDir's log is failed, a window's end that Rotate held back is
// tried again every CheckpointInterval (or Window, if shorter).
func (s *Server) RunWindows(ctx context.Context) {
	var rot <-chan time.Time
	var rotTimer *time.Timer
	untilEnd := func() time.Duration { // of the current window, whose start a restart keeps
		return max(s.set.Start().Add(s.cfg.Window).Sub(s.cfg.Now()), 0)
	}
	if s.cfg.Window > 0 {
		rotTimer = time.NewTimer(untilEnd())
		defer rotTimer.Stop()
		rot = rotTimer.C
	}
	var ckpt <-chan time.Time
	if s.log != nil {
		tk := time.NewTicker(s.cfg.CheckpointInterval)
		defer tk.Stop()
		ckpt = tk.C
	}
	var sweep <-chan time.Time
	if s.cfg.LabelTTL > 0 && s.log == nil { // with a log, checkpoints expire
		tk := time.NewTicker(s.sweepEvery())
		defer tk.Stop()
		sweep = tk.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-rot:
			s.Rotate()
			d := untilEnd()
			if d == 0 { // the window went on (the log failed): try again
				d = min(s.cfg.Window, s.cfg.CheckpointInterval)
			}
			rotTimer.Reset(d)
		case <-sweep:
			s.Expire()
		case <-ckpt:
			_ = s.Checkpoint()
		}
	}
}
