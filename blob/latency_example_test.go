//go:build go1.25

package blob_test

import (
	"encoding/json"
	"fmt"
	"sync"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/hist"
	"github.com/statsblob/statsblob/tdigest"
	"github.com/statsblob/statsblob/tostr"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// A service keeps a latency VOI (histogram and t-digest) per connection,
// ships each connection's blob as bytes, and a collector decodes, merges
// and queries them. The t-digest is declared in the accurate mode: the
// C's clustering (tpl.TDigest's default, byte-identical to FreeBSD's)
// lets a few heavy centroids absorb most samples of a long-lived or
// sorted stream, while the accurate mode keeps rank errors near the best
// peer t-digests' at the same bytes, in the same blob layout.
func Example_latency() {
	t, _ := tpl.NewRegistry().New("CONN")
	const latency = 0 // VOI id: microseconds
	_ = t.AddVOI(tpl.VOIDef{ID: latency, Name: "latency_us", DType: voi.IntU64, Stats: []tpl.StatSpec{
		tpl.Max(), tpl.Min(),
		tpl.Histogram(hist.Spec{DType: voi.CRHist64, Scheme: hist.Lin, LB: 0, UB: 500, StepInc: 100}),
		tpl.TDigestOf(tpl.TDigestSpec{DType: voi.TDgstClust64, NCtds: 8, Prec: 16, Mode: tdigest.Accurate})}})

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
	fmt.Printf("p50 %.0f µs, p99 %.0f µs\n", p50, p99) // exact: 297 and 494 (the C's clustering: 311 and 467)
	js, _ := json.Marshal(tostr.JSONMarshaler{Blob: all, Flags: tostr.Meta, Template: t})
	fmt.Println(string(js))
	// Output:
	// p50 296 µs, p99 493 µs
	// {"tplname":"CONN","tplhash":1888381441,"vois":{"latency_us":{"stats":{"MAX":{"errs":0,"val":499},"MIN":{"errs":0,"val":100},"HIST":{"errs":0,"nbkts":6,"oob":0,"bkts":[{"lb":0,"ub":100,"cnt":0},{"lb":100,"ub":200,"cnt":89},{"lb":200,"ub":300,"cnt":115},{"lb":300,"ub":400,"cnt":113},{"lb":400,"ub":500,"cnt":83},{"lb":500,"ub":18446744073709551615,"cnt":0}]},"TDGST":{"errs":0,"smplcnt":400,"compcnt":4,"maxctds":8,"nctds":8,"ctds":[{"mu":106.2920684814453125,"cnt":10},{"mu":142.4226379394531250,"cnt":42},{"mu":197.7161560058593750,"cnt":68},{"mu":261.8175659179687500,"cnt":81},{"mu":332.8768463134765625,"cnt":81},{"mu":396.1723480224609375,"cnt":66},{"mu":453.1520996093750000,"cnt":42},{"mu":491.7721862792968750,"cnt":10}]}}}}}
}
