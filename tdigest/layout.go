package tdigest

import "github.com/statsblob/statsblob/voi"

// Where a node keeps its centroid, and the header its counters. The
// functions below are the one place that knows; each takes the layout as
// w32 (true: TDGSTCLUST32, an s32q mean at 8 and an int32 count at 12;
// false: TDGSTCLUST64, an s64q mean at 8 and an int64 count at 16; smplcnt
// a u32 or u64 at 0, compcnt a u32 after it). They are small enough to
// inline, so where w32 is a constant the test of it disappears.
//
// The update and merge paths make it a constant: they are generic over the
// node type N (node32 or node64, see digest[N]), which Go compiles once per
// layout because the two array types differ in shape; w32 := is32[N]() is a
// constant in each copy, taken once per function, so those paths pick
// their node width once, where they start (update, mergeAllValid, Reset),
// and read and write nodes without testing the width again. (Calls of
// generic functions inside a loop would load the instantiation's
// dictionary at every iteration, so hot loops call these with w32 instead.)
// The read paths (queries, rendering, validation) pass tree.is32.

// The two node layouts as types.
type (
	node32 [NodeSize32]byte
	node64 [NodeSize64]byte
	node   interface{ node32 | node64 }
)

// nodeLen is N's size in bytes: NodeSize32 or NodeSize64.
func nodeLen[N node]() int {
	var z N
	return len(z)
}

// is32 reports whether N is the TDGSTCLUST32 layout.
func is32[N node]() bool { return nodeLen[N]() == NodeSize32 }

// dtypeOf is the digest type whose nodes are N.
func dtypeOf[N node]() voi.DType {
	if is32[N]() {
		return voi.TDgstClust32
	}
	return voi.TDgstClust64
}

// nodeAt returns node i's bytes, sliced once so that the reads of its
// fields below need no further bounds checks.
func nodeAt(nodes []byte, i int, w32 bool) []byte {
	sz := NodeSize64
	if w32 {
		sz = NodeSize32
	}
	o := i * sz
	return nodes[o : o+sz : o+sz]
}

// Offsets of a centroid's fields in its node (after the 8-byte link).
const (
	muOff    = 8  // the mean: an s32q (4 bytes) or s64q (8 bytes)
	cnt32Off = 12 // TDGSTCLUST32's int32 count
	cnt64Off = 16 // TDGSTCLUST64's int64 count
)

// nodeMu returns the mean of node nd as raw bits (an s32q in the low half
// for TDGSTCLUST32), nodeCnt its count, sign-extended as the C widens it.
func nodeMu(nd []byte, w32 bool) uint64 {
	if w32 {
		return uint64(le.Uint32(nd[muOff : muOff+4]))
	}
	return le.Uint64(nd[muOff : muOff+8])
}

func nodeCnt(nd []byte, w32 bool) int64 {
	if w32 {
		return int64(int32(le.Uint32(nd[cnt32Off : cnt32Off+4])))
	}
	return int64(le.Uint64(nd[cnt64Off : cnt64Off+8]))
}

// loadMu, storeMu, loadCnt and storeCnt read and write node i's mean (raw
// bits; a 32-bit node keeps the low half) and count (sign-extended as the
// C widens it; a 32-bit node keeps the low half). They index nodes
// directly, which keeps them cheap enough to inline into digest[N]'s
// accessors.
func loadMu(nodes []byte, i int, w32 bool) uint64 {
	if w32 {
		return uint64(le.Uint32(nodes[i*NodeSize32+muOff:]))
	}
	return le.Uint64(nodes[i*NodeSize64+muOff:])
}

func storeMu(nodes []byte, i int, r uint64, w32 bool) {
	if w32 {
		le.PutUint32(nodes[i*NodeSize32+muOff:], uint32(r))
	} else {
		le.PutUint64(nodes[i*NodeSize64+muOff:], r)
	}
}

func loadCnt(nodes []byte, i int, w32 bool) int64 {
	if w32 {
		return int64(int32(le.Uint32(nodes[i*NodeSize32+cnt32Off:])))
	}
	return int64(le.Uint64(nodes[i*NodeSize64+cnt64Off:]))
}

func storeCnt(nodes []byte, i int, c int64, w32 bool) {
	if w32 {
		le.PutUint32(nodes[i*NodeSize32+cnt32Off:], uint32(c))
	} else {
		le.PutUint64(nodes[i*NodeSize64+cnt64Off:], uint64(c))
	}
}

// loadSmplcnt and storeSmplcnt read and write the header's sample count;
// compOffset is the offset of compcnt.
func loadSmplcnt(b []byte, w32 bool) uint64 {
	if w32 {
		return uint64(le.Uint32(b))
	}
	return le.Uint64(b)
}

func storeSmplcnt(b []byte, n uint64, w32 bool) {
	if w32 {
		le.PutUint32(b, uint32(n))
	} else {
		le.PutUint64(b, n)
	}
}

func compOffset(w32 bool) int {
	if w32 {
		return 4
	}
	return 8
}

// ifv is Q_GIFVAL of a raw mean: its signed combined integer/fraction
// value.
func ifv(raw uint64, w32 bool) int64 {
	if w32 {
		return ifvS32(raw)
	}
	return ifvS64(raw)
}

// nfOf is the number of fractional bits of a raw mean.
func nfOf(raw uint64, w32 bool) uint {
	if w32 {
		return nfS32(raw)
	}
	return nfS64(raw)
}

// lessRaw reports whether raw mean ra is below rb (Q_QLTQ: ctd32cmp and
// ctd64cmp, which never report equality).
func lessRaw(ra, rb uint64, w32 bool) bool {
	va, vb := ifv(ra, w32), ifv(rb, w32)
	if ra&ctrlMask == rb&ctrlMask {
		return va < vb
	}
	return qltParts(va, nfOf(ra, w32), vb, nfOf(rb, w32))
}
