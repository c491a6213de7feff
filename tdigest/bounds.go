package tdigest

import (
	"fmt"
	"math/bits"

	"github.com/statsblob/statsblob/voi"
)

// The queries answer within their domain on any bytes, not only on digests
// Validate accepts (where the means ascend and smplcnt is the exact sum of
// the counts): a CDF in [0, 1], a quantile or mean between the least and
// the greatest centroid mean (or the sample bounds QuantileBounded is
// given), a count that does not wrap. Float rounding, out-of-order means
// and huge counts cannot step outside; these helpers hold the bounds.

var errCountWrap = fmt.Errorf("tdigest: centroid counts sum past 2^64-1: %w", voi.ErrOverflow)

// addCount adds a centroid's count to a running total, failing rather than
// wrapping.
func addCount(sum, cnt uint64) (uint64, error) {
	s, carry := bits.Add64(sum, cnt, 0)
	if carry != 0 {
		return 0, errCountWrap
	}
	return s, nil
}

// unit clamps a fraction of the samples to [0, 1].
func unit(p float64) float64 { return min(max(p, 0), 1) }

// between clamps v to the closed range spanned by a and b (in either
// order): an interpolation between two means stays between them.
func between(v, a, b float64) float64 { return min(max(v, min(a, b)), max(a, b)) }
