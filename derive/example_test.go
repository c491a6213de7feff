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
