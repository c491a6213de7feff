package otelexport_test

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"
	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/proto"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/export"
	"github.com/statsblob/statsblob/export/internal/fixture"
	"github.com/statsblob/statsblob/export/otelexport"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

var now = time.Unix(1_700_000_100, 0)

func kitchenProducer(t *testing.T, temp metricdata.Temporality, opts export.Options) *otelexport.Producer {
	t.Helper()
	tp := fixture.Kitchen()
	p, err := otelexport.New(export.Static(export.Named{Blob: fixture.KitchenBlob(tp), Template: tp,
		Labels: []export.Label{{Name: "host", Value: "web1"}}}),
		otelexport.Config{Options: opts, Temporality: temp, Now: func() time.Time { return now }})
	require.NoError(t, err)
	return p
}

// collect reads the producer through a ManualReader, as an SDK pipeline does.
func collect(t *testing.T, p *otelexport.Producer) metricdata.ResourceMetrics {
	t.Helper()
	r := sdkmetric.NewManualReader(sdkmetric.WithProducer(p))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	defer func() { require.NoError(t, mp.Shutdown(context.Background())) }()
	var rm metricdata.ResourceMetrics
	require.NoError(t, r.Collect(context.Background(), &rm))
	return rm
}

// kitchenWant is fixture.KitchenBlob in metricdata: the values of export's
// TestAppendKitchen. Histogram sums the blob does not know are NaN, which
// metricdatatest cannot compare: nanSum stands for them on both sides.
func kitchenWant(temp metricdata.Temporality, summary bool) metricdata.ScopeMetrics {
	start := time.Unix(1_700_000_000, 0)
	host := attribute.NewSet(attribute.String("host", "web1"))
	bucket := func(b string) attribute.Set {
		return attribute.NewSet(attribute.String("host", "web1"), attribute.String("bucket", b))
	}
	help := func(v, what, dt string) string { return "statsblob KITCHEN " + v + ": " + what + " (" + dt + ")" }
	unit := map[string]string{"rtt": "us", "lat": "ms", "bytes": "By"} // kitchenUnits in UCUM
	pt := func(v float64) metricdata.DataPoint[float64] {
		return metricdata.DataPoint[float64]{Attributes: host, StartTime: start, Time: now, Value: v}
	}
	sum := func(name, v, dt string, mono bool, x float64) metricdata.Metrics {
		return metricdata.Metrics{Name: name, Description: help(v, "SUM", dt), Unit: unit[v],
			Data: metricdata.Sum[float64]{Temporality: temp, IsMonotonic: mono, DataPoints: []metricdata.DataPoint[float64]{pt(x)}}}
	}
	gauge := func(name, v, what, dt string, x float64) metricdata.Metrics {
		return metricdata.Metrics{Name: name, Description: help(v, what, dt), Unit: unit[v], Data: metricdata.Gauge[float64]{DataPoints: []metricdata.DataPoint[float64]{pt(x)}}}
	}
	histo := func(name, v, dt, hdt string, bounds []float64, counts []uint64, total uint64, s float64) metricdata.Metrics {
		return metricdata.Metrics{Name: name, Description: help(v, hdt, dt), Unit: unit[v], Data: metricdata.Histogram[float64]{Temporality: temp,
			DataPoints: []metricdata.HistogramDataPoint[float64]{{Attributes: host, StartTime: start, Time: now,
				Count: total, Bounds: bounds, BucketCounts: counts, Sum: s}}}}
	}
	counters := func(name, v, dt, hdt string, labels []string, vals []float64) metricdata.Metrics {
		var dps []metricdata.DataPoint[float64]
		for i, l := range labels {
			dps = append(dps, metricdata.DataPoint[float64]{Attributes: bucket(l), StartTime: start, Time: now, Value: vals[i]})
		}
		return metricdata.Metrics{Name: name, Description: help(v, hdt+" bucket counts", dt), Unit: "{value}",
			Data: metricdata.Sum[float64]{Temporality: temp, IsMonotonic: true, DataPoints: dps}}
	}
	oob := func(name, v, dt, hdt string, x float64) metricdata.Metrics {
		return metricdata.Metrics{Name: name, Description: help(v, hdt+" out-of-range count", dt), Unit: "{value}",
			Data: metricdata.Sum[float64]{Temporality: temp, IsMonotonic: true, DataPoints: []metricdata.DataPoint[float64]{pt(x)}}}
	}
	// 10, 20, 30, 40: the closest neighbours, 30 and 40, are 4/3 apart:
	// scale 2 (buckets 2^(1/4) = 1.19 wide) tells them apart. Bucket i is
	// (2^(i/4), 2^((i+1)/4)]: 10 in 13, 20 in 17, 30 in 19, 40 in 21.
	rtt := metricdata.Metrics{Name: "kitchen.rtt.tdigest", Description: help("rtt", "TDGSTCLUST64 t-digest as an exponential histogram", "INT_U32"), Unit: "us",
		Data: metricdata.ExponentialHistogram[float64]{Temporality: temp, DataPoints: []metricdata.ExponentialHistogramDataPoint[float64]{{
			Attributes: host, StartTime: start, Time: now, Count: 4, Sum: 100, Scale: 2,
			Min: metricdata.NewExtrema(10.0), Max: metricdata.NewExtrema(40.0),
			PositiveBucket: metricdata.ExponentialBucket{Offset: 13, Counts: []uint64{1, 0, 0, 0, 1, 0, 1, 0, 1}}}}}}
	if summary {
		rtt = metricdata.Metrics{Name: "kitchen.rtt.tdigest", Description: help("rtt", "TDGSTCLUST64 t-digest", "INT_U32"), Unit: "us",
			Data: metricdata.Summary{DataPoints: []metricdata.SummaryDataPoint{{Attributes: host, StartTime: start, Time: now, Count: 4, Sum: 100,
				QuantileValues: []metricdata.QuantileValue{{Quantile: 0.5, Value: 25}, {Quantile: 0.9, Value: 40}, {Quantile: 0.99, Value: 40}, {Quantile: 0.999, Value: 40}}}}}}
	}
	return metricdata.ScopeMetrics{Scope: instrumentation.Scope{Name: otelexport.ScopeName}, Metrics: []metricdata.Metrics{
		sum("kitchen.bytes", "bytes", "INT_U64", true, 1448),
		sum("kitchen.delta", "delta", "INT_S32", false, -4),
		gauge("kitchen.delta.max", "delta", "MAX", "INT_S32", 5),
		gauge("kitchen.delta.min", "delta", "MIN", "INT_S32", -12),
		gauge("kitchen.acklen.max", "acklen", "MAX", "INT_U32", 13),
		histo("kitchen.acklen.hist", "acklen", "INT_U32", "CRHIST32", []float64{0, 1, 2, 3, 4}, []uint64{1, 2, 0, 0, 1, 2}, 6, nanSum),
		sum("kitchen.lat", "lat", "INT_U32", true, 1051),
		histo("kitchen.lat.hist", "lat", "INT_U32", "CRHIST64", []float64{9, 19, 49}, []uint64{1, 2, 2, 2}, 7, 1051),
		sum("kitchen.ratio", "ratio", "Q_S64", false, 16.25),
		histo("kitchen.ratio.hist", "ratio", "Q_S64", "CRHIST32", []float64{0.25, 0.75, 1.75}, []uint64{1, 2, 2, 2}, 7, 16.25),
		histo("kitchen.win.hist", "win", "INT_S32", "DRHIST32", []float64{-11, -1, 9, 99}, []uint64{0, 2, 2, 2, 0}, 6, nanSum),
		oob("kitchen.win.hist.out_of_range", "win", "INT_S32", "DRHIST32", 2),
		counters("kitchen.ranges.hist", "ranges", "INT_U32", "DRHIST64", []string{"[0,10)", "[20,30)"}, []float64{2, 1}),
		oob("kitchen.ranges.hist.out_of_range", "ranges", "INT_U32", "DRHIST64", 2),
		counters("kitchen.sig.hist", "sig", "INT_U32", "DVHIST32", []string{"1", "2", "4", "8"}, []float64{1, 2, 0, 1}),
		oob("kitchen.sig.hist.out_of_range", "sig", "INT_U32", "DVHIST32", 1),
		histo("kitchen.cons.hist", "cons", "INT_U32", "DVHIST64", []float64{2, 3, 4, 5}, []uint64{0, 1, 2, 1, 0}, 4, nanSum),
		oob("kitchen.cons.hist.out_of_range", "cons", "INT_U32", "DVHIST64", 2),
		gauge("kitchen.rtt.max", "rtt", "MAX", "INT_U32", 40),
		gauge("kitchen.rtt.min", "rtt", "MIN", "INT_U32", 10),
		rtt,
		histo("kitchen.diff.hist", "diff", "INT_S32", "CRHIST32", []float64{-1}, []uint64{1, 2}, 3, nanSum),
	}}
}

// kitchenUnits gives three VOIs units, as Prometheus words and UCUM codes.
var kitchenUnits = map[string]string{"rtt": "microseconds", "lat": "ms", "bytes": "bytes"}

const nanSum = -123456.5

// unNaN replaces NaN histogram sums with nanSum.
func unNaN(sm *metricdata.ScopeMetrics) {
	for i := range sm.Metrics {
		if h, ok := sm.Metrics[i].Data.(metricdata.Histogram[float64]); ok {
			for j := range h.DataPoints {
				if math.IsNaN(h.DataPoints[j].Sum) {
					h.DataPoints[j].Sum = nanSum
				}
			}
		}
	}
}

func TestProducerKitchen(t *testing.T) {
	for _, temp := range []metricdata.Temporality{metricdata.CumulativeTemporality, metricdata.DeltaTemporality} {
		for _, summary := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/summary=%v", temp, summary), func(t *testing.T) {
				rm := collect(t, kitchenProducer(t, temp, export.Options{Summary: summary, Units: kitchenUnits}))
				require.Len(t, rm.ScopeMetrics, 1)
				got := rm.ScopeMetrics[0]
				unNaN(&got)
				metricdatatest.AssertEqual(t, kitchenWant(temp, summary), got)
			})
		}
	}
}

// Units are UCUM units beside the name, never in it (a Prometheus word
// is translated); counts of values have unit {value}; a fixed scale is
// kept; PrometheusNames gives the Prometheus convention back.
func TestProducerUnitsScale(t *testing.T) {
	tp := fixture.Kitchen()
	b := fixture.KitchenBlob(tp)
	produce := func(cfg otelexport.Config) map[string]metricdata.Metrics {
		t.Helper()
		cfg.Now = func() time.Time { return now }
		p, err := otelexport.New(export.Static(export.Named{Blob: b, Template: tp}), cfg)
		require.NoError(t, err)
		out := map[string]metricdata.Metrics{}
		for _, m := range collect(t, p).ScopeMetrics[0].Metrics {
			out[m.Name] = m
		}
		return out
	}
	units := map[string]string{"rtt": "microseconds", "lat": "ms", "bytes": "bytes", "sig": "s"}
	got := produce(otelexport.Config{Options: export.Options{Units: units, NativeScale: -1, Namespace: "Fleet"}})
	require.Len(t, got, 22)
	for name, unit := range map[string]string{"fleet.kitchen.rtt.max": "us", "fleet.kitchen.rtt.tdigest": "us",
		"fleet.kitchen.lat": "ms", "fleet.kitchen.lat.hist": "ms", "fleet.kitchen.bytes": "By",
		"fleet.kitchen.sig.hist": "{value}", "fleet.kitchen.sig.hist.out_of_range": "{value}", "fleet.kitchen.delta": ""} {
		require.Contains(t, got, name)
		require.Equal(t, unit, got[name].Unit, name)
	}
	e := got["fleet.kitchen.rtt.tdigest"].Data.(metricdata.ExponentialHistogram[float64])
	dp := e.DataPoints[0]
	// 10, 20, 30, 40 in base 4: (4, 16] holds 10, (16, 64] the rest.
	require.Equal(t, int32(-1), dp.Scale)
	require.Equal(t, metricdata.ExponentialBucket{Offset: 1, Counts: []uint64{1, 3}}, dp.PositiveBucket)

	got = produce(otelexport.Config{Options: export.Options{Units: units, NativeHistogram: true, NativeScale: -1}, PrometheusNames: true})
	require.Len(t, got, 23)
	require.Equal(t, "us", got["kitchen_rtt_microseconds_max"].Unit)
	require.IsType(t, metricdata.Summary{}, got["kitchen_rtt_microseconds_tdigest"].Data)
	require.IsType(t, metricdata.ExponentialHistogram[float64]{}, got["kitchen_rtt_microseconds_tdigest_native"].Data)
}

// With PrometheusNames the names carry Prometheus unit words, but OTLP's
// Metric.unit is still UCUM: the word's code ("microseconds" is "us"), and
// "{value}" for counts of values (a DVHIST's buckets as counters, an
// out-of-range count), never the VOI's unit.
func TestProducerPrometheusNamesKeepUCUMUnits(t *testing.T) {
	tp := fixture.Kitchen()
	p, err := otelexport.New(export.Static(export.Named{Blob: fixture.KitchenBlob(tp), Template: tp}),
		otelexport.Config{PrometheusNames: true, Options: export.Options{Units: map[string]string{"sig": "us", "rtt": "microseconds", "lat": "ms"}}})
	require.NoError(t, err)
	sms, err := p.Produce(context.Background())
	require.NoError(t, err)
	got := map[string]string{}
	for _, m := range sms[0].Metrics {
		got[m.Name] = m.Unit
	}
	for name, unit := range map[string]string{
		"kitchen_rtt_microseconds_max":             "us",
		"kitchen_rtt_microseconds_min":             "us",
		"kitchen_rtt_microseconds_tdigest":         "us",
		"kitchen_lat_milliseconds":                 "ms",
		"kitchen_lat_milliseconds_hist":            "ms",
		"kitchen_sig_microseconds_hist":            "{value}",
		"kitchen_sig_microseconds_hist_outofrange": "{value}",
		"kitchen_cons_hist_outofrange":             "{value}",
		"kitchen_ranges_hist":                      "{value}",
		"kitchen_delta":                            "",
	} {
		require.Contains(t, got, name)
		require.Equal(t, unit, got[name], name)
	}
}

// Blobs that cannot be mapped are errors of the collection; the rest is
// still produced.
func TestProducerError(t *testing.T) {
	tp := fixture.Kitchen()
	p, err := otelexport.New(export.Static(export.Named{Blob: fixture.KitchenBlob(tp), Template: tp,
		Labels: []export.Label{{Name: "le", Value: "x"}}}, export.Named{Blob: fixture.KitchenBlob(tp), Template: tp}), otelexport.Config{})
	require.NoError(t, err)
	r := sdkmetric.NewManualReader(sdkmetric.WithProducer(p))
	sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	var rm metricdata.ResourceMetrics
	err = r.Collect(context.Background(), &rm)
	require.ErrorIs(t, err, voi.ErrInvalid)
	require.ErrorContains(t, err, `"le" is reserved`)
	require.Len(t, rm.ScopeMetrics[0].Metrics, 22)

	_, err = otelexport.New(export.Static(), otelexport.Config{Options: export.Options{NativeScale: 12}})
	require.ErrorIs(t, err, voi.ErrInvalid)
	_, err = otelexport.New(nil, otelexport.Config{})
	require.ErrorIs(t, err, voi.ErrInvalid)
	require.EqualError(t, err, "otelexport: no source: invalid argument")
}

// The stock OTLP/HTTP exporter ships the producer's metrics: an httptest
// server decodes the protobuf request.
func TestOTLPHTTP(t *testing.T) {
	var mu sync.Mutex
	var reqs []*colmetricpb.ExportMetricsServiceRequest
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil || r.URL.Path != "/v1/metrics" || r.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		req := &colmetricpb.ExportMetricsServiceRequest{}
		if err := proto.Unmarshal(body, req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		reqs = append(reqs, req)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		out, _ := proto.Marshal(&colmetricpb.ExportMetricsServiceResponse{})
		_, _ = w.Write(out)
	}))
	defer srv.Close()

	ctx := context.Background()
	exp, err := otlpmetrichttp.New(ctx, otlpmetrichttp.WithEndpointURL(srv.URL+"/v1/metrics"))
	require.NoError(t, err)
	p := kitchenProducer(t, metricdata.DeltaTemporality, export.Options{Units: map[string]string{"rtt": "microseconds", "bytes": "By"}})
	r := sdkmetric.NewPeriodicReader(exp, sdkmetric.WithProducer(p), sdkmetric.WithInterval(time.Hour))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	require.NoError(t, mp.ForceFlush(ctx))
	require.NoError(t, mp.Shutdown(ctx))

	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, reqs)
	got := map[string]*metricpb.Metric{}
	for _, req := range reqs {
		for _, rm := range req.ResourceMetrics {
			for _, sm := range rm.ScopeMetrics {
				if sm.Scope.GetName() != otelexport.ScopeName {
					continue
				}
				for _, m := range sm.Metrics {
					got[m.Name] = m
				}
			}
		}
	}
	require.Len(t, got, 22)
	bytes := got["kitchen.bytes"].GetSum()
	require.True(t, bytes.IsMonotonic)
	require.Equal(t, metricpb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA, bytes.AggregationTemporality)
	require.Equal(t, 1448.0, bytes.DataPoints[0].GetAsDouble())
	require.Equal(t, uint64(1_700_000_000)*1e9, bytes.DataPoints[0].StartTimeUnixNano)
	require.Equal(t, uint64(now.UnixNano()), bytes.DataPoints[0].TimeUnixNano)
	require.Equal(t, "host", bytes.DataPoints[0].Attributes[0].Key)
	require.Equal(t, "web1", bytes.DataPoints[0].Attributes[0].Value.GetStringValue())
	lat := got["kitchen.lat.hist"].GetHistogram().DataPoints[0]
	require.Equal(t, []float64{9, 19, 49}, lat.ExplicitBounds)
	require.Equal(t, []uint64{1, 2, 2, 2}, lat.BucketCounts)
	require.Equal(t, uint64(7), lat.Count)
	require.Equal(t, 1051.0, lat.GetSum())
	require.Equal(t, "By", got["kitchen.bytes"].Unit)
	require.Equal(t, "us", got["kitchen.rtt.tdigest"].Unit)
	rtt := got["kitchen.rtt.tdigest"].GetExponentialHistogram()
	require.Equal(t, metricpb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA, rtt.AggregationTemporality)
	e := rtt.DataPoints[0]
	require.Equal(t, uint64(4), e.Count)
	require.Equal(t, 100.0, e.GetSum())
	require.Equal(t, int32(2), e.Scale)
	require.Equal(t, int32(13), e.Positive.Offset)
	require.Equal(t, []uint64{1, 0, 0, 0, 1, 0, 1, 0, 1}, e.Positive.BucketCounts)
	require.Equal(t, 10.0, e.GetMin())
	require.Equal(t, 40.0, e.GetMax())
	sig := got["kitchen.sig.hist"].GetSum().DataPoints[0] // attributes in key order
	require.Equal(t, "bucket", sig.Attributes[0].Key)
	require.Equal(t, "1", sig.Attributes[0].Value.GetStringValue())
	require.Equal(t, 1.0, sig.GetAsDouble())
}

// Two templates whose names differ in case only export the same metric
// names: the points they do not share are produced under the first
// template's description, and a point both write (the same attributes) is
// the first template's, the other's error returned (export.ErrNameClash).
// Before, the Metrics held two points of one series.
func TestProducerNameClash(t *testing.T) {
	sumOf := func(name string, v uint64) (*blob.Blob, *tpl.Template) {
		tp, err := tpl.NewRegistry().New(name)
		require.NoError(t, err)
		require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "hits", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}))
		b := blob.New(tp, blob.NewEnv(func() int64 { return 1_700_000_000 << 32 }, 1))
		require.NoError(t, b.UpdateU64(0, v))
		return b, tp
	}
	web, webTp := sumOf("web", 1)
	WEBa, WEBTp := sumOf("WEB", 2)
	WEBb, _ := sumOf("WEB", 3)
	a := []export.Label{{Name: "host", Value: "a"}}
	b := []export.Label{{Name: "host", Value: "b"}}
	p, err := otelexport.New(export.Static(export.Named{Blob: web, Template: webTp, Labels: a},
		export.Named{Blob: WEBa, Template: WEBTp, Labels: a}, export.Named{Blob: WEBb, Template: WEBTp, Labels: b}),
		otelexport.Config{Now: func() time.Time { return now }})
	require.NoError(t, err)
	sms, err := p.Produce(context.Background())
	require.ErrorIs(t, err, export.ErrNameClash)
	require.EqualError(t, err, `export: series web.hits{host="a"} of template "WEB" is also template "web"'s: export: two blobs export one series`)
	start := export.SBinTime(1_700_000_000 << 32)
	pt := func(host string, v float64) metricdata.DataPoint[float64] {
		return metricdata.DataPoint[float64]{Attributes: attribute.NewSet(attribute.String("host", host)), StartTime: start, Time: now, Value: v}
	}
	metricdatatest.AssertEqual(t, metricdata.ScopeMetrics{Scope: instrumentation.Scope{Name: otelexport.ScopeName}, Metrics: []metricdata.Metrics{{
		Name: "web.hits", Description: "statsblob web hits: SUM (INT_U64)",
		Data: metricdata.Sum[float64]{Temporality: metricdata.CumulativeTemporality, IsMonotonic: true,
			DataPoints: []metricdata.DataPoint[float64]{pt("a", 1), pt("b", 3)}}}}}, sms[0])
}

// Two blobs of one template under {} and {host=""} (a library's Source
// may hand them out) are one series to Prometheus, where OTLP metrics
// often end: the first blob's point is produced, the other's error
// returned (export.ErrNameClash), naming both label sets. Before, the
// Metrics held both points.
func TestProducerOneTemplateOneSeries(t *testing.T) {
	sumOf := func(v uint64) (*blob.Blob, *tpl.Template) {
		tp, err := tpl.NewRegistry().New("web")
		require.NoError(t, err)
		require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "hits", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}))
		b := blob.New(tp, blob.NewEnv(func() int64 { return 1_700_000_000 << 32 }, 1))
		require.NoError(t, b.UpdateU64(0, v))
		return b, tp
	}
	first, tp := sumOf(1)
	second, _ := sumOf(2)
	p, err := otelexport.New(export.Static(export.Named{Blob: first, Template: tp},
		export.Named{Blob: second, Template: tp, Labels: []export.Label{{Name: "host", Value: ""}}}),
		otelexport.Config{Now: func() time.Time { return now }})
	require.NoError(t, err)
	sms, err := p.Produce(context.Background())
	require.ErrorIs(t, err, export.ErrNameClash)
	require.EqualError(t, err, `export: series web.hits{} of template "web" with labels {host=""} is also its series with labels {}: export: two blobs export one series`)
	metricdatatest.AssertEqual(t, metricdata.ScopeMetrics{Scope: instrumentation.Scope{Name: otelexport.ScopeName}, Metrics: []metricdata.Metrics{{
		Name: "web.hits", Description: "statsblob web hits: SUM (INT_U64)",
		Data: metricdata.Sum[float64]{Temporality: metricdata.CumulativeTemporality, IsMonotonic: true,
			DataPoints: []metricdata.DataPoint[float64]{{Attributes: attribute.NewSet(), StartTime: export.SBinTime(1_700_000_000 << 32), Time: now, Value: 1}}}}}}, sms[0])
}

// A derived metric's unit reaches OTLP in UCUM whatever spelling
// tpl.ParseUnit took: an average declared in "sec" has unit "s" (it was
// "sec"), one in "byte" "By", one in "kibibytes" "KiBy", in both naming
// conventions.
func TestProducerDerivedUnitsUCUM(t *testing.T) {
	tp, err := tpl.NewRegistry().New("IO")
	require.NoError(t, err)
	for id, name := range []string{"wait_us", "size", "ops"} {
		require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: int32(id), Name: name, DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}))
	}
	require.NoError(t, tp.SetVOIMeta(0, tpl.VOIMeta{Unit: "us"}))
	require.NoError(t, tp.SetVOIMeta(1, tpl.VOIMeta{Unit: "bytes"}))
	require.NoError(t, tp.SetDerived([]tpl.Derived{
		{Name: "wait_avg", Op: tpl.OpAverage, Of: "wait_us", By: "ops", Unit: "sec"},
		{Name: "wait_avg_s", Op: tpl.OpAverage, Of: "wait_us", By: "ops", Unit: "second"},
		{Name: "size_avg", Op: tpl.OpAverage, Of: "size", By: "ops", Unit: "byte"},
		{Name: "size_avg_kib", Op: tpl.OpAverage, Of: "size", By: "ops", Unit: "kibibytes"},
		{Name: "wait_ms", Op: tpl.OpAverage, Of: "wait_us", By: "ops", Unit: "milliseconds"},
	}))
	b := blob.New(tp, nil)
	for id, v := range []uint64{3000, 4096, 2} {
		require.NoError(t, b.UpdateU64(int32(id), v))
	}
	units := func(cfg otelexport.Config) map[string]string {
		t.Helper()
		p, err := otelexport.New(export.Static(export.Named{Blob: b, Template: tp}), cfg)
		require.NoError(t, err)
		got := map[string]string{}
		for _, m := range collect(t, p).ScopeMetrics[0].Metrics {
			got[m.Name] = m.Unit
		}
		return got
	}
	got := units(otelexport.Config{})
	for name, unit := range map[string]string{"io.wait_avg": "s", "io.wait_avg_s": "s", "io.size_avg": "By", "io.size_avg_kib": "KiBy", "io.wait_ms": "ms"} {
		require.Equal(t, unit, got[name], name)
	}
	got = units(otelexport.Config{PrometheusNames: true})
	for name, unit := range map[string]string{"io_wait_avg_seconds": "s", "io_wait_avg_s_seconds": "s", "io_size_avg_bytes": "By", "io_size_avg_kib_kibibytes": "KiBy", "io_wait_ms_milliseconds": "ms"} {
		require.Equal(t, unit, got[name], name)
	}
}
