package tdigest

import (
	"math"
	"sort"
)

// fitSteps is how many tolerances fit tries, halving the interval between
// the partition's error and a sixteenth of it in log space each time (the
// last one found within about 1% of the best a greedy pass reaches).
const fitSteps = 8

// fitKnot is a point of the quantile function: a rank (samples below, in
// the middle of a group) and a value (combined).
type fitKnot struct{ r, v float64 }

// fit chooses the groups of the finer centroids items (sorted by mean)
// that the bytes hold, at most maxn: it returns cuts (where each group
// starts, the last entry len(items)), or better ones when it finds them.
//
// The queries interpolate linearly between the groups' knots (see knots),
// and the rank error of that interpolation depends on where the quantile
// function curves, which partition's scale function does not know: a
// lognormal's curves most around the median and in the far tail, a
// Pareto's in the tail only. fit measures the largest rank error of cuts'
// knots against the items' own quantile function (knotError), then looks
// for the fewest groups that keep every item within a tolerance of it (a
// greedy pass, fitPass), for tolerances between that error and a
// sixteenth of it, and keeps the grouping of smallest error that fits in
// maxn. The first and last items and the edges of empty stretches between
// modes (modeEdges) stay groups of their own, as in partition.
//
// The tolerance is the same at every rank: narrowing it towards the tails
// (as the square root of the distance to the end, over the last 1%, 5% or
// 20% of the samples) made the worst rank error over p50..p99.9 larger on
// the targets' streams, p99.9 included. At 10^5 lognormal samples and 20
// slots fit takes that error from 0.40% to 0.21%. It costs fitSteps
// passes over the finer centroids (0.15, 0.4 and 0.7 ms at 20, 50 and 100
// slots of 32 finer centroids each), so only a view's flush runs it (see
// flush): updates pay nothing for it. Its greedy passes are not monotone
// in the tolerance, which is why it tries fitSteps of them: 5 or 6 tries,
// or a bisection instead of the linear shrink in fitPass, measured worse.
//
// Also tried: knot values off the quantile function (any value in the
// group's items' range whose segment from the previous knot stays in the
// cone, the nearest to the quantile), so that segments pass through the
// items instead of lying on one side of them. Over the targets' streams
// (10^4 and 10^5 samples, 20 to 100 slots, both widths, two seeds) the
// worst rank error fell by 14% in geometric mean (10% over 999
// quantiles), but against the peers more TDGSTCLUST32 cells went above
// 1.25 (21 of 54 against 18) and fewer TDGSTCLUST64 ones (22 against 27);
// values confined to the items either side of the knot's rank, which
// keep fitPass's tolerance exact, gained 2%. Not kept.
func (c *accCache[N]) fit(items []accItem, maxn int, cuts []int32) []int32 {
	m := len(items)
	if m <= maxn || maxn < 3 {
		return cuts
	}
	if cap(c.cum) < m+1 { // not after the first flush: init sizes them
		c.mids = make([]float64, m)
		c.cum = make([]float64, m+1)
	}
	c.mids, c.cum = c.mids[:m], c.cum[:m+1]
	mids, cum := c.mids, c.cum
	cum[0] = 0
	for i, it := range items {
		w := float64(it.n())
		mids[i] = cum[i] + w/2
		cum[i+1] = cum[i] + w
	}
	forced := c.modeEdges(items, maxn)
	best := c.knotError(items, cuts)
	if best == 0 {
		return cuts
	}
	// try runs a pass at tol, keeps its grouping if it is the best so
	// far, and reports whether it fit in maxn.
	try := func(tol float64) bool {
		cs := c.fitPass(items, forced, tol, maxn)
		if cs == nil {
			return false
		}
		if e := c.knotError(items, cs); e < best {
			best = e
			cuts = append(cuts[:0], cs...)
		}
		return true
	}
	lo, hi := best/16, best
	for range fitSteps {
		tol := math.Sqrt(lo * hi)
		if try(tol) {
			hi = tol
		} else {
			lo = tol
		}
	}
	return cuts
}

// knotAt is the knot of group [s, e) of items: its middle rank and the
// items' quantile there, linear between their middles and rounded, as
// knots writes it.
func (c *accCache[N]) knotAt(items []accItem, s, e int) fitKnot {
	if e-s == 1 {
		return fitKnot{c.mids[s], float64(items[s].v)}
	}
	r := (c.cum[s] + c.cum[e]) / 2
	// The group's first item whose middle is at or past r (its last one
	// is: a group's middle is not past its last item's).
	k := s + sort.SearchFloat64s(c.mids[s:e-1], r)
	if k == s || c.mids[k] == c.mids[k-1] {
		return fitKnot{r, float64(items[k].v)}
	}
	a, b := c.mids[k-1], c.mids[k]
	va, vb := float64(items[k-1].v), float64(items[k].v)
	return fitKnot{r, math.Round(va + (r-a)/(b-a)*(vb-va))}
}

// cone is the set of slopes (value per rank) of the segments from a knot
// a that pass within tol of each item added so far: at or above lo, at or
// below hi; flat while every item added has a's value (then only a flat
// segment, one to a knot of that value, passes).
type cone struct {
	a      fitKnot
	lo, hi float64
	flat   bool
	ok     bool // some slope is left
}

func newCone(a fitKnot) cone { return cone{a: a, hi: math.Inf(1), flat: true, ok: true} }

// add narrows the cone to the segments that also pass within tol of the
// point (r, v), at or past a's rank and value.
func (k *cone) add(r, v, tol float64) {
	dv, dr := v-k.a.v, r-k.a.r
	if dv <= 0 {
		k.ok = k.ok && dr <= tol
		return
	}
	k.flat = false
	k.lo = max(k.lo, dv/(dr+tol))
	if dr > tol {
		k.hi = min(k.hi, dv/(dr-tol))
	}
	k.ok = k.ok && k.lo <= k.hi*(1+1e-12)
}

// reaches reports whether the segment from a to b is in the cone.
func (k *cone) reaches(b fitKnot) bool {
	if !k.ok {
		return false
	}
	dv := b.v - k.a.v
	if dv <= 0 {
		return k.flat
	}
	sl := dv / (b.r - k.a.r)
	return sl >= k.lo*(1-1e-12) && sl <= k.hi*(1+1e-12)
}

// segment reports whether the segment from a to b passes within tol of
// every item whose middle lies between them, the first at or past index p.
func (c *accCache[N]) segment(items []accItem, a, b fitKnot, p int, tol float64) bool {
	dv := b.v - a.v
	if dv < 0 {
		return false
	}
	sl := dv / (b.r - a.r) // the segment's slope, 0 if flat
	p += sort.SearchFloat64s(c.mids[p:], a.r)
	for ; p < len(items) && c.mids[p] < b.r; p++ {
		r := c.mids[p]
		if r <= a.r {
			continue
		}
		// The rank at which the segment reaches the item's value, within
		// tol of the item's (see cone.add).
		v := float64(items[p].v) - a.v
		switch {
		case v <= 0:
			if r-a.r > tol {
				return false
			}
		case sl == 0:
			return false
		default:
			if math.Abs(a.r+v/sl-r) > tol*(1+1e-12) {
				return false
			}
		}
	}
	return true
}

// reachesNext reports whether the segment from the knot of group [s, e)
// to that of item e alone passes within tol of the items between (true
// when there is no item e).
func (c *accCache[N]) reachesNext(items []accItem, s, e int, tol float64) bool {
	return e >= len(items) || c.segment(items, c.knotAt(items, s, e), c.knotAt(items, e, e+1), s, tol)
}

// fitPass groups items greedily at tolerance tol (in samples) and returns
// the groups' starts and len(items), or nil when it needs more than maxn
// groups. The result is c.fcuts.
func (c *accCache[N]) fitPass(items []accItem, forced []int32, tol float64, maxn int) []int32 {
	m := len(items)
	cuts := append(c.fcuts[:0], 0)
	a := c.knotAt(items, 0, 1)
	fi := 1 // forced[0] is item 0
	for s := 1; s < m; {
		cuts = append(cuts, int32(s))
		if len(cuts) > maxn {
			c.fcuts = cuts
			return nil
		}
		for fi < len(forced) && int(forced[fi]) < s {
			fi++
		}
		lim := m
		if fi < len(forced) {
			lim = int(forced[fi])
		}
		e := s + 1
		if s != lim {
			// The group grows while the segment from a to its knot stays
			// in the cone of the items between them; then it shrinks to
			// the longest whose segment from its knot to the nearest the
			// next knot can be (the next item's, a group of one) passes
			// too, which the next group needs.
			k := newCone(a)
			p := s
			for p > 0 && c.mids[p-1] > a.r {
				p--
			}
			cnt := items[s].n()
			for e < lim && cnt <= c.maxc-items[e].n() {
				b := c.knotAt(items, s, e+1)
				next, q := k, p
				for ; q < m && c.mids[q] < b.r; q++ {
					next.add(c.mids[q], float64(items[q].v), tol)
				}
				if !next.reaches(b) {
					break
				}
				k, p = next, q
				cnt += items[e].n()
				e++
			}
			for e > s+1 && !c.reachesNext(items, s, e, tol) {
				e--
			}
		}
		a = c.knotAt(items, s, e)
		s = e
	}
	cuts = append(cuts, int32(m))
	c.fcuts = cuts
	return cuts
}

// knotError returns the largest distance, in samples, between an item's
// middle rank and the rank at which the knots of cuts' groups reach its
// value (the rank error a query makes there): the knots interpolated
// linearly, a value that knots share reached over their ranks, a value
// below the first knot or above the last at their ranks.
func (c *accCache[N]) knotError(items []accItem, cuts []int32) float64 {
	ks := c.fknots[:0]
	for g := 0; g+1 < len(cuts); g++ {
		ks = append(ks, c.knotAt(items, int(cuts[g]), int(cuts[g+1])))
	}
	c.fknots = ks
	worst, k := 0.0, 0
	for i, it := range items {
		v, r := float64(it.v), c.mids[i]
		for k+1 < len(ks) && ks[k+1].v < v {
			k++
		}
		// The ranks [rlo, rhi] at which the knots reach v.
		var rlo, rhi float64
		switch {
		case v <= ks[k].v:
			rlo, rhi = ks[k].r, ks[k].r
			if k == 0 {
				rlo = 0
			}
			for h := k + 1; h < len(ks) && ks[h].v == v; h++ {
				rhi = ks[h].r
			}
		case k+1 == len(ks):
			rlo, rhi = ks[k].r, c.cum[len(items)]
		default:
			a, b := ks[k], ks[k+1]
			rlo = a.r + (v-a.v)/(b.v-a.v)*(b.r-a.r)
			rhi = rlo
			for h := k + 2; b.v == v && h < len(ks) && ks[h].v == v; h++ {
				rhi = ks[h].r
			}
		}
		if r < rlo {
			worst = max(worst, rlo-r)
		} else if r > rhi {
			worst = max(worst, r-rhi)
		}
	}
	return worst
}
