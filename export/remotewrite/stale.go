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

// sentSeries is a series the server may hold unended: its labels, whether
// it is a native histogram, the timestamp (ms) of the last request that
// wrote it, and its place in the Writer's writes (seq, growing over all
// requests: markers go in the order the series were last written, and the
// oldest are forgotten first).
type sentSeries struct {
	labels []label
	hist   bool
	last   int64
	seq    uint64
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

// liveSeries returns the series of ss, written at ts, by key; their seq
// start at seq in the order of ss.
func liveSeries(ss []series, ts int64, seq uint64) map[string]sentSeries {
	live := make(map[string]sentSeries, len(ss))
	for i, s := range ss {
		k := seriesKey(s.labels)
		if _, ok := live[k]; !ok { // a window's zero and its value: the first place
			live[k] = sentSeries{s.labels, len(s.histograms) > 0, ts, seq + uint64(i)}
		}
	}
	return live
}

// ended returns the keys of the series of prev that live lacks and that
// want a stale marker at ts, oldest written first, and how many of the
// others are given up because lookback (ms) has passed since they were last
// written (the server's lookback has ended them). Without native, native
// histograms want none: the server refuses histograms, the marker among
// them, and its lookback ends the series.
func ended(prev, live map[string]sentSeries, ts, lookback int64, native bool) (keys []string, expired int) {
	for k, p := range prev {
		if _, ok := live[k]; ok || p.hist && !native {
			continue
		}
		if ts-p.last >= lookback {
			expired++
			continue
		}
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return cmp.Compare(prev[a].seq, prev[b].seq) })
	return keys, expired
}

// appendStale appends to dst a stale marker at ts (ms) for each series of
// prev named by keys, in that order: a sample of staleNaN, or for a native
// histogram a histogram whose sum is staleNaN (as Prometheus writes them).
func appendStale(dst []series, prev map[string]sentSeries, keys []string, ts int64) []series {
	for _, k := range keys {
		p := prev[k]
		if p.hist {
			dst = append(dst, series{labels: p.labels, histograms: []nativeHist{{sum: staleNaN, ts: ts}}})
		} else {
			dst = append(dst, series{labels: p.labels, samples: []sample{{staleNaN, ts}}})
		}
	}
	return dst
}

// unacked returns what the Writer must remember after a request the server
// did not acknowledge: the request's live series (the server may have
// stored some of them: remote write 1.0 lets a receiver store the valid
// samples of a request it refuses with a 400, and one that answered 5xx or
// not at all may have stored some too) and the ended series whose markers
// it carried (keys, oldest first; the server may have stored none of
// them), those to be marked by a later request unless written again. At
// most limit of the ended ones are kept, the newest: dropped counts the
// others.
func unacked(prev, live map[string]sentSeries, keys []string, limit int) (next map[string]sentSeries, dropped int) {
	if len(keys) > limit {
		dropped = len(keys) - limit
		keys = keys[dropped:]
	}
	next = make(map[string]sentSeries, len(live)+len(keys))
	for k, s := range live {
		next[k] = s
	}
	for _, k := range keys {
		next[k] = prev[k]
	}
	return next, dropped
}
