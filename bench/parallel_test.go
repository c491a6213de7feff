package bench_test

import (
	"sync/atomic"
	"testing"

	"github.com/statsblob/statsblob/bench"
	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/internal/tcpstats"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// BenchmarkParallel measures blob.Sharded with as many writers as
// GOMAXPROCS: compare ns/op of -cpu 1 and -cpu 2 for the throughput
// scaling (ns/op is wall time per update across all writers).
func BenchmarkParallel(b *testing.B) {
	b.Run("summaxmin", func(b *testing.B) {
		t, err := tpl.NewRegistry().New("summaxmin")
		if err != nil {
			b.Fatal(err)
		}
		if err := t.AddVOI(tpl.VOIDef{ID: 0, Name: "v", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum(), tpl.Max(), tpl.Min()}}); err != nil {
			b.Fatal(err)
		}
		s := blob.NewSharded(t, 0, nil)
		ring := bench.UniformRing()
		var next atomic.Uint64
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			i := int(next.Add(1 << 20))
			for pb.Next() {
				_ = s.UpdateU64(0, ring[i&(bench.RingSize-1)])
				i++
			}
		})
	})
	b.Run("tcp_default", func(b *testing.B) {
		t, err := tcpstats.New(tpl.NewRegistry())
		if err != nil {
			b.Fatal(err)
		}
		s := blob.NewSharded(t, 0, nil)
		ring := bench.UniformRing()
		var next atomic.Uint64
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			i := int(next.Add(1 << 20))
			for pb.Next() {
				v := ring[i&(bench.RingSize-1)]
				switch k := int32(i % 10); k {
				case tcpstats.TxPB:
					_ = s.UpdateU64(k, v)
				case tcpstats.FrWin, tcpstats.LcWin:
					_ = s.UpdateULong(k, v)
				case tcpstats.CalcFrWinDiff, tcpstats.GPutND:
					_ = s.UpdateS32(k, int32(v))
				default:
					_ = s.UpdateU32(k, uint32(v))
				}
				i++
			}
		})
	})
}
