package tdigest_test

import (
	"testing"

	"github.com/statsblob/statsblob/bsdrand"
	"github.com/statsblob/statsblob/tdigest"
	"github.com/statsblob/statsblob/voi"
)

// ring returns the 65536 values of the value stream started at the
// default seed with distribution dist (FORMAT.md section 14).
func ring(dist string) []uint64 {
	s := stream{0x9E3779B97F4A7C15}
	r := make([]uint64, 65536)
	for i := range r {
		r[i] = s.draw(dist)
	}
	return r
}

func benchUpdate(b *testing.B, dt, voiDT voi.DType, nctds uint32, dist string) {
	vals := ring(dist)
	d, err := tdigest.Build(dt, nctds, 4)
	if err != nil {
		b.Fatal(err)
	}
	env := &tdigest.Env{Rand: bsdrand.New(1)}
	b.ReportAllocs()
	b.ResetTimer()
	var rc error
	for i := 0; i < b.N; i++ {
		if err := tdigest.Update(d, dt, voiDT, vals[i&65535], env); err != nil {
			rc = err
		}
	}
	b.StopTimer()
	if rc != nil {
		b.Fatal(rc)
	}
	b.ReportMetric(float64(env.Rand.Calls())/float64(b.N), "rand/op")
}

// BenchmarkTdgst64x50Logish is the C reference's tdgst64_50 case: a
// TDGSTCLUST64(50,4) on an INT_U64 VOI fed the logish ring (C: 115 ns/op
// on the project's machine class, about one random() call per update).
func BenchmarkTdgst64x50Logish(b *testing.B) {
	benchUpdate(b, voi.TDgstClust64, voi.IntU64, 50, "logish")
}

func BenchmarkTdgst32x20Uniform(b *testing.B) {
	benchUpdate(b, voi.TDgstClust32, voi.IntU32, 20, "uniform")
}

func BenchmarkTdgst64x128Uniform(b *testing.B) {
	benchUpdate(b, voi.TDgstClust64, voi.IntU64, 128, "uniform")
}
