package remotewrite

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/statsblob/statsblob/export"
)

// toSeries appends the series of the mapped metrics ms at ts (ms since the
// epoch) to dst, as a Prometheus scrape of the same metrics would store
// them: counters as NAME_total, histograms as NAME_bucket{le}, NAME_count
// and NAME_sum, summaries as NAME{quantile}, NAME_count and NAME_sum. An
// exponential histogram is a native histogram when native is set, else
// classic buckets at its bounds. A label with an empty value is left out
// (remote write 1.0 allows none; Prometheus takes one for no label, as a
// scrape of {zone=""} stores no zone): the metric is sent under the label
// set the storage would give it anyway, rather than lost. ext are added to
// every series whose labels do not name them (with a value). With zero set, only the series of counts
// (counters, histograms, summary counts and sums) are written, all 0: the
// start of a window, so that rate() and increase() see the reset.
func toSeries(dst []series, ms []export.Metric, ext []export.Label, ts int64, native, zero bool) []series {
	for _, m := range ms {
		base := make([]label, 0, len(m.Labels)+len(ext)+2)
		for _, l := range m.Labels {
			if l.Value != "" {
				base = append(base, label{l.Name, l.Value})
			}
		}
		for _, e := range ext {
			if !slices.ContainsFunc(m.Labels, func(l export.Label) bool { return l.Name == e.Name && l.Value != "" }) {
				base = append(base, label{e.Name, e.Value})
			}
		}
		one := func(name string, v float64, extra ...label) {
			ls := append(slices.Clone(base), label{"__name__", name})
			ls = append(ls, extra...)
			slices.SortFunc(ls, func(a, b label) int { return strings.Compare(a.name, b.name) })
			if zero {
				v = 0
			}
			dst = append(dst, series{labels: ls, samples: []sample{{v, ts}}})
		}
		switch m.Kind {
		case export.KindCounter:
			one(m.PromFamily(), m.Value)
		case export.KindUpDownCounter, export.KindGauge:
			if !zero {
				one(m.Name, m.Value)
			}
		case export.KindHistogram:
			h := m.Histogram
			var cum uint64
			for i, b := range h.Bounds {
				cum += h.Counts[i]
				one(m.Name+"_bucket", float64(cum), label{"le", formatLE(b)})
			}
			one(m.Name+"_bucket", float64(h.Count), label{"le", "+Inf"})
			one(m.Name+"_count", float64(h.Count))
			one(m.Name+"_sum", h.Sum)
		case export.KindSummary:
			s := m.Summary
			if !zero {
				for _, q := range s.Quantiles {
					one(m.Name, q.Value, label{"quantile", formatLE(q.Q)})
				}
			}
			one(m.Name+"_count", float64(s.Count))
			one(m.Name+"_sum", s.Sum)
		case export.KindExpHistogram:
			e := m.Exp
			if native {
				ls := append(slices.Clone(base), label{"__name__", m.Name})
				slices.SortFunc(ls, func(a, b label) int { return strings.Compare(a.name, b.name) })
				h := nativeHist{schema: e.Scale, ts: ts}
				if !zero {
					h.count, h.sum, h.zeroCount, h.zeroThresh = e.Count, e.Sum, e.ZeroCount, e.ZeroThreshold
					h.posOffset, h.pos = e.Positive.Offset+1, e.Positive.Counts
					h.negOffset, h.neg = e.Negative.Offset+1, e.Negative.Counts
				}
				dst = append(dst, series{labels: ls, histograms: []nativeHist{h}})
				continue
			}
			for _, b := range classicBuckets(e) {
				one(m.Name+"_bucket", float64(b.cum), label{"le", formatLE(b.le)})
			}
			one(m.Name+"_bucket", float64(e.Count), label{"le", "+Inf"})
			one(m.Name+"_count", float64(e.Count))
			one(m.Name+"_sum", e.Sum)
		}
	}
	return dst
}

// families returns the metadata of the families of ms (as a scrape of
// promexport would name them), once each, in the order they first appear.
func families(ms []export.Metric) []metadata {
	var out []metadata
	seen := map[string]bool{}
	for _, m := range ms {
		md := metadata{name: m.PromFamily(), help: m.Help, unit: m.Unit} // the family as a scrape names it
		switch m.Kind {
		case export.KindCounter:
			md.typ = typeCounter
		case export.KindUpDownCounter, export.KindGauge:
			md.typ = typeGauge
		case export.KindHistogram, export.KindExpHistogram:
			md.typ = typeHistogram
		case export.KindSummary:
			md.typ = typeSummary
		}
		if !seen[md.name] {
			seen[md.name] = true
			out = append(out, md)
		}
	}
	return out
}

type leCount struct {
	le  float64
	cum uint64
}

// classicBuckets returns an exponential histogram's buckets as classic
// ones: each bucket's upper bound and the count at or below it (negative
// buckets first, then the zero bucket, then the positive ones). The bounds
// are the exponential buckets' own; a negative bucket's upper bound
// -base^i excludes that value (as does the exponential bucket).
func classicBuckets(e *export.ExpHistogramPoint) []leCount {
	var out []leCount
	var cum uint64
	bound := func(i int32) float64 { return math.Exp2(math.Ldexp(float64(i), -int(e.Scale))) }
	for k := len(e.Negative.Counts) - 1; k >= 0; k-- {
		cum += e.Negative.Counts[k]
		out = append(out, leCount{-bound(e.Negative.Offset + int32(k)), cum})
	}
	if e.ZeroCount > 0 || len(e.Negative.Counts) > 0 {
		cum += e.ZeroCount
		out = append(out, leCount{e.ZeroThreshold, cum})
	}
	for k, c := range e.Positive.Counts {
		cum += c
		out = append(out, leCount{bound(e.Positive.Offset + int32(k) + 1), cum})
	}
	return out
}

// formatLE formats a bound as Prometheus's text format does.
func formatLE(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}
