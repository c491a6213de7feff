package export_test

import (
	"fmt"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/export"
	"github.com/statsblob/statsblob/hist"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// A latency VOI with a SUM and a linear histogram: the histogram's le
// bounds are the buckets' upper bounds minus one unit (µs here), exact for
// integer values, and its sum is the VOI's SUM.
func ExampleMapper_Append() {
	reg := tpl.NewRegistry()
	t, _ := reg.New("API")
	_ = t.AddVOI(tpl.VOIDef{ID: 0, Name: "latency", DType: voi.IntU32, Stats: []tpl.StatSpec{tpl.Sum(),
		tpl.Histogram(hist.Spec{DType: voi.CRHist32, Scheme: hist.Lin, LB: 100, UB: 300, StepInc: 100})}})
	b := blob.New(t, nil)
	for _, v := range []uint32{50, 100, 199, 200, 250, 900} {
		_ = b.UpdateU32(0, v)
	}
	m, _ := export.NewMapper(export.Options{Units: map[string]string{"latency": "microseconds"}})
	ms, _ := m.Append(nil, export.Named{Blob: b, Template: t, Labels: []export.Label{{Name: "host", Value: "web1"}}})
	for _, mt := range ms {
		fmt.Println(mt.Name, mt.Kind, mt.Labels)
		if h := mt.Histogram; h != nil {
			fmt.Println("  le", h.Bounds, "counts", h.Counts, "sum", h.Sum)
		} else {
			fmt.Println("  value", mt.Value)
		}
	}
	// Output:
	// api_latency_microseconds counter [{host web1}]
	//   value 1699
	// api_latency_microseconds_hist histogram [{host web1}]
	//   le [99 199 299] counts [1 2 2 1] sum 1699
}
