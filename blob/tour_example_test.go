package blob_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"strings"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/tostr"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// The README's tour of the API: a template, a blob updated on the hot
// path, a snapshot shipped as bytes, and a collector that validates,
// queries and renders it. TestREADMETour keeps the README's copy equal to
// this body.
func Example_tour() {
	reg := tpl.NewRegistry()  // or tpl.Default
	t, err := reg.New("CONN") // template slot 0
	if err != nil {
		log.Fatal(err)
	}
	err = errors.Join(
		t.AddVOI(tpl.VOIDef{ID: 0, Name: "txbytes", DType: voi.IntU64,
			Stats: []tpl.StatSpec{tpl.Sum()}}),
		t.AddVOI(tpl.VOIDef{ID: 1, Name: "rtt", DType: voi.IntU32,
			Stats: []tpl.StatSpec{tpl.Max(), tpl.Min(),
				tpl.HistLin(voi.CRHist32, 0, 1000, 50, 0), // buckets 50 wide from 0 past 1000
				tpl.TDigest(voi.TDgstClust32, 20, 4)}}))
	if err != nil {
		log.Fatal(err)
	}

	rtt, err := blob.U32Of(t, 1) // a typed handle: rtt.Update takes a uint32
	if err != nil {
		log.Fatal(err)
	}

	b := blob.New(t, nil) // one []byte, laid out as the template says
	err = errors.Join(
		b.UpdateU64(0, 1448), // hot path: O(1), no allocation
		rtt.Update(b, 180), rtt.Update(b, 95), rtt.Update(b, 240))
	if err != nil {
		log.Fatal(err)
	}

	snap := b.Snapshot(true) // a copy; the live blob starts over
	wire := snap.Bytes()     // ship these bytes

	got, err := blob.FromBytes(wire, nil) // collector: a validated copy
	if err == nil {
		err = got.CheckTemplate(t) // of the sender's template
	}
	if err != nil {
		log.Fatal(err)
	}
	hi, err := got.FetchU32(1, voi.Max)
	if err != nil {
		log.Fatal(err)
	}
	p50, err := got.Quantile(1, 0.5) // from the VOI's t-digest (or its histogram)
	if err != nil {
		log.Fatal(err)
	}
	for id, s := range got.Stats() { // every statistic, VOIs in id order
		if v, err := s.Value(); err == nil && s.Type == voi.Sum {
			fmt.Println(id, s.Type, v)
		}
	}
	js, err := json.Marshal(tostr.JSONMarshaler{Blob: got, Flags: tostr.Meta, Template: t})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(hi, p50, strings.Contains(string(js), `"rtt"`))
	// Output:
	// 0 SUM 1448
	// 240 180 true
}
