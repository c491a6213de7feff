package peers

import (
	"bytes"
	"testing"

	"github.com/VictoriaMetrics/metrics"
)

// newVM returns a VictoriaMetrics histogram (log buckets, 18 per decade,
// created on first use) in a set of its own, which renders it.
func newVM() (*metrics.Set, *metrics.Histogram) {
	s := metrics.NewSet()
	return s, s.NewHistogram("v")
}

func fillVM(h *metrics.Histogram, ring []uint64) {
	for _, v := range ring {
		h.Update(float64(v))
	}
}

// vmPeer measures metrics.Histogram. Its serialization is the set's
// Prometheus text rendering (only non-empty vmrange buckets are written).
func vmPeer() Peer {
	update := func(b *testing.B, ring []uint64) {
		_, h := newVM()
		fillVM(h, ring)
		start(b)
		for i := 0; i < b.N; i++ {
			h.Update(float64(ring[i&ringMask]))
		}
	}
	par := func(b *testing.B, ring []uint64) {
		_, h := newVM()
		fillVM(h, ring)
		parallel(b, ring, func(v uint64) { h.Update(float64(v)) })
	}
	serialize := func(b *testing.B, ring []uint64) {
		s, h := newVM()
		fillVM(h, ring)
		var buf bytes.Buffer
		start(b)
		for i := 0; i < b.N; i++ {
			buf.Reset()
			s.WritePrometheus(&buf)
		}
		b.ReportMetric(float64(buf.Len()), MetricBytes)
	}
	return Peer{
		Name:   "victoriametrics",
		Config: "Set.NewHistogram; Prometheus text (WritePrometheus)",
		Ops:    ops(update, par, serialize),
	}
}
