package tdigest

import (
	"math"
	"math/bits"

	"github.com/statsblob/statsblob/voi"
)

// Valid reports whether Validate(data, dt) would return nil, in one pass
// over the tree and without allocating. Decoders call it first and
// Validate only for the error of a digest it rejects;
// TestValidMatchesValidate and FuzzValidMatchesValidate hold the two to the
// same verdict.
func Valid(data []byte, dt voi.DType) bool {
	head, base, nsz, is32, ok := placeOf(dt)
	return ok && valid(data, head, base, nsz, is32)
}

// valid is Valid for a digest whose ARB16 head is at head, node 0 at base,
// nodes nsz bytes apart (TDGSTCLUST32 if is32: an s32q mean at 8 and a
// uint32 count at 12 in a node; else an s64q mean at 8 and a uint64 count
// at 16).
func valid(data []byte, head, base, nsz int, is32 bool) bool {
	if len(data) < base {
		return false
	}
	h := data[head : head+12]
	hget := func(f int) int { return int(int16(le.Uint16(h[f:]))) }
	maxn := hget(hMax)
	if maxn < 0 || len(data) != base+maxn*nsz {
		return false
	}
	nodes := data[base:]
	cur, root, free, hmin, hmax := hget(hCur), hget(hRoot), hget(hFree), hget(hMin), hget(hMaxI)
	// v in [null, maxn) for each index: uint(v+1) <= uint(maxn).
	if cur < 0 || cur > maxn || uint(root+1) > uint(maxn) || uint(free+1) > uint(maxn) ||
		uint(hmin+1) > uint(maxn) || uint(hmax+1) > uint(maxn) {
		return false
	}
	color := func(i int) int8 { return int8(nodes[i*nsz+lColor]) }
	if (root == null) != (cur == 0) || root != null && color(root) != black {
		return false
	}
	limit := uint64(1<<64 - 1)
	if is32 {
		limit = 1<<32 - 1
	}

	// The tree in order, with the path of left descents on a stack (a
	// red-black tree of fewer than 2^15 nodes is at most 30 deep, so a
	// deeper path is no such tree). A node is reached only from the node
	// its parent link names, which never links to it twice, so no node is
	// reached twice; every slot's mean has slot 0's control bits (checked
	// below), so means compare by value.
	type frame struct {
		node   int16
		blacks int8
		red    bool
	}
	var stack [64]frame
	sp := 0
	n, parent, parentRed, blacks := root, null, false, 0
	count, blackHeight := 0, -1
	var sum, carry uint64
	var prev int64
	first := true
	for {
		for n != null {
			if count++; count > cur || sp == len(stack) {
				return false
			}
			o := n * nsz
			lk := le.Uint64(nodes[o:])
			c := int8(lk >> 48)
			l, r := lkLeft(lk), lkRight(lk)
			if lkParent(lk) != parent || c != black && c != red || c == red && parentRed ||
				uint(l+1) > uint(maxn) || uint(r+1) > uint(maxn) || l == r && l != null {
				return false
			}
			var cnt uint64
			if is32 {
				cnt = uint64(le.Uint32(nodes[o+12:]))
			} else {
				cnt = le.Uint64(nodes[o+16:])
			}
			var cy uint64
			sum, cy = bits.Add64(sum, cnt, 0)
			carry |= cy
			if cnt == 0 || cnt > math.MaxInt64 {
				return false
			}
			if c == black {
				blacks++
			}
			stack[sp] = frame{int16(n), int8(blacks), c == red}
			sp++
			parent, parentRed, n = n, c == red, l
		}
		// A null link: every path has the same number of black nodes.
		if blackHeight < 0 {
			blackHeight = blacks
		} else if blacks != blackHeight {
			return false
		}
		if sp == 0 {
			break
		}
		sp--
		f := stack[sp]
		e := int(f.node)
		o := e * nsz
		var v int64
		if is32 {
			v = ifvS32(uint64(le.Uint32(nodes[o+8:])))
		} else {
			v = ifvS64(le.Uint64(nodes[o+8:]))
		}
		if !first && v < prev {
			return false
		}
		prev, first = v, false
		parent, parentRed, blacks = e, f.red, int(f.blacks)
		n = lkRight(le.Uint64(nodes[o:]))
	}
	if count != cur || carry != 0 || sum > limit {
		return false
	}
	if is32 {
		if uint64(le.Uint32(data)) != sum {
			return false
		}
	} else if le.Uint64(data) != sum {
		return false
	}

	// The tree's nodes are the ones reached, each once, all red or black:
	// if no other slot is, the color tells whether a slot is in the tree.
	colored := 0
	var ctrl0, ctrlDiff uint64
	for i := range maxn {
		o := i * nsz
		var ctrl uint64
		if is32 {
			ctrl = uint64(le.Uint32(nodes[o+8:])) & ctrlMask
		} else {
			ctrl = le.Uint64(nodes[o+8:]) & ctrlMask
		}
		if i == 0 {
			ctrl0 = ctrl
		}
		ctrlDiff |= ctrl ^ ctrl0
		switch int8(nodes[o+lColor]) {
		case black, red:
			colored++
		case freeCol:
		default:
			return false
		}
	}
	if ctrlDiff != 0 || colored != cur {
		return false
	}
	for _, v := range [2]int{hmin, hmax} {
		if v != null && color(v) == freeCol {
			return false
		}
	}
	// The free list: distinct free slots, so at most maxn-cur of them.
	for e, k := free, 0; e != null; e, k = int(int16(le.Uint16(nodes[e*nsz+lRight:]))), k+1 {
		if e < null || e >= maxn || color(e) != freeCol || k >= maxn-cur {
			return false
		}
	}
	return true
}
