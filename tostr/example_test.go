package tostr_test

import (
	"fmt"
	"os"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/tostr"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// Example walks the whole life of a blob: declare a template, allocate a
// blob, update it on the hot path, take a snapshot that resets the live
// blob, and render the snapshot.
func Example() {
	reg := tpl.NewRegistry()
	t, err := reg.New("CONN")
	if err != nil {
		panic(err)
	}
	// VOI 0: bytes sent, summed; VOI 1: RTT in µs, with its extremes.
	if err := t.AddVOI(tpl.VOIDef{ID: 0, Name: "txbytes", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}); err != nil {
		panic(err)
	}
	if err := t.AddVOI(tpl.VOIDef{ID: 1, Name: "rtt", DType: voi.IntU32, Stats: []tpl.StatSpec{tpl.Max(), tpl.Min()}}); err != nil {
		panic(err)
	}

	// A fixed clock keeps the example's output stable; production code
	// passes nil for the wall clock.
	env := blob.NewEnv(func() int64 { return blob.SBinTime(1000, 0) }, 1)
	b := blob.New(t, env)
	for _, rtt := range []uint32{250, 180, 320} {
		_ = b.UpdateU64(0, 1448)
		_ = b.UpdateU32(1, rtt)
	}

	snap := b.Snapshot(true) // ship snap.Bytes(); b starts afresh
	_ = tostr.Write(os.Stdout, snap, tostr.Options{Format: tostr.JSON, Flags: tostr.Meta, Registry: reg})
	fmt.Println()
	sum, _ := b.FetchU64(0, voi.Sum)
	fmt.Println("live blob after reset:", sum)
	// Output:
	// {"tplname":"CONN","tplhash":2299641531,"vois":{"txbytes":{"stats":{"SUM":{"errs":0,"val":4344}}},"rtt":{"stats":{"MAX":{"errs":0,"val":320},"MIN":{"errs":0,"val":180}}}}}
	// live blob after reset: 0
}
