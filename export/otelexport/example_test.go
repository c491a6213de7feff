package otelexport_test

import (
	"context"
	"fmt"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/export"
	"github.com/statsblob/statsblob/export/otelexport"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// Blobs snapshotted with reset hold deltas: the producer says so, and any
// reader (here a ManualReader; in production a PeriodicReader with an OTLP
// exporter) ships them.
func ExampleNew() {
	reg := tpl.NewRegistry()
	t, _ := reg.New("CONN")
	_ = t.AddVOI(tpl.VOIDef{ID: 0, Name: "txbytes", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}})
	live := blob.New(t, nil)
	_ = live.UpdateU64(0, 1448)
	snap := live.Snapshot(true)

	p, _ := otelexport.New(export.Static(export.Named{Blob: snap, Template: t}),
		otelexport.Config{Temporality: metricdata.DeltaTemporality, Options: export.Options{Units: map[string]string{"txbytes": "bytes"}}})
	r := sdkmetric.NewManualReader(sdkmetric.WithProducer(p))
	_ = sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	var rm metricdata.ResourceMetrics
	_ = r.Collect(context.Background(), &rm)
	for _, m := range rm.ScopeMetrics[0].Metrics {
		sum := m.Data.(metricdata.Sum[float64])
		fmt.Println(m.Name, m.Unit, sum.Temporality, sum.IsMonotonic, sum.DataPoints[0].Value)
	}
	// Output:
	// conn.txbytes By DeltaTemporality true 1448
}
