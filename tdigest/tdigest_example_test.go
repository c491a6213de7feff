package tdigest_test

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/statsblob/statsblob/bsdrand"
	"github.com/statsblob/statsblob/tdigest"
	"github.com/statsblob/statsblob/voi"
)

// A digest with 8 centroids whose means have 4 fractional bits, fed from an
// INT_U32 VOI, rendered as the C renders it.
func ExampleUpdate() {
	d, _ := tdigest.Build(voi.TDgstClust32, 8, 4)
	env := &tdigest.Env{Rand: bsdrand.New(1)}
	for _, v := range []uint64{100, 50, 150, 75, 100, 100} {
		if err := tdigest.Update(d, voi.TDgstClust32, voi.IntU32, v, env); err != nil {
			fmt.Println(err)
		}
	}
	fmt.Println(string(tdigest.AppendText(nil, d, voi.TDgstClust32, false, false)))
	fmt.Println(string(tdigest.AppendText(nil, d, voi.TDgstClust32, true, false)))
	fmt.Println(env.Rand.Calls(), "random() calls")
	// Output:
	// smplcnt=6, compcnt=0, maxctds=8, nctds=3
	// 				{mu=50.0000,cnt=1}
	// 				{mu=93.6875,cnt=4}
	// 				{mu=150.0000,cnt=1}
	// "smplcnt":6,"compcnt":0,"maxctds":8,"nctds":3,"ctds":[{"mu":50.0000,"cnt":1},{"mu":93.6875,"cnt":4},{"mu":150.0000,"cnt":1}]
	// 3 random() calls
}

// Quantiles, CDF and mean of 1000 samples 0..999 in a 64-bit digest of 32
// centroids.
func ExampleQuantile() {
	d, _ := tdigest.Build(voi.TDgstClust64, 32, 8)
	env := &tdigest.Env{Rand: bsdrand.New(1)}
	for i := range uint64(1000) {
		_ = tdigest.Update(d, voi.TDgstClust64, voi.IntU64, i*7919%1000, env)
	}
	for _, q := range []float64{0, 0.5, 0.9, 0.99, 1} {
		v, _ := tdigest.Quantile(d, voi.TDgstClust64, q)
		fmt.Printf("q=%.2f: %.1f\n", q, v)
	}
	p, _ := tdigest.CDF(d, voi.TDgstClust64, 250)
	m, _ := tdigest.Mean(d, voi.TDgstClust64)
	n, _ := tdigest.Count(d, voi.TDgstClust64)
	fmt.Printf("CDF(250)=%.3f mean=%.2f count=%d\n", p, m, n)
	_, err := tdigest.Quantile(d, voi.TDgstClust64, 1.5)
	fmt.Println(err)
	// Output:
	// q=0.00: 0.0
	// q=0.50: 499.9
	// q=0.90: 897.3
	// q=0.99: 989.5
	// q=1.00: 999.0
	// CDF(250)=0.250 mean=499.50 count=1000
	// tdigest: quantile outside [0, 1]: invalid argument
}

// The bounded queries for samples known to lie in [min, max] (a VOI's MIN
// and MAX; blob.Stat.Quantile passes them): between min and the first
// centroid, and between the last one and max, they interpolate instead
// of stopping at the outermost means. Two centroids, at 10 and 30, of one
// sample each; the samples were in [0, 40].
func ExampleQuantileBounded() {
	dt := voi.TDgstClust64
	d, _ := tdigest.Build(dt, 8, 4)
	env := &tdigest.Env{Rand: bsdrand.New(1)}
	_ = tdigest.Update(d, dt, voi.IntU64, 10, env)
	_ = tdigest.Update(d, dt, voi.IntU64, 30, env)
	for _, q := range []float64{0, 0.125, 1} {
		plain, _ := tdigest.Quantile(d, dt, q)
		bounded, _ := tdigest.QuantileBounded(d, dt, q, 0, 40)
		fmt.Printf("Q(%v): %v, bounded %v\n", q, plain, bounded)
	}
	plain, _ := tdigest.CDF(d, dt, 35)
	bounded, _ := tdigest.CDFBounded(d, dt, 35, 0, 40)
	fmt.Printf("CDF(35): %v, bounded %v\n", plain, bounded)
	// Output:
	// Q(0): 10, bounded 0
	// Q(0.125): 10, bounded 5
	// Q(1): 30, bounded 40
	// CDF(35): 1, bounded 0.875
}

// Walking the centroids in mean order without allocating. (A centroid
// holding one sample at the low end takes no other: the t-digest bound
// there is below two samples, hence the two centroids at 3.)
func ExampleIter() {
	d, _ := tdigest.Build(voi.TDgstClust64, 4, 2)
	env := &tdigest.Env{Rand: bsdrand.New(1)}
	for _, v := range []uint64{7, 3, 3, 12} {
		_ = tdigest.Update(d, voi.TDgstClust64, voi.IntU64, v, env)
	}
	it, _ := tdigest.Iter(d, voi.TDgstClust64, tdigest.MeanOrder)
	for it.Next() {
		c := it.Centroid()
		fmt.Printf("slot %d: mean %v (%s), count %d\n", c.Index, c.Mean(), c.Mu, c.Count)
	}
	// Output:
	// slot 1: mean 3 (3.00), count 1
	// slot 2: mean 3 (3.00), count 1
	// slot 0: mean 9.5 (9.50), count 2
}

// Merging two digests: every sample counted, the destination's size kept,
// and the same bytes whichever digest is the destination.
func ExampleMergeAll_two() {
	a, _ := tdigest.Build(voi.TDgstClust64, 6, 4)
	b, _ := tdigest.Build(voi.TDgstClust64, 6, 4)
	env := &tdigest.Env{Rand: bsdrand.New(1)}
	for i := range uint64(100) {
		_ = tdigest.Update(a, voi.TDgstClust64, voi.IntU64, i, env)
		_ = tdigest.Update(b, voi.TDgstClust64, voi.IntU64, 1000+i, env)
	}
	ab, ba := bytes.Clone(a), bytes.Clone(b)
	if err := tdigest.MergeAll(ab, voi.TDgstClust64, b); err != nil {
		fmt.Println(err)
	}
	_ = tdigest.MergeAll(ba, voi.TDgstClust64, a)
	n, _ := tdigest.Count(ab, voi.TDgstClust64)
	med, _ := tdigest.Quantile(ab, voi.TDgstClust64, 0.5)
	fmt.Println(n, "samples, valid:", tdigest.Validate(ab, voi.TDgstClust64) == nil, ", same bytes:", bytes.Equal(ab, ba))
	fmt.Printf("median between the halves: %v\n", med > 99 && med < 1000)
	// Output:
	// 200 samples, valid: true , same bytes: true
	// median between the halves: true
}

// Merging the digests of many connections into one of the same size: all
// samples counted, and the same bytes for any order of the inputs.
func ExampleMergeAll() {
	dt := voi.TDgstClust32
	env := &tdigest.Env{Rand: bsdrand.New(1)}
	var conns [][]byte
	for c := range uint64(50) {
		d, _ := tdigest.Build(dt, 20, 4)
		for i := range uint64(100) {
			_ = tdigest.Update(d, dt, voi.IntU32, 1000*c+i*i, env) // each connection its own range
		}
		conns = append(conns, d)
	}
	all, _ := tdigest.Build(dt, 20, 4)
	if err := tdigest.MergeAll(all, dt, conns...); err != nil {
		fmt.Println(err)
	}
	reversed, _ := tdigest.Build(dt, 20, 4)
	slices.Reverse(conns)
	_ = tdigest.MergeAll(reversed, dt, conns...)
	n, _ := tdigest.Count(all, dt)
	info, _ := tdigest.ReadInfo(all, dt)
	fmt.Println(n, "samples in", info.CurNodes, "centroids; order-independent:", bytes.Equal(all, reversed))
	// Output:
	// 5000 samples in 20 centroids; order-independent: true
}
