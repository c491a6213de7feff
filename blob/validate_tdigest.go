package blob

import (
	"github.com/statsblob/statsblob/tdigest"
	"github.com/statsblob/statsblob/voi"
)

// validateTDigest checks a t-digest's data: sizes, the tree's links and
// colours, the free list, counts (tdigest.Validate).
func validateTDigest(data []byte, dt voi.DType) error {
	return tdigest.Validate(data, dt)
}
