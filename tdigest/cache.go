package tdigest

import (
	"github.com/statsblob/statsblob/bsdrand"
	"github.com/statsblob/statsblob/internal/trusted"
	"github.com/statsblob/statsblob/voi"
)

// orderCache keeps, beside a digest's bytes, its centroids in mean order:
// the sequence the bytes hold only as red-black tree links. With it an
// update finds the nearest centroids by reading an array, where the C (and
// Update) follow parent and child links from node to node, a chain of
// dependent loads. Results and bytes are exactly Update's; only the time
// differs. The tree view points to it (tree.ord), and insert and remove
// keep it in step.
type orderCache struct {
	seq   []int16 // the tree's nodes in order (ARB_FOREACH)
	pos   []int16 // by node index: its index in seq, -1 when not in the tree
	valid bool
}

// cache is what an update through a cache keeps between updates of one
// digest of layout N: the order and the digest's view as init made it
// (geometry, where the nodes are), none of which changes while the order is
// valid. Its zero value is ready for use; the first update fills it,
// allocating 4 bytes per centroid slot once. It belongs to one digest: pass
// it with the same bytes on every update and Invalidate it whenever those
// bytes change by other means (reset, merge, copying other bytes over
// them). It is not safe for concurrent use. Package blob holds one per
// t-digest statistic through trusted.TDigestCache.
type cache[N node] struct {
	orderCache
	d digest[N] // the view of the bytes the cache was filled from, used in place

	// The sample's control bits (Q_CTRLINI of node 0's precision) for
	// node 0's control bits ctrl0; updates recompute them when node 0's
	// change.
	ctrl0, xctrl uint64
}

// Invalidate makes the next update through c refill it (trusted.TDigestCache).
func (c *cache[N]) Invalidate() { c.valid = false }

// fill reads the order from the tree of d (the cache's digest) and keeps
// the view. It leaves the order invalid if the links do not describe
// exactly cur nodes in order (which Validate rules out): updates then follow
// the links as without a cache.
func (c *cache[N]) fill(d *digest[N]) {
	o := &c.orderCache
	t := &d.tree
	o.valid = false
	if cap(o.pos) < t.maxn {
		o.seq, o.pos = make([]int16, 0, t.maxn), make([]int16, t.maxn)
	}
	o.seq, o.pos = o.seq[:0], o.pos[:t.maxn]
	for i := range o.pos {
		o.pos[i] = -1
	}
	n := t.cur()
	for e := t.extreme(lLeft); e != null; e = t.next(e) {
		if len(o.seq) >= n || o.pos[e] >= 0 {
			return
		}
		o.pos[e] = int16(len(o.seq))
		o.seq = append(o.seq, int16(e))
	}
	o.valid = len(o.seq) == n
	c.d = *d
	c.d.ord = o
	c.ctrl0 = ^uint64(0) // none yet
}

// ordered reports whether the tree's order cache is in use.
func (t *tree) ordered() bool { return t.ord != nil && t.ord.valid }

// cachedNext and cachedPrev are next and prev through the cache; e must be
// in the tree.
func (t *tree) cachedNext(e int) int {
	o := t.ord
	if p := int(o.pos[e]) + 1; p < len(o.seq) {
		return int(o.seq[p])
	}
	return null
}

func (t *tree) cachedPrev(e int) int {
	o := t.ord
	if p := int(o.pos[e]) - 1; p >= 0 {
		return int(o.seq[p])
	}
	return null
}

// ordInsert records that e has joined the tree as a leaf under parent (on
// its left if goLeft): its in-order neighbour is parent, which follows it
// when it is a left child and precedes it otherwise. Rebalancing rotations
// keep the order.
func (t *tree) ordInsert(e, parent int, goLeft bool) {
	o := t.ord
	at := 0
	if parent != null {
		at = int(o.pos[parent])
		if !goLeft {
			at++
		}
	}
	if at < 0 || o.pos[e] >= 0 || len(o.seq) >= len(o.pos) {
		o.valid = false // the bytes changed behind the cache's back
		return
	}
	o.seq = append(o.seq, 0)
	copy(o.seq[at+1:], o.seq[at:])
	o.seq[at] = int16(e)
	for i := at; i < len(o.seq); i++ {
		o.pos[o.seq[i]] = int16(i)
	}
}

// ordRemove records that e leaves the tree: the others keep their order
// (a removal with two children puts the successor in e's place).
func (t *tree) ordRemove(e int) {
	o := t.ord
	at := int(o.pos[e])
	if at < 0 {
		o.valid = false // the bytes changed behind the cache's back
		return
	}
	copy(o.seq[at:], o.seq[at+1:])
	o.seq = o.seq[:len(o.seq)-1]
	o.pos[e] = -1
	for i := at; i < len(o.seq); i++ {
		o.pos[o.seq[i]] = int16(i)
	}
}

// ordReset records that the tree is empty.
func (t *tree) ordReset() {
	o := t.ord
	for _, e := range o.seq {
		o.pos[e] = -1
	}
	o.seq = o.seq[:0]
}

// nearestInOrder is nearest over the cached order: the nodes of seq, in
// mean order from the search's start (see nearest for the rules).
func nearestInOrder[N node](nodes []byte, seq []int16, xctrl uint64, xv int64) (lb, ub, runLen int, sum uint64, errno int) {
	w32 := is32[N]()
	minz := int64(ifMaxS64)
	var tmpsum uint64
	lb = int(seq[0])
	for _, e := range seq {
		cur := int(e)
		nd := nodeAt(nodes, cur, w32)
		r := nodeMu(nd, w32)
		if r&ctrlMask != xctrl {
			return lb, null, runLen, sum, eRange
		}
		z := ifv(r, w32) - xv
		if z > ifMaxS64 || z < -ifMaxS64 {
			return lb, null, runLen, sum, eOverflow
		}
		if z < 0 {
			z = -z
		}
		if z < minz {
			minz, lb, sum, runLen = z, cur, tmpsum, 1
			tmpsum += uint64(nodeCnt(nd, w32))
		} else if z > minz {
			return lb, cur, runLen, sum, eOK
		} else {
			runLen++
		}
	}
	return lb, null, runLen, sum, eOK
}

func init() { trusted.TDigestUpdate = updateTrusted }

// updateTrusted is trusted.TDigestUpdate: Update through the cache that c
// holds, made on first use (or when c held one of the other layout), or
// the accurate mode's update when c.Accurate is set.
func updateTrusted(c *trusted.TDigestCache, data []byte, dt, voiDT voi.DType, v uint64, rnd *bsdrand.Source) error {
	if c.Accurate {
		switch dt {
		case voi.TDgstClust32:
			return accIn[node32](c).update(data, voiDT, v)
		case voi.TDgstClust64:
			return accIn[node64](c).update(data, voiDT, v)
		}
		return errDType
	}
	switch dt {
	case voi.TDgstClust32:
		return updateLayout(data, voiDT, v, rnd, cacheIn[node32](c))
	case voi.TDgstClust64:
		return updateLayout(data, voiDT, v, rnd, cacheIn[node64](c))
	}
	return errDType
}

// cacheIn returns the cache of layout N that c holds, making it if c holds
// none (or one of the other layout).
func cacheIn[N node](c *trusted.TDigestCache) *cache[N] {
	cc, ok := c.C.(*cache[N])
	if !ok {
		cc = new(cache[N])
		c.C = cc
	}
	return cc
}
