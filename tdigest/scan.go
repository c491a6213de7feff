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
// This is the hot loop of an update: generic over the node layout, it
// reads a node through one slice of constant length and keeps the link
// word it loaded for the next step; the successor is the C's ARB_NEXT
// (leftmost node of the right subtree, else the first ancestor reached
// from a left child).
func (d *digest[N]) nearest(start int, xctrl uint64, xv int64) (lb, ub, runLen int, sum uint64, errno int) {
	if start == null {
		return d.root(), null, 0, 0, eOK
	}
	if o := d.ord; o != nil && o.valid && o.pos[start] >= 0 {
		return nearestInOrder[N](d.nodes, o.seq[o.pos[start]:], xctrl, xv)
	}
	return nearestWalk[N](&d.tree, start, xctrl, xv)
}

// nearestWalk is nearest through the tree links of t's nodes (of layout
// N), from the valid node start: a function of its own, so that the
// loop's many live values have the registers to themselves.
func nearestWalk[N node](t *tree, start int, xctrl uint64, xv int64) (lb, ub, runLen int, sum uint64, errno int) {
	const linkEnd = 8
	sz, w32 := nodeLen[N](), is32[N]()
	nodes, maxn := t.nodes, t.maxn
	mx := uint(maxn)
	minz := int64(ifMaxS64)
	var tmpsum uint64
	// Every link followed costs a step; a walk through a valid tree takes
	// fewer than 3 per node, corrupt links run out of steps.
	steps := 3*maxn + 3
	cur := start
	lb = start
	lk := le.Uint64(nodes[cur*sz : cur*sz+linkEnd])
	for {
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
		if r := lkRight(lk); uint(r) < mx {
			for {
				if steps--; steps < 0 {
					return lb, null, runLen, sum, eInvalid
				}
				cur = r
				lk = le.Uint64(nodes[cur*sz : cur*sz+linkEnd])
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
			lk = le.Uint64(nodes[p*sz : p*sz+linkEnd])
			if lkLeft(lk) == cur || lkRight(lk) != cur {
				break
			}
			cur, p = p, lkParent(lk)
		}
		cur = p
	}
}
