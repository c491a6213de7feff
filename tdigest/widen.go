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
	if !dt.IsTDigest() || !sdt.IsTDigest() {
		return errDType
	}
	ok := func(b []byte, dt voi.DType) bool {
		var t tree
		return t.init(b, dt) == nil && len(b) == Size(dt, uint32(t.maxn))
	}
	if !ok(dst, dt) {
		return errShort
	}
	for _, s := range srcs {
		if !ok(s, sdt) {
			return errShort
		}
	}
	return mergeFromValid(dst, dt, sdt, srcs)
}

// mergeFromValid picks the node layouts of dst and of the sources once.
func mergeFromValid(dst []byte, dt, sdt voi.DType, srcs [][]byte) error {
	switch {
	case dt == sdt:
		return mergeAllValid(dst, dt, unbounded, srcs)
	case dt == voi.TDgstClust64:
		return mergeFromLayout[node64, node32](dst, srcs)
	default:
		return mergeFromLayout[node32, node64](dst, srcs)
	}
}

// mergeFromLayout is mergeAllLayout for a dst of layout N and sources of
// layout S.
func mergeFromLayout[N, S node](dst []byte, srcs [][]byte) error {
	var d digest[N]
	_ = d.init(dst, nil)
	if d.maxn == 0 {
		return errNoNodes
	}
	g := d.geometry()
	sc := mergeScratchPool.Get().(*mergeScratch)
	defer mergeScratchPool.Put(sc)
	sc.cs, sc.ins = sc.cs[:0], sc.ins[:0]
	sc.lo, sc.hi = unbounded[0], unbounded[1]
	sc.prefetch(dst, srcs)
	nonEmpty, dstHolds := 0, false
	if curNodes(dst, dtypeOf[N]()) > 0 {
		nonEmpty, dstHolds = 1, true
		readInput[N](sc, g, dst)
	}
	for _, s := range srcs {
		if curNodes(s, dtypeOf[S]()) > 0 {
			nonEmpty++
			readInput[S](sc, g, s)
		}
	}
	switch {
	case nonEmpty == 0:
		d.rebuild(g.ctrl, nil, 0, 0)
		return nil
	case nonEmpty == 1 && dstHolds:
		return nil
	}
	return d.mergeInputs(g, sc)
}
