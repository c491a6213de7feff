//go:build go1.24

package qmath

import "testing"

var (
	sinkQ    Q
	sinkBool bool
	sinkErr  error
	sinkText []byte
)

func BenchmarkAddQ(b *testing.B) {
	x, y := s16(1.5), s16(-0.25)
	b.ReportAllocs()
	for b.Loop() {
		x, sinkErr = x.AddQ(y)
		if sinkErr != nil {
			b.Fatal(sinkErr)
		}
	}
	sinkQ = x
}

func BenchmarkLT(b *testing.B) {
	x, y := s16(-1.5), s16(-1.25)
	b.ReportAllocs()
	for b.Loop() {
		sinkBool = x.LT(y)
	}
}

func BenchmarkCpyValI(b *testing.B) {
	q := s16(0)
	b.ReportAllocs()
	for b.Loop() {
		sinkQ, sinkErr = q.CpyValI(I32(-12345))
	}
}

func BenchmarkAppendText(b *testing.B) {
	q := New(S64, 0x800000000006000c)
	buf := make([]byte, 0, 64)
	b.ReportAllocs()
	for b.Loop() {
		sinkText = q.AppendText(buf[:0])
	}
}
