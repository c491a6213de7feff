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

import "github.com/statsblob/statsblob/voi"

// TDigestMergeAll is tdigest.MergeAll without its validation of dst and
// srcs.
var TDigestMergeAll func(dst []byte, dt voi.DType, srcs ...[]byte) error

// HistMerge is hist.Merge without its comparison of the two histograms'
// bounds.
var HistMerge func(dst, src []byte, hdt voi.DType) (saturated bool, err error)
