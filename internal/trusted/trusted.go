// Package trusted lets package blob call operations of lower packages
// that are not their public API: updates through state blob keeps beside
// the bytes, and operations without the checks of inputs that blob knows
// to pass them: a blob's
// t-digests were validated when its bytes came from outside, and updates,
// resets and merges keep them valid (tdigest.Validate's documentation),
// and blobs it merges were found compatible (same layout, histogram
// bounds and precisions).
// The lower package sets each function when it loads. The functions never
// panic on bytes that fail the checks, but their results on such bytes
// are unspecified.
package trusted

import (
	"math"

	"github.com/statsblob/statsblob/bsdrand"
	"github.com/statsblob/statsblob/internal/lut"
	"github.com/statsblob/statsblob/voi"
)

// TDigestCache holds, for one t-digest, what package tdigest keeps between
// updates through TDigestUpdate: its centroids in mean order (an array
// beside the bytes' red-black tree, so the nearest-centroid walk reads
// consecutive slots instead of following links) and its view of the bytes.
// The zero value is empty; the first update fills it. Its holder passes it
// with the same digest's bytes on every update, sets it back to its zero
// value or calls Invalidate whenever those bytes change by other means
// (reset, merge, decoding other bytes into them), and never uses it from
// two goroutines at once. Only package tdigest reads or sets C.
type TDigestCache struct {
	C interface{ Invalidate() }
	// Accurate selects tdigest.Accurate's clustering for the updates
	// through this cache: they buffer samples in C, which TDigestFlush
	// writes into the bytes (every view of the bytes must flush first;
	// Invalidate drops what is buffered). Its holder sets it before the
	// first update and keeps it.
	Accurate bool
}

// Invalidate makes the cache forget what it knows of the digest's bytes,
// keeping its memory for the next update to refill without allocating.
func (c *TDigestCache) Invalidate() {
	if c.C != nil {
		c.C.Invalidate()
	}
}

// TDigestUpdate is tdigest.Update through the cache c, drawing random()
// from rnd: the same bytes, draws and errors, faster from about 50
// centroid slots; with c.Accurate, the accurate mode's update (which
// draws nothing).
var TDigestUpdate func(c *TDigestCache, data []byte, dt, voiDT voi.DType, v uint64, rnd *bsdrand.Source) error

// TDigestFlush writes the samples an accurate-mode cache c buffers into
// the digest data of type dt (nothing for a C-mode cache or an empty
// buffer). It never fails: the updates that buffered the samples checked
// that they fit.
var TDigestFlush func(c *TDigestCache, data []byte, dt voi.DType)

// TDigestMergeAll is tdigest.MergeAll without its validation of dst and
// srcs.
var TDigestMergeAll func(dst []byte, dt voi.DType, srcs ...[]byte) error

// TDigestMergeAllFrom is tdigest.MergeAllFrom without its validation of
// dst and srcs.
var TDigestMergeAllFrom func(dst []byte, dt, sdt voi.DType, srcs ...[]byte) error

// TDigestMergeAllIn is TDigestMergeAll for inputs whose samples the caller
// knows of (see Samples).
var TDigestMergeAllIn func(dst []byte, dt voi.DType, known Samples, srcs ...[]byte) error

// Samples is what a blob knows of a t-digest's samples beyond the digest.
type Samples struct {
	// Lo and Hi bound them (a VOI's MIN and MAX; NaN where unknown): a
	// merge may then spread centroids out to those bounds, not only to
	// the inputs' extreme centroids.
	Lo, Hi float64
	// Integer is set for an integer VOI, whose answers blob.Stat rounds
	// to the nearest integer: a merge may then match runs of consecutive
	// integers where it cannot pin them (see tdigest's exactRuns).
	Integer bool
}

// NoSamples is knowing nothing of the samples beyond the digests.
var NoSamples = Samples{Lo: math.NaN(), Hi: math.NaN()}

// HistMerge is hist.Merge without its comparison of the two histograms'
// bounds.
var HistMerge func(dst, src []byte, hdt voi.DType) (saturated bool, err error)

// HistLayout is hist.NewLayout into *dst (a *hist.Layout: this package
// sits below hist and cannot name it) with at most maxTable bytes of
// counter table, returning that table (empty without one). Package blob
// bounds what decoding allocates with maxTable and counts through the
// table on its update path; the table and the limit are not hist's public
// API.
var HistLayout func(dst any, data []byte, hdt, voiDT voi.DType, maxTable int) (lut.Counters, error)
