package aggregate_test

import (
	"fmt"
	"time"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/export"
	"github.com/statsblob/statsblob/export/aggregate"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// A collector adds each posted blob to the aggregate of its template and
// labels, once per sender and sequence number, and exports the aggregates
// (blobs of the template's wide form).
func Example() {
	t, _ := tpl.NewRegistry().New("WEB")
	_ = t.AddVOI(tpl.VOIDef{ID: 0, Name: "bytes", DType: voi.IntU32, Stats: []tpl.StatSpec{tpl.Sum()}})
	s, _ := aggregate.New(aggregate.Config{}, time.Unix(0, 0))
	labels := []export.Label{{Name: "host", Value: "web1"}}
	post := func(seq uint64, v uint32) {
		b := blob.New(t, nil)
		_ = b.UpdateU32(0, v)
		wire, _ := blob.FromBytes(b.Bytes(), nil) // as received
		dup, err := s.Once("web1", "WEB/host=web1", seq, func() error { return s.Add("WEB/host=web1", t, labels, wire) })
		fmt.Println("seq", seq, "duplicate:", dup, "error:", err)
	}
	post(1, 4_000_000_000)
	post(2, 4_000_000_000)
	post(2, 4_000_000_000) // a retry of a post that had arrived
	for _, n := range s.Blobs() {
		sum, _ := n.Blob.FetchU64(0, voi.Sum)
		fmt.Println(n.Template.Name(), n.Labels, sum)
	}
	// Output:
	// seq 1 duplicate: false error: <nil>
	// seq 2 duplicate: false error: <nil>
	// seq 2 duplicate: true error: <nil>
	// WEB [{host web1}] 8000000000
}
