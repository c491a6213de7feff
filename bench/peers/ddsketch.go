package peers

import (
	"bytes"
	"fmt"
	"sync"
	"testing"

	"github.com/DataDog/sketches-go/ddsketch"
)

// DDSketchAccuracy is the benchmarks' relative accuracy: 1%, the library's
// usual setting.
const DDSketchAccuracy = 0.01

// newDDSketch returns the default sketch: logarithmic mapping, unbounded
// dense stores.
func newDDSketch(alpha float64) *ddsketch.DDSketch {
	s, err := ddsketch.NewDefaultDDSketch(alpha)
	if err != nil {
		panic(err) // 0 < alpha < 1
	}
	return s
}

func fillDDSketch(s *ddsketch.DDSketch, ring []uint64) {
	for _, v := range ring {
		_ = s.Add(float64(v))
	}
}

// encodeDDSketch appends the sketch's protobuf encoding (sketchpb.DDSketch)
// to buf through the library's streaming encoder.
func encodeDDSketch(buf *bytes.Buffer, s *ddsketch.DDSketch) {
	buf.Reset()
	s.EncodeProto(buf)
}

func ddsketchPeer() Peer {
	update := func(b *testing.B, ring []uint64) {
		s := newDDSketch(DDSketchAccuracy)
		fillDDSketch(s, ring)
		start(b)
		for i := 0; i < b.N; i++ {
			_ = s.Add(float64(ring[i&ringMask]))
		}
	}
	par := func(b *testing.B, ring []uint64) {
		s := newDDSketch(DDSketchAccuracy)
		fillDDSketch(s, ring)
		var mu sync.Mutex
		parallel(b, ring, func(v uint64) {
			mu.Lock()
			_ = s.Add(float64(v))
			mu.Unlock()
		})
	}
	serialize := func(b *testing.B, ring []uint64) {
		s := newDDSketch(DDSketchAccuracy)
		fillDDSketch(s, ring)
		var buf bytes.Buffer
		encodeDDSketch(&buf, s)
		start(b)
		for i := 0; i < b.N; i++ {
			encodeDDSketch(&buf, s)
		}
		b.ReportMetric(float64(buf.Len()), MetricBytes)
	}
	return Peer{
		Name:   "ddsketch",
		Config: fmt.Sprintf("NewDefaultDDSketch(%g); protobuf (EncodeProto)", DDSketchAccuracy),
		Locked: true,
		Ops:    ops(update, par, serialize),
	}
}

// ddsketchSketch is a DDSketch of vals at the finest relative accuracy
// whose protobuf encoding fits in target bytes (bisection).
func ddsketchSketch(vals []uint64, target int) Sketch {
	build := func(alpha float64) (*ddsketch.DDSketch, int) {
		s := newDDSketch(alpha)
		fillDDSketch(s, vals)
		var buf bytes.Buffer
		encodeDDSketch(&buf, s)
		return s, buf.Len()
	}
	// Bytes fall as alpha grows: bisect on -alpha so "fits" holds low.
	neg := bisect(-0.5, -1e-5, func(x float64) bool { _, n := build(-x); return n <= target })
	s, n := build(-neg)
	return Sketch{
		Setting: fmt.Sprintf("α = %.4f", -neg),
		Bytes:   n,
		Quantile: func(q float64) float64 {
			v, _ := s.GetValueAtQuantile(q)
			return v
		},
	}
}
