package collector

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/statsblob/statsblob/export"
	"github.com/statsblob/statsblob/export/otelexport"
)

// Defaults of a Pusher.
const (
	DefaultPushInterval = 10 * time.Second // Run's interval, and the command's -otlp-interval
	DefaultPushTimeout  = 10 * time.Second
	DefaultMaxPending   = 16
)

// Pusher ships a Server's aggregates through an OpenTelemetry exporter
// (otlpmetrichttp, or any sdkmetric.Exporter). With cumulative temporality
// it pushes the current window every interval (Run) and once more on Close;
// with delta temporality it pushes every window once, after it closes, from
// a queue of its own: Rotate never waits on the exporter. Every push has
// its own deadline (PushConfig.Timeout).
type Pusher struct {
	s    *Server
	exp  sdkmetric.Exporter
	temp metricdata.Temporality
	res  *resource.Resource

	timeout    time.Duration
	maxPending int

	mu     sync.Mutex // one push at a time
	pushes *prometheus.CounterVec
	drops  prometheus.Counter

	qmu      sync.Mutex // guards queue
	queue    []Closed   // delta: closed windows not yet pushed, oldest first
	wake     chan struct{}
	quit     chan struct{}      // closed by Close: the delta worker ends after its push under way
	quitOnce sync.Once          // closes quit
	stop     context.CancelFunc // ends the delta worker and its push under way at once
	stopped  chan struct{}
}

// PushConfig configures a Pusher.
type PushConfig struct {
	// Temporality is metricdata.CumulativeTemporality (the default) or
	// metricdata.DeltaTemporality.
	Temporality metricdata.Temporality
	// Timeout bounds each push (0: DefaultPushTimeout).
	Timeout time.Duration
	// MaxPending bounds the closed windows waiting to be pushed with
	// delta temporality (0: DefaultMaxPending): one more drops the
	// oldest, counted.
	MaxPending int
}

// NewPusher returns a Pusher of s's aggregates to exp, registering its
// counters statsblob_collector_otlp_pushes_total{result="ok"|"error"} and
// statsblob_collector_otlp_dropped_windows_total on s's registry. With
// delta temporality it takes over s's OnClose and starts the goroutine
// that pushes closed windows, recovered ones first (Close ends it).
func (s *Server) NewPusher(exp sdkmetric.Exporter, cfg PushConfig) *Pusher {
	temp := cfg.Temporality
	if temp != metricdata.DeltaTemporality {
		temp = metricdata.CumulativeTemporality
	}
	timeout, maxPending := cfg.Timeout, cfg.MaxPending
	if timeout <= 0 {
		timeout = DefaultPushTimeout
	}
	if maxPending <= 0 {
		maxPending = DefaultMaxPending
	}
	p := &Pusher{s: s, exp: exp, temp: temp, timeout: timeout, maxPending: maxPending,
		res: otelResource(),
		pushes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "statsblob_collector_otlp_pushes_total",
			Help: "OTLP exports, by result."}, []string{"result"}),
		drops: prometheus.NewCounter(prometheus.CounterOpts{Name: "statsblob_collector_otlp_dropped_windows_total",
			Help: "Closed windows dropped unpushed because -otlp-max-pending were waiting."}),
		wake: make(chan struct{}, 1), quit: make(chan struct{}), stopped: make(chan struct{})}
	p.pushes.WithLabelValues("ok")
	p.pushes.WithLabelValues("error")
	s.MustRegister(p.pushes, p.drops)
	if temp != metricdata.DeltaTemporality {
		close(p.stopped)
		return p
	}
	s.closedFiles.Store(true)
	s.OnClose(p.enqueue)
	for _, c := range s.takeRecovered() { // closed before a crash, unshipped (closed.go)
		p.enqueue(c)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p.stop = cancel
	go p.work(ctx)
	return p
}

// otelResource is the collector's resource (otelexport.Resource): the
// service, its instance and host, and OTEL_RESOURCE_ATTRIBUTES.
func otelResource() *resource.Resource {
	r, _ := otelexport.Resource(context.Background()) // a detector's failure leaves its attributes out
	return r
}

// enqueue queues a closed window for the worker; it never blocks.
func (p *Pusher) enqueue(c Closed) {
	if len(c.Blobs) == 0 {
		return
	}
	maxPending := p.maxPending
	p.qmu.Lock()
	if len(p.queue) >= maxPending {
		p.s.closedShipped(p.queue[0])
		p.queue = p.queue[1:]
		p.drops.Inc()
		p.s.warn("OTLP push queue full: the oldest closed window dropped", "max_pending", maxPending)
	}
	p.queue = append(p.queue, c)
	p.qmu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// head returns the oldest queued window.
func (p *Pusher) head() (Closed, bool) {
	p.qmu.Lock()
	defer p.qmu.Unlock()
	if len(p.queue) == 0 {
		return Closed{}, false
	}
	return p.queue[0], true
}

// done removes the oldest queued window, if it is still c.
func (p *Pusher) done(c Closed) {
	p.qmu.Lock()
	defer p.qmu.Unlock()
	if len(p.queue) > 0 && p.queue[0].Start.Equal(c.Start) && p.queue[0].End.Equal(c.End) {
		p.queue = p.queue[1:]
		p.s.closedShipped(c)
	}
}

// work pushes queued windows, oldest first, until quit is closed (after
// the push under way) or ctx ends (cutting it off); a window whose push
// fails stays at the head and is tried again after a pause.
func (p *Pusher) work(ctx context.Context) {
	defer close(p.stopped)
	for {
		select {
		case <-p.quit:
			return
		default:
		}
		c, ok := p.head()
		if !ok {
			select {
			case <-ctx.Done():
				return
			case <-p.quit:
				return
			case <-p.wake:
				continue
			}
		}
		if err := p.pushWindow(ctx, c); err == nil {
			p.done(c)
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-p.quit:
			return
		case <-time.After(min(p.timeout, time.Second)):
		}
	}
}

func (p *Pusher) pushWindow(ctx context.Context, c Closed) error {
	return p.push(ctx, export.Static(c.Blobs...), c.End)
}

// push exports the blobs of src as of now, within the push timeout.
func (p *Pusher) push(ctx context.Context, src export.Source, now time.Time) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	prod, err := otelexport.New(src, otelexport.Config{Options: p.s.cfg.Export, Temporality: p.temp, Now: func() time.Time { return now }})
	if err == nil {
		var sms []metricdata.ScopeMetrics
		sms, err = prod.Produce(ctx)
		if len(sms) > 0 && len(sms[0].Metrics) > 0 {
			if e := p.exp.Export(ctx, &metricdata.ResourceMetrics{Resource: p.res, ScopeMetrics: sms}); e != nil {
				err = e
			}
		}
	}
	if err != nil {
		p.pushes.WithLabelValues("error").Inc()
		return err
	}
	p.pushes.WithLabelValues("ok").Inc()
	return nil
}

// Push exports now: the current window (cumulative), or nothing (delta:
// windows are pushed when they close).
func (p *Pusher) Push(ctx context.Context) error {
	if p.temp == metricdata.DeltaTemporality {
		return nil
	}
	return p.push(ctx, p.s, p.s.cfg.Now())
}

// Run pushes every interval until ctx is done (cumulative temporality;
// with delta it only waits). An interval of 0 or less is
// DefaultPushInterval.
func (p *Pusher) Run(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		interval = DefaultPushInterval // time.NewTicker panics on it
	}
	tk := time.NewTicker(interval)
	defer tk.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tk.C:
			_ = p.Push(ctx)
		}
	}
}

// NotShipped is the error of a Close that could not push everything the
// Server accepted: how many windows and posts (blobs merged) were left.
type NotShipped struct {
	Windows int
	Posts   uint64
	Err     error // the last push's error
}

// Error says how much was left unpushed and why.
func (e *NotShipped) Error() string {
	return fmt.Sprintf("%d accepted blobs in %d windows not shipped over OTLP: %v", e.Posts, e.Windows, e.Err)
}

// Unwrap returns the last push's error.
func (e *NotShipped) Unwrap() error { return e.Err }

// Close pushes what has not been pushed (delta: lets the push under way
// finish, closes the window under way and pushes every queued window;
// cumulative: the current window once more), each push within the push
// timeout and all within ctx, and shuts the exporter down. What could not
// be pushed is a *NotShipped error.
//
// With delta temporality a window is pushed once: Close does not cut off
// a push under way (the endpoint may have taken it, and pushing its window
// again would count it twice, as a loaded machine once showed the
// collector's end-to-end test), unless ctx ends first.
func (p *Pusher) Close(ctx context.Context) error {
	var err error
	if p.temp == metricdata.DeltaTemporality {
		p.quitOnce.Do(func() { close(p.quit) })
		select {
		case <-p.stopped:
		case <-ctx.Done():
			p.stop() // the worker's push under way ends; its window stays queued
			<-p.stopped
		}
		p.s.Rotate()
		for {
			c, ok := p.head()
			if !ok {
				break
			}
			if e := p.pushWindow(ctx, c); e != nil {
				err = p.notShipped(e)
				break
			}
			p.done(c)
		}
	} else if e := p.Push(ctx); e != nil {
		err = &NotShipped{Windows: 1, Posts: p.s.posts(), Err: e}
	}
	sctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	if e := p.exp.Shutdown(sctx); err == nil && e != nil && !errors.Is(e, context.Canceled) {
		err = e
	}
	return err
}

func (p *Pusher) notShipped(err error) *NotShipped {
	p.qmu.Lock()
	defer p.qmu.Unlock()
	ns := &NotShipped{Windows: len(p.queue), Err: err}
	for _, c := range p.queue {
		ns.Posts += c.Posts
	}
	return ns
}
