package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/export"
	"github.com/statsblob/statsblob/export/remotewrite"
	"github.com/statsblob/statsblob/tdigest"
	"github.com/statsblob/statsblob/voi"
)

// histBucket is one bucket of a native histogram Prometheus returns.
type histBucket struct{ lower, upper, count float64 }

// queryHist runs an instant PromQL query whose answer is one native
// histogram and returns its buckets.
func queryHist(t *testing.T, prom, q string) []histBucket {
	t.Helper()
	resp, err := http.Get(prom + "/api/v1/query?query=" + url.QueryEscape(q))
	require.NoError(t, err)
	defer resp.Body.Close()
	var r struct {
		Status string
		Error  string
		Data   struct {
			Result []struct {
				Histogram [2]json.RawMessage
			}
		}
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&r))
	require.Equal(t, "success", r.Status, "%s: %s", q, r.Error)
	require.Len(t, r.Data.Result, 1, q)
	var h struct{ Buckets [][4]any }
	require.NoError(t, json.Unmarshal(r.Data.Result[0].Histogram[1], &h))
	var out []histBucket
	for _, b := range h.Buckets {
		f := func(x any) float64 {
			v, err := strconv.ParseFloat(x.(string), 64)
			require.NoError(t, err)
			return v
		}
		out = append(out, histBucket{f(b[1]), f(b[2]), f(b[3])})
	}
	return out
}

// Two collectors remote-write to one Prometheus, each with its own
// collector label and each with part of every host's blobs: the PromQL sums
// over the collectors are the fleet's exact counts and buckets, and the
// quantile of the summed native histograms is the merged fleet's within a
// bucket.
func TestE2ERemoteWrite(t *testing.T) {
	e2eEnabled(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const hosts = 3
	fleet := newLatFleet(t, dir, 240, hosts, 5)
	prom := startPrometheus(t, ctx, dir, true)
	bin := buildCollector(t, ctx, dir)
	var cols [2]*collectorProc
	for i, name := range []string{"a", "b"} {
		cols[i] = startCollector(t, ctx, bin, "-templates", fleet.tfile, "-remote-write", prom+"/api/v1/write",
			"-remote-write-interval", "500ms", "-remote-write-label", "collector="+name)
	}
	for h := range hosts {
		for j, b := range fleet.blobs[h] {
			cols[j%2].post(t, fmt.Sprintf("src=rw&host=h%d", h), b)
		}
	}
	all := fleet.all()
	n := float64(len(all))
	sum := 0.0
	for _, x := range all {
		sum += x
	}
	require.Eventually(t, func() bool {
		r := query(t, prom, `sum(e2e_lat_latency_hist_count{src="rw"})`)
		return r[""] == n && len(query(t, prom, `e2e_lat_latency_hist_count{src="rw"}`)) == 2*hosts
	}, 60*time.Second, 200*time.Millisecond, "both collectors' series arrived")

	t.Run("counts", func(t *testing.T) {
		for h := range hosts {
			xs := fleet.samples[h]
			s := 0.0
			for _, x := range xs {
				s += x
			}
			sel := fmt.Sprintf(`{src="rw",host="h%d"}`, h)
			require.Equal(t, float64(len(xs)), one(t, prom, "sum(e2e_lat_latency_hist_count"+sel+")"))
			require.Equal(t, s, one(t, prom, "sum(e2e_lat_latency_total"+sel+")"))
			require.Equal(t, float64(len(xs)), one(t, prom, "sum(e2e_lat_latency_tdigest_count"+sel+")"))
			require.Len(t, query(t, prom, "e2e_lat_latency_total"+sel), 2, "one series per collector")
		}
		require.Equal(t, sum, one(t, prom, `sum(e2e_lat_latency_hist_sum{src="rw"})`))
	})

	t.Run("classic buckets summed by le", func(t *testing.T) {
		buckets := byLE(t, query(t, prom, `sum by (le) (e2e_lat_latency_hist_bucket{src="rw"})`))
		var les []float64
		for le, v := range buckets {
			les = append(les, le)
			require.Equal(t, float64(countLE(all, le)), v, "le %v", le)
		}
		require.Greater(t, len(les), 10)
		p99 := exactQ(all, 0.99)
		got := one(t, prom, `histogram_quantile(0.99, sum by (le) (e2e_lat_latency_hist_bucket{src="rw"}))`)
		lo, hi := 0.0, math.Inf(1)
		for _, le := range les {
			if le >= p99 && le < hi {
				hi = le
			}
			if le < p99 && le > lo {
				lo = le
			}
		}
		t.Logf("fleet p99 exact %v, histogram_quantile over summed classic buckets %.0f in (%v, %v]", p99, got, lo, hi)
		require.True(t, got > lo && got <= hi, "%v outside the bucket (%v, %v] of the exact p99 %v", got, lo, hi, p99)
	})

	t.Run("native histograms summed", func(t *testing.T) {
		sel := `sum(e2e_lat_latency_tdigest_native{src="rw"})`
		require.Equal(t, n, one(t, prom, "histogram_count("+sel+")"))
		require.Equal(t, sum, one(t, prom, "histogram_sum("+sel+")"))
		// The merged fleet's answer: one digest of every blob.
		var bs []*blob.Blob
		for _, hb := range fleet.blobs {
			bs = append(bs, hb...)
		}
		merged, err := blob.MergeAll(nil, bs...)
		require.NoError(t, err)
		st, err := merged.Fetch(0, voi.TDgst)
		require.NoError(t, err)
		buckets := queryHist(t, prom, sel)
		for _, q := range []float64{0.5, 0.9, 0.99} {
			fleetQ, err := tdigest.Quantile(st.Data, st.DType, q)
			require.NoError(t, err)
			got := one(t, prom, pq("histogram_quantile(%g, %s)", q, sel))
			// The bucket of the answer: its width is the error allowed
			// beyond the digests' own (the buckets of the summed
			// histogram are the coarsest of the collectors').
			var in histBucket
			for _, b := range buckets {
				if got > b.lower && got <= b.upper {
					in = b
				}
			}
			require.NotZero(t, in.upper, "q%g: %v in no bucket", q, got)
			width := in.upper/in.lower - 1
			rel := math.Abs(got-fleetQ) / fleetQ
			t.Logf("q%g: summed native %.1f, merged fleet digest %.1f (%.3f%%, bucket (%.1f, %.1f], %.3f%% wide), exact %v, rank error %.4f",
				q, got, fleetQ, 100*rel, in.lower, in.upper, 100*width, exactQ(all, q), rankOf(all, got)-q)
			require.LessOrEqual(t, rel, width, "q%g: summed native histograms within a bucket of the merged fleet's digest", q)
			require.InDelta(t, q, rankOf(all, got), 0.01, "q%g: rank error against the exact samples", q)
		}
	})

	for _, c := range cols {
		m := c.metricsText(t)
		for _, want := range []string{`statsblob_collector_remote_write_dropped_total{reason="queue_full"} 0`,
			`statsblob_collector_remote_write_dropped_total{reason="rejected"} 0`,
			`statsblob_collector_remote_write_native_histograms 1`} {
			require.Contains(t, m, want)
		}
		c.stop(t)
	}
}

// A Prometheus without native histograms refuses them ("native histograms
// are disabled", a 500): the collector sends the same snapshot again as
// classic buckets, and classic buckets from then on; nothing is lost, and
// histogram_quantile over them is within a bucket of the exact samples.
func TestE2ERemoteWriteClassic(t *testing.T) {
	e2eEnabled(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	fleet := newLatFleet(t, dir, 60, 1, 9)
	prom := startPrometheus(t, ctx, dir, false)
	col := startCollector(t, ctx, buildCollector(t, ctx, dir), "-templates", fleet.tfile, "-remote-write", prom+"/api/v1/write",
		"-remote-write-interval", "300ms")
	col.post(t, "src=classic", fleet.blobs[0]...)
	xs := fleet.all()
	n := float64(len(xs))
	require.Eventually(t, func() bool {
		return query(t, prom, `e2e_lat_latency_tdigest_native_count{src="classic"}`)["src=classic"] == n
	}, 60*time.Second, 200*time.Millisecond, "classic buckets of the t-digest arrived")
	m := col.metricsText(t)
	require.Contains(t, m, "statsblob_collector_remote_write_native_histograms 0")
	require.Contains(t, m, `statsblob_collector_remote_write_dropped_total{reason="rejected"} 0`)
	require.Equal(t, n, one(t, prom, `e2e_lat_latency_hist_count{src="classic"}`))
	buckets := byLE(t, query(t, prom, `e2e_lat_latency_tdigest_native_bucket{src="classic"}`))
	require.Equal(t, n, buckets[math.Inf(1)])
	require.Greater(t, len(buckets), 10)
	for _, q := range []float64{0.5, 0.99} {
		got := one(t, prom, pq(`histogram_quantile(%g, e2e_lat_latency_tdigest_native_bucket{src="classic"})`, q))
		t.Logf("q%g: classic buckets (scale 3, 9%% wide) %.1f, exact %v, rank error %.4f", q, got, exactQ(xs, q), rankOf(xs, got)-q)
		require.InDelta(t, q, rankOf(xs, got), 0.01, "q%g", q)
		require.InEpsilon(t, exactQ(xs, q), got, math.Exp2(1.0/8)-1, "q%g: within a bucket", q)
	}
	col.stop(t)
}

// refuseNth answers its request number refuse (from 0) with a 400 without
// passing it on, as Prometheus answers a request holding an out-of-order
// sample (storing none of it), and passes the others to Prometheus.
type refuseNth struct {
	n      atomic.Int32
	refuse int32
}

func (r *refuseNth) RoundTrip(req *http.Request) (*http.Response, error) {
	if r.n.Add(1)-1 != r.refuse {
		return http.DefaultTransport.RoundTrip(req)
	}
	if req.Body != nil {
		_ = req.Body.Close()
	}
	return &http.Response{StatusCode: http.StatusBadRequest, Status: "400 Bad Request", Header: http.Header{},
		Body: io.NopCloser(strings.NewReader("out of order sample")), Request: req}, nil
}

// A host's series that end in a request Prometheus refuses get their stale
// markers in the next request it takes: every series of the host (float
// samples and the native histogram) is gone from instant queries from then
// on, not 5 minutes (the lookback) after its last sample.
func TestE2ERemoteWriteStaleAfterRefusal(t *testing.T) {
	e2eEnabled(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	fleet := newLatFleet(t, dir, 2, 2, 11)
	prom := startPrometheus(t, ctx, dir, true)
	w, err := remotewrite.New(remotewrite.Config{URL: prom + "/api/v1/write", Client: &http.Client{Transport: &refuseNth{refuse: 1}},
		Labels: []export.Label{{Name: "collector", Value: "stale"}}})
	require.NoError(t, err)
	named := func(h int) export.Named {
		return export.Named{Blob: fleet.blobs[h][0], Template: fleet.tp,
			Labels: []export.Label{{Name: "host", Value: fmt.Sprintf("h%d", h)}}}
	}
	now := time.Now().Truncate(time.Millisecond)
	t0, t1, t2 := now.Add(-30*time.Second), now.Add(-20*time.Second), now.Add(-10*time.Second)
	require.NoError(t, w.Enqueue([]export.Named{named(0), named(1)}, t0, time.Time{}))
	require.NoError(t, w.Enqueue([]export.Named{named(0)}, t1, time.Time{})) // refused, with h1's markers
	require.NoError(t, w.Enqueue([]export.Named{named(0)}, t2, time.Time{}))
	require.NoError(t, w.Close(ctx))
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(w.Collectors()...)
	mfs, err := reg.Gather()
	require.NoError(t, err)
	counters := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			k := mf.GetName()
			for _, l := range m.GetLabel() {
				k += "," + l.GetName() + "=" + l.GetValue()
			}
			counters[k] = m.GetCounter().GetValue()
		}
	}
	require.Equal(t, 1.0, counters["statsblob_collector_remote_write_dropped_total,reason=rejected"])
	require.Equal(t, 2.0, counters["statsblob_collector_remote_write_requests_total,result=ok"])
	require.Equal(t, 0.0, counters["statsblob_collector_remote_write_stale_markers_dropped_total,reason=lookback"])

	perHost := func(at time.Time) map[string]float64 {
		return queryAt(t, prom, `count by (host) ({collector="stale"})`, at)
	}
	before := perHost(t0.Add(5 * time.Second))
	require.Len(t, before, 2, "%v", before)
	n := before["host=h0"]
	t.Logf("%v series per host", n)
	require.Greater(t, n, 10.0, "float series and a native histogram per host")
	require.Equal(t, map[string]float64{"host=h0": n, "host=h1": n}, before)
	require.Equal(t, map[string]float64{"host=h0": n, "host=h1": n}, perHost(t1.Add(5*time.Second)),
		"the refused request's markers never arrived")
	require.Equal(t, map[string]float64{"host=h0": n}, perHost(t2.Add(5*time.Second)), "h1 marked stale at t2")
	require.Empty(t, queryAt(t, prom, `{collector="stale",host="h1",__name__=~".*_native"}`, t2.Add(time.Second)))
}
