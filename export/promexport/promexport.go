// Package promexport exports statsblob blobs to Prometheus: a
// prometheus.Collector over an export.Source that builds const metrics at
// every Collect from the blobs the source hands out then.
//
// The mapping (names, kinds, le bounds, and why each is exact or not) is
// package export's. In Prometheus terms: SUM of an unsigned VOI is a counter
// NAME_total, of a signed VOI a gauge NAME; MAX and MIN are gauges NAME_max
// and NAME_min; histograms are classic histograms NAME_hist (le bounds exact
// for the C's buckets) or, when their ranges do not line up, counters
// NAME_hist_total{bucket="..."}, with NAME_hist_outofrange_total beside
// DRHIST and DVHIST; t-digests are summaries NAME_tdigest{quantile="..."}
// and, as an option, native histograms NAME_tdigest_native (scraped with
// the protobuf format only). Counters, histograms (native ones too) and
// summaries carry the blob's last reset as their created timestamp, none
// when the start is unknown (export.Metric.Start zero).
//
// The collector is unchecked (Describe sends nothing): the metrics depend on
// the blobs of the moment. A blob that cannot be mapped is reported as an
// invalid metric, which a registry's Gather returns as an error beside the
// other metrics (promhttp.ContinueOnError serves the rest).
package promexport

import (
	"fmt"
	"math"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/statsblob/statsblob/export"
	"github.com/statsblob/statsblob/voi"
)

// Collector is a prometheus.Collector of the blobs of a Source. It is safe
// for concurrent use if the Source is.
type Collector struct {
	src    export.Source
	mapper *export.Mapper
}

// New returns a Collector of src's blobs mapped with opts (see
// export.NewMapper for the errors; a nil src wraps voi.ErrInvalid too).
func New(src export.Source, opts export.Options) (*Collector, error) {
	if src == nil {
		return nil, fmt.Errorf("promexport: no source: %w", voi.ErrInvalid)
	}
	opts.Convention = export.Prometheus // an exposition keeps Prometheus's names
	m, err := export.NewMapper(opts)
	if err != nil {
		return nil, err
	}
	return &Collector{src: src, mapper: m}, nil
}

// Describe sends nothing: the Collector is unchecked.
func (c *Collector) Describe(chan<- *prometheus.Desc) {}

// Collect maps the source's blobs and sends their metrics; a blob that
// cannot be mapped, or a metric Prometheus rejects, is sent as an invalid
// metric carrying the error. Where blobs of several templates export one
// family (template names that sanitise alike, "web" and "WEB"; see
// export.Clashes), the family's metrics carry the first template's HELP,
// and a series both write is sent once, the first template's: the
// other's is an invalid metric wrapping export.ErrNameClash that names
// both templates. So is a series two blobs of one template write (label
// sets {} and {host=""}: a label of empty value is no label), the error
// naming both label sets.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	var ms []export.Metric
	for _, n := range c.src.Blobs() {
		var err error
		if ms, err = c.mapper.Append(ms, n); err != nil {
			ch <- prometheus.NewInvalidMetric(prometheus.NewInvalidDesc(err), err)
		}
	}
	clashes := export.Clashes(ms, export.PromNames)
	for i := range ms {
		if err := clashes[i]; err != nil {
			ch <- prometheus.NewInvalidMetric(prometheus.NewInvalidDesc(err), err)
			continue
		}
		pm, err := Const(ms[i])
		if err != nil {
			pm = prometheus.NewInvalidMetric(prometheus.NewInvalidDesc(err), err)
		}
		ch <- pm
	}
}

// Const returns the Prometheus const metric of m.
func Const(m export.Metric) (prometheus.Metric, error) {
	names := make([]string, len(m.Labels))
	values := make([]string, len(m.Labels))
	for i, l := range m.Labels {
		names[i], values[i] = l.Name, l.Value
	}
	desc := prometheus.NewDesc(m.PromFamily(), m.Help, names, nil)
	ct := !m.Start.IsZero()
	switch m.Kind {
	case export.KindCounter:
		if !ct {
			return prometheus.NewConstMetric(desc, prometheus.CounterValue, m.Value, values...)
		}
		return prometheus.NewConstMetricWithCreatedTimestamp(desc, prometheus.CounterValue, m.Value, m.Start, values...)
	case export.KindHistogram:
		h := m.Histogram
		buckets := make(map[float64]uint64, len(h.Bounds))
		var cum uint64
		for i, le := range h.Bounds {
			cum += h.Counts[i]
			buckets[le] = cum
		}
		if !ct {
			return prometheus.NewConstHistogram(desc, h.Count, h.Sum, buckets, values...)
		}
		return prometheus.NewConstHistogramWithCreatedTimestamp(desc, h.Count, h.Sum, buckets, m.Start, values...)
	case export.KindSummary:
		s := m.Summary
		qs := make(map[float64]float64, len(s.Quantiles))
		for _, q := range s.Quantiles {
			qs[q.Q] = q.Value
		}
		if !ct {
			return prometheus.NewConstSummary(desc, s.Count, s.Sum, qs, values...)
		}
		return prometheus.NewConstSummaryWithCreatedTimestamp(desc, s.Count, s.Sum, qs, m.Start, values...)
	case export.KindExpHistogram:
		e := m.Exp
		pm, err := prometheus.NewConstNativeHistogram(desc, e.Count, e.Sum, nativeBuckets(e.Positive), nativeBuckets(e.Negative),
			e.ZeroCount, e.Scale, e.ZeroThreshold, m.Start, values...)
		if err != nil || ct {
			return pm, err
		}
		// NewConstNativeHistogram always sets a created timestamp: the
		// zero Start (unknown) would say 0001-01-01.
		return noCreated{pm}, nil
	}
	return prometheus.NewConstMetric(desc, prometheus.GaugeValue, m.Value, values...)
}

// noCreated is a histogram without a created timestamp.
type noCreated struct{ prometheus.Metric }

func (m noCreated) Write(out *dto.Metric) error {
	if err := m.Metric.Write(out); err != nil {
		return err
	}
	if out.Histogram != nil {
		out.Histogram.CreatedTimestamp = nil
	}
	return nil
}

// nativeBuckets converts OpenTelemetry-layout buckets (index i counts
// (base^i, base^(i+1)]) to Prometheus's (index i counts (base^(i-1), base^i]),
// leaving out empty ones.
func nativeBuckets(b export.ExpBuckets) map[int]int64 {
	m := make(map[int]int64, len(b.Counts))
	for k, c := range b.Counts {
		if c > 0 {
			m[int(b.Offset)+k+1] = int64(min(c, math.MaxInt64))
		}
	}
	return m
}
