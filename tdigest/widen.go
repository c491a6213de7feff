package tdigest

import (
	"github.com/statsblob/statsblob/internal/trusted"
	"github.com/statsblob/statsblob/voi"
)

// MergeAllFrom is MergeAll for sources of type sdt, which may differ from
// dst's type dt: a TDGSTCLUST64 digest can take the samples of
// TDGSTCLUST32 digests (the widening a collector aggregates in) and the
// other way round. It merges as MergeAll does, with the same guarantees
// and errors; a source's means are rescaled to dst's precision (exactly
// when dst has at least the source's fractional bits and range). A dst
// empty before the call with at least as many slots as the one source's
// centroids holds exactly that source's centroids afterwards.
func MergeAllFrom(dst []byte, dt, sdt voi.DType, srcs ...[]byte) error {
	if err := validateMerge(dst, dt, sdt, srcs); err != nil {
		return err
	}
	return mergeFromValid(dst, dt, sdt, srcs)
}

func init() { trusted.TDigestMergeAllFrom = mergeFromTrusted }

// mergeFromTrusted is MergeAllFrom for digests a blob holds, known to be
// valid (see mergeAllTrusted).
func mergeFromTrusted(dst []byte, dt, sdt voi.DType, srcs ...[]byte) error {
	if err := checkTrusted(dst, dt, sdt, srcs); err != nil {
		return err
	}
	return mergeFromValid(dst, dt, sdt, srcs)
}

// mergeFromValid picks the node layouts of dst and of the sources once.
func mergeFromValid(dst []byte, dt, sdt voi.DType, srcs [][]byte) error {
	switch {
	case dt == sdt:
		return mergeAllValid(dst, dt, trusted.NoSamples, srcs)
	case dt == voi.TDgstClust64:
		return mergeLayout[node64, node32](dst, trusted.NoSamples, srcs)
	default:
		return mergeLayout[node32, node64](dst, trusted.NoSamples, srcs)
	}
}
