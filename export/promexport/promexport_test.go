package promexport_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/export"
	"github.com/statsblob/statsblob/export/internal/fixture"
	"github.com/statsblob/statsblob/export/promexport"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// kitchenText is the exposition of fixture.KitchenBlob: every statistic
// kind and histogram shape, values worked out by hand in
// export's TestAppendKitchen.
const kitchenText = `# HELP kitchen_acklen_hist statsblob KITCHEN acklen: CRHIST32 (INT_U32)
# TYPE kitchen_acklen_hist histogram
kitchen_acklen_hist_bucket{host="web1",le="0"} 1
kitchen_acklen_hist_bucket{host="web1",le="1"} 3
kitchen_acklen_hist_bucket{host="web1",le="2"} 3
kitchen_acklen_hist_bucket{host="web1",le="3"} 3
kitchen_acklen_hist_bucket{host="web1",le="4"} 4
kitchen_acklen_hist_bucket{host="web1",le="+Inf"} 6
kitchen_acklen_hist_sum{host="web1"} NaN
kitchen_acklen_hist_count{host="web1"} 6
# HELP kitchen_acklen_max statsblob KITCHEN acklen: MAX (INT_U32)
# TYPE kitchen_acklen_max gauge
kitchen_acklen_max{host="web1"} 13
# HELP kitchen_bytes_total statsblob KITCHEN bytes: SUM (INT_U64)
# TYPE kitchen_bytes_total counter
kitchen_bytes_total{host="web1"} 1448
# HELP kitchen_cons_hist statsblob KITCHEN cons: DVHIST64 (INT_U32)
# TYPE kitchen_cons_hist histogram
kitchen_cons_hist_bucket{host="web1",le="2"} 0
kitchen_cons_hist_bucket{host="web1",le="3"} 1
kitchen_cons_hist_bucket{host="web1",le="4"} 3
kitchen_cons_hist_bucket{host="web1",le="5"} 4
kitchen_cons_hist_bucket{host="web1",le="+Inf"} 4
kitchen_cons_hist_sum{host="web1"} NaN
kitchen_cons_hist_count{host="web1"} 4
# HELP kitchen_cons_hist_outofrange_total statsblob KITCHEN cons: DVHIST64 out-of-range count (INT_U32)
# TYPE kitchen_cons_hist_outofrange_total counter
kitchen_cons_hist_outofrange_total{host="web1"} 2
# HELP kitchen_delta statsblob KITCHEN delta: SUM (INT_S32)
# TYPE kitchen_delta gauge
kitchen_delta{host="web1"} -4
# HELP kitchen_delta_max statsblob KITCHEN delta: MAX (INT_S32)
# TYPE kitchen_delta_max gauge
kitchen_delta_max{host="web1"} 5
# HELP kitchen_delta_min statsblob KITCHEN delta: MIN (INT_S32)
# TYPE kitchen_delta_min gauge
kitchen_delta_min{host="web1"} -12
# HELP kitchen_diff_hist statsblob KITCHEN diff: CRHIST32 (INT_S32)
# TYPE kitchen_diff_hist histogram
kitchen_diff_hist_bucket{host="web1",le="-1"} 1
kitchen_diff_hist_bucket{host="web1",le="+Inf"} 3
kitchen_diff_hist_sum{host="web1"} NaN
kitchen_diff_hist_count{host="web1"} 3
# HELP kitchen_lat_hist statsblob KITCHEN lat: CRHIST64 (INT_U32)
# TYPE kitchen_lat_hist histogram
kitchen_lat_hist_bucket{host="web1",le="9"} 1
kitchen_lat_hist_bucket{host="web1",le="19"} 3
kitchen_lat_hist_bucket{host="web1",le="49"} 5
kitchen_lat_hist_bucket{host="web1",le="+Inf"} 7
kitchen_lat_hist_sum{host="web1"} 1051
kitchen_lat_hist_count{host="web1"} 7
# HELP kitchen_lat_total statsblob KITCHEN lat: SUM (INT_U32)
# TYPE kitchen_lat_total counter
kitchen_lat_total{host="web1"} 1051
# HELP kitchen_ranges_hist_outofrange_total statsblob KITCHEN ranges: DRHIST64 out-of-range count (INT_U32)
# TYPE kitchen_ranges_hist_outofrange_total counter
kitchen_ranges_hist_outofrange_total{host="web1"} 2
# HELP kitchen_ranges_hist_total statsblob KITCHEN ranges: DRHIST64 bucket counts (INT_U32)
# TYPE kitchen_ranges_hist_total counter
kitchen_ranges_hist_total{bucket="[0,10)",host="web1"} 2
kitchen_ranges_hist_total{bucket="[20,30)",host="web1"} 1
# HELP kitchen_ratio statsblob KITCHEN ratio: SUM (Q_S64)
# TYPE kitchen_ratio gauge
kitchen_ratio{host="web1"} 16.25
# HELP kitchen_ratio_hist statsblob KITCHEN ratio: CRHIST32 (Q_S64)
# TYPE kitchen_ratio_hist histogram
kitchen_ratio_hist_bucket{host="web1",le="0.25"} 1
kitchen_ratio_hist_bucket{host="web1",le="0.75"} 3
kitchen_ratio_hist_bucket{host="web1",le="1.75"} 5
kitchen_ratio_hist_bucket{host="web1",le="+Inf"} 7
kitchen_ratio_hist_sum{host="web1"} 16.25
kitchen_ratio_hist_count{host="web1"} 7
# HELP kitchen_rtt_max statsblob KITCHEN rtt: MAX (INT_U32)
# TYPE kitchen_rtt_max gauge
kitchen_rtt_max{host="web1"} 40
# HELP kitchen_rtt_min statsblob KITCHEN rtt: MIN (INT_U32)
# TYPE kitchen_rtt_min gauge
kitchen_rtt_min{host="web1"} 10
# HELP kitchen_rtt_tdigest statsblob KITCHEN rtt: TDGSTCLUST64 t-digest (INT_U32)
# TYPE kitchen_rtt_tdigest summary
kitchen_rtt_tdigest{host="web1",quantile="0.5"} 25
kitchen_rtt_tdigest{host="web1",quantile="0.9"} 40
kitchen_rtt_tdigest{host="web1",quantile="0.99"} 40
kitchen_rtt_tdigest{host="web1",quantile="0.999"} 40
kitchen_rtt_tdigest_sum{host="web1"} 100
kitchen_rtt_tdigest_count{host="web1"} 4
# HELP kitchen_sig_hist_outofrange_total statsblob KITCHEN sig: DVHIST32 out-of-range count (INT_U32)
# TYPE kitchen_sig_hist_outofrange_total counter
kitchen_sig_hist_outofrange_total{host="web1"} 1
# HELP kitchen_sig_hist_total statsblob KITCHEN sig: DVHIST32 bucket counts (INT_U32)
# TYPE kitchen_sig_hist_total counter
kitchen_sig_hist_total{bucket="1",host="web1"} 1
kitchen_sig_hist_total{bucket="2",host="web1"} 2
kitchen_sig_hist_total{bucket="4",host="web1"} 0
kitchen_sig_hist_total{bucket="8",host="web1"} 1
# HELP kitchen_win_hist statsblob KITCHEN win: DRHIST32 (INT_S32)
# TYPE kitchen_win_hist histogram
kitchen_win_hist_bucket{host="web1",le="-11"} 0
kitchen_win_hist_bucket{host="web1",le="-1"} 2
kitchen_win_hist_bucket{host="web1",le="9"} 4
kitchen_win_hist_bucket{host="web1",le="99"} 6
kitchen_win_hist_bucket{host="web1",le="+Inf"} 6
kitchen_win_hist_sum{host="web1"} NaN
kitchen_win_hist_count{host="web1"} 6
# HELP kitchen_win_hist_outofrange_total statsblob KITCHEN win: DRHIST32 out-of-range count (INT_S32)
# TYPE kitchen_win_hist_outofrange_total counter
kitchen_win_hist_outofrange_total{host="web1"} 2
`

func TestCollectKitchen(t *testing.T) {
	tp := fixture.Kitchen()
	c, err := promexport.New(export.Static(export.Named{Blob: fixture.KitchenBlob(tp), Template: tp,
		Labels: []export.Label{{Name: "host", Value: "web1"}}}), export.Options{})
	require.NoError(t, err)
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(kitchenText)))
	// The pedantic registry accepts it (help and types consistent, no
	// collisions).
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(c))
	_, err = reg.Gather()
	require.NoError(t, err)
}

// Two label sets of one template are two series of each family; created
// timestamps are the blobs' last resets.
func TestCollectTwoSources(t *testing.T) {
	tp := fixture.Kitchen()
	a, b := fixture.KitchenBlob(tp), fixture.KitchenBlob(tp)
	require.NoError(t, b.UpdateU64(0, 52))
	c, err := promexport.New(export.Static(
		export.Named{Blob: a, Template: tp, Labels: []export.Label{{Name: "host", Value: "a"}}},
		export.Named{Blob: b, Template: tp, Labels: []export.Label{{Name: "host", Value: "b"}}},
	), export.Options{})
	require.NoError(t, err)
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(`# HELP kitchen_bytes_total statsblob KITCHEN bytes: SUM (INT_U64)
# TYPE kitchen_bytes_total counter
kitchen_bytes_total{host="a"} 1448
kitchen_bytes_total{host="b"} 1500
`), "kitchen_bytes_total"))
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(c))
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == "kitchen_bytes_total" {
			require.Len(t, mf.Metric, 2)
			require.Equal(t, int64(1_700_000_000), mf.Metric[0].Counter.CreatedTimestamp.Seconds)
		}
	}
}

// The native histogram option adds a family Prometheus scrapes in the
// protobuf format; its buckets are Prometheus-indexed (OTel index + 1).
func TestCollectNative(t *testing.T) {
	reg := tpl.NewRegistry()
	tp, _ := reg.New("N")
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "x", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.TDigest(voi.TDgstClust64, 20, 8)}}))
	b := blob.New(tp, blob.NewEnv(nil, 1))
	for _, v := range []uint64{1, 2, 4, 8} {
		require.NoError(t, b.UpdateU64(0, v))
	}
	c, err := promexport.New(export.Static(export.Named{Blob: b, Template: tp}), export.Options{NativeHistogram: true, NativeScale: -1})
	require.NoError(t, err)
	pr := prometheus.NewPedanticRegistry()
	require.NoError(t, pr.Register(c))
	mfs, err := pr.Gather()
	require.NoError(t, err)
	require.Len(t, mfs, 2)
	require.Equal(t, "n_x_tdigest_native", mfs[1].GetName())
	h := mfs[1].Metric[0].Histogram
	require.Equal(t, int32(-1), h.GetSchema())
	require.Equal(t, uint64(4), h.GetSampleCount())
	require.Equal(t, 15.0, h.GetSampleSum())
	// OTel buckets -1..1 hold 1, 2, 1: Prometheus indexes 0..2, one span,
	// counts delta-encoded.
	require.Len(t, h.PositiveSpan, 1)
	require.Equal(t, int32(0), h.PositiveSpan[0].GetOffset())
	require.Equal(t, uint32(3), h.PositiveSpan[0].GetLength())
	require.Equal(t, []int64{1, 1, -1}, h.PositiveDelta)
}

// A blob that cannot be mapped is an error of Gather; the others are still
// gathered.
func TestCollectError(t *testing.T) {
	tp := fixture.Kitchen()
	reg := tpl.NewRegistry()
	other, _ := reg.New("OTHER")
	require.NoError(t, other.AddVOI(tpl.VOIDef{ID: 0, Name: "x", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}))
	c, err := promexport.New(export.Static(
		export.Named{Blob: fixture.KitchenBlob(tp), Template: other},
		export.Named{Blob: blob.New(other, nil), Template: other},
	), export.Options{})
	require.NoError(t, err)
	pr := prometheus.NewPedanticRegistry()
	require.NoError(t, pr.Register(c))
	mfs, err := pr.Gather()
	require.ErrorContains(t, err, `exported with template "OTHER"`)
	require.Len(t, mfs, 1)
	require.Equal(t, "other_x_total", mfs[0].GetName())

	_, err = promexport.New(export.Static(), export.Options{Quantiles: []float64{2}})
	require.ErrorIs(t, err, voi.ErrInvalid)
	_, err = promexport.New(nil, export.Options{})
	require.ErrorIs(t, err, voi.ErrInvalid)
	require.EqualError(t, err, "promexport: no source: invalid argument")
}

// A blob without a reset time (sbintime 0: export.Metric.Start is zero,
// unknown) gives no created timestamp to any metric, the native histogram
// included (its constructor would say 0001-01-01); a known start is every
// one's created timestamp.
func TestCollectCreatedTimestampOnlyWhenStartKnown(t *testing.T) {
	tp, err := tpl.NewRegistry().New("N")
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "x", DType: voi.IntU64,
		Stats: []tpl.StatSpec{tpl.Sum(), tpl.TDigest(voi.TDgstClust64, 20, 8)}}))
	gather := func(clock func() int64) map[string]*dto.Metric {
		t.Helper()
		b := blob.New(tp, blob.NewEnv(clock, 1))
		for _, v := range []uint64{1, 2, 4, 8} {
			require.NoError(t, b.UpdateU64(0, v))
		}
		c, err := promexport.New(export.Static(export.Named{Blob: b, Template: tp}), export.Options{NativeHistogram: true})
		require.NoError(t, err)
		pr := prometheus.NewPedanticRegistry()
		require.NoError(t, pr.Register(c))
		mfs, err := pr.Gather()
		require.NoError(t, err)
		out := map[string]*dto.Metric{}
		for _, mf := range mfs {
			require.Len(t, mf.Metric, 1, mf.GetName())
			out[mf.GetName()] = mf.Metric[0]
		}
		require.Len(t, out, 3)
		return out
	}
	unknown := gather(func() int64 { return 0 })
	require.Nil(t, unknown["n_x_total"].Counter.CreatedTimestamp)
	require.Nil(t, unknown["n_x_tdigest"].Summary.CreatedTimestamp)
	require.Nil(t, unknown["n_x_tdigest_native"].Histogram.CreatedTimestamp)
	require.Equal(t, uint64(4), unknown["n_x_tdigest_native"].Histogram.GetSampleCount())

	start := export.SBinTime(1_700_000_000 << 32)
	known := gather(func() int64 { return 1_700_000_000 << 32 })
	require.Equal(t, start.Unix(), known["n_x_total"].Counter.CreatedTimestamp.AsTime().Unix())
	require.Equal(t, start.Unix(), known["n_x_tdigest"].Summary.CreatedTimestamp.AsTime().Unix())
	require.Equal(t, start.Unix(), known["n_x_tdigest_native"].Histogram.CreatedTimestamp.AsTime().Unix())
}

// Two templates whose names sanitise alike ("web" and "WEB") export the
// same families. Through a registry, the series they do not share are
// gathered under the first template's HELP, and a series both write is
// gathered once, the second writer's refused with an error naming both
// templates (export.ErrNameClash). Before, the families' HELPs differed and
// Gather refused every series of the second template with client_golang's
// "has help ... but should have" error, and a shared series with "was
// collected before", neither saying which templates clashed.
func TestCollectorNameClash(t *testing.T) {
	web, webTp := sumBlob(t, "web", "hits", voi.IntU64, 1)
	WEBa, WEBTp := sumBlob(t, "WEB", "hits", voi.IntU64, 2)
	WEBb, _ := sumBlob(t, "WEB", "hits", voi.IntU64, 3)
	a := []export.Label{{Name: "host", Value: "a"}}
	b := []export.Label{{Name: "host", Value: "b"}}
	c, err := promexport.New(export.Static(export.Named{Blob: web, Template: webTp, Labels: a},
		export.Named{Blob: WEBa, Template: WEBTp, Labels: a}, export.Named{Blob: WEBb, Template: WEBTp, Labels: b}), export.Options{})
	require.NoError(t, err)
	got, err := gathered(t, c)
	require.ErrorIs(t, err, export.ErrNameClash)
	require.ErrorContains(t, err, `series web_hits_total{host="a"} of template "WEB" is also template "web"'s`)
	require.Equal(t, `# HELP web_hits_total statsblob web hits: SUM (INT_U64)
# TYPE web_hits_total counter
web_hits_total{host="a"} 1
web_hits_total{host="b"} 3
`, got)
}

// Two blobs of one template under {} and {host=""} (a library's Source
// may hand them out) write one series: Prometheus takes a label of empty
// value for no label. Through a registry the first blob's series is
// gathered, the other refused with an error naming both label sets
// (export.ErrNameClash). Before, both were gathered as two series
// (web_hits_total 1 and web_hits_total{host=""} 2: the registry tells
// them apart), and a scrape stored one of them, named by nothing.
func TestCollectorOneTemplateOneSeries(t *testing.T) {
	web, webTp := sumBlob(t, "web", "hits", voi.IntU64, 1)
	web2, _ := sumBlob(t, "web", "hits", voi.IntU64, 2)
	c, err := promexport.New(export.Static(export.Named{Blob: web, Template: webTp},
		export.Named{Blob: web2, Template: webTp, Labels: []export.Label{{Name: "host", Value: ""}}}), export.Options{})
	require.NoError(t, err)
	got, err := gathered(t, c)
	require.ErrorIs(t, err, export.ErrNameClash)
	require.EqualError(t, err, `export: series web_hits_total{} of template "web" with labels {host=""} is also its series with labels {}: export: two blobs export one series`)
	require.Equal(t, `# HELP web_hits_total statsblob web hits: SUM (INT_U64)
# TYPE web_hits_total counter
web_hits_total 1
`, got)
}
