//go:build go1.24

package sample_test

import (
	"sync/atomic"
	"testing"

	"github.com/statsblob/statsblob/bsdrand"
	"github.com/statsblob/statsblob/sample"
)

// sink and psink keep results alive; psink is for parallel benchmarks.
var (
	sink  int32
	psink atomic.Int32
)

// flowSeed is a 12-byte IPv4 4-tuple, the kind of seed a subsystem rolls
// with.
func flowSeed() []byte { return []byte{192, 168, 0, 1, 192, 168, 0, 2, 0x01, 0xbb, 0xc3, 0x50} }

func BenchmarkTableRoll(b *testing.B) {
	tab := newTable(b, pcts(10, 20, 30))
	b.Run("seeded", func(b *testing.B) {
		seed := flowSeed()
		b.ReportAllocs()
		for b.Loop() {
			seed[11]++
			sink += tab.Roll(seed)
		}
	})
	b.Run("random", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sink += tab.RollRandom()
		}
	})
	b.Run("bsdrand", func(b *testing.B) {
		src := bsdrand.New(1)
		b.ReportAllocs()
		for b.Loop() {
			sink += tab.RollFrom(src)
		}
	})
	b.Run("seeded-parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			seed := flowSeed()
			var s int32
			for pb.Next() {
				seed[11]++
				s += tab.Roll(seed)
			}
			psink.Add(s)
		})
	})
	b.Run("random-parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			var s int32
			for pb.Next() {
				s += tab.RollRandom()
			}
			psink.Add(s)
		})
	})
}

func BenchmarkParse(b *testing.B) {
	reg := fixture(b)
	text := expand(b, reg, `tcp=10, "udp":{1}=20, :{2}=30`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := sample.Parse(reg, text); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendText(b *testing.B) {
	tab := newTable(b, pcts(10, 20, 30))
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		buf, _ = tab.AppendText(buf[:0])
	}
}
