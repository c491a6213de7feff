package peers

import (
	"fmt"
	"sync"
	"testing"

	caio "github.com/caio/go-tdigest/v4"

	"github.com/statsblob/statsblob/internal/accuracy"
)

// CaioCompression is the benchmarks' caio setting: the library's default.
const CaioCompression = 100

// newCaio returns a caio digest with its own seeded generator (the default
// draws from math/rand's global source).
func newCaio(compression float64) *caio.TDigest {
	td, err := caio.New(caio.Compression(compression), caio.LocalRandomNumberGenerator(1))
	if err != nil {
		panic(err) // compression >= 1
	}
	return td
}

func fillCaio(td *caio.TDigest, ring []uint64) {
	for _, v := range ring {
		_ = td.Add(float64(v))
	}
}

func caioPeer() Peer {
	update := func(b *testing.B, ring []uint64) {
		td := newCaio(CaioCompression)
		fillCaio(td, ring)
		start(b)
		for i := 0; i < b.N; i++ {
			_ = td.Add(float64(ring[i&ringMask]))
		}
	}
	par := func(b *testing.B, ring []uint64) {
		td := newCaio(CaioCompression)
		fillCaio(td, ring)
		var mu sync.Mutex
		parallel(b, ring, func(v uint64) {
			mu.Lock()
			_ = td.Add(float64(v))
			mu.Unlock()
		})
	}
	serialize := func(b *testing.B, ring []uint64) {
		td := newCaio(CaioCompression)
		fillCaio(td, ring)
		buf := td.ToBytes(nil)
		start(b)
		for i := 0; i < b.N; i++ {
			buf = td.ToBytes(buf[:0])
		}
		b.ReportMetric(float64(len(buf)), MetricBytes)
	}
	return Peer{
		Name:   "caio",
		Config: fmt.Sprintf("Compression(%d)", CaioCompression),
		Locked: true,
		Ops:    ops(update, par, serialize),
	}
}

// caioSketchCentroids is a caio digest of vals at the largest compression
// that keeps at most n centroids (bisectScan; at least compression 1).
func caioSketchCentroids(vals []uint64, n int) Sketch {
	return caioFitted(vals, bisectScan, func(td *caio.TDigest) bool { return accuracy.Centroids(td) <= n })
}

// caioSketch is a caio digest of vals at the largest compression whose
// serialization fits in target bytes (bisection; at least compression 1).
func caioSketch(vals []uint64, target int) Sketch {
	return caioFitted(vals, bisect, func(td *caio.TDigest) bool { return len(td.ToBytes(nil)) <= target })
}

// caioFitted is a caio digest of vals at the compression search finds in
// [1, 5000] (the largest for which fits holds of the digest), as a Sketch.
func caioFitted(vals []uint64, search func(lo, hi float64, ok func(float64) bool) float64, fits func(*caio.TDigest) bool) Sketch {
	build := func(c float64) *caio.TDigest {
		td := newCaio(c)
		fillCaio(td, vals)
		return td
	}
	c := search(1, 5000, func(c float64) bool { return fits(build(c)) })
	td := build(c)
	return Sketch{
		Setting:   fmt.Sprintf("compression %.1f", c),
		Bytes:     len(td.ToBytes(nil)),
		Centroids: accuracy.Centroids(td),
		Quantile:  td.Quantile,
	}
}
