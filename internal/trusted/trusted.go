// Package trusted lets package blob call operations of lower packages
// without their checks of inputs that blob knows to pass them: a blob's
// t-digests were validated when its bytes came from outside, and updates,
// resets and merges keep them valid (tdigest.Validate's documentation),
// and blobs it merges were found compatible (same layout, histogram
// bounds and precisions).
// The lower package sets each function when it loads. The functions never
// panic on bytes that fail the checks, but their results on such bytes
// are unspecified.
package trusted

import (
	"github.com/statsblob/statsblob/internal/lut"
	"github.com/statsblob/statsblob/voi"
)

// TDigestMergeAll is tdigest.MergeAll without its validation of dst and
// srcs.
var TDigestMergeAll func(dst []byte, dt voi.DType, srcs ...[]byte) error

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
