package collector

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/statsblob/statsblob/export"
	"github.com/statsblob/statsblob/export/otelexport"
)

// Pusher ships a Server's aggregates through an OpenTelemetry exporter
// (otlpmetrichttp, or any sdkmetric.Exporter). With cumulative temporality
// it pushes the current window every interval (Run) and once more on Close;
// with delta temporality it pushes every window once, when it closes (the
// Server's OnClose), and Close closes the window under way first.
type Pusher struct {
	s    *Server
	exp  sdkmetric.Exporter
	temp metricdata.Temporality
	res  *resource.Resource

	mu     sync.Mutex // one push at a time
	pushes *prometheus.CounterVec
}

// NewPusher returns a Pusher of s's aggregates to exp, registering its
// counter statsblob_collector_otlp_pushes_total{result="ok"|"error"} on s's
// registry. With delta temporality it takes over s's OnClose.
func (s *Server) NewPusher(exp sdkmetric.Exporter, temp metricdata.Temporality) *Pusher {
	if temp != metricdata.DeltaTemporality {
		temp = metricdata.CumulativeTemporality
	}
	p := &Pusher{s: s, exp: exp, temp: temp,
		res: otelResource(),
		pushes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "statsblob_collector_otlp_pushes_total",
			Help: "OTLP exports, by result."}, []string{"result"})}
	p.pushes.WithLabelValues("ok")
	p.pushes.WithLabelValues("error")
	s.reg.MustRegister(p.pushes)
	if temp == metricdata.DeltaTemporality {
		s.OnClose(func(c Closed) { _ = p.push(context.Background(), export.Static(c.Blobs...), c.End) })
	}
	return p
}

// otelResource is the collector's resource (otelexport.Resource): the
// service, its instance and host, and OTEL_RESOURCE_ATTRIBUTES.
func otelResource() *resource.Resource {
	r, _ := otelexport.Resource(context.Background()) // a detector's failure leaves its attributes out
	return r
}

// push exports the blobs of src as of now.
func (p *Pusher) push(ctx context.Context, src export.Source, now time.Time) error {
	p.mu.Lock()
	defer p.mu.Unlock()
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
// with delta it only waits).
func (p *Pusher) Run(ctx context.Context, interval time.Duration) {
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

// Close pushes what has not been pushed (delta: closes the window under
// way; cumulative: the current window once more) and shuts the exporter
// down.
func (p *Pusher) Close(ctx context.Context) error {
	var err error
	if p.temp == metricdata.DeltaTemporality {
		p.s.Rotate()
	} else {
		err = p.Push(ctx)
	}
	if e := p.exp.Shutdown(ctx); err == nil {
		err = e
	}
	return err
}
