// Package remotewrite ships statsblob aggregates to Prometheus-compatible
// storage (Prometheus with --web.enable-remote-write-receiver, Mimir,
// Thanos Receive, Cortex, VictoriaMetrics) with the remote write 1.0
// protocol: snappy-compressed protocol buffers POSTed to the server's
// write endpoint.
//
// A Writer takes snapshots of blobs (Enqueue: the collector's current window
// every interval, or each window once it closes), queues them (at most
// Config.QueueSize; the oldest is dropped for a new one when full), and a
// goroutine sends them in order, mapped as a scrape of package promexport
// would store them (package export's Prometheus convention), plus every
// t-digest as a native histogram. Failed sends (network errors, 5xx, 429)
// are retried with exponential backoff (Config.MinBackoff doubling up to
// MaxBackoff, or the server's Retry-After up to MaxBackoff) until they
// succeed, the snapshot is pushed out of the queue,
// or Close's deadline passes. Nothing is dropped silently: every snapshot
// not shipped is counted in
// statsblob_collector_remote_write_dropped_total{reason}, by reason
// (queue_full, rejected: a 4xx other than 429, shutdown), and what a
// snapshot sent leaves out in
// statsblob_collector_remote_write_omitted_total{reason}: blobs the
// mapping refuses (unmappable), and metrics whose series another blob
// wrote first (name_clash: template names that sanitise alike, two
// versions of one under one label set, or blobs of one template under
// label sets that are one series, {} and {host=""}; export.Clashes: a
// request holding a series twice is refused whole by Prometheus).
//
// Native histograms: with HistogramsAuto (the default) a Writer sends
// t-digests as native histograms until the server answers a request that
// holds some with an error naming native histograms (a Prometheus started
// without --enable-feature=native-histograms), then, and for the rest of
// its life, as classic buckets at the exponential buckets' bounds
// (Options.NativeScale, or export.DefaultNativeScale when 0, so that
// collectors share bounds), resending that request.
//
// Stale markers (remote write 1.0 requires them): a series written that a
// later snapshot lacks (its label set expired, its VOI was switched off, a
// window closed without posts for it) will no longer be appended to, and
// the next request carries its stale marker: a sample of Prometheus's
// stale NaN (0x7ff0000000000002) at that request's timestamp, for a native
// histogram a histogram whose sum is that NaN (none while the server
// refuses native histograms: its lookback ends those series). A marker is
// sent until a request holding it is acknowledged (2xx), or the series is
// written again first: a request refused with a 4xx is not sent again (the
// spec), and one the Writer gives up (pushed out of the queue while
// retried) is not either, so the next request carries their markers, and
// marks the series they held and it lacks too (Prometheus stores none of a
// refused request, but the spec lets a server store the valid samples of a
// request it answers 400, and one that answered 5xx or nothing may have
// stored some: a marker of a series never stored is harmless). A marker not
// acknowledged within Config.Lookback of its series' last sample is given
// up (the server's lookback has ended the series), counted in
// statsblob_collector_remote_write_stale_markers_dropped_total{reason=
// "lookback"}. Memory: the Writer remembers the series of the last
// acknowledged request and, while the server acknowledges none, those of
// the requests since; of the series that ended since, at most as many as
// the largest request held, the newest (the others counted, reason
// "memory"), so it stays within twice the largest request (the collector's
// limits on label sets and VOIs bound that). Close sends no stale markers,
// as Prometheus writes none for its targets when it shuts down: a
// collector that restarts resumes its series, and one stopped for good
// leaves them to the server's lookback (5 minutes by default); a restarted
// Writer remembers no series (as Prometheus's own remote write does not:
// its scrape loops start without a previous scrape), so series that ended
// across the restart, and markers not acknowledged before it, end at the
// lookback too.
//
// Several collectors sending to one server must not send the same series:
// give each its own label (Config.Labels, e.g. collector="a"), and sum
// across them in PromQL.
package remotewrite

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/klauspost/compress/snappy"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/statsblob/statsblob/export"
	"github.com/statsblob/statsblob/voi"
)

// HistogramMode says how t-digests are sent.
type HistogramMode uint8

// The modes.
const (
	HistogramsAuto    HistogramMode = iota // native until the server refuses them, then classic
	HistogramsNative                       // native histograms only
	HistogramsClassic                      // classic buckets only
)

// Defaults of Config.
const (
	DefaultQueueSize  = 64
	DefaultMinBackoff = 100 * time.Millisecond
	DefaultMaxBackoff = 10 * time.Second
	DefaultTimeout    = 30 * time.Second
	DefaultLookback   = 5 * time.Minute  // Prometheus's --query.lookback-delta
	DefaultInterval   = 15 * time.Second // Run's interval, and the command's -remote-write-interval
)

// Config configures a Writer.
type Config struct {
	// URL is the server's remote write endpoint
	// (http://prometheus:9090/api/v1/write). Required.
	URL string
	// Options configure the mapping; the convention is always Prometheus's.
	// NativeScale 0 chooses native histograms' scales per digest (classic
	// buckets use export.DefaultNativeScale then).
	Options export.Options
	// Histograms says how t-digests are sent (HistogramsAuto: native
	// histograms where the server takes them).
	Histograms HistogramMode
	// Labels are added to every series (where its own labels do not name
	// them): what tells this collector's series from another's.
	Labels []export.Label
	// QueueSize bounds the snapshots waiting to be sent (0:
	// DefaultQueueSize).
	QueueSize int
	// MinBackoff and MaxBackoff bound the wait between retries (0:
	// DefaultMinBackoff, DefaultMaxBackoff).
	MinBackoff, MaxBackoff time.Duration
	// Timeout bounds one request (0: DefaultTimeout).
	Timeout time.Duration
	// Client sends the requests (nil: a client of its own).
	Client *http.Client
	// Lookback is the server's query lookback (Prometheus's
	// --query.lookback-delta; 0: DefaultLookback): how long after a
	// series' last sample its stale marker is still worth sending, when
	// the requests that carried it were not acknowledged.
	Lookback time.Duration
}

// snapshot is one queued export: blobs at a time, and the start of their
// window when the series must show the reset to 0 there.
type snapshot struct {
	blobs []export.Named
	at    time.Time
	start time.Time
}

// Writer sends snapshots of blobs with remote write. It is safe for
// concurrent use.
type Writer struct {
	cfg             Config
	native, classic *export.Mapper

	mu     sync.Mutex
	queue  []snapshot
	last   time.Time // the latest timestamp queued: timestamps only grow
	closed bool
	wake   chan struct{} // a snapshot was queued, or Close was called
	done   chan struct{} // the sender has stopped
	stop   context.CancelFunc
	useNat bool // send native histograms

	// sent holds the series the server may hold unended, by label set:
	// those of the last request it acknowledged and, from each request
	// since that it did not acknowledge, the request's series and those
	// whose markers it carried. Those absent from the next request get a
	// stale marker in it. seq numbers the series written; maxLive is the
	// most series one request has held, the bound on the ended series
	// remembered. Only the sender goroutine uses them.
	sent    map[string]sentSeries
	seq     uint64
	maxLive int

	requests *prometheus.CounterVec
	samples  prometheus.Counter
	dropped  *prometheus.CounterVec
	unmarked *prometheus.CounterVec
	omitted  *prometheus.CounterVec
	queued   prometheus.GaugeFunc
	nativeG  prometheus.GaugeFunc
}

// New checks cfg and starts a Writer's sender. Errors wrap voi.ErrInvalid:
// no URL or one that is not http(s), negative sizes or durations, labels
// export.CheckPostedLabels rejects (empty values and export.VersionLabel
// among them), options export.NewMapper rejects.
func New(cfg Config) (*Writer, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || cfg.URL == "" || u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("remotewrite: URL %q: want http(s)://host/path: %w", cfg.URL, voi.ErrInvalid)
	}
	if cfg.QueueSize < 0 || cfg.MinBackoff < 0 || cfg.MaxBackoff < 0 || cfg.Timeout < 0 || cfg.Lookback < 0 {
		return nil, fmt.Errorf("remotewrite: negative queue size or duration: %w", voi.ErrInvalid)
	}
	// (Remote write 1.0: no empty label values; and the version label is
	// the collector's.)
	if err := export.CheckPostedLabels(cfg.Labels); err != nil {
		return nil, fmt.Errorf("remotewrite: %w", err)
	}
	if cfg.QueueSize == 0 {
		cfg.QueueSize = DefaultQueueSize
	}
	if cfg.MinBackoff == 0 {
		cfg.MinBackoff = DefaultMinBackoff
	}
	if cfg.MaxBackoff == 0 {
		cfg.MaxBackoff = DefaultMaxBackoff
	}
	cfg.MaxBackoff = max(cfg.MaxBackoff, cfg.MinBackoff)
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Lookback == 0 {
		cfg.Lookback = DefaultLookback
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{}
	}
	opts := cfg.Options
	opts.Convention = export.Prometheus
	opts.NativeHistogram = true
	w := &Writer{cfg: cfg, useNat: cfg.Histograms != HistogramsClassic,
		wake: make(chan struct{}, 1), done: make(chan struct{})}
	if w.native, err = export.NewMapper(opts); err != nil {
		return nil, err
	}
	if opts.NativeScale == 0 {
		opts.NativeScale = export.DefaultNativeScale
	}
	if w.classic, err = export.NewMapper(opts); err != nil {
		return nil, err
	}
	w.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "statsblob_collector_remote_write_requests_total",
		Help: "Remote write requests, by result (ok, retried, rejected)."}, []string{"result"})
	for _, r := range []string{"ok", "retried", "rejected"} {
		w.requests.WithLabelValues(r)
	}
	w.samples = prometheus.NewCounter(prometheus.CounterOpts{Name: "statsblob_collector_remote_write_samples_total",
		Help: "Samples and native histograms the server acknowledged."})
	w.dropped = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "statsblob_collector_remote_write_dropped_total",
		Help: "Snapshots not shipped, by reason (queue_full, rejected, shutdown)."}, []string{"reason"})
	for _, r := range []string{"queue_full", "rejected", "shutdown"} {
		w.dropped.WithLabelValues(r)
	}
	w.unmarked = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "statsblob_collector_remote_write_stale_markers_dropped_total",
		Help: "Stale markers never acknowledged, by reason (lookback: given up at Lookback after the series' last sample; memory: past the bound on ended series remembered)."},
		[]string{"reason"})
	for _, r := range []string{"lookback", "memory"} {
		w.unmarked.WithLabelValues(r)
	}
	w.omitted = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "statsblob_collector_remote_write_omitted_total",
		Help: "What snapshots sent left out, by reason: unmappable, blobs the mapping refused (constant labels it rejects, a template that is not the blob's); name_clash, metrics whose series another blob wrote (export.Clashes)."},
		[]string{"reason"})
	for _, r := range []string{"unmappable", "name_clash"} {
		w.omitted.WithLabelValues(r)
	}
	w.queued = prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "statsblob_collector_remote_write_queued",
		Help: "Snapshots waiting to be sent."}, func() float64 { return float64(w.Queued()) })
	w.nativeG = prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "statsblob_collector_remote_write_native_histograms",
		Help: "1 while t-digests are sent as native histograms, 0 as classic buckets."}, func() float64 {
		if w.Native() {
			return 1
		}
		return 0
	})
	ctx, stop := context.WithCancel(context.Background())
	w.stop = stop
	go w.run(ctx)
	return w, nil
}

// Collectors returns the Writer's own metrics, to register beside the
// collector's.
func (w *Writer) Collectors() []prometheus.Collector {
	return []prometheus.Collector{w.requests, w.samples, w.dropped, w.unmarked, w.omitted, w.queued, w.nativeG}
}

// Queued returns the number of snapshots waiting to be sent.
func (w *Writer) Queued() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.queue)
}

// Native reports whether t-digests are sent as native histograms.
func (w *Writer) Native() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.useNat
}

// ErrClosed is returned by Enqueue after Close.
var ErrClosed = errors.New("remotewrite: writer closed")

// Enqueue queues blobs to be sent as of at. The blobs must not change
// afterwards (the collector's aggregates never do). A non-zero start is the
// start of the window the blobs accumulated over: the counts' series get a
// 0 just after it, so that rate() and increase() see the reset. Timestamps
// only grow: an at not after the previous one is moved 1 ms past it. When
// the queue is full the oldest snapshot is dropped (and counted).
func (w *Writer) Enqueue(blobs []export.Named, at, start time.Time) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ErrClosed
	}
	at = at.Truncate(time.Millisecond)
	if !at.After(w.last) {
		at = w.last.Add(time.Millisecond)
	}
	if !start.IsZero() {
		start = start.Truncate(time.Millisecond).Add(time.Millisecond)
		if !start.After(w.last) {
			start = time.Time{} // no room for the zero before at: leave it out
		} else if !start.Before(at) {
			start = time.Time{}
		}
	}
	w.last = at
	if len(w.queue) >= w.cfg.QueueSize {
		w.queue = w.queue[1:]
		w.dropped.WithLabelValues("queue_full").Inc()
	}
	w.queue = append(w.queue, snapshot{blobs: blobs, at: at, start: start})
	select {
	case w.wake <- struct{}{}:
	default:
	}
	return nil
}

// Run enqueues src's blobs every interval until ctx is done: the
// collector's current window, without a window (cumulative series). An
// interval of 0 or less is DefaultInterval.
func (w *Writer) Run(ctx context.Context, src export.Source, interval time.Duration, now func() time.Time) {
	if interval <= 0 {
		interval = DefaultInterval // time.NewTicker panics on it
	}
	tk := time.NewTicker(interval)
	defer tk.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tk.C:
			if w.Enqueue(src.Blobs(), now(), time.Time{}) != nil {
				return
			}
		}
	}
}

// Close stops taking snapshots, sends those queued until ctx is done,
// counts the rest as dropped (shutdown) and stops the sender. It returns
// ctx's error if snapshots were left.
func (w *Writer) Close(ctx context.Context) error {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
	select {
	case <-w.done:
		return nil
	case <-ctx.Done():
	}
	w.stop()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	if n := len(w.queue); n > 0 {
		w.dropped.WithLabelValues("shutdown").Add(float64(n))
		w.queue = nil
		return fmt.Errorf("remotewrite: %d snapshots not sent: %w", n, ctx.Err())
	}
	return nil
}

// run sends the queue's head until the queue is empty after Close, or ctx
// is cancelled.
func (w *Writer) run(ctx context.Context) {
	defer close(w.done)
	backoff := w.cfg.MinBackoff
	for {
		w.mu.Lock()
		if len(w.queue) == 0 {
			closed := w.closed
			w.mu.Unlock()
			if closed {
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-w.wake:
			}
			continue
		}
		head := w.queue[0]
		native := w.useNat
		w.mu.Unlock()

		ok, retry, after, a, err := w.send(ctx, head, native)
		w.remember(ok, a)
		w.mu.Lock()
		// The head may have been dropped for a newer snapshot meanwhile.
		still := len(w.queue) > 0 && w.queue[0].at.Equal(head.at)
		if ok || !retry && !(native && w.cfg.Histograms == HistogramsAuto && refusesNative(err)) {
			// The snapshot's last attempt: what it left out, once.
			w.omitted.WithLabelValues("unmappable").Add(float64(a.unmappable))
			w.omitted.WithLabelValues("name_clash").Add(float64(a.clashes))
		}
		switch {
		case ok:
			backoff = w.cfg.MinBackoff
			if still {
				w.queue = w.queue[1:]
			}
		case native && w.cfg.Histograms == HistogramsAuto && refusesNative(err):
			w.useNat = false // resend the same snapshot as classic buckets
		case !retry:
			w.requests.WithLabelValues("rejected").Inc()
			if still {
				w.queue = w.queue[1:]
				w.dropped.WithLabelValues("rejected").Inc()
			}
		}
		w.mu.Unlock()
		if ok || !retry {
			continue
		}
		w.requests.WithLabelValues("retried").Inc()
		wait := backoff/2 + rand.N(backoff/2+1) // jitter: collectors that failed together do not retry together
		wait = min(max(wait, after), w.cfg.MaxBackoff)
		backoff = min(2*backoff, w.cfg.MaxBackoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// httpError is a server's answer other than 2xx.
type httpError struct {
	status int
	body   string
}

func (e *httpError) Error() string {
	return fmt.Sprintf("remotewrite: server answered %d: %s", e.status, e.body)
}

// refusesNative reports whether err is a server's refusal of native
// histograms.
func refusesNative(err error) bool {
	var he *httpError
	return errors.As(err, &he) && he.status/100 != 2 && strings.Contains(strings.ToLower(he.body), "native histogram")
}

// attempt is what a request held, for w.sent: its series, the keys of the
// ended series it marked (oldest first), and how many ended series it
// left unmarked past the lookback.
type attempt struct {
	live    map[string]sentSeries
	marked  []string
	expired int
	// unmappable counts the snapshot's blobs the mapping refused, clashes
	// its metrics left out because another blob wrote their
	// series (export.Clashes).
	unmappable, clashes int
}

// remember updates w.sent after a request: acknowledged (ok), the server
// holds its series, and those it marked are ended; otherwise, it may hold
// any of the request's series, and those it marked still want a marker (at
// most w.maxLive of them are kept, the newest).
func (w *Writer) remember(ok bool, a attempt) {
	w.unmarked.WithLabelValues("lookback").Add(float64(a.expired))
	if ok {
		w.sent = a.live
		return
	}
	var dropped int
	w.sent, dropped = unacked(w.sent, a.live, a.marked, w.maxLive)
	w.unmarked.WithLabelValues("memory").Add(float64(dropped))
}

// send maps and sends one snapshot, with a stale marker for each series of
// w.sent it lacks. ok: acknowledged; retry: worth trying again (network
// error, 5xx, 429), not before after (the server's Retry-After in seconds,
// if any); a: the request's series and markers.
func (w *Writer) send(ctx context.Context, s snapshot, native bool) (ok, retry bool, after time.Duration, a attempt, err error) {
	m := w.classic
	if native {
		m = w.native
	}
	var ms []export.Metric
	for _, n := range s.blobs {
		// A blob the mapper refuses cannot become valid by retrying:
		// the rest of the snapshot is still sent.
		var err error
		if ms, err = m.Append(ms, n); err != nil {
			a.unmappable++
		}
	}
	if clashes := export.Clashes(ms, export.PromNames); clashes != nil {
		// A series sent twice in one request would have the server
		// refuse the whole request: the first template's is sent.
		kept := ms[:0]
		for i := range ms {
			if clashes[i] == nil {
				kept = append(kept, ms[i])
			}
		}
		ms, a.clashes = kept, len(clashes)
	}
	var ss []series
	if !s.start.IsZero() {
		ss = toSeries(ss, ms, w.cfg.Labels, s.start.UnixMilli(), native, true)
	}
	ss = toSeries(ss, ms, w.cfg.Labels, s.at.UnixMilli(), native, false)
	a.live = liveSeries(ss, s.at.UnixMilli(), w.seq)
	w.seq += uint64(len(ss))
	w.maxLive = max(w.maxLive, len(a.live))
	a.marked, a.expired = ended(w.sent, a.live, s.at.UnixMilli(), w.cfg.Lookback.Milliseconds(), native)
	ss = appendStale(ss, w.sent, a.marked, s.at.UnixMilli())
	if len(ss) == 0 {
		return true, false, 0, a, nil
	}
	body := snappy.Encode(nil, appendRequest(nil, ss, families(ms)))
	rctx, cancel := context.WithTimeout(ctx, w.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, w.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return false, false, 0, a, err
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("Content-Encoding", "snappy")
	req.Header.Set("User-Agent", "statsblob-collector")
	req.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
	resp, err := w.cfg.Client.Do(req)
	if err != nil {
		return false, true, 0, a, err
	}
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	resp.Body.Close()
	if resp.StatusCode/100 == 2 {
		w.requests.WithLabelValues("ok").Inc()
		n := 0
		for _, x := range ss {
			n += len(x.samples) + len(x.histograms)
		}
		w.samples.Add(float64(n))
		return true, false, 0, a, nil
	}
	if sec, perr := strconv.Atoi(resp.Header.Get("Retry-After")); perr == nil && sec > 0 {
		after = time.Duration(sec) * time.Second
	}
	err = &httpError{resp.StatusCode, strings.TrimSpace(string(msg))}
	return false, resp.StatusCode/100 == 5 || resp.StatusCode == http.StatusTooManyRequests, after, a, err
}
