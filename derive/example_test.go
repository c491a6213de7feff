package derive_test

import (
	"fmt"
	"time"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/derive"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// A cache declares its hit ratio and lookup rate; they are computed when
// read, between two readings ten seconds apart.
func Example() {
	t, _ := tpl.NewRegistry().New("CACHE")
	_ = t.AddVOI(tpl.VOIDef{ID: 0, Name: "hits", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}})
	_ = t.AddVOI(tpl.VOIDef{ID: 1, Name: "lookups", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}})
	_ = t.SetDerived([]tpl.Derived{
		{Name: "hit_percent", Op: tpl.OpPercent, Of: "hits", By: "lookups"},
		{Name: "lookup_rate", Op: tpl.OpRate, Of: "lookups"},
	})
	b := blob.New(t, nil)
	_ = b.UpdateU64(0, 10)
	_ = b.UpdateU64(1, 40)
	prev := b.Clone()
	_ = b.UpdateU64(0, 45)
	_ = b.UpdateU64(1, 60)

	vs, _ := derive.Compute(t, prev, b, 10*time.Second)
	for _, v := range vs {
		fmt.Printf("%s %s = %g\n", v.Name, v.Op, v.Value)
	}
	// Output:
	// hit_percent percent = 75
	// lookup_rate rate = 6
}

// The cache's process restarts between two readings a minute apart: its
// new blob's last reset tells, and the later reading stands alone, its
// rate over the 15 s from the restart to when it was read.
func ExampleComputeAt() {
	t, _ := tpl.NewRegistry().New("CACHE")
	_ = t.AddVOI(tpl.VOIDef{ID: 0, Name: "lookups", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}})
	_ = t.SetDerived([]tpl.Derived{{Name: "lookup_rate", Op: tpl.OpRate, Of: "lookups"}})
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	clock := func() int64 { return blob.SBinTimeOf(now) }

	before := blob.New(t, blob.NewEnv(clock, 1))
	_ = before.UpdateU64(0, 5000)
	prev := before.Clone() // read at 12:00:00

	now = now.Add(45 * time.Second) // the process restarts
	after := blob.New(t, blob.NewEnv(clock, 1))
	_ = after.UpdateU64(0, 60)
	now = now.Add(15 * time.Second) // read at 12:01:00

	vs, _ := derive.ComputeAt(t, prev, after, time.Minute, now)
	for _, v := range vs {
		fmt.Printf("%s = %g, since a reset: %v\n", v.Name, v.Value, v.SinceReset)
	}
	// Output:
	// lookup_rate = 4, since a reset: true
}
