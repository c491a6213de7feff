package blob_test

import (
	"fmt"
	"sync"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

func connTemplate() *tpl.Template {
	t, err := tpl.NewRegistry().New("CONN")
	if err != nil {
		panic(err)
	}
	if err := t.AddVOI(tpl.VOIDef{ID: 0, Name: "bytes", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum(), tpl.Max()}}); err != nil {
		panic(err)
	}
	return t
}

// A collector validates blob bytes it receives and merges them.
func ExampleMergeAll() {
	t := connTemplate()
	var wire [][]byte
	for host := uint64(1); host <= 3; host++ {
		b := blob.New(t, nil)
		_ = b.UpdateU64(0, 100*host)
		_ = b.UpdateU64(0, 10*host)
		wire = append(wire, b.Bytes()) // shipped as bytes
	}

	var got []*blob.Blob
	for _, p := range wire {
		b, err := blob.FromBytes(p, nil) // validated copy
		if err != nil {
			fmt.Println("rejected:", err)
			continue
		}
		got = append(got, b)
	}
	total, err := blob.MergeAll(nil, got...)
	if err != nil {
		panic(err)
	}
	sum, _ := total.FetchU64(0, voi.Sum)
	max, _ := total.FetchU64(0, voi.Max)
	fmt.Println("sum", sum, "max", max)

	_, err = blob.FromBytes(wire[0][:40], nil)
	fmt.Println(err)
	// Output:
	// sum 660 max 300
	// blob: cursz 80 exceeds the 40 bytes given: invalid argument
}

// Many goroutines update one Sharded blob; a snapshot sees every update.
func ExampleSharded() {
	s := blob.NewSharded(connTemplate(), 4, nil)
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 1000; i++ {
				_ = s.UpdateU64(0, 1)
			}
		}()
	}
	wg.Wait()
	snap, err := s.Snapshot(true) // and reset the shards
	if err != nil {
		panic(err)
	}
	n, _ := snap.FetchU64(0, voi.Sum)
	fmt.Println(n)
	// Output: 8000
}
