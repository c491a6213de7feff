package tdigest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/statsblob/statsblob/bsdrand"
	"github.com/statsblob/statsblob/internal/trusted"
	"github.com/statsblob/statsblob/voi"
)

// foldFleet returns n C-mode TDGSTCLUST32(20,4) digests of 20 to 419
// samples each, like the RTT digests of TCP_DEFAULT connections (µs,
// about lognormal around a base that differs between connections), and
// an empty wide destination (TDGSTCLUST64(80,4), as tpl.Widen makes it).
func foldFleet(b *testing.B, n int) (srcs [][]byte, wide []byte) {
	r := rand.New(rand.NewPCG(1, 2))
	srcs = make([][]byte, n)
	for i := range srcs {
		d, err := Build(voi.TDgstClust32, 20, 4)
		if err != nil {
			b.Fatal(err)
		}
		c := trusted.TDigestCache{}
		rnd := bsdrand.New(r.Uint32())
		base := math.Ldexp(1+r.Float64(), 13+r.IntN(3)+r.IntN(3)) // 8 ms to 250 ms
		for range 20 + r.IntN(400) {
			v := float64(base*float64(0.5+r.Float64())) * float64(0.7+0.6*r.Float64())
			_ = updateTrusted(&c, d, voi.TDgstClust32, voi.IntU32, uint64(v), rnd)
		}
		srcs[i] = d
	}
	wide, err := Build(voi.TDgstClust64, 80, 4)
	if err != nil {
		b.Fatal(err)
	}
	return srcs, wide
}

// BenchmarkFoldBatch: a collector's fold of a batch of 1,024 digests into
// a wide one (per source digest).
func BenchmarkFoldBatch(b *testing.B) {
	srcs, wide := foldFleet(b, 1024)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += len(srcs) {
		clear(wide)
		w, _ := Build(voi.TDgstClust64, 80, 4)
		copy(wide, w)
		if err := mergeFromTrusted(wide, voi.TDgstClust64, voi.TDgstClust32, srcs[:min(len(srcs), b.N-i)]...); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFoldSmall: the fixed cost of a fold: 3 digests into a full
// wide one, and a merge of two full wide ones (per fold).
func BenchmarkFoldSmall(b *testing.B) {
	srcs, wide := foldFleet(b, 1024)
	if err := mergeFromTrusted(wide, voi.TDgstClust64, voi.TDgstClust32, srcs[:512]...); err != nil {
		b.Fatal(err)
	}
	wide2 := append([]byte(nil), wide...)
	if err := mergeFromTrusted(wide2, voi.TDgstClust64, voi.TDgstClust32, srcs[512:]...); err != nil {
		b.Fatal(err)
	}
	dst := append([]byte(nil), wide...)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		copy(dst, wide)
		if err := mergeFromTrusted(dst, voi.TDgstClust64, voi.TDgstClust32, srcs[3*(i%300):3*(i%300)+3]...); err != nil {
			b.Fatal(err)
		}
		if err := mergeAllTrusted(dst, voi.TDgstClust64, trusted.NoSamples, [][]byte{wide2}); err != nil {
			b.Fatal(err)
		}
	}
}

// foldParts returns the split parts of a fold of n digests of foldFleet,
// unsorted (as sortItems gets them).
func foldParts(b *testing.B, n int) []item {
	srcs, wide := foldFleet(b, n)
	sc := new(mergeScratch)
	sc.lo, sc.hi = trusted.NoSamples.Lo, trusted.NoSamples.Hi
	var d digest[node64]
	_ = d.init(wide, nil)
	g := d.geometry()
	for _, s := range srcs {
		readInput[node32](sc, g, s)
	}
	lo, hi := sc.dataRange(g)
	var items []item
	for _, in := range sc.ins {
		items = splitCentroids(items, sc.cs[in.start:in.end], lo, hi, in.maxn >= d.maxn)
	}
	return items
}

// BenchmarkSortItems: sortItems of the parts of a fold of 1,024 digests,
// of 8 (as many as a small fold into a wide digest sorts) and of 2 (per
// item).
func BenchmarkSortItems(b *testing.B) {
	for _, n := range []int{1024, 8, 2} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			parts := foldParts(b, n)
			items := make([]item, len(parts))
			var tmp []item
			b.ResetTimer()
			for i := 0; i < b.N; i += len(items) {
				copy(items, parts)
				tmp = sortItems(items, tmp)
			}
		})
	}
}
