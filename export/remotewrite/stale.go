package remotewrite

import (
	"cmp"
	"encoding/binary"
	"math"
	"slices"
)

// staleNaN is Prometheus's stale marker (value.StaleNaN, remote write 1.0
// "Stale Markers"): a NaN no computation yields, that ends a series.
var staleNaN = math.Float64frombits(0x7ff0000000000002)

// sentSeries is a series of the last request sent: its labels, whether it
// was a native histogram, and its place in the request.
type sentSeries struct {
	labels []label
	hist   bool
	order  int
}

// seriesKey returns a key that tells label sets apart: each name and value
// prefixed with its length.
func seriesKey(ls []label) string {
	var b []byte
	for _, l := range ls {
		b = binary.AppendUvarint(b, uint64(len(l.name)))
		b = append(b, l.name...)
		b = binary.AppendUvarint(b, uint64(len(l.value)))
		b = append(b, l.value...)
	}
	return string(b)
}

// liveSeries returns the series of ss by key.
func liveSeries(ss []series) map[string]sentSeries {
	live := make(map[string]sentSeries, len(ss))
	for i, s := range ss {
		k := seriesKey(s.labels)
		if _, ok := live[k]; !ok { // a window's zero and its value: the first place
			live[k] = sentSeries{s.labels, len(s.histograms) > 0, i}
		}
	}
	return live
}

// appendStale appends to dst a stale marker at ts (ms) for each series of
// prev that live lacks, in the order prev's request held them: a sample of staleNaN, or for a
// native histogram a histogram whose sum is staleNaN (as Prometheus writes
// them). Without native, native histograms get none: the server refuses
// histograms, the marker among them, and its lookback ends the series.
func appendStale(dst []series, prev, live map[string]sentSeries, ts int64, native bool) []series {
	var ended []string
	for k, p := range prev {
		if _, ok := live[k]; !ok && (native || !p.hist) {
			ended = append(ended, k)
		}
	}
	slices.SortFunc(ended, func(a, b string) int { return cmp.Compare(prev[a].order, prev[b].order) })
	for _, k := range ended {
		p := prev[k]
		if p.hist {
			dst = append(dst, series{labels: p.labels, histograms: []nativeHist{{sum: staleNaN, ts: ts}}})
		} else {
			dst = append(dst, series{labels: p.labels, samples: []sample{{staleNaN, ts}}})
		}
	}
	return dst
}
