package hist

import (
	"bytes"
	"fmt"
	"math"

	"github.com/statsblob/statsblob/internal/trusted"
	"github.com/statsblob/statsblob/voi"
)

// Compatible reports whether histogram src can merge into dst, both of
// type hdt: nil if they have the same size and bucket bounds, else an
// error wrapping voi.ErrInvalid that names the first difference.
func Compatible(dst, src []byte, hdt voi.DType) error {
	_, err := compatible(dst, src, hdt)
	return err
}

func compatible(dst, src []byte, hdt voi.DType) (geom, error) {
	g, ok := geomOf(hdt)
	if !ok {
		return g, fmt.Errorf("hist: merge: %v is not a histogram: %w", hdt, voi.ErrInvalid)
	}
	n := g.numBuckets(dst)
	if len(dst) != len(src) || n == 0 || len(dst) != DataSize(hdt, n) {
		return g, fmt.Errorf("hist: merge: %d and %d bytes: %w", len(dst), len(src), voi.ErrInvalid)
	}
	for i := 0; i < n; i++ {
		off := hdrSize + i*g.bsz
		if !bytes.Equal(dst[off:off+g.coff], src[off:off+g.coff]) {
			return g, fmt.Errorf("hist: merge: bucket %d bounds differ: %w", i, voi.ErrInvalid)
		}
	}
	return g, nil
}

// Merge adds the counts of histogram src into dst, two histograms of type
// hdt with identical bucket layouts (the same size and bounds): each
// bucket's count and the out-of-band count add. A sum that would overflow
// its counter (32 or 64 bits) saturates at the counter's maximum and
// Merge reports saturated = true, so the caller can count an error as
// updates do. Different types, sizes or bounds (see Compatible) give an
// error wrapping voi.ErrInvalid and leave dst unchanged.
//
// Merge is the byte-level building block of merges; blob.Merge and
// blob.MergeAll merge blobs (every statistic of every VOI).
func Merge(dst, src []byte, hdt voi.DType) (saturated bool, err error) {
	g, err := compatible(dst, src, hdt)
	if err != nil {
		return false, err
	}
	return mergeCounts(dst, src, g), nil
}

func init() { trusted.HistMerge = mergeTrusted }

// mergeTrusted is Merge for histograms a caller knows to be compatible
// (see package trusted): their bounds are not compared, only their type
// and sizes.
func mergeTrusted(dst, src []byte, hdt voi.DType) (saturated bool, err error) {
	g, ok := geomOf(hdt)
	if !ok || len(dst) != len(src) || len(dst) < hdrSize {
		return Merge(dst, src, hdt) // for its error
	}
	return mergeCounts(dst, src, g), nil
}

// mergeCounts adds src's counts to dst's, of geometry g and one size.
func mergeCounts(dst, src []byte, g geom) (saturated bool) {
	n := g.numBuckets(dst)
	limit := uint64(math.MaxUint64)
	if g.is32 {
		limit = math.MaxUint32
	}
	add := func(off int) {
		a, b := loadCount(dst, off, g.is32), loadCount(src, off, g.is32)
		if a > limit-b {
			saturated = true
			storeCount(dst, off, g.is32, limit)
			return
		}
		storeCount(dst, off, g.is32, a+b)
	}
	add(0)
	for i := 0; i < n; i++ {
		add(hdrSize + i*g.bsz + g.coff)
	}
	return saturated
}
