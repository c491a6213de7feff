package tdigest

import (
	"fmt"
	"math"
	"math/bits"

	"github.com/statsblob/statsblob/voi"
)

// maxTreeDepth is the deepest a digest's tree can be: a red-black tree of n
// nodes is at most 2·log2(n+1) nodes deep, and a digest has fewer than
// 2^15 slots (maxnodes is an int16), so no path from the root holds more
// than 30 nodes. Validate rejects deeper trees before following them.
const maxTreeDepth = 30

// depthBound returns the largest depth h (in nodes, the root at depth 1) a
// red-black tree of n nodes can have: the largest h with 2^h <= (n+1)^2.
func depthBound(n int) int {
	return bits.Len64(uint64(n+1)*uint64(n+1)) - 1
}

// Validate checks that data is a well-formed digest of type dt, as Build,
// Update, Reset and Merge always leave one, so that bytes from elsewhere
// can be updated and queried safely. It checks:
//
//   - the size is exactly the header plus maxnodes slots, maxnodes >= 0;
//   - every slot's mean has the control bits (precision) of slot 0's;
//   - the head's indices are -1 or slots, curnodes is in [0, maxnodes];
//   - the tree is a red-black tree: every node reached from the root once,
//     curnodes of them, parent links matching child links, colors black or
//     red, a black root, no red node with a red child, the same number of
//     black nodes on every path, and no path deeper than a red-black tree
//     of curnodes nodes allows (2·log2(curnodes+1) nodes, at most 30),
//     which is checked before a deeper node is followed;
//   - the means ascend in tree order (equal means allowed);
//   - the cached min and max are -1 or nodes of the tree (the C's caching
//     rules can leave them stale, so they need not be the extremes);
//   - the free list holds only nodes outside the tree marked free (color
//     -1), without repeats; nodes outside both are marked free too (the C
//     can lose a 32-bit node from the free list; it finds it again);
//   - no centroid of the tree has count 0 (nor, in a TDGSTCLUST64, a count
//     past 2^63−1, negative as the C's int64), and smplcnt equals the sum of
//     their counts, computed without wrapping (counts of 2^64−1 and 2 do
//     not sum to 1), so every query of the digest stays in its domain.
//
// Validate allocates nothing on a valid digest: it walks the tree with a
// stack of 32 frames on the goroutine's stack, and tells the
// tree's nodes from the others by their color. The errors (which allocate
// their message) wrap voi.ErrInvalid.
func Validate(data []byte, dt voi.DType) error {
	if !dt.IsTDigest() {
		return errDType
	}
	if len(data) < Size(dt, 0) {
		return invalid("%d bytes, shorter than the %d-byte header", len(data), Size(dt, 0))
	}
	t := view(data, dt)
	maxn := t.hget(hMax)
	if maxn < 0 || len(data) != Size(dt, uint32(maxn)) {
		return invalid("%d bytes for %d slots", len(data), maxn)
	}
	t.setMaxn(maxn)
	cur := t.hget(hCur)
	if cur < 0 || cur > maxn {
		return invalid("curnodes %d out of [0, %d]", cur, maxn)
	}
	for _, f := range [...]int{hRoot, hFree, hMin, hMaxI} {
		if v := t.hget(f); v < null || v >= maxn {
			return invalid("%s index %d out of range", headName(f), v)
		}
	}

	// Every node's mean has the precision of node 0's (Build gives them
	// all one, and adds, compressions and resets keep it): updates compute
	// in node 0's precision and rendering sizes its text by it.
	for i := 1; i < maxn; i++ {
		if t.muRaw(i)&ctrlMask != t.muRaw(0)&ctrlMask {
			return invalid("centroid %d's mean has control bits %d, centroid 0's %d", i, t.muRaw(i)&ctrlMask, t.muRaw(0)&ctrlMask)
		}
	}

	root := t.hget(hRoot)
	if root != null && t.color(root) != black {
		return invalid("root %d is not black", root)
	}
	if (root == null) != (cur == 0) {
		return invalid("root %d with curnodes %d", root, cur)
	}
	count, sum, err := t.checkTree(root, cur)
	if err != nil {
		return err
	}
	if count != cur {
		return invalid("%d nodes in the tree, curnodes %d", count, cur)
	}

	// The tree's nodes are the ones reached, each once, all red or black.
	// If no other slot is red or black, the color tells whether a slot is
	// in the tree.
	colored := 0
	for i := range maxn {
		switch c := t.color(i); c {
		case black, red:
			colored++
		case freeCol:
		default:
			return invalid("slot %d is outside the tree but has color %d", i, c)
		}
	}
	if colored != cur {
		return invalid("%d slots are red or black, curnodes %d", colored, cur)
	}
	for _, f := range [...]int{hMin, hMaxI} {
		if v := t.hget(f); v != null && t.color(v) == freeCol {
			return invalid("cached extreme %d is not in the tree", v)
		}
	}
	if smpl := t.smplcnt(); smpl != sum {
		return invalid("smplcnt %d, centroid counts sum to %d", smpl, sum)
	}

	// Mean order.
	prev := null
	for e, n := t.extreme(lLeft), 0; e != null && n < count; e, n = t.next(e), n+1 {
		if prev != null && t.less(e, prev) {
			return invalid("centroid %d's mean is below its predecessor %d's", e, prev)
		}
		prev = e
	}

	// The free list: distinct nodes outside the tree, so at most the
	// maxn-cur of them; a longer walk has met a node twice.
	for e, n := t.hget(hFree), 0; e != null; e, n = t.link(e, lRight), n+1 {
		if e < null || e >= maxn {
			return invalid("free list links to %d", e)
		}
		if t.color(e) != freeCol {
			return invalid("free node %d is in the tree", e)
		}
		if n >= maxn-cur {
			return invalid("free list longer than the %d free slots (a node listed twice)", maxn-cur)
		}
	}
	return nil
}

// checkTree walks the tree from root depth first and checks its links,
// colors, black heights, depth and counts. It returns the number of nodes
// reached and the sum of their counts (exact: an error if it exceeds the
// smplcnt field's range). A node is reached at most once: the root's
// parent link is null, every other node is reached only from the node its
// parent link names, and no node has the same left and right child.
func (t *tree) checkTree(root, cur int) (count int, sum uint64, err error) {
	type frame struct{ node, parent, blacks, depth int32 }
	var stack [maxTreeDepth + 2]frame // a path's pending siblings and the two children
	maxDepth := int32(depthBound(cur))
	n := 0
	stack[n] = frame{int32(root), null, 0, 1}
	n++
	blackHeight := int32(-1)
	limit := uint64(1<<64 - 1)
	if t.is32 {
		limit = 1<<32 - 1
	}
	for n > 0 {
		n--
		f := stack[n]
		if f.node == null {
			if blackHeight < 0 {
				blackHeight = f.blacks
			} else if f.blacks != blackHeight {
				return 0, 0, invalid("black heights %d and %d differ", blackHeight, f.blacks)
			}
			continue
		}
		e := int(f.node)
		if f.depth > maxDepth {
			return 0, 0, invalid("node %d at depth %d, deeper than a red-black tree of %d nodes can be (%d)", e, f.depth, cur, maxDepth)
		}
		if count++; count > cur {
			return 0, 0, invalid("more than curnodes=%d nodes in the tree", cur)
		}
		lk := t.links(e)
		if p := lkParent(lk); p != int(f.parent) {
			return 0, 0, invalid("node %d has parent %d, reached from %d", e, p, f.parent)
		}
		c := int8(lk >> 48)
		if c != black && c != red {
			return 0, 0, invalid("node %d in the tree has color %d", e, c)
		}
		if c == red && f.parent != null && t.color(int(f.parent)) == red {
			return 0, 0, invalid("red node %d has a red parent", e)
		}
		cnt := uint64(t.cnt(e))
		if t.is32 {
			cnt = uint64(uint32(cnt))
		}
		if cnt == 0 {
			return 0, 0, invalid("centroid %d has count 0", e)
		}
		if cnt > math.MaxInt64 {
			return 0, 0, invalid("centroid %d has count %d, negative as the C's int64", e, cnt)
		}
		var carry uint64
		if sum, carry = bits.Add64(sum, cnt, 0); carry != 0 || sum > limit {
			return 0, 0, invalid("centroid counts sum past %d", limit)
		}
		blacks := f.blacks
		if c == black {
			blacks++
		}
		l, r := lkLeft(lk), lkRight(lk)
		for _, ch := range [2]int{r, l} {
			if ch < null || ch >= t.maxn {
				return 0, 0, invalid("node %d links to %d", e, ch)
			}
		}
		if l == r && l != null {
			return 0, 0, invalid("node %d has %d as both children", e, l)
		}
		if n+2 > len(stack) {
			// Unreachable: at depth d <= maxTreeDepth the stack holds at most
			// d-1 pending siblings.
			return 0, 0, invalid("tree deeper than %d", maxTreeDepth)
		}
		stack[n] = frame{int32(r), int32(e), blacks, f.depth + 1}
		stack[n+1] = frame{int32(l), int32(e), blacks, f.depth + 1}
		n += 2
	}
	return count, sum, nil
}

func headName(f int) string {
	switch f {
	case hRoot:
		return "root"
	case hFree:
		return "free"
	case hMin:
		return "min"
	}
	return "max"
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("tdigest: invalid digest: "+format+": %w", append(args, voi.ErrInvalid)...)
}
