package export

import (
	"time"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/tpl"
)

// Kind is what a Metric is, in terms both Prometheus and OpenTelemetry have.
type Kind uint8

// The kinds of metric.
const (
	KindCounter       Kind = iota + 1 // a monotonic sum: Prometheus counter (name + "_total"), OTel monotonic Sum
	KindUpDownCounter                 // a sum that can fall: Prometheus gauge, OTel non-monotonic Sum
	KindGauge                         // a value: Prometheus gauge, OTel Gauge
	KindHistogram                     // bucket counts with inclusive upper bounds: Prometheus classic histogram, OTel Histogram
	KindSummary                       // count, sum and quantiles: Prometheus summary, OTel Summary
	KindExpHistogram                  // exponential buckets: Prometheus native histogram, OTel ExponentialHistogram
)

// String returns the kind's name ("counter").
func (k Kind) String() string {
	switch k {
	case KindCounter:
		return "counter"
	case KindUpDownCounter:
		return "updowncounter"
	case KindGauge:
		return "gauge"
	case KindHistogram:
		return "histogram"
	case KindSummary:
		return "summary"
	case KindExpHistogram:
		return "exphistogram"
	}
	return "kind?"
}

// Label is one name=value pair of a metric.
type Label struct{ Name, Value string }

// Metric is one data point of one metric family, in a form neutral to the
// exporters: package promexport turns it into a Prometheus const metric,
// package otelexport into OpenTelemetry metricdata.
type Metric struct {
	// Name is the family name: sanitised to Prometheus rules (Prometheus
	// counters add "_total" to it), or dotted (the OpenTelemetry
	// convention, Options.Convention).
	Name string
	// Help describes the family: template, VOI, statistic and data type.
	Help string
	// Unit is the metric's unit, if known: under the Prometheus convention
	// the word its name carries ("seconds"), under the OpenTelemetry
	// convention a UCUM unit ("s"; "{value}" for counts of values).
	Unit string
	// ValueCount marks a count of values (a histogram's buckets exported
	// as counters, its out-of-range count): its UCUM unit is "{value}"
	// whatever the convention, where Unit may be the VOI's unit word the
	// name carries (the Prometheus convention).
	ValueCount bool
	Kind       Kind
	// Labels are the source's constant labels followed by the metric's own
	// ("bucket" for histogram buckets exported as counters).
	Labels []Label
	// Start is when the accumulation began: the blob's last reset, or the
	// source's own start (Named.Start). The zero time when unknown.
	Start time.Time
	// Value is the value of a counter, up-down counter or gauge.
	Value float64
	// Histogram is the data of a KindHistogram.
	Histogram *HistogramPoint
	// Summary is the data of a KindSummary.
	Summary *SummaryPoint
	// Exp is the data of a KindExpHistogram.
	Exp *ExpHistogramPoint
	// Template is the name of the template of the blob the metric maps
	// (tpl_HASH for a blob mapped without its template), and TemplateHash
	// that blob's template hash: what exporters name where two templates
	// export one series (Clashes).
	Template     string
	TemplateHash uint32
}

// PromFamily returns the name of m's family in a Prometheus exposition
// and in Prometheus's storage (remote write): Name, and Name + "_total"
// for a counter. It is what the exporters and Clashes compare.
func (m *Metric) PromFamily() string {
	if m.Kind == KindCounter {
		return m.Name + "_total"
	}
	return m.Name
}

// PromNames appends to dst the names of the samples m is written as in
// Prometheus's text exposition, its family's name (PromFamily) first: a
// histogram's NAME_bucket, NAME_count and NAME_sum; a summary's NAME,
// NAME_count and NAME_sum; one name otherwise (a native histogram is
// written under its family's name). It is Clashes's names for the
// Prometheus exporters.
func PromNames(dst []string, m *Metric) []string {
	f := m.PromFamily()
	switch m.Kind {
	case KindHistogram:
		return append(dst, f, f+"_bucket", f+"_count", f+"_sum")
	case KindSummary:
		return append(dst, f, f+"_count", f+"_sum")
	}
	return append(dst, f)
}

// HistogramPoint is a histogram with explicit bounds.
type HistogramPoint struct {
	// Bounds are the buckets' inclusive upper bounds ("le"), ascending.
	Bounds []float64
	// Counts has len(Bounds)+1 entries: Counts[i] counts the values in
	// (Bounds[i-1], Bounds[i]], the last one the values above every bound.
	// Counts are per bucket, not cumulative.
	Counts []uint64
	// Count is the sum of Counts.
	Count uint64
	// Sum is the sum of the values counted, NaN when the blob does not
	// know it exactly (see the package documentation).
	Sum float64
	// Min and Max are the smallest and largest value counted, when
	// HasMinMax is set.
	Min, Max  float64
	HasMinMax bool
}

// SummaryPoint is a count, a sum and quantile estimates.
type SummaryPoint struct {
	Count     uint64
	Sum       float64
	Quantiles []QuantileValue // ascending in Q; values NaN when Count is 0
}

// QuantileValue is the estimate Value of the Q-quantile.
type QuantileValue struct{ Q, Value float64 }

// ExpHistogramPoint is a histogram of exponential buckets, OpenTelemetry's
// layout: base = 2^(2^-Scale); positive bucket i counts values in
// (base^i, base^(i+1)], negative bucket i values in [-base^(i+1), -base^i).
type ExpHistogramPoint struct {
	Scale         int32
	ZeroThreshold float64
	ZeroCount     uint64
	Positive      ExpBuckets
	Negative      ExpBuckets
	Count         uint64
	Sum           float64
	Min, Max      float64
	HasMinMax     bool
}

// ExpBuckets are consecutive exponential bucket counts: Counts[k] is bucket
// Offset+k.
type ExpBuckets struct {
	Offset int32
	Counts []uint64
}

// Named is one blob to export, with what names it: its template (nil: names
// from the template hash and VOI ids) and the constant labels of the series
// it becomes.
type Named struct {
	Blob     *blob.Blob
	Template *tpl.Template
	// Posted, if not nil, is the template the blob's samples were posted
	// as when Template is its wide form (tpl.Widen; a collector's
	// aggregate): two versions of a template can have one wide form.
	// The exports do not read it.
	Posted *tpl.Template
	Labels []Label
	// Start overrides the accumulation start taken from the blob's last
	// reset (zero: use the blob's).
	Start time.Time
	// Levels, by VOI id, replace the levels (the states of VOIs that take
	// relative updates, exported as gauges) read from the blob, in the
	// VOI's own units: a collector's sum of its senders' latest levels.
	Levels map[int32]float64
	// Off, if not nil, reports the VOIs whose statistics are not exported
	// (a collector's definition: name=rtt on=0), by id; derived metrics
	// of them are left out too.
	Off func(id int32) bool
}

// Source hands out the blobs to export at collection time. Blobs may be
// called concurrently; the blobs it returns are only read, and must not
// change until the caller is done with them (return snapshots).
type Source interface {
	Blobs() []Named
}

// SourceFunc adapts a function to a Source.
type SourceFunc func() []Named

// Blobs calls f.
func (f SourceFunc) Blobs() []Named { return f() }

// Static returns a Source of fixed blobs.
func Static(blobs ...Named) Source {
	return SourceFunc(func() []Named { return blobs })
}

// SBinTime converts a blob time (FreeBSD's sbintime_t: signed 32.32 fixed
// point seconds, since the Unix epoch with the default clock) to a time.Time;
// 0 is the zero time.
func SBinTime(sbt int64) time.Time {
	if sbt == 0 {
		return time.Time{}
	}
	sec := sbt >> 32
	frac := uint64(sbt) & 0xffffffff
	return time.Unix(sec, int64((frac*1_000_000_000)>>32))
}
