package remotewrite

import (
	"context"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
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

// anyStale reports whether s is a stale marker, at any timestamp.
func anyStale(s series) bool {
	return len(s.samples) == 1 && math.Float64bits(s.samples[0].value) == staleBits ||
		len(s.histograms) == 1 && math.Float64bits(s.histograms[0].sum) == staleBits
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

// A request refused with a 4xx is not sent again (remote write 1.0), but
// its stale markers are not lost with it: the next request carries them,
// with those of the series the refused request held and it lacks (the
// server may have stored some of them), oldest written first; once
// acknowledged, a marker is not sent again.
func TestStaleMarkersOfRefusedRequestCarried(t *testing.T) {
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
	t1, t2, t3 := at.Add(time.Minute), at.Add(2*time.Minute), at.Add(3*time.Minute)
	require.NoError(t, w.Enqueue([]export.Named{a, b}, at, time.Time{}))
	require.NoError(t, w.Enqueue([]export.Named{a, c}, t1, time.Time{})) // refused, with b's markers
	require.NoError(t, w.Enqueue([]export.Named{a}, t2, time.Time{}))
	require.NoError(t, w.Enqueue([]export.Named{a}, t3, time.Time{}))
	require.NoError(t, w.Close(context.Background()))
	reqs := srv.requests()
	require.Len(t, reqs, 4)
	stale, _ := split(reqs[1], t1.UnixMilli())
	require.Equal(t, keys(reqs[0], hostIs("b")), stale)
	stale, live := split(reqs[2], t2.UnixMilli())
	require.Equal(t, append(keys(reqs[0], hostIs("b")), keys(reqs[1], hostIs("c"))...), stale,
		"b's markers again, then c's: c was in a request the server may have stored in part")
	require.Equal(t, keys(reqs[0], hostIs("a")), keys(live, func(series) bool { return true }))
	stale, _ = split(reqs[3], t3.UnixMilli())
	require.Empty(t, stale, "acknowledged markers are not sent again")
	require.Len(t, reqs[3], 11)
	require.Equal(t, 1.0, testutil.ToFloat64(w.dropped.WithLabelValues("rejected")))
	require.Equal(t, 0.0, testutil.ToFloat64(w.unmarked.WithLabelValues("lookback")))
	require.Equal(t, 0.0, testutil.ToFloat64(w.unmarked.WithLabelValues("memory")))
}

// A series whose marker was refused and that is written again before a
// request is acknowledged gets no marker then (it has not ended), and one
// when it ends again.
func TestStaleMarkerNotCarriedOnceWrittenAgain(t *testing.T) {
	srv := newServer(t, func(n int, ss []series) (int, string) {
		if n == 1 {
			return http.StatusBadRequest, "out of order sample"
		}
		return http.StatusNoContent, ""
	})
	w := newWriter(t, Config{URL: srv.URL})
	a, b := rwBlob(t), rwBlob(t)
	b.Labels = []export.Label{{Name: "host", Value: "b"}}
	var ts []time.Time
	for i, blobs := range [][]export.Named{{a, b}, {a}, {a, b}, {a}} {
		ts = append(ts, at.Add(time.Duration(i)*time.Minute))
		require.NoError(t, w.Enqueue(blobs, ts[i], time.Time{}))
	}
	require.NoError(t, w.Close(context.Background()))
	reqs := srv.requests()
	require.Len(t, reqs, 4)
	bKeys := keys(reqs[0], hostIs("b"))
	for i, want := range [][]string{nil, bKeys, nil, bKeys} {
		stale, _ := split(reqs[i], ts[i].UnixMilli())
		require.Equal(t, want, stale, "request %d", i)
	}
}

// A request the Writer gives up (retried on 503 until a newer snapshot
// pushed it out of the full queue) may have been stored in part, and its
// markers were not: the next request marks both the series it held and
// those it marked.
func TestStaleMarkersAfterRequestGivenUp(t *testing.T) {
	failed := make(chan struct{}, 1)
	srv := newServer(t, func(n int, ss []series) (int, string) {
		for _, s := range ss {
			if hostIs("c")(s) && !anyStale(s) {
				select {
				case failed <- struct{}{}:
				default:
				}
				return http.StatusServiceUnavailable, "busy"
			}
		}
		return http.StatusNoContent, ""
	})
	w := newWriter(t, Config{URL: srv.URL, QueueSize: 1})
	a, b, c := rwBlob(t), rwBlob(t), rwBlob(t)
	b.Labels = []export.Label{{Name: "host", Value: "b"}}
	c.Labels = []export.Label{{Name: "host", Value: "c"}}
	t1, t2 := at.Add(time.Minute), at.Add(2*time.Minute)
	require.NoError(t, w.Enqueue([]export.Named{a, b}, at, time.Time{}))
	require.Eventually(t, func() bool { return w.Queued() == 0 }, 5*time.Second, time.Millisecond)
	require.NoError(t, w.Enqueue([]export.Named{a, c}, t1, time.Time{}))
	<-failed
	require.NoError(t, w.Enqueue([]export.Named{a}, t2, time.Time{})) // pushes {a, c} out
	require.NoError(t, w.Close(context.Background()))
	reqs := srv.requests()
	require.GreaterOrEqual(t, len(reqs), 3)
	require.Equal(t, 1.0, testutil.ToFloat64(w.dropped.WithLabelValues("queue_full")))
	last := reqs[len(reqs)-1]
	stale, live := split(last, t2.UnixMilli())
	require.Equal(t, append(keys(reqs[0], hostIs("b")), keys(reqs[1], hostIs("c"))...), stale)
	require.Len(t, live, 11)
	for _, r := range reqs[1 : len(reqs)-1] {
		stale, _ := split(r, t1.UnixMilli())
		require.Equal(t, keys(reqs[0], hostIs("b")), stale, "every attempt of {a, c} marks b")
	}
}

// A marker not acknowledged within Config.Lookback of its series' last
// sample is given up, counted: the server's lookback has ended the series.
func TestStaleMarkerGivenUpAtLookback(t *testing.T) {
	srv := newServer(t, func(n int, ss []series) (int, string) {
		if n == 1 || n == 2 {
			return http.StatusBadRequest, "out of order sample"
		}
		return http.StatusNoContent, ""
	})
	w := newWriter(t, Config{URL: srv.URL, Lookback: 90 * time.Second})
	a, b := rwBlob(t), rwBlob(t)
	b.Labels = []export.Label{{Name: "host", Value: "b"}}
	var ts []time.Time
	for i, blobs := range [][]export.Named{{a, b}, {a}, {a}, {a}} {
		ts = append(ts, at.Add(time.Duration(i)*time.Minute))
		require.NoError(t, w.Enqueue(blobs, ts[i], time.Time{}))
	}
	require.NoError(t, w.Close(context.Background()))
	reqs := srv.requests()
	require.Len(t, reqs, 4)
	for i, want := range [][]string{nil, keys(reqs[0], hostIs("b")), nil, nil} {
		stale, _ := split(reqs[i], ts[i].UnixMilli())
		require.Equal(t, want, stale, "request %d", i)
	}
	require.Equal(t, 11.0, testutil.ToFloat64(w.unmarked.WithLabelValues("lookback")))
	require.Len(t, w.sent, 11, "b forgotten")
	for _, x := range w.sent {
		require.False(t, hostIs("b")(series{labels: x.labels}))
	}
}

// While the server acknowledges nothing, the series remembered are those
// of the last request and, of the ended ones, at most as many as the
// largest request held (the newest): memory stays proportional to the live
// series whatever the churn; the others are counted.
func TestEndedSeriesRememberedBounded(t *testing.T) {
	srv := newServer(t, func(int, []series) (int, string) { return http.StatusBadRequest, "no" })
	w := newWriter(t, Config{URL: srv.URL})
	const n = 6
	for i := range n {
		x := rwBlob(t)
		x.Labels = []export.Label{{Name: "host", Value: strconv.Itoa(i)}}
		require.NoError(t, w.Enqueue([]export.Named{x}, at.Add(time.Duration(i)*time.Second), time.Time{}))
	}
	require.NoError(t, w.Close(context.Background()))
	reqs := srv.requests()
	require.Len(t, reqs, n)
	for i := 2; i < n; i++ {
		stale, _ := split(reqs[i], at.Add(time.Duration(i)*time.Second).UnixMilli())
		require.Equal(t, append(keys(reqs[i-2], hostIs(strconv.Itoa(i-2))), keys(reqs[i-1], hostIs(strconv.Itoa(i-1)))...), stale,
			"request %d: the markers of the two hosts before", i)
	}
	require.Equal(t, 11, w.maxLive)
	require.Len(t, w.sent, 22)
	require.Equal(t, float64(11*(n-2)), testutil.ToFloat64(w.unmarked.WithLabelValues("memory")))
}

func TestEnded(t *testing.T) {
	f := []label{{"__name__", "x_total"}}
	g := []label{{"__name__", "y_total"}}
	h := []label{{"__name__", "x_native"}}
	prev := map[string]sentSeries{
		seriesKey(f): {f, false, 1000, 7},
		seriesKey(g): {g, false, 2000, 3},
		seriesKey(h): {h, true, 1000, 5},
	}
	fn := func(live []label, ts int64, native bool, want [][]label, expired int) {
		t.Helper()
		lm := map[string]sentSeries{}
		if live != nil {
			lm[seriesKey(live)] = sentSeries{live, false, ts, 9}
		}
		k, e := ended(prev, lm, ts, 500, native)
		var got [][]label
		for _, x := range k {
			got = append(got, prev[x].labels)
		}
		require.Equal(t, want, got)
		require.Equal(t, expired, e)
	}
	fn(nil, 1100, true, [][]label{g, h, f}, 0) // by seq
	fn(nil, 1100, false, [][]label{g, f}, 0)   // no native histogram without native
	fn(g, 1100, true, [][]label{h, f}, 0)
	fn(nil, 1499, true, [][]label{g, h, f}, 0)
	fn(nil, 1500, true, [][]label{g}, 2) // lookback passed since f and h were written
	fn(nil, 1500, false, [][]label{g}, 1)
	fn(nil, 2500, true, nil, 3)
}

func TestUnacked(t *testing.T) {
	ls := func(n string) []label { return []label{{"__name__", n}} }
	prev := map[string]sentSeries{}
	var order []string
	for i, n := range []string{"a", "b", "c"} {
		k := seriesKey(ls(n))
		prev[k] = sentSeries{ls(n), false, 1000, uint64(i)}
		order = append(order, k)
	}
	live := map[string]sentSeries{seriesKey(ls("d")): {ls("d"), false, 2000, 3}}
	fn := func(limit int, want []string, dropped int) {
		t.Helper()
		next, d := unacked(prev, live, order, limit)
		var got []string
		for _, s := range next {
			got = append(got, s.labels[0].value)
		}
		slices.Sort(got)
		require.Equal(t, want, got)
		require.Equal(t, dropped, d)
		require.Equal(t, live[seriesKey(ls("d"))], next[seriesKey(ls("d"))])
	}
	fn(3, []string{"a", "b", "c", "d"}, 0)
	fn(5, []string{"a", "b", "c", "d"}, 0)
	fn(2, []string{"b", "c", "d"}, 1) // the oldest goes first
	fn(0, []string{"d"}, 3)
}
