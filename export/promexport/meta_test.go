package promexport_test

import (
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/export"
	"github.com/statsblob/statsblob/export/promexport"
	"github.com/statsblob/statsblob/hist"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// httpBlob: a latency in microseconds counted by requests (unit, help,
// count), an in-flight level (relative updates), cache hits and lookups
// with a declared hit percentage.
func httpBlob(t testing.TB) (*tpl.Template, *blob.Blob) {
	tp, err := tpl.NewRegistry().New("HTTP")
	require.NoError(t, err)
	for _, d := range []tpl.VOIDef{
		{ID: 0, Name: "latency_us", DType: voi.IntU32, Stats: []tpl.StatSpec{tpl.Sum(), tpl.Max(),
			tpl.Histogram(hist.Spec{DType: voi.CRHist32, Scheme: hist.Lin, LB: 0, UB: 2000, StepInc: 1000})}},
		{ID: 1, Name: "requests", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}},
		{ID: 2, Name: "inflight", DType: voi.IntS64, Flags: voi.FlagRelUpdate, Stats: []tpl.StatSpec{tpl.Max()}},
		{ID: 3, Name: "hits", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}},
		{ID: 4, Name: "lookups", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}},
	} {
		require.NoError(t, tp.AddVOI(d))
	}
	require.NoError(t, tp.SetVOIMeta(0, tpl.VOIMeta{Unit: "us", Help: "Request latency.", Count: "requests"}))
	require.NoError(t, tp.SetVOIMeta(2, tpl.VOIMeta{Help: "Requests in flight.", Kind: tpl.KindGauge}))
	require.NoError(t, tp.SetVOIMeta(3, tpl.VOIMeta{Kind: tpl.KindCounter, Help: "Cache hits."}))
	require.NoError(t, tp.SetDerived([]tpl.Derived{{Name: "cache_hit", Op: tpl.OpPercent, Of: "hits", By: "lookups", Help: "Cache hits in percent of lookups."}}))
	b := blob.New(tp, blob.NewEnv(func() int64 { return blob.SBinTime(1_700_000_000, 0) }, 1))
	lat, err := blob.CountedOf(tp, 0)
	require.NoError(t, err)
	for _, v := range []uint32{1500, 250, 2500, 750} {
		require.NoError(t, b.UpdateRelS64(2, 1))
		require.NoError(t, lat.UpdateU32(b, v))
	}
	require.NoError(t, b.UpdateRelS64(2, -2))
	for _, hit := range []bool{true, true, false, true} {
		require.NoError(t, b.UpdateU64(4, 1))
		if hit {
			require.NoError(t, b.UpdateU64(3, 1))
		}
	}
	return tp, b
}

func TestMetadataExposition(t *testing.T) {
	tp, b := httpBlob(t)
	c, err := promexport.New(export.Static(export.Named{Blob: b, Template: tp, Labels: []export.Label{{Name: "host", Value: "web1"}}}), export.Options{})
	require.NoError(t, err)
	pr := prometheus.NewPedanticRegistry()
	pr.MustRegister(c)
	problems, err := testutil.CollectAndLint(c)
	require.NoError(t, err)
	require.Empty(t, problems)

	w := httptest.NewRecorder()
	promhttp.HandlerFor(pr, promhttp.HandlerOpts{}).ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	if path, err := exec.LookPath("promtool"); err == nil { // promtool check metrics, where installed
		cmd := exec.Command(path, "check", "metrics")
		cmd.Stdin = strings.NewReader(w.Body.String())
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		require.Empty(t, string(out))
	}
	var got []string
	for _, line := range strings.Split(w.Body.String(), "\n") {
		if strings.HasPrefix(line, "http_") || strings.HasPrefix(line, "# HELP http_") || strings.HasPrefix(line, "# TYPE http_") {
			got = append(got, line)
		}
	}
	require.Equal(t, []string{
		"# HELP http_cache_hit Cache hits in percent of lookups.",
		"# TYPE http_cache_hit gauge",
		`http_cache_hit{host="web1"} 75`,
		"# HELP http_hits_total Cache hits. (SUM)",
		"# TYPE http_hits_total counter",
		`http_hits_total{host="web1"} 3`,
		"# HELP http_inflight Requests in flight. (level (sum of relative updates))",
		"# TYPE http_inflight gauge",
		`http_inflight{host="web1"} 2`,
		"# HELP http_inflight_max Requests in flight. (MAX)",
		"# TYPE http_inflight_max gauge",
		`http_inflight_max{host="web1"} 4`,
		"# HELP http_latency_seconds Request latency. (SUM and count)",
		"# TYPE http_latency_seconds summary",
		`http_latency_seconds_sum{host="web1"} 0.005`,
		`http_latency_seconds_count{host="web1"} 4`,
		"# HELP http_latency_seconds_hist Request latency. (CRHIST32)",
		"# TYPE http_latency_seconds_hist histogram",
		`http_latency_seconds_hist_bucket{host="web1",le="0.000999"} 2`,
		`http_latency_seconds_hist_bucket{host="web1",le="0.001999"} 3`,
		`http_latency_seconds_hist_bucket{host="web1",le="+Inf"} 4`,
		`http_latency_seconds_hist_sum{host="web1"} 0.005`,
		`http_latency_seconds_hist_count{host="web1"} 4`,
		"# HELP http_latency_seconds_max Request latency. (MAX)",
		"# TYPE http_latency_seconds_max gauge",
		`http_latency_seconds_max{host="web1"} 0.0025`,
		"# HELP http_lookups_total statsblob HTTP lookups: SUM (INT_U64)",
		"# TYPE http_lookups_total counter",
		`http_lookups_total{host="web1"} 4`,
	}, got)
}
