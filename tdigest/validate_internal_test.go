package tdigest

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/internal/alloctest"
	"github.com/statsblob/statsblob/voi"
)

// shape is a tree shape to write into digest bytes.
type shape struct {
	l, r *shape
	red  bool
}

func (s *shape) size() int {
	if s == nil {
		return 0
	}
	return 1 + s.l.size() + s.r.size()
}

func (s *shape) depth() int {
	if s == nil {
		return 0
	}
	return 1 + max(s.l.depth(), s.r.depth())
}

// allBlack is a perfect tree of black nodes, h deep (2^h-1 nodes).
func allBlack(h int) *shape {
	if h == 0 {
		return nil
	}
	return &shape{l: allBlack(h - 1), r: allBlack(h - 1)}
}

// tallest is the deepest red-black tree of black height b (a black root
// counting 1) with the fewest nodes: its left spine alternates black and
// red down to depth 2b, every other subtree is a perfect black tree.
func tallest(b int) *shape {
	if b == 0 {
		return nil
	}
	red := &shape{red: true, l: tallest(b - 1), r: allBlack(b - 1)}
	return &shape{l: red, r: allBlack(b - 1)}
}

// balanced is a tree of n nodes split at the middle, the nodes of its
// last level red (when that level is not full) and the others black.
func balanced(n int) *shape {
	h := 0
	for 1<<h-1 < n {
		h++
	}
	var build func(n, depth int) *shape
	build = func(n, depth int) *shape {
		if n == 0 {
			return nil
		}
		l := (n - 1) / 2
		return &shape{l: build(l, depth+1), r: build(n-1-l, depth+1), red: depth == h && 1<<h-1 != n}
	}
	return build(n, 1)
}

// chain is n nodes each the left (or right) child of the one before, all
// black or alternating black and red.
func chain(n int, left, alternate bool) *shape {
	var root *shape
	for i := n - 1; i >= 0; i-- {
		if left {
			root = &shape{l: root, red: alternate && i%2 == 1}
		} else {
			root = &shape{r: root, red: alternate && i%2 == 1}
		}
	}
	return root
}

// writeTree returns a digest of type dt with maxn slots holding the tree s:
// its nodes in slots 0.. in mean order (means 1, 2, ...; count 1 each), the
// other slots on the free list, smplcnt and the cached extremes set.
func writeTree(t testing.TB, dt voi.DType, maxn int, s *shape) []byte {
	t.Helper()
	data, err := Build(dt, uint32(maxn), 4)
	require.NoError(t, err)
	var d tree
	require.NoError(t, d.init(data, dt))
	ctrl := d.muRaw(0) & ctrlMask
	index := map[*shape]int{}
	var number func(s *shape)
	number = func(s *shape) {
		if s != nil {
			number(s.l)
			index[s] = len(index)
			number(s.r)
		}
	}
	number(s)
	idx := func(s *shape) int {
		if s == nil {
			return null
		}
		return index[s]
	}
	var link func(s *shape, parent int)
	link = func(s *shape, parent int) {
		if s == nil {
			return
		}
		i := index[s]
		d.setParent(i, parent)
		d.setLeft(i, idx(s.l))
		d.setRight(i, idx(s.r))
		d.setColor(i, map[bool]int8{false: black, true: red}[s.red])
		if d.is32 {
			le.PutUint32(d.nodes[d.off(i)+8:], setS32(ctrl, int32(i+1)<<4))
		} else {
			le.PutUint64(d.nodes[d.off(i)+8:], setS64(ctrl, int64(i+1)<<4))
		}
		d.setCnt(i, 1)
		link(s.l, i)
		link(s.r, i)
	}
	link(s, null)
	n := len(index)
	d.hset(hCur, n)
	d.hset(hRoot, idx(s))
	d.hset(hFree, null)
	for i := maxn - 1; i >= n; i-- {
		d.returnFree(i)
	}
	if n > 0 {
		d.hset(hMin, 0)
		d.hset(hMaxI, n-1)
	}
	d.setSmplcnt(uint64(n))
	return data
}

// maxSlots is the most centroid slots a digest in a blob can have.
func maxSlots(dt voi.DType) int { return (MaxSize - Size(dt, 0)) / nodeSize(dt) }

// TestDepthBound pins depthBound against 2·log2(n+1) and the tallest
// red-black trees.
func TestDepthBound(t *testing.T) {
	for _, c := range []struct{ n, want int }{{0, 0}, {1, 2}, {2, 3}, {3, 4}, {6, 5}, {7, 6}, {4094, 23}, {32767, 30}} {
		require.Equal(t, c.want, depthBound(c.n), "n=%d", c.n)
	}
	require.Equal(t, maxTreeDepth, depthBound(1<<15-1))
	for b := 1; b <= 11; b++ {
		s := tallest(b)
		require.Equal(t, 2*b, s.depth())
		require.LessOrEqual(t, s.depth(), depthBound(s.size()), "b=%d, %d nodes", b, s.size())
	}
}

// TestValidateAdversarialShapes: the deepest legal trees and full trees in
// digests of the largest size a blob holds are accepted without
// allocating; chains as long as the digest, which no red-black tree can
// be, are rejected at the first node deeper than the bound, allocating
// only the error (before, the walk grew a stack frame per node: 312 KB for
// a 65,516-byte input).
func TestValidateAdversarialShapes(t *testing.T) {
	for _, dt := range []voi.DType{voi.TDgstClust32, voi.TDgstClust64} {
		maxn := maxSlots(dt)
		require.Greater(t, Size(dt, uint32(maxn)), 65000)
		valid := map[string]*shape{"full balanced": balanced(maxn), "one node": balanced(1), "empty": nil}
		for b := 1; ; b++ {
			s := tallest(b)
			if s.size() > maxn {
				break
			}
			valid[fmt.Sprintf("tallest b=%d (%d nodes, depth %d)", b, s.size(), s.depth())] = s
		}
		for name, s := range valid {
			data := writeTree(t, dt, maxn, s)
			require.NoError(t, Validate(data, dt), "%v %s", dt, name)
			require.Zero(t, testing.AllocsPerRun(20, func() { _ = Validate(data, dt) }), "%v %s", dt, name)
		}
		// The walk visits left subtrees first: a left chain goes as deep
		// as the depth bound lets it, a right chain meets a black-height
		// mismatch at its second node.
		for _, left := range []bool{true, false} {
			for _, alternate := range []bool{false, true} {
				for _, n := range []int{maxn, 64, depthBound(maxn) + 1} {
					data := writeTree(t, dt, maxn, chain(n, left, alternate))
					err := Validate(data, dt)
					require.ErrorIs(t, err, voi.ErrInvalid)
					if left {
						require.ErrorContains(t, err, fmt.Sprintf("deeper than a red-black tree of %d nodes can be", n))
					}
					got := alloctest.Bytes(20, func() { _ = Validate(data, dt) })
					t.Logf("%v chain of %d (left %v, alternate %v): %d bytes allocated for %d input bytes: %v", dt, n, left, alternate, got, len(data), err)
					require.Less(t, got, uint64(1024))
				}
			}
		}
	}
}

// TestValidateCountsDoNotWrap: counts whose sum wraps to smplcnt are
// rejected (before, 2^64-1 and 2 passed with smplcnt 1, and CDF answered
// 9.2e18), and so are TDGSTCLUST64 counts past 2^63-1, negative as the
// C's int64 (before, merges and the accurate mode, which mark items with
// bit 63, lost 2^63 samples of such a centroid and wrote invalid bytes).
func TestValidateCountsDoNotWrap(t *testing.T) {
	for _, c := range []struct {
		dt     voi.DType
		counts [2]uint64
		smpl   uint64
		msg    string
	}{
		{voi.TDgstClust64, [2]uint64{1<<64 - 1, 2}, 1, "count 18446744073709551615, negative as the C's int64"},
		{voi.TDgstClust64, [2]uint64{1 << 63, 1}, 1<<63 + 1, "count 9223372036854775808, negative"},
		{voi.TDgstClust32, [2]uint64{1<<32 - 1, 2}, 1, "sum past 4294967295"},
		{voi.TDgstClust32, [2]uint64{1 << 31, 1 << 31}, 0, "sum past"},
	} {
		data := writeTree(t, c.dt, 4, balanced(2))
		var d tree
		require.NoError(t, d.init(data, c.dt))
		d.setCnt(0, int64(c.counts[0]))
		d.setCnt(1, int64(c.counts[1]))
		d.setSmplcnt(c.smpl)
		err := Validate(data, c.dt)
		require.ErrorIs(t, err, voi.ErrInvalid, "%v %v", c.dt, c.counts)
		require.ErrorContains(t, err, c.msg)
		// Without the wrap, the same counts validate.
		d.setCnt(0, 1)
		d.setSmplcnt(1 + c.counts[1])
		require.NoError(t, Validate(data, c.dt), "%v %v", c.dt, c.counts)
	}
}

// setCnt and setSmplcnt write a node's count and the header's sample
// count with the view's width, for tests that corrupt digests of either
// width.
func (t *tree) setCnt(i int, c int64) { storeCnt(t.nodes, i, c, t.is32) }
func (t *tree) setSmplcnt(n uint64)   { storeSmplcnt(t.b, n, t.is32) }
