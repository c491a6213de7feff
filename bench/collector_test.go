//go:build go1.24

package bench_test

import (
	"testing"

	"github.com/statsblob/statsblob/bench"
	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/tostr"
)

// BenchmarkCollector times what a collector does with the blobs of a
// fleet, one blob per operation unless the name says otherwise:
//
//	frombytes/F      blob.FromBytes (MB/s over the blob bytes)
//	unmarshal/F      UnmarshalBinary into one reused Blob
//	merge/F          blob.Merge of a decoded blob into an aggregate
//	mergeall/F       blob.MergeAll of the whole fleet per op (ns/blob reported)
//	json/F, freeform/F  tostr.Append with META into a reused buffer
//	e2e/F            FromBytes and a JSON rendering per blob, and a MergeAll
//	                 of the fleet's blobs once they are in (its share per blob)
//
// F is tcp (CollectorConns TCP_DEFAULT blobs of 1,656 bytes from the
// demo's simulation) or large (LARGE blobs of 23,368 bytes: a 1,000-bucket
// histogram and a 300-centroid t-digest). The peers' decode and merge of
// comparable sketches are BenchmarkCollector in bench/peers. Beside ns/op
// each reports cpu-ns/op, the process's CPU time per op (GC included),
// which a machine with more runnable threads than cores inflates far less
// than wall time.
func BenchmarkCollector(b *testing.B) {
	tcp, err := bench.TCPFleet(bench.CollectorConns, bench.CollectorSeed)
	if err != nil {
		b.Fatal(err)
	}
	large, err := bench.LargeFleet(100)
	if err != nil {
		b.Fatal(err)
	}
	for _, f := range []struct {
		name  string
		fleet *bench.Fleet
	}{{"tcp", tcp}, {"large", large}} {
		collectorBenchmarks(b, f.name, f.fleet)
	}
}

func collectorBenchmarks(b *testing.B, name string, f *bench.Fleet) {
	n := len(f.Wire)
	total := 0
	blobs := make([]*blob.Blob, n)
	for i, w := range f.Wire {
		total += len(w)
		bl, err := blob.FromBytes(w, nil)
		if err != nil {
			b.Fatal(err)
		}
		blobs[i] = bl
	}
	avg := int64(total / n)
	env := func() *blob.Env { return blob.NewEnv(func() int64 { return blob.SBinTime(1000, 0) }, 1) }
	b.Run("frombytes/"+name, func(b *testing.B) {
		b.SetBytes(avg)
		b.ReportAllocs()
		defer cpuPerOp(b)()
		for i := 0; b.Loop(); i++ {
			if _, err := blob.FromBytes(f.Wire[i%n], nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("unmarshal/"+name, func(b *testing.B) {
		var bl blob.Blob
		b.SetBytes(avg)
		b.ReportAllocs()
		defer cpuPerOp(b)()
		for i := 0; b.Loop(); i++ {
			if err := bl.UnmarshalBinary(f.Wire[i%n]); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("merge/"+name, func(b *testing.B) {
		acc := blobs[0].Clone()
		acc.SetEnv(env())
		b.ReportAllocs()
		defer cpuPerOp(b)()
		for i := 0; b.Loop(); i++ {
			_ = blob.Merge(acc, blobs[i%n])
		}
	})
	b.Run("mergeall/"+name, func(b *testing.B) {
		b.ReportAllocs()
		t0 := processCPU()
		for b.Loop() {
			if _, err := blob.MergeAll(env(), blobs...); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/blob")
		if t0 > 0 {
			b.ReportMetric(float64(processCPU()-t0)/float64(b.N*n), "cpu-ns/blob")
		}
	})
	for _, r := range []struct {
		name string
		f    tostr.Format
	}{{"json", tostr.JSON}, {"freeform", tostr.FreeForm}} {
		b.Run(r.name+"/"+name, func(b *testing.B) {
			o := tostr.Options{Format: r.f, Flags: tostr.Meta, Registry: f.Registry}
			var buf []byte
			b.ReportAllocs()
			defer cpuPerOp(b)()
			for i := 0; b.Loop(); i++ {
				var err error
				if buf, err = tostr.Append(buf[:0], blobs[i%n], o); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("e2e/"+name, func(b *testing.B) {
		// A collector's round: each blob decoded and rendered as it
		// arrives, the batch merged in one MergeAll when the fleet's
		// blobs are in (its cost shared by the blobs of the batch).
		o := tostr.Options{Format: tostr.JSON, Flags: tostr.Meta, Registry: f.Registry}
		var buf []byte
		batch := make([]*blob.Blob, 0, n)
		b.SetBytes(avg)
		b.ReportAllocs()
		defer cpuPerOp(b)()
		for i := 0; b.Loop(); i++ {
			bl, err := blob.FromBytes(f.Wire[i%n], nil)
			if err != nil {
				b.Fatal(err)
			}
			if buf, err = tostr.Append(buf[:0], bl, o); err != nil {
				b.Fatal(err)
			}
			if batch = append(batch, bl); len(batch) == n {
				if _, err := blob.MergeAll(env(), batch...); err != nil {
					b.Fatal(err)
				}
				batch = batch[:0]
			}
		}
	})
}

// cpuPerOp starts measuring the process's CPU time; the function it
// returns reports it per op as cpu-ns/op (per blob for mergeall).
func cpuPerOp(b *testing.B) func() {
	t0 := processCPU()
	return func() {
		if t0 > 0 && b.N > 0 {
			b.ReportMetric(float64(processCPU()-t0)/float64(b.N), "cpu-ns/op")
		}
	}
}
