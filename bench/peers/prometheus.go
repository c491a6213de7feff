package peers

import (
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
)

// The Prometheus histograms: classic buckets matching statsblob's
// CRHIST64_LIN(0,990,10) (upper bounds 10, 20, ..., 990, +Inf), and a
// native histogram at the library's recommended factor 1.1 (schema 3,
// 8 buckets per power of two) capped at 160 buckets (the cap halves the
// resolution rather than reset, as MinResetDuration is 0).
const (
	PromNativeFactor     = 1.1
	PromNativeMaxBuckets = 160
)

func newPromClassic() prometheus.Histogram {
	return prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "v",
		Buckets: prometheus.LinearBuckets(10, 10, 99),
	})
}

func newPromNative() prometheus.Histogram {
	return prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:                           "v",
		NativeHistogramBucketFactor:    PromNativeFactor,
		NativeHistogramMaxBucketNumber: PromNativeMaxBuckets,
	})
}

func promClassicPeer() Peer {
	return promPeer("prom-classic", "100 linear buckets (as statsblob-hist); bytes: proto.Size(dto.Metric)", newPromClassic)
}

func promNativePeer() Peer {
	return promPeer("prom-native",
		fmt.Sprintf("native, factor %g, ≤ %d buckets; bytes: proto.Size(dto.Metric)", PromNativeFactor, PromNativeMaxBuckets),
		newPromNative)
}

func fillProm(h prometheus.Histogram, ring []uint64) {
	for _, v := range ring {
		h.Observe(float64(v))
	}
}

// promPeer measures a prometheus.Histogram. Its serialization is Write to
// a dto.Metric, what a registry's Gather does per metric; the bytes are
// that message's protobuf size (the exposition format's payload).
func promPeer(name, config string, newHist func() prometheus.Histogram) Peer {
	update := func(b *testing.B, ring []uint64) {
		h := newHist()
		fillProm(h, ring)
		start(b)
		for i := 0; i < b.N; i++ {
			h.Observe(float64(ring[i&ringMask]))
		}
	}
	par := func(b *testing.B, ring []uint64) {
		h := newHist()
		fillProm(h, ring)
		parallel(b, ring, func(v uint64) { h.Observe(float64(v)) })
	}
	serialize := func(b *testing.B, ring []uint64) {
		h := newHist()
		fillProm(h, ring)
		var m dto.Metric
		start(b)
		for i := 0; i < b.N; i++ {
			m.Reset()
			if err := h.Write(&m); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(proto.Size(&m)), MetricBytes)
	}
	return Peer{Name: name, Config: config, Ops: ops(update, par, serialize)}
}
