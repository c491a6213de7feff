//go:build go1.24

package blob_test

import (
	"testing"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/tpl"
)

// BenchmarkHandleUpdate times an update through a typed handle beside the
// same update by id: the handle is a compile-time guard only.
func BenchmarkHandleUpdate(b *testing.B) {
	ring := uniformRing()
	for _, c := range []struct {
		name  string
		stats []tpl.StatSpec
	}{
		{"SUM", []tpl.StatSpec{tpl.Sum()}},
		{"SUM+MAX+MIN", []tpl.StatSpec{tpl.Sum(), tpl.Max(), tpl.Min()}},
	} {
		b.Run(c.name+"/id", func(b *testing.B) {
			bl := benchBlob(b, c.stats...)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if err := bl.UpdateU64(0, ring[i&0xFFFF]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
		b.Run(c.name+"/handle", func(b *testing.B) {
			bl := benchBlob(b, c.stats...)
			h := blob.U64{}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if err := h.Update(bl, ring[i&0xFFFF]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
		b.Run(c.name+"/sharded-id", func(b *testing.B) {
			s := blob.NewSharded(benchTemplate(b, c.stats...), 1, nil)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if err := s.UpdateU64(0, ring[i&0xFFFF]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
		b.Run(c.name+"/sharded-handle", func(b *testing.B) {
			s := blob.NewSharded(benchTemplate(b, c.stats...), 1, nil)
			h := blob.U64{}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if err := h.Update(s, ring[i&0xFFFF]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
