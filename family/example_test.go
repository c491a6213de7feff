package family_test

import (
	"errors"
	"fmt"

	"github.com/statsblob/statsblob/family"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// ExampleFamily_With keeps request latencies by method and status, one
// Sharded blob per label set, at most two sets.
func ExampleFamily_With() {
	t, err := tpl.NewRegistry().New("HTTP")
	if err != nil {
		panic(err)
	}
	if err := t.AddVOI(tpl.VOIDef{ID: 0, Name: "latency_us", DType: voi.IntU32, Stats: []tpl.StatSpec{tpl.Sum(), tpl.Max()}}); err != nil {
		panic(err)
	}
	fam, err := family.New(t, []string{"method", "status"}, family.Options{MaxSets: 2})
	if err != nil {
		panic(err)
	}
	for _, r := range []struct {
		method, status string
		us             uint32
	}{{"GET", "200", 180}, {"GET", "200", 95}, {"POST", "500", 2000}, {"PUT", "200", 7}} {
		b, err := fam.With(r.method, r.status)
		if errors.Is(err, family.ErrTooManySets) {
			fmt.Println(err)
			continue
		}
		if err == nil {
			err = b.UpdateU32(0, r.us)
		}
		if err != nil {
			panic(err)
		}
	}
	for _, s := range fam.Snapshot(true) {
		sum, _ := s.Blob.FetchU32(0, voi.Sum)
		hi, _ := s.Blob.FetchU32(0, voi.Max)
		fmt.Println(s.Values, sum, hi)
	}
	// Output:
	// family HTTP: new label set ["PUT" "200"]: 2 sets, at most 2: too many label sets
	// [GET 200] 275 180
	// [POST 500] 2000 2000
}
