package blob_test

import (
	"testing"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/internal/stream"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// uniformRing is FORMAT.md's benchmark ring: the uniform values of the
// conformance value stream.
func uniformRing() []uint64 { return stream.Ring(stream.Seed, 1<<16, stream.Uniform) }

func benchBlob(b *testing.B, stats ...tpl.StatSpec) *blob.Blob {
	b.Helper()
	reg := tpl.NewRegistry()
	t, err := reg.New("bench")
	if err != nil {
		b.Fatal(err)
	}
	if err := t.AddVOI(tpl.VOIDef{ID: 0, Name: "v", DType: voi.IntU64, Stats: stats}); err != nil {
		b.Fatal(err)
	}
	return blob.New(t, nil)
}

func BenchmarkUpdate(b *testing.B) {
	ring := uniformRing()
	for _, c := range []struct {
		name  string
		stats []tpl.StatSpec
	}{
		{"SUM", []tpl.StatSpec{tpl.Sum()}},
		{"SUM+MAX+MIN", []tpl.StatSpec{tpl.Sum(), tpl.Max(), tpl.Min()}},
	} {
		b.Run(c.name, func(b *testing.B) {
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
	}
}
