package remotewrite

import (
	"context"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/export"
)

// staleBits is Prometheus's stale marker (value.StaleNaN).
const staleBits = 0x7ff0000000000002

// isStale reports whether s is one stale marker at ts: a sample of the
// stale NaN, or a native histogram whose sum is it and all else 0.
func isStale(s series, ts int64) bool {
	switch {
	case len(s.samples) == 1 && len(s.histograms) == 0:
		return math.Float64bits(s.samples[0].value) == staleBits && s.samples[0].ts == ts
	case len(s.histograms) == 1 && len(s.samples) == 0:
		h := s.histograms[0]
		return math.Float64bits(h.sum) == staleBits && h.ts == ts &&
			h.count == 0 && h.zeroCount == 0 && h.schema == 0 && len(h.pos) == 0 && len(h.neg) == 0
	}
	return false
}

// split returns the keys of a request's stale markers at ts, and its other
// series.
func split(ss []series, ts int64) (stale []string, live []series) {
	for _, s := range ss {
		if isStale(s, ts) {
			stale = append(stale, seriesKey(s.labels))
		} else {
			live = append(live, s)
		}
	}
	return stale, live
}

func keys(ss []series, keep func(series) bool) []string {
	var out []string
	for _, s := range ss {
		if keep(s) {
			out = append(out, seriesKey(s.labels))
		}
	}
	return out
}

func hostIs(h string) func(series) bool {
	return func(s series) bool {
		for _, l := range s.labels {
			if l.name == "host" {
				return l.value == h
			}
		}
		return false
	}
}

// A series sent and then absent from the next snapshot (its label set
// expired) gets exactly one stale marker, in the next request, at that
// request's timestamp: a sample of the stale NaN for each float series, a
// histogram whose sum is the stale NaN for the native histogram; the series
// still present are sent as before, and the marker is not repeated.
func TestStaleMarkerOnceForEachEndedSeries(t *testing.T) {
	srv := newServer(t, nil)
	w := newWriter(t, Config{URL: srv.URL})
	a, b := rwBlob(t), rwBlob(t)
	b.Labels = []export.Label{{Name: "host", Value: "b"}}
	t1, t2 := at.Add(time.Minute), at.Add(2*time.Minute)
	require.NoError(t, w.Enqueue([]export.Named{a, b}, at, time.Time{}))
	require.NoError(t, w.Enqueue([]export.Named{a}, t1, time.Time{}))
	require.NoError(t, w.Enqueue([]export.Named{a}, t2, time.Time{}))
	require.NoError(t, w.Close(context.Background()))
	reqs := srv.requests()
	require.Len(t, reqs, 3)

	ended := keys(reqs[0], hostIs("b"))
	require.Len(t, ended, 11, "10 float series and a native histogram")
	stale, live := split(reqs[1], t1.UnixMilli())
	require.Equal(t, ended, stale, "one marker for each series of host=b, in order")
	require.Equal(t, keys(reqs[0], hostIs("a")), keys(live, func(series) bool { return true }))
	hists := 0
	for _, s := range reqs[1] {
		if isStale(s, t1.UnixMilli()) && len(s.histograms) == 1 {
			hists++
			require.True(t, strings.HasPrefix(s.String(), "rw_lat_tdigest_native{host=b} hist("), s.String())
		}
	}
	require.Equal(t, 1, hists, "the native histogram's marker is a histogram")

	stale, _ = split(reqs[2], t2.UnixMilli())
	require.Empty(t, stale, "a marker is sent once")
	require.Len(t, reqs[2], 11)
}

// A snapshot with no series at all after one with series (every label set
// expired) is a request of stale markers only.
func TestStaleMarkersSentForEmptySnapshot(t *testing.T) {
	srv := newServer(t, nil)
	w := newWriter(t, Config{URL: srv.URL})
	t1 := at.Add(time.Minute)
	require.NoError(t, w.Enqueue([]export.Named{rwBlob(t)}, at, time.Time{}))
	require.NoError(t, w.Enqueue(nil, t1, time.Time{}))
	require.NoError(t, w.Enqueue(nil, t1.Add(time.Minute), time.Time{}))
	require.NoError(t, w.Close(context.Background()))
	reqs := srv.requests()
	require.Len(t, reqs, 2, "the third snapshot has nothing to send")
	stale, live := split(reqs[1], t1.UnixMilli())
	require.Empty(t, live)
	require.Equal(t, keys(reqs[0], func(series) bool { return true }), stale)
}

// Close sends no stale markers: a collector that restarts resumes its
// series (as Prometheus writes none for its targets when it shuts down).
func TestNoStaleMarkersOnClose(t *testing.T) {
	srv := newServer(t, nil)
	w := newWriter(t, Config{URL: srv.URL})
	require.NoError(t, w.Enqueue([]export.Named{rwBlob(t)}, at, time.Time{}))
	require.NoError(t, w.Close(context.Background()))
	reqs := srv.requests()
	require.Len(t, reqs, 1)
	stale, _ := split(reqs[0], at.UnixMilli())
	require.Empty(t, stale)
}

// The markers compare a request with the last one sent, not the last one
// queued: a snapshot dropped from a full queue, or refused with a 4xx,
// neither loses a marker that a later request can carry nor makes one
// twice. After a refused request, the next one marks what the refused one
// held and it lacks.
func TestStaleMarkersAgainstLastRequestSent(t *testing.T) {
	srv := newServer(t, func(n int, ss []series) (int, string) {
		if n == 1 {
			return http.StatusBadRequest, "out of order sample"
		}
		return http.StatusNoContent, ""
	})
	w := newWriter(t, Config{URL: srv.URL})
	a, b, c := rwBlob(t), rwBlob(t), rwBlob(t)
	b.Labels = []export.Label{{Name: "host", Value: "b"}}
	c.Labels = []export.Label{{Name: "host", Value: "c"}}
	t1, t2 := at.Add(time.Minute), at.Add(2*time.Minute)
	require.NoError(t, w.Enqueue([]export.Named{a, b}, at, time.Time{}))
	require.NoError(t, w.Enqueue([]export.Named{a, c}, t1, time.Time{})) // refused: b's markers lost with it
	require.NoError(t, w.Enqueue([]export.Named{a}, t2, time.Time{}))
	require.NoError(t, w.Close(context.Background()))
	reqs := srv.requests()
	require.Len(t, reqs, 3)
	stale, _ := split(reqs[1], t1.UnixMilli())
	require.Equal(t, keys(reqs[0], hostIs("b")), stale)
	stale, live := split(reqs[2], t2.UnixMilli())
	require.Equal(t, keys(reqs[1], hostIs("c")), stale, "c was in the last request sent")
	require.Len(t, live, 11)
}

// While native histograms are off (classic buckets after the server
// refused them), a native histogram series that ended gets no marker (the
// server would refuse it as it refused the histogram); float series do.
func TestStaleMarkerNoHistogramWithoutNative(t *testing.T) {
	f := []label{{"__name__", "x_total"}}
	h := []label{{"__name__", "x_native"}}
	prev := map[string]sentSeries{seriesKey(f): {f, false, 0}, seriesKey(h): {h, true, 1}}
	got := appendStale(nil, prev, nil, 7, false)
	require.Len(t, got, 1)
	require.Equal(t, f, got[0].labels)
	require.Len(t, got[0].samples, 1)
	require.True(t, isStale(got[0], 7))
	got = appendStale(nil, prev, map[string]sentSeries{seriesKey(f): {f, false, 0}}, 7, true)
	require.Len(t, got, 1)
	require.Len(t, got[0].histograms, 1)
	require.Equal(t, h, got[0].labels)
	require.True(t, isStale(got[0], 7))
}
