package tdigest

import "encoding/binary"

// This file holds the array-based red-black tree of sys/arb.h (ARB16) as it
// lives in digest bytes: nodes are addressed by index, -1 is the null index,
// and an index outside [0, maxnodes) reads as null, as the C's ARB_NODE
// does. Writes through a null index are dropped and reads through one give
// null links and a black color, where the C would dereference NULL; that
// only happens with corrupt bytes (see Validate). Loops that follow links
// are bounded by maxnodes so that corrupt bytes cannot make them spin.

var le = binary.LittleEndian

const (
	null = -1

	black   = 0
	red     = 1
	freeCol = -1 // ARB_NULLCOL: the node is not in the tree

	// Offsets in the ARB16 head.
	hCur  = 0
	hMax  = 2
	hRoot = 4
	hFree = 6
	hMin  = 8
	hMaxI = 10

	// Offsets in a node's link.
	lParent = 0
	lLeft   = 2
	lRight  = 4
	lColor  = 6
	linkLen = 8 // the C struct with its pad byte
)

// tree is a view of the ARB16 tree inside digest bytes.
type tree struct {
	b     []byte
	nodes []byte      // b[base : base+maxn*nsz], set by setMaxn
	head  int         // offset of the ARB16 head
	base  int         // offset of node 0
	nsz   int         // node size
	maxn  int         // maxnodes as read when the view was made (never changes)
	is32  bool        // TDGSTCLUST32 nodes (s32q mean @8, int32 count @12)
	ord   *orderCache // the nodes in order, kept in step by insert and remove when valid; nil without
}

// setMaxn fixes the number of slots the view addresses; b must hold them.
func (t *tree) setMaxn(n int) {
	t.maxn = n
	t.nodes = t.b[t.base : t.base+n*t.nsz]
}

func (t *tree) hget(f int) int    { return int(int16(le.Uint16(t.b[t.head+f:]))) }
func (t *tree) hset(f int, v int) { le.PutUint16(t.b[t.head+f:], uint16(v)) }
func (t *tree) cur() int          { return t.hget(hCur) }
func (t *tree) root() int         { return t.node(t.hget(hRoot)) }
func (t *tree) full() bool        { return t.hget(hCur) >= t.hget(hMax) }
func (t *tree) off(i int) int     { return i * t.nsz } // offset in t.nodes
func (t *tree) valid(i int) bool  { return uint(i) < uint(t.maxn) }
func (t *tree) node(idx int) int {
	if uint(idx) < uint(t.maxn) {
		return idx
	}
	return null
}

func (t *tree) link(i, f int) int {
	if !t.valid(i) {
		return null
	}
	return int(int16(le.Uint16(t.nodes[t.off(i)+f:])))
}

func (t *tree) setLink(i, f, v int) {
	if t.valid(i) {
		le.PutUint16(t.nodes[t.off(i)+f:], uint16(v))
	}
}

// links returns a valid node's whole link in one load: parent in bits
// 0..15, left in 16..31, right in 32..47, color in 48..55.
func (t *tree) links(i int) uint64 { return le.Uint64(t.nodes[t.off(i):]) }

func lkParent(l uint64) int { return int(int16(l)) }
func lkLeft(l uint64) int   { return int(int16(l >> 16)) }
func lkRight(l uint64) int  { return int(int16(l >> 32)) }

// parent, left and right return the linked node, or null (ARB_PARENT etc.).
func (t *tree) parent(i int) int { return t.node(t.link(i, lParent)) }
func (t *tree) left(i int) int   { return t.node(t.link(i, lLeft)) }
func (t *tree) right(i int) int  { return t.node(t.link(i, lRight)) }

func (t *tree) setParent(i, v int) { t.setLink(i, lParent, v) }
func (t *tree) setLeft(i, v int)   { t.setLink(i, lLeft, v) }
func (t *tree) setRight(i, v int)  { t.setLink(i, lRight, v) }

func (t *tree) color(i int) int8 {
	if !t.valid(i) {
		return black
	}
	return int8(t.nodes[t.off(i)+lColor])
}

func (t *tree) setColor(i int, c int8) {
	if t.valid(i) {
		t.nodes[t.off(i)+lColor] = byte(c)
	}
}

// The layout accessors of the read paths, with the view's width (see
// layout.go; digest[N] has its own, with the width fixed by N). muRaw is a
// node's mean as raw bits (an s32q in the low half for 32-bit digests),
// less reports whether node a's mean is below node b's (Q_QLTQ, the
// comparison of ctd32cmp/ctd64cmp, which never report equality: ties order
// the new node after the old).
func (t *tree) muRaw(i int) uint64       { return loadMu(t.nodes, i, t.is32) }
func (t *tree) setMuRaw(i int, r uint64) { storeMu(t.nodes, i, r, t.is32) }
func (t *tree) cnt(i int) int64          { return loadCnt(t.nodes, i, t.is32) }
func (t *tree) smplcnt() uint64          { return loadSmplcnt(t.b, t.is32) }
func (t *tree) compOff() int             { return compOffset(t.is32) }
func (t *tree) less(a, b int) bool       { return lessRaw(t.muRaw(a), t.muRaw(b), t.is32) }

// minNode is ARB_MIN: the cached minimum if set, else a walk to the
// leftmost node.
func (t *tree) minNode() int {
	if m := t.hget(hMin); m != null {
		return t.node(m)
	}
	return t.extreme(lLeft)
}

// extreme walks from the root to the leftmost (f == lLeft) or rightmost
// node (ARB_CMINMAX).
func (t *tree) extreme(f int) int {
	if t.cur() == 0 {
		return null
	}
	e := t.root()
	for n := 0; e != null && n <= t.maxn; n++ {
		c := t.node(t.link(e, f))
		if c == null {
			return e
		}
		e = c
	}
	return e
}

// next returns the in-order successor of the valid node e, or null
// (ARB_NEXT).
func (t *tree) next(e int) int {
	if t.ordered() && t.ord.pos[e] >= 0 {
		return t.cachedNext(e)
	}
	mx := uint(t.maxn)
	lk := t.links(e)
	if r := lkRight(lk); uint(r) < mx {
		e = r
		for n := 0; n < t.maxn; n++ {
			l := lkLeft(t.links(e))
			if uint(l) >= mx {
				break
			}
			e = l
		}
		return e
	}
	p := lkParent(lk)
	if uint(p) >= mx {
		return null
	}
	plk := t.links(p)
	if lkLeft(plk) == e {
		return p
	}
	for n := 0; lkRight(plk) == e && n < t.maxn; n++ {
		e, p = p, lkParent(plk)
		if uint(p) >= mx {
			return null
		}
		plk = t.links(p)
	}
	return p
}

// prev returns the in-order predecessor of e, or null (ARB_PREV).
func (t *tree) prev(e int) int {
	if t.ordered() && t.ord.pos[e] >= 0 {
		return t.cachedPrev(e)
	}
	if l := t.left(e); l != null {
		e = l
		for n := 0; n < t.maxn; n++ {
			r := t.right(e)
			if r == null {
				break
			}
			e = r
		}
		return e
	}
	p := t.parent(e)
	if p != null && e == t.right(p) {
		return p
	}
	for n := 0; p != null && e == t.left(p) && n < t.maxn; n++ {
		e, p = p, t.parent(p)
	}
	return p
}

// returnFree pushes e on the free list (ARB_RETURNFREE).
func (t *tree) returnFree(e int) {
	t.setColor(e, freeCol)
	t.setRight(e, t.hget(hFree))
	t.hset(hFree, e)
}

// getFree pops the head of the free list, first rebuilding the list from
// the nodes marked free if it is empty although the tree is not full
// (ARB_GETFREE). It returns null if there is none.
func (t *tree) getFree() int {
	if t.hget(hFree) == null && !t.full() {
		for i := t.maxn - 1; i >= 0; i-- {
			if t.color(i) == freeCol {
				t.returnFree(i)
			}
		}
	}
	e := t.node(t.hget(hFree))
	if e != null {
		t.hset(hFree, t.link(e, lRight))
	}
	return e
}

// rotateLeft and rotateRight are ARB_ROTATE_LEFT/RIGHT around e.
func (t *tree) rotateLeft(e int) {
	tmp := t.right(e)
	tmpIdx := t.link(e, lRight)
	t.setRight(e, t.link(tmp, lLeft))
	if t.link(e, lRight) != null {
		t.setParent(t.left(tmp), e)
	}
	t.setParent(tmp, t.link(e, lParent))
	if t.link(tmp, lParent) != null {
		p := t.parent(e)
		if e == t.link(p, lLeft) {
			t.setLeft(p, tmpIdx)
		} else {
			t.setRight(p, tmpIdx)
		}
	} else {
		t.hset(hRoot, tmpIdx)
	}
	t.setLeft(tmp, e)
	t.setParent(e, tmpIdx)
}

func (t *tree) rotateRight(e int) {
	tmp := t.left(e)
	tmpIdx := t.link(e, lLeft)
	t.setLeft(e, t.link(tmp, lRight))
	if t.link(e, lLeft) != null {
		t.setParent(t.right(tmp), e)
	}
	t.setParent(tmp, t.link(e, lParent))
	if t.link(tmp, lParent) != null {
		p := t.parent(e)
		if e == t.link(p, lLeft) {
			t.setLeft(p, tmpIdx)
		} else {
			t.setRight(p, tmpIdx)
		}
	} else {
		t.hset(hRoot, tmpIdx)
	}
	t.setRight(tmp, e)
	t.setParent(e, tmpIdx)
}

// insert links the free node e into the tree by its mean (ARB_INSERT; the
// comparison never reports equality, so it always inserts) and updates the
// cached min/max by the C's rule: e becomes the cached extreme if there was
// none, or if after rebalancing e hangs directly off the cached extreme on
// its outer side.
func (d *digest[N]) insert(e int) {
	t := &d.tree
	w32 := is32[N]()
	me := loadMu(t.nodes, e, w32)
	parent, goLeft := null, false
	for x, n := t.root(), 0; x != null && n <= t.maxn; n++ {
		parent = x
		if goLeft = lessRaw(me, loadMu(t.nodes, x, w32), w32); goLeft {
			x = t.left(x)
		} else {
			x = t.right(x)
		}
	}
	d.attach(e, parent, goLeft)
}

// insertGreatest is insert for a free node e whose mean is at least every
// mean in the tree, and last the tree's rightmost node (null if empty):
// insert's descent, which goes right at every node, would end at last.
func (d *digest[N]) insertGreatest(e, last int) { d.attach(e, last, false) }

// attach is insert once its descent found e's parent (null: e is the
// root) and side.
func (d *digest[N]) attach(e, parent int, goLeft bool) {
	t := &d.tree
	t.setParent(e, parent)
	t.setLeft(e, null)
	t.setRight(e, null)
	t.setColor(e, red)
	if parent != null {
		if goLeft {
			t.setLeft(parent, e)
		} else {
			t.setRight(parent, e)
		}
	} else {
		t.hset(hRoot, e)
	}
	if t.ordered() {
		t.ordInsert(e, parent, goLeft)
	}
	t.insertColor(e)
	t.hset(hCur, t.cur()+1)
	if m := t.hget(hMin); m == null || (t.link(e, lParent) == m && t.link(parent, lLeft) == e) {
		t.hset(hMin, e)
	}
	if m := t.hget(hMaxI); m == null || (t.link(e, lParent) == m && t.link(parent, lRight) == e) {
		t.hset(hMaxI, e)
	}
}

// insertColor restores the red-black properties after inserting e
// (ARB_INSERT_COLOR).
func (t *tree) insertColor(e int) {
	for n := 0; n <= t.maxn; n++ {
		parent := t.parent(e)
		if parent == null || t.color(parent) != red {
			break
		}
		gparent := t.parent(parent)
		if parent == t.left(gparent) {
			if u := t.right(gparent); u != null && t.color(u) == red {
				t.setColor(u, black)
				t.setColor(parent, black)
				t.setColor(gparent, red)
				e = gparent
				continue
			}
			if t.right(parent) == e {
				t.rotateLeft(parent)
				parent, e = e, parent
			}
			t.setColor(parent, black)
			t.setColor(gparent, red)
			t.rotateRight(gparent)
		} else {
			if u := t.left(gparent); u != null && t.color(u) == red {
				t.setColor(u, black)
				t.setColor(parent, black)
				t.setColor(gparent, red)
				e = gparent
				continue
			}
			if t.left(parent) == e {
				t.rotateRight(parent)
				parent, e = e, parent
			}
			t.setColor(parent, black)
			t.setColor(gparent, red)
			t.rotateLeft(gparent)
		}
	}
	t.setColor(t.root(), black)
}

// remove unlinks e from the tree and puts it on the free list (ARB_REMOVE).
// A node with two children is replaced by its successor, which takes over
// e's whole link. If e was a cached extreme, the cache moves to e's parent
// (which is stale when e had an inner child; the C keeps it so).
func (t *tree) remove(old int) {
	if t.ordered() {
		t.ordRemove(old)
	}
	var child, parent int
	var col int8
	e := old
	switch {
	case t.left(e) == null:
		child = t.right(e)
	case t.right(e) == null:
		child = t.left(e)
	default:
		e = t.right(e)
		for n := 0; n < t.maxn; n++ {
			l := t.left(e)
			if l == null {
				break
			}
			e = l
		}
		child = t.right(e)
		parent = t.parent(e)
		col = t.color(e)
		if child != null {
			t.setParent(child, parent)
		}
		if parent != null {
			if t.left(parent) == e {
				t.setLeft(parent, child)
			} else {
				t.setRight(parent, child)
			}
		} else {
			t.hset(hRoot, child)
		}
		if t.parent(e) == old {
			parent = e
		}
		if t.valid(e) && t.valid(old) {
			copy(t.nodes[t.off(e):t.off(e)+linkLen], t.nodes[t.off(old):t.off(old)+linkLen])
		}
		if op := t.parent(old); op != null {
			if t.left(op) == old {
				t.setLeft(op, e)
			} else {
				t.setRight(op, e)
			}
		} else {
			t.hset(hRoot, e)
		}
		t.setParent(t.left(old), e)
		if r := t.right(old); r != null {
			t.setParent(r, e)
		}
		t.finishRemove(old, parent, child, col)
		return
	}
	parent = t.parent(e)
	col = t.color(e)
	if child != null {
		t.setParent(child, parent)
	}
	if parent != null {
		if t.left(parent) == e {
			t.setLeft(parent, child)
		} else {
			t.setRight(parent, child)
		}
	} else {
		t.hset(hRoot, child)
	}
	t.finishRemove(old, parent, child, col)
}

func (t *tree) finishRemove(old, parent, child int, col int8) {
	if col == black {
		t.removeColor(parent, child)
	}
	t.hset(hCur, t.cur()-1)
	if t.hget(hMin) == old {
		t.hset(hMin, t.link(old, lParent))
	}
	if t.hget(hMaxI) == old {
		t.hset(hMaxI, t.link(old, lParent))
	}
	t.returnFree(old)
}

// removeColor restores the red-black properties after removing a black
// node whose place child (possibly null) took under parent
// (ARB_REMOVE_COLOR).
func (t *tree) removeColor(parent, e int) {
	for n := 0; (e == null || t.color(e) == black) && e != t.root() && n <= t.maxn; n++ {
		if t.left(parent) == e {
			tmp := t.right(parent)
			if t.color(tmp) == red {
				t.setColor(tmp, black)
				t.setColor(parent, red)
				t.rotateLeft(parent)
				tmp = t.right(parent)
			}
			if l, r := t.left(tmp), t.right(tmp); (l == null || t.color(l) == black) &&
				(r == null || t.color(r) == black) {
				t.setColor(tmp, red)
				e = parent
				parent = t.parent(e)
				continue
			}
			if r := t.right(tmp); r == null || t.color(r) == black {
				if ol := t.left(tmp); ol != null {
					t.setColor(ol, black)
				}
				t.setColor(tmp, red)
				t.rotateRight(tmp)
				tmp = t.right(parent)
			}
			t.setColor(tmp, t.color(parent))
			t.setColor(parent, black)
			if r := t.right(tmp); r != null {
				t.setColor(r, black)
			}
			t.rotateLeft(parent)
			e = t.root()
			break
		}
		tmp := t.left(parent)
		if t.color(tmp) == red {
			t.setColor(tmp, black)
			t.setColor(parent, red)
			t.rotateRight(parent)
			tmp = t.left(parent)
		}
		if l, r := t.left(tmp), t.right(tmp); (l == null || t.color(l) == black) &&
			(r == null || t.color(r) == black) {
			t.setColor(tmp, red)
			e = parent
			parent = t.parent(e)
			continue
		}
		if l := t.left(tmp); l == null || t.color(l) == black {
			if or := t.right(tmp); or != null {
				t.setColor(or, black)
			}
			t.setColor(tmp, red)
			t.rotateLeft(tmp)
			tmp = t.left(parent)
		}
		t.setColor(tmp, t.color(parent))
		t.setColor(parent, black)
		if l := t.left(tmp); l != null {
			t.setColor(l, black)
		}
		t.rotateRight(parent)
		e = t.root()
		break
	}
	if e != null {
		t.setColor(e, black)
	}
}

// reinsert moves e to its place after its mean changed, if it is out of
// order with a neighbour (ARB_REINSERT): remove, take the head of the free
// list (which is e again) and insert.
func (d *digest[N]) reinsert(e int) {
	if p := d.prev(e); p != null && !d.less(p, e) {
		d.move(e)
		return
	}
	if n := d.next(e); n != null && !d.less(e, n) {
		d.move(e)
	}
}

// move is ARB_REINSERT's remove and insert.
func (d *digest[N]) move(e int) {
	d.remove(e)
	d.insert(d.getFree())
}

// resetHead sets the head to an empty tree of maxn nodes (ARB_RESET_TREE).
func (t *tree) resetHead(maxn int) {
	if t.ordered() {
		t.ordReset()
	}
	t.hset(hCur, 0)
	t.hset(hMax, maxn)
	t.hset(hRoot, null)
	t.hset(hFree, null)
	t.hset(hMin, null)
	t.hset(hMaxI, null)
}
