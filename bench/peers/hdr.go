package peers

import (
	"fmt"
	"sync"
	"testing"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// The benchmarks' HDR histogram: values 1..2^22 (every stream fits; 0 is
// counted in the first bucket), 2 significant digits (1%, as DDSketch).
const (
	HDRLowest  = 1
	HDRHighest = 1 << 22
	HDRSigFigs = 2
)

func newHDR(sigfigs int) *hdrhistogram.Histogram {
	return hdrhistogram.New(HDRLowest, HDRHighest, sigfigs)
}

func fillHDR(h *hdrhistogram.Histogram, ring []uint64) {
	for _, v := range ring {
		_ = h.RecordValue(int64(v))
	}
}

// encodeHDR is the library's one encoding: V2, zlib-compressed, base64.
func encodeHDR(h *hdrhistogram.Histogram) []byte {
	p, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		panic(err) // the one supported version
	}
	return p
}

func hdrPeer() Peer {
	update := func(b *testing.B, ring []uint64) {
		h := newHDR(HDRSigFigs)
		fillHDR(h, ring)
		start(b)
		for i := 0; i < b.N; i++ {
			_ = h.RecordValue(int64(ring[i&ringMask]))
		}
	}
	par := func(b *testing.B, ring []uint64) {
		h := newHDR(HDRSigFigs)
		fillHDR(h, ring)
		var mu sync.Mutex
		parallel(b, ring, func(v uint64) {
			mu.Lock()
			_ = h.RecordValue(int64(v))
			mu.Unlock()
		})
	}
	serialize := func(b *testing.B, ring []uint64) {
		h := newHDR(HDRSigFigs)
		fillHDR(h, ring)
		var p []byte
		start(b)
		for i := 0; i < b.N; i++ {
			p = encodeHDR(h)
		}
		b.ReportMetric(float64(len(p)), MetricBytes)
	}
	return Peer{
		Name:   "hdr",
		Config: fmt.Sprintf("New(%d, 2^22, %d); V2 compressed, base64", HDRLowest, HDRSigFigs),
		Locked: true,
		Ops:    ops(update, par, serialize),
	}
}

// hdrSketch is an HDR histogram of vals with the most significant digits
// (1..5) whose encoding fits in target bytes, or 1 digit if none does.
func hdrSketch(vals []uint64, target int) Sketch {
	var h *hdrhistogram.Histogram
	var n, digits int
	for d := 1; d <= 5; d++ {
		hd := newHDR(d)
		fillHDR(hd, vals)
		nd := len(encodeHDR(hd))
		if d > 1 && nd > target {
			break
		}
		h, n, digits = hd, nd, d
	}
	return Sketch{
		Setting:  fmt.Sprintf("significant digits: %d", digits),
		Bytes:    n,
		Quantile: func(q float64) float64 { return float64(h.ValueAtQuantile(q * 100)) },
	}
}
