package tdigest

import (
	"fmt"

	"github.com/statsblob/statsblob/voi"
)

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
//     black nodes on every path;
//   - the means ascend in tree order (equal means allowed);
//   - the cached min and max are -1 or nodes of the tree (the C's caching
//     rules can leave them stale, so they need not be the extremes);
//   - the free list holds only nodes outside the tree marked free (color
//     -1), without repeats; nodes outside both are marked free too (the C
//     can lose a 32-bit node from the free list; it finds it again);
//   - smplcnt equals the sum of the counts of the tree's centroids (modulo
//     2^32 for TDGSTCLUST32) and no centroid of the tree has count 0.
//
// The errors wrap voi.ErrInvalid.
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
	d := digest{tree: t}
	cur := t.hget(hCur)
	if cur < 0 || cur > maxn {
		return invalid("curnodes %d out of [0, %d]", cur, maxn)
	}
	for _, f := range []struct {
		name string
		off  int
	}{{"root", hRoot}, {"free", hFree}, {"min", hMin}, {"max", hMaxI}} {
		if v := t.hget(f.off); v < null || v >= maxn {
			return invalid("%s index %d out of range", f.name, v)
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

	// The tree, depth first from the root.
	inTree := make([]bool, maxn)
	count := 0
	blackHeight := -1
	var sum uint64
	type frame struct{ node, parent, blacks int }
	stack := []frame{{t.hget(hRoot), null, 0}}
	if r := t.hget(hRoot); r != null && t.color(r) != black {
		return invalid("root %d is not black", r)
	}
	if (t.hget(hRoot) == null) != (cur == 0) {
		return invalid("root %d with curnodes %d", t.hget(hRoot), cur)
	}
	for len(stack) > 0 {
		f := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if f.node == null {
			if blackHeight < 0 {
				blackHeight = f.blacks
			} else if f.blacks != blackHeight {
				return invalid("black heights %d and %d differ", blackHeight, f.blacks)
			}
			continue
		}
		n := f.node
		if inTree[n] {
			return invalid("node %d reached twice", n)
		}
		inTree[n] = true
		if count++; count > cur {
			return invalid("more than curnodes=%d nodes in the tree", cur)
		}
		if p := t.link(n, lParent); p != f.parent {
			return invalid("node %d has parent %d, reached from %d", n, p, f.parent)
		}
		c := t.color(n)
		if c != black && c != red {
			return invalid("node %d in the tree has color %d", n, c)
		}
		if c == red && f.parent != null && t.color(f.parent) == red {
			return invalid("red node %d has a red parent", n)
		}
		cnt := d.cnt(n)
		if d.is32 {
			cnt = int64(uint32(cnt))
		}
		if cnt == 0 {
			return invalid("centroid %d has count 0", n)
		}
		sum += uint64(cnt)
		blacks := f.blacks
		if c == black {
			blacks++
		}
		for _, ch := range []int{t.link(n, lLeft), t.link(n, lRight)} {
			if ch < null || ch >= maxn {
				return invalid("node %d links to %d", n, ch)
			}
			stack = append(stack, frame{ch, n, blacks})
		}
	}
	if count != cur {
		return invalid("%d nodes in the tree, curnodes %d", count, cur)
	}
	for _, f := range []int{hMin, hMaxI} {
		if v := t.hget(f); v != null && !inTree[v] {
			return invalid("cached extreme %d is not in the tree", v)
		}
	}
	if smpl := d.smplcnt(); smpl != sum && !(d.is32 && uint32(smpl) == uint32(sum)) {
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

	// The free list and the other slots.
	onList := make([]bool, maxn)
	for e, n := t.hget(hFree), 0; e != null; e, n = t.link(e, lRight), n+1 {
		if e < null || e >= maxn {
			return invalid("free list links to %d", e)
		}
		if inTree[e] || onList[e] {
			return invalid("free node %d is in the tree or listed twice", e)
		}
		onList[e] = true
	}
	for i := range maxn {
		if !inTree[i] && t.color(i) != freeCol {
			return invalid("slot %d is outside the tree but has color %d", i, t.color(i))
		}
	}
	return nil
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("tdigest: invalid digest: "+format+": %w", append(args, voi.ErrInvalid)...)
}
