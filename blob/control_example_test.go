package blob_test

import (
	"fmt"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// A Control turns a VOI's statistics off while a service is being
// debugged, and ResetVOI starts that VOI afresh, leaving the others.
func ExampleControl() {
	t, _ := tpl.NewRegistry().New("CONN")
	_ = t.AddVOI(tpl.VOIDef{ID: 0, Name: "bytes", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}})
	_ = t.AddVOI(tpl.VOIDef{ID: 1, Name: "rtt", DType: voi.IntU32, Stats: []tpl.StatSpec{tpl.Max()}})
	b := blob.New(t, nil)
	var ctl blob.Control
	b.SetControl(&ctl)

	_ = b.UpdateU32(1, 900)
	_ = ctl.Set(1, false) // rtt off
	_ = b.UpdateU32(1, 5000)
	_ = b.UpdateU64(0, 1448)
	rtt, _ := b.FetchU32(1, voi.Max)
	fmt.Println("rtt max while off:", rtt, "on:", ctl.On(1))

	_ = b.ResetVOI(1)
	_ = ctl.Set(1, true)
	_ = b.UpdateU32(1, 120)
	rtt, _ = b.FetchU32(1, voi.Max)
	bytes, _ := b.FetchU64(0, voi.Sum)
	fmt.Println("rtt max after reset:", rtt, "bytes kept:", bytes)
	// Output:
	// rtt max while off: 900 on: false
	// rtt max after reset: 120 bytes kept: 1448
}

// A Counted handle keeps a companion count beside a VOI's SUM, so the
// VOI has a mean.
func ExampleCountedOf() {
	t, _ := tpl.NewRegistry().New("HTTP")
	_ = t.AddVOI(tpl.VOIDef{ID: 0, Name: "latency_us", DType: voi.IntU32, Stats: []tpl.StatSpec{tpl.Sum()}})
	_ = t.AddVOI(tpl.VOIDef{ID: 1, Name: "requests", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}})
	_ = t.SetVOIMeta(0, tpl.VOIMeta{Unit: "us", Count: "requests"})
	lat, err := blob.CountedOf(t, 0)
	if err != nil {
		fmt.Println(err)
	}
	b := blob.New(t, nil)
	for _, v := range []uint32{1200, 800, 4000} {
		_ = lat.UpdateU32(b, v)
	}
	sum, _ := b.FetchU32(0, voi.Sum)
	n, _ := b.FetchU64(lat.CountID(), voi.Sum)
	fmt.Printf("count %d, mean %d µs\n", n, uint64(sum)/n)
	// Output:
	// count 3, mean 2000 µs
}
