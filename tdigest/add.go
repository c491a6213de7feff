package tdigest

import (
	"math/bits"
	"math/rand/v2"

	"github.com/statsblob/statsblob/bsdrand"
	"github.com/statsblob/statsblob/voi"
)

// digest is a view of digest bytes of layout N (node32 or node64) with
// the random source the update draws from: the update and merge paths. It
// is made per call, on the stack, or kept in an update cache. Its
// accessors below shadow tree's with the layout fixed by N.
type digest[N node] struct {
	tree
	rnd *bsdrand.Source // nil: a concurrency-safe source of the runtime
}

// random is the C's random(): 31 random bits.
func (d *digest[N]) random() int32 {
	if d.rnd != nil {
		return d.rnd.Int31()
	}
	return int32(rand.Uint32() >> 1)
}

// The layout accessors with the width fixed by N (see layout.go).
func (d *digest[N]) smplcnt() uint64          { return loadSmplcnt(d.b, is32[N]()) }
func (d *digest[N]) setSmplcnt(n uint64)      { storeSmplcnt(d.b, n, is32[N]()) }
func (d *digest[N]) compOff() int             { return compOffset(is32[N]()) }
func (d *digest[N]) cnt(i int) int64          { return loadCnt(d.nodes, i, is32[N]()) }
func (d *digest[N]) setCnt(i int, c int64)    { storeCnt(d.nodes, i, c, is32[N]()) }
func (d *digest[N]) muRaw(i int) uint64       { return loadMu(d.nodes, i, is32[N]()) }
func (d *digest[N]) setMuRaw(i int, r uint64) { storeMu(d.nodes, i, r, is32[N]()) }
func (d *digest[N]) less(a, b int) bool {
	w32 := is32[N]()
	return lessRaw(loadMu(d.nodes, a, w32), loadMu(d.nodes, b, w32), w32)
}

// muS64 returns a centroid's mean as an s64q: control bits and combined
// value. A 32-bit mean is converted as a Q value (Q_QCLONEQ, defect 5
// fixed): same control bits, same combined value.
func (d *digest[N]) muS64(i int) (ctrl uint64, v int64) {
	w32 := is32[N]()
	r := loadMu(d.nodes, i, w32)
	return r & ctrlMask, ifv(r, w32)
}

// add is stats_v1_vsd_tdgst_add: merge the s64q sample x (raw bits) with
// weight into one of the nearest centroids that can take it within the
// t-digest size bound (uniformly at random among them), or make it a new
// centroid; when the
// digest is full and no centroid can take it, compress and try again (at
// most until attempt reaches 5). It returns the C's errno.
func (d *digest[N]) add(x, weight uint64, attempt int) int {
	w32 := is32[N]()
	smpl := d.smplcnt()
	if w32 {
		if 0xFFFFFFFF-weight < smpl {
			return eOverflow
		}
	} else if ^weight < smpl {
		return eOverflow
	}
	xctrl, xv := x&ctrlMask, ifvS64(x)

	closest := null
	var h runInfo
	for {
		if attempt >= 5 {
			return eAgain
		}
		h.start = d.minNode()
		var sum uint64
		var runLen, errno int
		h.lb, h.ub, runLen, sum, errno = d.nearest(h.start, xctrl, xv)
		if errno != eOK {
			return errno
		}

		// Among those, pick uniformly at random one whose count stays
		// within the t-digest size bound after taking the sample. (The
		// successor of the run's last centroid is ub.)
		n, before := 0, null
		for cur, i := h.lb, 0; i < runLen; i++ {
			if cur == null {
				return eInvalid // corrupt links
			}
			nxt := h.ub
			if i < runLen-1 {
				nxt = d.next(cur)
			}
			cnt := uint64(loadCnt(d.nodes, cur, w32))
			limit, errno := kLimit(sum, cnt, smpl, attempt)
			if errno != eOK {
				return errno
			}
			if cnt+weight <= limit {
				n++
				if d.random() < int32(maxRandDiv/n) {
					closest, h.prev, h.next = cur, before, nxt
				}
			}
			sum += cnt
			before, cur = cur, nxt
		}
		if closest != null || !d.full() {
			break
		}
		if errno := d.compress(attempt); errno != eOK {
			return errno
		}
		attempt++
	}

	if closest != null {
		errno := d.merge(closest, x, xv, weight, &h)
		if errno != eOK {
			return errno
		}
	} else {
		e := d.getFree()
		if e == null {
			return eAgain
		}
		if is32[N]() {
			// Q_QCPYVALQ into the s32q mean, which keeps its control bits
			// and takes x's integer part and raw fraction bits. On failure
			// the node has left the free list without joining the tree, as
			// in the C; a later getFree finds it again.
			neg, imag, fmag := splitQ(voi.QS64, x)
			raw, errno := cpyValQ32(d.muRaw(e), neg, imag, fmag)
			if errno != eOK {
				return errno
			}
			d.setMuRaw(e, uint64(raw))
		} else {
			d.setMuRaw(e, x)
		}
		d.setCnt(e, int64(weight))
		d.insert(e)
	}
	d.setSmplcnt(d.smplcnt() + weight)
	return eOK
}

// merge folds the sample (raw x, combined value xv) with weight into
// centroid c: mu += (x - mu) / (cnt + weight), where an underflow of the
// quotient to zero leaves mu unchanged (the C ignores ERANGE there), then
// moves c to its new place in mean order.
func (d *digest[N]) merge(c int, x uint64, xv int64, weight uint64, h *runInfo) int {
	// Q_QSUBQ(&x, mu) first checks that the precisions agree; for a 32-bit
	// mean the s32q's own number of fractional bits counts.
	muCtrl, muv := d.muS64(c)
	if is32[N]() {
		if nfS32(muCtrl) != nfS64(x) {
			return eRange
		}
	} else if muCtrl != x&ctrlMask {
		return eRange
	}
	delta, errno := subS64(xv, muv)
	if errno != eOK {
		return errno
	}
	cnt := d.cnt(c)
	delta, errno = divS64(delta, uint64(cnt)+weight)
	if errno != eOK && errno != eRange {
		return errno
	}
	if is32[N]() {
		s, errno := addS32(muv, delta)
		if errno != eOK {
			return errno
		}
		d.setMuRaw(c, uint64(setS32(muCtrl, int32(s))))
	} else {
		s, errno := subS64(muv, -delta)
		if errno != eOK {
			return errno
		}
		d.setMuRaw(c, setS64(muCtrl, s))
	}
	d.setCnt(c, cnt+int64(weight))

	// ARB_REINSERT: move c if it is now out of order with its predecessor
	// or, failing that, its successor (an equal mean counts as out of
	// order). The search has visited c's neighbours (the successor always,
	// the predecessor unless c is where the search started), so they are
	// known without walking the tree, have x's precision and compare
	// numerically; where a test's outcome follows from the means ascending
	// in the tree it is not made: a mean that grew cannot fall below its
	// predecessor, one that shrank cannot reach its successor, and an
	// unchanged mean equals its predecessor's only inside the run of
	// equally near centroids (whose distance is the mean's), the same for
	// its successor.
	switch {
	case c == h.start:
		d.reinsert(c)
	case delta > 0:
		if n := h.next; n != null && !d.less(c, n) {
			d.move(c)
		}
	case delta < 0:
		p := h.prev
		if c == h.lb {
			p = d.prev(c)
		}
		if p != null && !d.less(p, c) {
			d.move(c)
		}
	default:
		if c != h.lb && !d.less(h.prev, c) || h.next != h.ub && h.next != null && !d.less(c, h.next) {
			d.move(c)
		}
	}
	return eOK
}

// runInfo is what merge learns from the search about the centroid it
// merges into.
type runInfo struct {
	start  int // where the search started (the cached minimum)
	lb, ub int // the run of nearest centroids, [lb, ub)
	prev   int // the predecessor of the chosen centroid if it is in the run
	next   int // the successor of the chosen centroid
}

// compress is stats_v1_vsd_tdgst_compress: if the digest is full, empty
// the tree, put every centroid on the free list in a random order and add
// each one's mean and count back (with the caller's attempt, which makes
// the size bound proportionally looser). It returns the last error of
// those adds.
func (d *digest[N]) compress(attempt int) int {
	if !d.full() {
		return eOK
	}
	co := d.compOff()
	le.PutUint32(d.b[co:], le.Uint32(d.b[co:])+1)
	maxc := d.hget(hMax)
	d.resetHead(maxc)
	d.setSmplcnt(0)

	// The permutation: each index takes bitsPerIdx bits of a bit reservoir
	// refilled with 31 bits of random() at a time; the first node at or
	// after that index (cyclically) not yet on the free list goes on it.
	bitsPerIdx := uint(bits.Len(uint(maxc)))
	mask := uint64(1)<<bitsPerIdx - 1
	var reservoir uint64
	var have uint
	head := null
	for rem := maxc; rem > 0; rem-- {
		for have < bitsPerIdx {
			reservoir |= uint64(d.random()) << have
			have = min(have+31, 64)
		}
		idx := int(reservoir & mask)
		have -= bitsPerIdx
		reservoir >>= bitsPerIdx
		for n := 0; ; n++ {
			if idx >= maxc {
				idx %= maxc
			}
			if d.color(idx) != freeCol || n > maxc {
				break
			}
			idx++
		}
		d.returnFree(idx)
		head = idx
	}

	// Walk the list from its head, re-adding each centroid. An add may take
	// a node from the head of the free list, which is never ahead of the
	// walk, so the next index is read before adding.
	errno := eOK
	for cur, n := d.node(head), 0; cur != null && n < maxc; n++ {
		nxt := d.link(cur, lRight)
		x := d.muRaw(cur)
		if is32[N]() {
			ctrl, v := d.muS64(cur)
			x = setS64(ctrl, v) // Q_QCLONEQ into an s64q
		}
		if e := d.add(x, uint64(d.cnt(cur)), attempt); e != eOK {
			errno = e
		}
		cur = d.node(nxt)
	}
	return errno
}

// cpyValQ32 is Q_QCPYVALQ into an s32q mean (raw bits mu) of a Q given by
// sign, integer magnitude and raw fraction magnitude (fixed 1).
func cpyValQ32(mu uint64, neg bool, imag, fmag uint64) (uint32, int) {
	nf := nfS32(mu)
	if imag > ifMaxS32>>nf || fmag > 1<<nf-1 {
		return 0, eOverflow
	}
	raw := uint32(mu&ctrlMask) | uint32(imag)<<(3+nf) | uint32(fmag)<<3
	if neg && imag|fmag != 0 {
		raw |= 1 << 31
	}
	return raw, eOK
}
