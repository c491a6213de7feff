package tdigest

// nearest finds the run of centroids nearest to the sample (control bits
// xctrl, combined value xv), the first loop of stats_v1_vsd_tdgst_add:
// walking in mean order from start (the cached minimum), lb is where the
// distance last strictly decreased and ub the first centroid farther than
// that (null at the end); the run is [lb, ub), runLen centroids long. sum
// is the total count of the centroids before lb at which the distance
// strictly decreased (the C adds nothing for a centroid at the same
// distance as the one before, which happens with equal means). It returns ERANGE if a mean's precision
// differs from x's and EOVERFLOW if a distance leaves the s64q range, as
// the C's Q_QSUBQ does.
//
// This is the hot loop of an update, so it comes in two copies, one per
// node layout, each reading a node through one array pointer and keeping
// the link word it loaded for the next step; the successor is the C's
// ARB_NEXT (leftmost node of the right subtree, else the first ancestor
// reached from a left child).
func (d *digest) nearest(start int, xctrl uint64, xv int64) (lb, ub, runLen int, sum uint64, errno int) {
	if start == null {
		return d.root(), null, 0, 0, eOK
	}
	if d.ordered() && d.ord.pos[start] >= 0 {
		return d.nearestCached(start, xctrl, xv)
	}
	if d.is32 {
		return d.nearest32(start, xctrl, xv)
	}
	return d.nearest64(start, xctrl, xv)
}

func (d *digest) nearest64(start int, xctrl uint64, xv int64) (lb, ub, runLen int, sum uint64, errno int) {
	nodes, mx := d.nodes, uint(d.maxn)
	minz := int64(ifMaxS64)
	var tmpsum uint64
	// Every link followed costs a step; a walk through a valid tree takes
	// fewer than 3 per node, corrupt links run out of steps.
	steps := 3*d.maxn + 3
	cur := start
	lb = start
	lk := le.Uint64(nodes[cur*NodeSize64 : cur*NodeSize64+8])
	for {
		nd := (*[NodeSize64]byte)(nodes[cur*NodeSize64 : cur*NodeSize64+NodeSize64])
		r := le.Uint64(nd[8:16])
		if r&ctrlMask != xctrl {
			return lb, null, runLen, sum, eRange
		}
		z := ifvS64(r) - xv
		if z > ifMaxS64 || z < -ifMaxS64 {
			return lb, null, runLen, sum, eOverflow
		}
		if z < 0 {
			z = -z
		}
		if z < minz {
			minz, lb, sum, runLen = z, cur, tmpsum, 1
			tmpsum += le.Uint64(nd[16:24])
		} else if z > minz {
			return lb, cur, runLen, sum, eOK
		} else {
			runLen++
		}
		if r := lkRight(lk); uint(r) < mx {
			for {
				if steps--; steps < 0 {
					return lb, null, runLen, sum, eInvalid
				}
				cur = r
				lk = le.Uint64(nodes[cur*NodeSize64 : cur*NodeSize64+8])
				if r = lkLeft(lk); uint(r) >= mx {
					break
				}
			}
			continue
		}
		p := lkParent(lk)
		for {
			if steps--; steps < 0 {
				return lb, null, runLen, sum, eInvalid
			}
			if uint(p) >= mx {
				return lb, null, runLen, sum, eOK
			}
			lk = le.Uint64(nodes[p*NodeSize64 : p*NodeSize64+8])
			if lkLeft(lk) == cur || lkRight(lk) != cur {
				break
			}
			cur, p = p, lkParent(lk)
		}
		cur = p
	}
}

func (d *digest) nearest32(start int, xctrl uint64, xv int64) (lb, ub, runLen int, sum uint64, errno int) {
	nodes, mx := d.nodes, uint(d.maxn)
	minz := int64(ifMaxS64)
	var tmpsum uint64
	// Every link followed costs a step; a walk through a valid tree takes
	// fewer than 3 per node, corrupt links run out of steps.
	steps := 3*d.maxn + 3
	cur := start
	lb = start
	lk := le.Uint64(nodes[cur*NodeSize32 : cur*NodeSize32+8])
	for {
		nd := (*[NodeSize32]byte)(nodes[cur*NodeSize32 : cur*NodeSize32+NodeSize32])
		r := uint64(le.Uint32(nd[8:12]))
		if r&ctrlMask != xctrl {
			return lb, null, runLen, sum, eRange
		}
		z := ifvS32(r) - xv
		if z > ifMaxS64 || z < -ifMaxS64 {
			return lb, null, runLen, sum, eOverflow
		}
		if z < 0 {
			z = -z
		}
		if z < minz {
			minz, lb, sum, runLen = z, cur, tmpsum, 1
			tmpsum += uint64(int64(int32(le.Uint32(nd[12:16]))))
		} else if z > minz {
			return lb, cur, runLen, sum, eOK
		} else {
			runLen++
		}
		if r := lkRight(lk); uint(r) < mx {
			for {
				if steps--; steps < 0 {
					return lb, null, runLen, sum, eInvalid
				}
				cur = r
				lk = le.Uint64(nodes[cur*NodeSize32 : cur*NodeSize32+8])
				if r = lkLeft(lk); uint(r) >= mx {
					break
				}
			}
			continue
		}
		p := lkParent(lk)
		for {
			if steps--; steps < 0 {
				return lb, null, runLen, sum, eInvalid
			}
			if uint(p) >= mx {
				return lb, null, runLen, sum, eOK
			}
			lk = le.Uint64(nodes[p*NodeSize32 : p*NodeSize32+8])
			if lkLeft(lk) == cur || lkRight(lk) != cur {
				break
			}
			cur, p = p, lkParent(lk)
		}
		cur = p
	}
}
