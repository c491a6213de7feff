package otelexport_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/export"
	"github.com/statsblob/statsblob/export/otelexport"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// A VOI of microseconds with metadata exports in seconds with OTLP unit
// "s" (its name without the "_us"), its help as the description; a level
// as a Gauge.
func TestMetadataUnits(t *testing.T) {
	tp, err := tpl.NewRegistry().New("HTTP")
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "latency_us", DType: voi.IntU32, Stats: []tpl.StatSpec{tpl.Max()}}))
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 1, Name: "inflight", DType: voi.IntS64, Flags: voi.FlagRelUpdate, Stats: []tpl.StatSpec{tpl.Max()}}))
	require.NoError(t, tp.SetVOIMeta(0, tpl.VOIMeta{Unit: "us", Help: "Request latency."}))
	b := blob.New(tp, nil)
	require.NoError(t, b.UpdateU32(0, 2500))
	require.NoError(t, b.UpdateRelS64(1, 3))
	require.NoError(t, b.UpdateRelS64(1, -1))

	p, err := otelexport.New(export.Static(export.Named{Blob: b, Template: tp}), otelexport.Config{})
	require.NoError(t, err)
	r := sdkmetric.NewManualReader(sdkmetric.WithProducer(p))
	_ = sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	var rm metricdata.ResourceMetrics
	require.NoError(t, r.Collect(context.Background(), &rm))
	type got struct {
		name, unit, desc string
		v                float64
	}
	var gs []got
	for _, m := range rm.ScopeMetrics[0].Metrics {
		g := m.Data.(metricdata.Gauge[float64])
		gs = append(gs, got{m.Name, m.Unit, m.Description, g.DataPoints[0].Value})
	}
	require.Equal(t, []got{
		{"http.latency.max", "s", "Request latency. (MAX)", 0.0025},
		{"http.inflight", "", "statsblob HTTP inflight: level (sum of relative updates) (INT_S64)", 2},
		{"http.inflight.max", "", "statsblob HTTP inflight: MAX (INT_S64)", 3},
	}, gs)
}
