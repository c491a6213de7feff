//go:build go1.24

package blob_test

import (
	"testing"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/internal/stream"
	"github.com/statsblob/statsblob/qmath"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// uniformRing is FORMAT.md's benchmark ring: the uniform values of the
// conformance value stream.
func uniformRing() []uint64 { return stream.Ring(stream.Seed, 1<<16, stream.Uniform) }

func benchBlob(b *testing.B, stats ...tpl.StatSpec) *blob.Blob {
	b.Helper()
	return blob.New(benchTemplate(b, stats...), nil)
}

func benchTemplate(b *testing.B, stats ...tpl.StatSpec) *tpl.Template {
	b.Helper()
	reg := tpl.NewRegistry()
	t, err := reg.New("bench")
	if err != nil {
		b.Fatal(err)
	}
	if err := t.AddVOI(tpl.VOIDef{ID: 0, Name: "v", DType: voi.IntU64, Stats: stats}); err != nil {
		b.Fatal(err)
	}
	return t
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

// BenchmarkUpdateQ times UpdateQ on a Q VOI (precision 16) fed the uniform
// ring as Q values: signed (value-500) for Q_S64, as is for Q_U32. Q_U32
// keeps no SUM, which 13 integer bits would overflow within the run and
// time the error path instead.
func BenchmarkUpdateQ(b *testing.B) {
	ring := uniformRing()
	for _, c := range []struct {
		name  string
		dt    voi.DType
		kind  qmath.Kind
		off   int64
		stats []tpl.StatSpec
	}{
		{"S64/SUM", voi.QS64, qmath.S64, -500, []tpl.StatSpec{tpl.Sum()}},
		{"S64/SUM+MAX+MIN", voi.QS64, qmath.S64, -500, []tpl.StatSpec{tpl.Sum(), tpl.Max(), tpl.Min()}},
		{"U32/MAX+MIN", voi.QU32, qmath.U32, 0, []tpl.StatSpec{tpl.Max(), tpl.Min()}},
	} {
		b.Run(c.name, func(b *testing.B) {
			qs := make([]qmath.Q, len(ring))
			for i, v := range ring {
				qs[i] = qmath.Ini(c.kind, int64(v)+c.off, 16)
			}
			t, err := tpl.NewRegistry().New("benchq")
			if err != nil {
				b.Fatal(err)
			}
			if err := t.AddVOI(tpl.VOIDef{ID: 0, Name: "q", DType: c.dt, Prec: 16, Stats: c.stats}); err != nil {
				b.Fatal(err)
			}
			bl := blob.New(t, nil)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if err := bl.UpdateQ(0, qs[i&0xFFFF]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
