package blob_test

import (
	"fmt"
	"math"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// Adding up blobs whose INT_U32 SUM would pass 2^32-1: Merge refuses,
// Fold into the narrow form saturates and counts an error, Fold into the
// wide form (tpl.Widen) keeps counting exactly.
func ExampleFold() {
	t, _ := tpl.NewRegistry().New("WEB")
	_ = t.AddVOI(tpl.VOIDef{ID: 0, Name: "bytes", DType: voi.IntU32, Stats: []tpl.StatSpec{tpl.Sum()}})
	a, b := blob.New(t, nil), blob.New(t, nil)
	_ = a.UpdateU32(0, math.MaxUint32-10)
	_ = b.UpdateU32(0, 100)

	fmt.Println("Merge:", blob.Merge(a.Clone(), b))

	narrow := a.Clone()
	saturated, _ := blob.Fold(narrow, b)
	v, _ := narrow.FetchU32(0, voi.Sum)
	st, _ := narrow.Fetch(0, voi.Sum)
	fmt.Println("narrow:", v, "saturated:", saturated, "errs:", st.Errs)

	w, _ := tpl.Widen(t)
	wide, _ := blob.Widen(w, a, nil)
	saturated, _ = blob.Fold(wide, b)
	u, _ := wide.FetchU64(0, voi.Sum)
	fmt.Println("wide:", u, "saturated:", saturated)
	// Output:
	// Merge: blob: merge: VOI 0 SUM (INT_U32): value does not fit its type
	// narrow: 4294967295 saturated: 1 errs: 1
	// wide: 4294967385 saturated: 0
}
