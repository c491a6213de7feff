package hist

import (
	"fmt"

	"github.com/statsblob/statsblob/voi"
)

// Sub subtracts the counts of histogram old from cur, two readings of one
// histogram of type hdt (identical bucket layouts, see Merge) of which old is
// the earlier: afterwards cur holds what was counted between the two
// readings, each bucket's count and the out-of-band count. It is the reader's
// step of turning two cumulative readings into a period's histogram, as
// devstat's readers do with their counters. A count of old larger than cur's
// (the readings are out of order, or the histogram was reset in between)
// gives an error wrapping voi.ErrInvalid and leaves cur unchanged, as do
// incompatible histograms.
func Sub(cur, old []byte, hdt voi.DType) error {
	g, err := compatible(cur, old, hdt)
	if err != nil {
		return err
	}
	n := g.numBuckets(cur)
	offs := func(yield func(int) bool) {
		if !yield(0) {
			return
		}
		for i := 0; i < n; i++ {
			if !yield(hdrSize + i*g.bsz + g.coff) {
				return
			}
		}
	}
	for off := range offs {
		if loadCount(old, off, g.is32) > loadCount(cur, off, g.is32) {
			return fmt.Errorf("hist: the earlier reading counts more than the later one (at byte %d): %w", off, voi.ErrInvalid)
		}
	}
	for off := range offs {
		storeCount(cur, off, g.is32, loadCount(cur, off, g.is32)-loadCount(old, off, g.is32))
	}
	return nil
}
