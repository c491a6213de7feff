package hist_test

import (
	"fmt"

	"github.com/statsblob/statsblob/hist"
	"github.com/statsblob/statsblob/voi"
)

// A linear histogram of round-trip times: ten buckets of 10 ms from 0, as
// the C's STATS_VSS_CRHIST64_LIN(0, 90, 10, 0) on a uint64 VOI.
func Example() {
	spec := hist.Spec{DType: voi.CRHist64, Scheme: hist.Lin, LB: 0, UB: 90, StepInc: 10}
	data, err := spec.Build(voi.IntU64)
	if err != nil {
		panic(err)
	}
	for _, rtt := range []uint64{3, 12, 17, 25, 250} {
		hist.Update(data, voi.CRHist64, voi.IntU64, rtt)
	}
	fmt.Println(len(data), "bytes,", hist.NumBuckets(voi.CRHist64, len(data)), "buckets")
	for i, b := range hist.Buckets(data, voi.CRHist64, voi.IntU64) {
		if b.Cnt > 0 {
			fmt.Printf("bucket %d [%d,%d): %d\n", i, b.LB, b.UB, b.Cnt)
		}
	}
	// Output:
	// 168 bytes, 10 buckets
	// bucket 0 [0,10): 1
	// bucket 1 [10,20): 2
	// bucket 2 [20,30): 1
	// bucket 9 [90,18446744073709551615): 1
}

// A Layout, made once per histogram layout, counts in constant time what
// Update finds by scanning. Lin buckets run until one ends above UB (here
// [100,150)); the inf flags add a bucket at each end.
func ExampleLayout() {
	spec := hist.Spec{DType: voi.DRHist32, Scheme: hist.Lin, LB: uint64(1<<64 - 100), UB: 100, StepInc: 50,
		Flags: hist.LBoundInf | hist.UBoundInf}
	data, _ := spec.Build(voi.IntS32)
	l, _ := hist.NewLayout(data, voi.DRHist32, voi.IntS32)
	for _, v := range []int32{-1000, -100, -51, 0, 99, 100, 1 << 30} {
		fmt.Print(l.Find(data, uint64(v)), ",")
		l.Update(data, uint64(v))
	}
	fmt.Println()
	for _, b := range hist.Buckets(data, voi.DRHist32, voi.IntS32) {
		fmt.Printf("[%d,%d):%d\n", int32(b.LB), int32(b.UB), b.Cnt)
	}
	// Output:
	// 0,1,1,3,4,5,6,
	// [-2147483648,-100):1
	// [-100,-50):2
	// [-50,0):0
	// [0,50):1
	// [50,100):1
	// [100,150):1
	// [150,2147483647):1
}

// Quantiles interpolate inside a bucket; out-of-band counts do not take
// part.
func ExampleQuantile() {
	spec := hist.Spec{DType: voi.CRHist32, Scheme: hist.Lin, LB: 0, UB: 30, StepInc: 10}
	data, _ := spec.Build(voi.IntU32)
	for v := range uint64(20) { // 0..19: ten in [0,10), ten in [10,20)
		hist.Update(data, voi.CRHist32, voi.IntU32, v)
	}
	for _, q := range []float64{0, 0.25, 0.5, 0.9, 1} {
		x, _ := hist.Quantile(data, voi.CRHist32, voi.IntU32, q)
		fmt.Printf("q%.2f=%g\n", q, x)
	}
	// Output:
	// q0.00=0
	// q0.25=5
	// q0.50=10
	// q0.90=18
	// q1.00=20
}

// The CDF is the fraction of counted values at most x; a DVHIST's buckets
// are point masses.
func ExampleCDF() {
	spec := hist.Spec{DType: voi.DVHist32, Scheme: hist.Usr, Buckets: []hist.Bound{{LB: 1, UB: 1}, {LB: 2, UB: 2}, {LB: 4, UB: 4}}}
	data, _ := spec.Build(voi.IntU32)
	for _, v := range []uint64{1, 1, 2, 4, 7} { // 7 is out of band
		hist.Update(data, voi.DVHist32, voi.IntU32, v)
	}
	for _, x := range []float64{0, 1, 3, 4} {
		c, _ := hist.CDF(data, voi.DVHist32, voi.IntU32, x)
		fmt.Printf("CDF(%g)=%g\n", x, c)
	}
	fmt.Println("oob:", hist.OOB(data, voi.DVHist32))
	// Output:
	// CDF(0)=0
	// CDF(1)=0.5
	// CDF(3)=0.75
	// CDF(4)=1
	// oob: 1
}

// Merging adds the counts of histograms with the same buckets.
func ExampleMerge() {
	spec := hist.Spec{DType: voi.CRHist32, Scheme: hist.Usr, Buckets: []hist.Bound{{LB: 0}, {LB: 100}}}
	a, _ := spec.Build(voi.IntU32)
	b, _ := spec.Build(voi.IntU32)
	hist.Update(a, voi.CRHist32, voi.IntU32, 5)
	hist.Update(b, voi.CRHist32, voi.IntU32, 500)
	saturated, err := hist.Merge(a, b, voi.CRHist32)
	fmt.Println(hist.Count(a, voi.CRHist32), saturated, err)
	// Output:
	// 2 false <nil>
}
