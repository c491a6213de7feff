package tdigest

import "github.com/statsblob/statsblob/voi"

// Cache keeps, beside a digest's bytes, its centroids in mean order: the
// sequence the bytes hold only as red-black tree links. With it an update
// finds the nearest centroids by reading an array, where the C (and Update)
// follow parent and child links from node to node, a chain of dependent
// loads. Results and bytes are exactly Update's; only the time differs.
//
// A Cache belongs to one digest: pass it with the same bytes on every
// update and call Invalidate whenever those bytes change by other means
// (Reset, Merge, copying other bytes over them). The zero Cache is ready
// for use; the first update through it fills it, allocating 4 bytes per
// centroid slot once, and keeps it in step with the tree from then on. A
// Cache is not safe for concurrent use (nor are the bytes it belongs to).
type Cache struct {
	seq   []int16 // the tree's nodes in order (ARB_FOREACH)
	pos   []int16 // by node index: its index in seq, -1 when not in the tree
	valid bool

	// The digest's geometry as init read it when the cache was filled
	// (type, size, where the nodes are), so updates need not read it
	// again: none of it changes while the cache is valid.
	dt  voi.DType
	dsz int
	geo tree // without bytes

	// The view of the bytes the cache was filled from, for the updates
	// that bring the same bytes (a blob's): used in place, not copied.
	d digest

	// The sample's control bits (Q_CTRLINI of node 0's precision) for
	// node 0's control bits ctrl0; updates recompute them when node 0's
	// change.
	ctrl0, xctrl uint64
}

// Invalidate discards what the cache knows; the next update through it
// reads the order from the tree again.
func (c *Cache) Invalidate() { c.valid = false }

// Update is the package's Update through the cache.
func (c *Cache) Update(data []byte, dt, voiDT voi.DType, v uint64, env *Env) error {
	return update(data, dt, voiDT, v, env, c)
}

// fill reads the order from the tree t, which must be the cache's digest.
// It leaves the cache invalid if the links do not describe exactly cur
// nodes in order (which Validate rules out): updates then follow the links
// as without a cache.
func (c *Cache) fill(t *tree, dt voi.DType) {
	c.valid = false
	if cap(c.pos) < t.maxn {
		c.seq, c.pos = make([]int16, 0, t.maxn), make([]int16, t.maxn)
	}
	c.seq, c.pos = c.seq[:0], c.pos[:t.maxn]
	for i := range c.pos {
		c.pos[i] = -1
	}
	n := t.cur()
	for e := t.extreme(lLeft); e != null; e = t.next(e) {
		if len(c.seq) >= n || c.pos[e] >= 0 {
			return
		}
		c.pos[e] = int16(len(c.seq))
		c.seq = append(c.seq, int16(e))
	}
	c.valid = len(c.seq) == n
	c.dt, c.dsz, c.geo = dt, len(t.b), *t
	c.geo.b, c.geo.nodes, c.geo.ord = nil, nil, nil
	c.d = digest{tree: *t}
	c.d.ord = c
	c.ctrl0 = ^uint64(0) // none yet
}

// prepared returns the cache's view if the cache is valid for data (the
// very bytes it was filled from) and dt, with its random source set from
// env.
func (c *Cache) prepared(data []byte, dt voi.DType, env *Env) *digest {
	if !c.valid || c.dt != dt || len(data) != c.dsz || len(data) == 0 || &data[0] != &c.d.b[0] {
		return nil
	}
	d := &c.d
	d.rnd = nil
	if env != nil {
		d.rnd = env.Rand
	}
	return d
}

// view sets d to the cached geometry over data, if the cache is valid for
// bytes of type dt and data's length.
func (c *Cache) view(d *digest, data []byte, dt voi.DType) bool {
	if !c.valid || c.dt != dt || c.dsz != len(data) {
		return false
	}
	d.tree = c.geo
	d.b, d.nodes = data, data[d.base:d.base+d.maxn*d.nsz]
	return true
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

// nearestCached is nearest over the cached order (see nearest64 for the
// rules); start must be in the tree.
func (d *digest) nearestCached(start int, xctrl uint64, xv int64) (lb, ub, runLen int, sum uint64, errno int) {
	o := d.ord
	seq := o.seq[o.pos[start]:]
	nodes := d.nodes
	minz := int64(ifMaxS64)
	var tmpsum uint64
	lb = start
	for _, e := range seq {
		cur := int(e)
		var r uint64
		var z int64
		var cnt uint64
		if d.is32 {
			nd := (*[NodeSize32]byte)(nodes[cur*NodeSize32 : cur*NodeSize32+NodeSize32])
			r = uint64(le.Uint32(nd[8:12]))
			z = ifvS32(r) - xv
			cnt = uint64(int64(int32(le.Uint32(nd[12:16]))))
		} else {
			nd := (*[NodeSize64]byte)(nodes[cur*NodeSize64 : cur*NodeSize64+NodeSize64])
			r = le.Uint64(nd[8:16])
			z = ifvS64(r) - xv
			cnt = le.Uint64(nd[16:24])
		}
		if r&ctrlMask != xctrl {
			return lb, null, runLen, sum, eRange
		}
		if z > ifMaxS64 || z < -ifMaxS64 {
			return lb, null, runLen, sum, eOverflow
		}
		if z < 0 {
			z = -z
		}
		if z < minz {
			minz, lb, sum, runLen = z, cur, tmpsum, 1
			tmpsum += cnt
		} else if z > minz {
			return lb, cur, runLen, sum, eOK
		} else {
			runLen++
		}
	}
	return lb, null, runLen, sum, eOK
}
