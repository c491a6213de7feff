package history_test

import (
	"fmt"
	"time"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/history"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// The last three one-minute periods of a latency VOI, read back per period
// as Linux's history statistics are.
func ExampleRing() {
	t, err := tpl.NewRegistry().New("API")
	if err == nil {
		err = t.AddVOI(tpl.VOIDef{ID: 0, Name: "latency_us", DType: voi.IntU64,
			Stats: []tpl.StatSpec{tpl.Sum(), tpl.Min(), tpl.Max(), tpl.TDigest(voi.TDgstClust64, 20, 8)}})
	}
	if err != nil {
		panic(err)
	}
	b := blob.New(t, nil)
	start := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	ring, err := history.NewRing(func() (*blob.Blob, error) { return b.Snapshot(true), nil }, time.Minute, 3, start)
	if err != nil {
		panic(err)
	}
	for m, vals := range [][]uint64{{120, 80}, {300}, {90, 110, 100}, {40}} {
		for _, v := range vals {
			_ = b.UpdateU64(0, v) // µs
		}
		_ = ring.Rotate(start.Add(time.Duration(m+1) * time.Minute)) // in a service: go ring.Run(ctx, nil)
	}
	for p := range ring.All() {
		s, _ := history.Summarize(p.Blob, 0)
		fmt.Printf("%s-%s n=%d min=%g avg=%g max=%g\n", p.Start.Format("15:04"), p.End.Format("15:04"), s.Count, s.Min, s.Avg, s.Max)
	}
	// Output:
	// 12:01-12:02 n=1 min=300 avg=300 max=300
	// 12:02-12:03 n=3 min=90 avg=100 max=110
	// 12:03-12:04 n=1 min=40 avg=40 max=40
}

// A range statistic (number, min, average, max) of a VOI that keeps SUM,
// MIN and MAX and counts its updates in a companion VOI, per period.
func ExampleSummarizeWith() {
	t, err := tpl.NewRegistry().New("API")
	if err == nil {
		err = t.AddVOI(tpl.VOIDef{ID: 0, Name: "latency_us", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum(), tpl.Min(), tpl.Max()}})
	}
	if err == nil {
		err = t.AddVOI(tpl.VOIDef{ID: 1, Name: "requests", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}})
	}
	if err == nil {
		err = t.SetVOIMeta(0, tpl.VOIMeta{Unit: "us", Count: "requests"})
	}
	if err != nil {
		panic(err)
	}
	h, err := blob.CountedOf(t, 0)
	if err != nil {
		panic(err)
	}
	b := blob.New(t, nil)
	start := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	ring, _ := history.NewRing(func() (*blob.Blob, error) { return b.Snapshot(true), nil }, time.Minute, 2, start)
	for m, vals := range [][]uint64{{120, 80}, {90, 110, 100}} {
		for _, v := range vals {
			_ = h.UpdateU64(b, v) // adds one to requests
		}
		_ = ring.Rotate(start.Add(time.Duration(m+1) * time.Minute))
	}
	for p := range ring.All() {
		s, _ := history.SummarizeWith(t, p.Blob, 0)
		fmt.Printf("%s n=%d min=%g avg=%g max=%g\n", p.Start.Format("15:04"), s.Count, s.Min, s.Avg, s.Max)
	}
	// Output:
	// 12:00 n=2 min=80 avg=100 max=120
	// 12:01 n=3 min=90 avg=100 max=110
}
