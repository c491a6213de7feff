//go:build go1.25

package blob_test

import (
	"encoding/json"
	"fmt"
	"sync"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/hist"
	"github.com/statsblob/statsblob/tostr"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// A service keeps a latency VOI (histogram and t-digest) per connection,
// ships each connection's blob as bytes, and a collector decodes, merges
// and queries them.
func Example_latency() {
	t, _ := tpl.NewRegistry().New("CONN")
	const latency = 0 // VOI id: microseconds
	_ = t.AddVOI(tpl.VOIDef{ID: latency, Name: "latency_us", DType: voi.IntU64, Stats: []tpl.StatSpec{
		tpl.Max(), tpl.Min(),
		tpl.Histogram(hist.Spec{DType: voi.CRHist64, Scheme: hist.Lin, LB: 0, UB: 500, StepInc: 100}),
		tpl.TDigest(voi.TDgstClust64, 8, 16)}})

	wire := make(chan []byte)
	var wg sync.WaitGroup
	for conn := range uint64(4) { // a goroutine per connection, a blob each
		wg.Go(func() {
			b := blob.New(t, nil)
			for i := range uint64(100) {
				_ = b.UpdateU64(latency, 100+(conn*31+i*7)%400)
			}
			wire <- b.Snapshot(true).Bytes() // ship the bytes; b starts afresh
		})
	}
	go func() { wg.Wait(); close(wire) }()

	var got []*blob.Blob // the collector
	for p := range wire {
		b, err := blob.FromBytes(p, nil) // validated copy
		if err != nil {
			panic(err)
		}
		got = append(got, b)
	}
	all, _ := blob.MergeAll(nil, got...) // order-independent
	p50, _ := all.Quantile(latency, 0.5)
	p99, _ := all.Quantile(latency, 0.99)
	fmt.Printf("p50 %.0f µs, p99 %.0f µs\n", p50, p99)
	js, _ := json.Marshal(tostr.JSONMarshaler{Blob: all, Flags: tostr.Meta, Template: t})
	fmt.Println(string(js))
	// Output:
	// p50 311 µs, p99 467 µs
	// {"tplname":"CONN","tplhash":1888381441,"vois":{"latency_us":{"stats":{"MAX":{"errs":0,"val":499},"MIN":{"errs":0,"val":100},"HIST":{"errs":0,"nbkts":6,"oob":0,"bkts":[{"lb":0,"ub":100,"cnt":0},{"lb":100,"ub":200,"cnt":89},{"lb":200,"ub":300,"cnt":115},{"lb":300,"ub":400,"cnt":113},{"lb":400,"ub":500,"cnt":83},{"lb":500,"ub":18446744073709551615,"cnt":0}]},"TDGST":{"errs":0,"smplcnt":400,"compcnt":40,"maxctds":8,"nctds":8,"ctds":[{"mu":106.8252563476562500,"cnt":11},{"mu":141.7743988037109375,"cnt":38},{"mu":198.7035980224609375,"cnt":74},{"mu":279.2013854980468750,"cnt":83},{"mu":351.9112854003906250,"cnt":79},{"mu":396.2545623779296875,"cnt":61},{"mu":428.7086944580078125,"cnt":44},{"mu":458.5069580078125000,"cnt":10}]}}}}}
}
