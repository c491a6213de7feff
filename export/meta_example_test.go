package export_test

import (
	"fmt"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/export"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// With template metadata, a latency kept in integer microseconds exports
// in seconds with its count, and a level (requests in flight, kept by
// relative updates) exports as a gauge; a collector passes its senders'
// summed levels in Named.Levels.
func ExampleMapper_Append_metadata() {
	t, _ := tpl.NewRegistry().New("HTTP")
	_ = t.AddVOI(tpl.VOIDef{ID: 0, Name: "latency_us", DType: voi.IntU32, Stats: []tpl.StatSpec{tpl.Sum()}})
	_ = t.AddVOI(tpl.VOIDef{ID: 1, Name: "requests", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}})
	_ = t.AddVOI(tpl.VOIDef{ID: 2, Name: "inflight", DType: voi.IntS64, Flags: voi.FlagRelUpdate, Stats: []tpl.StatSpec{tpl.Max()}})
	_ = t.SetVOIMeta(0, tpl.VOIMeta{Unit: "us", Count: "requests"})
	b := blob.New(t, nil)
	lat, _ := blob.CountedOf(t, 0)
	for _, v := range []uint32{1500, 500} {
		_ = b.UpdateRelS64(2, 1)
		_ = lat.UpdateU32(b, v)
	}
	m, _ := export.NewMapper(export.Options{})
	for _, levels := range []map[int32]float64{nil, {2: 17}} {
		ms, _ := m.Append(nil, export.Named{Blob: b, Template: t, Levels: levels})
		for _, mt := range ms {
			switch {
			case mt.Summary != nil:
				fmt.Println(mt.Name, mt.Kind, mt.Unit, "sum", mt.Summary.Sum, "count", mt.Summary.Count)
			default:
				fmt.Println(mt.Name, mt.Kind, mt.Value)
			}
		}
	}
	// Output:
	// http_latency_seconds summary seconds sum 0.002 count 2
	// http_inflight gauge 2
	// http_inflight_max gauge 2
	// http_latency_seconds summary seconds sum 0.002 count 2
	// http_inflight gauge 17
	// http_inflight_max gauge 2
}
