// Package otelexport exports statsblob blobs to OpenTelemetry: a
// metric.Producer (go.opentelemetry.io/otel/sdk/metric) that maps the blobs
// of an export.Source into metricdata at every collection, so that a reader
// (a PeriodicReader with the stock OTLP exporters, or a ManualReader) ships
// them as it ships the SDK's own instruments.
//
// The mapping is package export's under its OpenTelemetry convention, the
// names and units of OpenTelemetry's semantic conventions: a VOI's metrics
// are named NAMESPACE.TEMPLATE.VOI in lower case (tcp_default.tcp_rtt), with
// .max, .min, .hist, .hist.out_of_range or .tdigest after it, never a unit;
// the unit (export.Options.Units, a Prometheus word or a UCUM code) is the
// metric's UCUM unit ("us"), and counts of values have unit "{value}".
// SUM is a Sum, monotonic for unsigned VOIs; MAX and MIN are Gauges;
// histograms are Histograms whose bounds are the exact le bounds
// (OpenTelemetry's bucket i counts values in (Bounds[i-1], Bounds[i]], the
// same inclusive upper bounds), with the VOI's MIN and MAX as the
// histogram's min and max where they describe it; histograms that do not
// line up are monotonic Sums with a "bucket" attribute; t-digests are
// ExponentialHistograms (the digest's CDF at the bucket bounds; the scale
// per export.Options.NativeScale), which a backend can merge across
// collectors, or Summaries with export.Options.Summary. Constant labels
// (the senders' labels) become attributes.
//
// Temporality is the caller's statement about the blobs: cumulative (the
// default) for blobs that accumulate since their start (each point starts at
// the blob's last reset), delta for blobs that hold only what happened since
// the previous export (blobs snapshotted with reset, or the collector's
// closed windows). Summaries carry no temporality in OpenTelemetry.
package otelexport

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/statsblob/statsblob/export"
	"github.com/statsblob/statsblob/voi"
)

// ScopeName is the instrumentation scope of the exported metrics.
const ScopeName = "github.com/statsblob/statsblob/export/otelexport"

// Config configures a Producer.
type Config struct {
	// Options configure the mapping (names, quantiles, native histograms).
	Options export.Options
	// Temporality of sums and histograms: metricdata.CumulativeTemporality
	// (the zero value means it) or metricdata.DeltaTemporality.
	Temporality metricdata.Temporality
	// Now is the clock of the points' times (nil: time.Now).
	Now func() time.Time
	// PrometheusNames keeps the Prometheus convention (snake_case names
	// with unit words, t-digests as Summaries) for fleets whose queries
	// were written against it. The units stay UCUM, as OTLP has them: the
	// name's "microseconds" is unit "us", counts of values are "{value}".
	PrometheusNames bool
}

// Producer is a metric.Producer of the blobs of a Source. It is safe for
// concurrent use if the Source is.
type Producer struct {
	src    export.Source
	mapper *export.Mapper
	temp   metricdata.Temporality
	now    func() time.Time
}

// New returns a Producer of src's blobs (see export.NewMapper for the
// errors; a nil src wraps voi.ErrInvalid too).
func New(src export.Source, cfg Config) (*Producer, error) {
	if src == nil {
		return nil, fmt.Errorf("otelexport: no source: %w", voi.ErrInvalid)
	}
	opts := cfg.Options
	opts.Convention = export.OpenTelemetry
	if cfg.PrometheusNames {
		opts.Convention = export.Prometheus
	}
	m, err := export.NewMapper(opts)
	if err != nil {
		return nil, err
	}
	p := &Producer{src: src, mapper: m, temp: cfg.Temporality, now: cfg.Now}
	if p.temp != metricdata.DeltaTemporality {
		p.temp = metricdata.CumulativeTemporality
	}
	if p.now == nil {
		p.now = time.Now
	}
	return p, nil
}

// Produce maps the source's blobs into one ScopeMetrics, a Metrics per
// family in the order the families first appear. Blobs that cannot be mapped
// are left out and their errors returned, joined, beside the rest. Where
// blobs of several templates export one metric name (template names that
// differ in case only, say; see export.Clashes), the Metrics takes the
// first template's description, and a point both write (the same
// attributes) is the first template's: the other's is left out and its
// error, wrapping export.ErrNameClash, returned with the rest. So is a
// point of a series two blobs of one template write (attributes {} and
// {host=""}, one series to Prometheus: a label of empty value is no
// label), the first blob's kept.
func (p *Producer) Produce(context.Context) ([]metricdata.ScopeMetrics, error) {
	var ms []export.Metric
	var errs []error
	for _, n := range p.src.Blobs() {
		var err error
		if ms, err = p.mapper.Append(ms, n); err != nil {
			errs = append(errs, err)
		}
	}
	if clashes := export.Clashes(ms, otelName); clashes != nil {
		kept := ms[:0]
		for i := range ms {
			if err := clashes[i]; err != nil {
				errs = append(errs, err)
				continue
			}
			kept = append(kept, ms[i])
		}
		ms = kept
	}
	sm := metricdata.ScopeMetrics{Scope: instrumentation.Scope{Name: ScopeName}, Metrics: p.Metrics(ms, p.now())}
	return []metricdata.ScopeMetrics{sm}, errors.Join(errs...)
}

// otelName appends the name of m's metric: OTLP writes a metric under its
// one name.
func otelName(dst []string, m *export.Metric) []string { return append(dst, m.Name) }

// Metrics converts mapped metrics into metricdata, points of one family
// (same name) into one Metrics, at time now.
func (p *Producer) Metrics(ms []export.Metric, now time.Time) []metricdata.Metrics {
	var out []metricdata.Metrics
	type family struct {
		name string
		kind export.Kind
	}
	index := map[family]int{}
	for _, m := range ms {
		f := family{m.Name, m.Kind}
		i, ok := index[f]
		if !ok {
			i = len(out)
			index[f] = i
			out = append(out, metricdata.Metrics{Name: m.Name, Description: m.Help, Unit: unit(m), Data: p.empty(m.Kind)})
		}
		out[i].Data = p.add(out[i].Data, m, now)
	}
	return out
}

// unit returns m's OTLP unit, UCUM whatever the names' convention: "{value}"
// for counts of values, the VOI's unit as its UCUM code otherwise (the
// Prometheus convention's "microseconds" is "us").
func unit(m export.Metric) string {
	if m.ValueCount {
		return "{value}"
	}
	return export.UCUM(m.Unit)
}

func (p *Producer) empty(k export.Kind) metricdata.Aggregation {
	switch k {
	case export.KindCounter, export.KindUpDownCounter:
		return metricdata.Sum[float64]{Temporality: p.temp, IsMonotonic: k == export.KindCounter}
	case export.KindHistogram:
		return metricdata.Histogram[float64]{Temporality: p.temp}
	case export.KindSummary:
		return metricdata.Summary{}
	case export.KindExpHistogram:
		return metricdata.ExponentialHistogram[float64]{Temporality: p.temp}
	}
	return metricdata.Gauge[float64]{}
}

func attrs(ls []export.Label) attribute.Set {
	kv := make([]attribute.KeyValue, len(ls))
	for i, l := range ls {
		kv[i] = attribute.String(l.Name, l.Value)
	}
	return attribute.NewSet(kv...)
}

func (p *Producer) add(agg metricdata.Aggregation, m export.Metric, now time.Time) metricdata.Aggregation {
	set := attrs(m.Labels)
	switch a := agg.(type) {
	case metricdata.Sum[float64]:
		a.DataPoints = append(a.DataPoints, metricdata.DataPoint[float64]{Attributes: set, StartTime: m.Start, Time: now, Value: m.Value})
		return a
	case metricdata.Gauge[float64]:
		a.DataPoints = append(a.DataPoints, metricdata.DataPoint[float64]{Attributes: set, StartTime: m.Start, Time: now, Value: m.Value})
		return a
	case metricdata.Histogram[float64]:
		h := m.Histogram
		dp := metricdata.HistogramDataPoint[float64]{Attributes: set, StartTime: m.Start, Time: now,
			Count: h.Count, Bounds: h.Bounds, BucketCounts: h.Counts, Sum: h.Sum}
		if h.HasMinMax {
			dp.Min, dp.Max = metricdata.NewExtrema(h.Min), metricdata.NewExtrema(h.Max)
		}
		a.DataPoints = append(a.DataPoints, dp)
		return a
	case metricdata.Summary:
		s := m.Summary
		dp := metricdata.SummaryDataPoint{Attributes: set, StartTime: m.Start, Time: now, Count: s.Count, Sum: s.Sum}
		for _, q := range s.Quantiles {
			dp.QuantileValues = append(dp.QuantileValues, metricdata.QuantileValue{Quantile: q.Q, Value: q.Value})
		}
		a.DataPoints = append(a.DataPoints, dp)
		return a
	case metricdata.ExponentialHistogram[float64]:
		e := m.Exp
		dp := metricdata.ExponentialHistogramDataPoint[float64]{Attributes: set, StartTime: m.Start, Time: now,
			Count: e.Count, Sum: e.Sum, Scale: e.Scale, ZeroCount: e.ZeroCount, ZeroThreshold: e.ZeroThreshold,
			PositiveBucket: metricdata.ExponentialBucket{Offset: e.Positive.Offset, Counts: e.Positive.Counts},
			NegativeBucket: metricdata.ExponentialBucket{Offset: e.Negative.Offset, Counts: e.Negative.Counts}}
		if e.HasMinMax {
			dp.Min, dp.Max = metricdata.NewExtrema(e.Min), metricdata.NewExtrema(e.Max)
		}
		a.DataPoints = append(a.DataPoints, dp)
		return a
	}
	return agg
}
