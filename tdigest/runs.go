package tdigest

import "slices"

// Runs of equal samples. The queries interpolate between the middle ranks
// of consecutive centroids, so a run of n equal samples kept as one
// centroid answers its value only around its middle: towards its ends
// the line to the neighbouring centroid takes over. Splitting a run into
// centroids of the same value ("pieces") moves the knots nearest its
// neighbours towards its ends. The bytes' slots left spare by the
// grouping go to that; exactRuns spends them so that every quantile
// answers its run's value, and splitRuns, when they do not suffice,
// pins the heaviest runs first.

// exactRuns appends to dst the centroids of src (in mean order, the
// bytes' groups) with its runs of equal samples split into pieces so that
// every rank of a run answers the run's value, and reports whether the
// slots src leaves spare of maxn sufficed; if not, dst is returned as it
// was. unit is the difference between consecutive integers in the items'
// combined values when the VOI is an integer one, whose answers
// blob.Stat.Quantile rounds to the nearest integer; else 0.
//
// Between a run and any other item a quantile is exact when the run's
// piece facing it holds one sample (a pin): the query's line then crosses
// from the run's value to the other item's within half a sample of their
// boundary. Between two runs of consecutive integers (unit > 0) it is
// exact, rounded, when the two facing pieces hold the same number of
// samples, whatever it is: the line crosses the midpoint between the
// integers, where rounding changes its answer, exactly at their boundary
// (unrounded, the answers there lie between the integers). A run of n
// samples is kept in two pieces (x and n-x: one slot more) or in three
// (x, n-x-h and h, any x and h with x+h < n: two slots more); whole (both
// of its sides facing n samples) only when it is the digest's one
// centroid, since pieces that share a mean tell a merge that they are a
// run (splitCentroids), where a lone centroid is spread like any other.
// Where runs of consecutive integers follow one another the two-piece
// splits chain: Zipf's law over 1..8 fits 20 slots matched (16
// centroids), where pinning both sides of every run takes 22. exactRuns
// finds the fewest spare slots by dynamic programming over each chain of
// runs, its states the ranges of counts the last run's high piece can
// offer at each cost.
//
// Pinned (unit 0) it writes what splitRuns writes when the slots pin
// every run (FuzzExactRuns), so that a flush tries it first and its
// answers are exact unrounded too where the slots allow.
func (p *runPlan) exactRuns(dst, src []accItem, maxn int, unit int64) ([]accItem, bool) {
	spare := maxn - len(src)
	if spare < 0 {
		return dst, false
	}
	start, used := len(dst), 0
	for i := 0; i < len(src); {
		j := chainEnd(src, i, unit)
		if j < i {
			dst = append(dst, src[i])
			i++
			continue
		}
		cost, ok := p.solve(src, i, j, spare-used, unit)
		if ok {
			dst, ok = p.emit(dst, src, i, j, cost)
		}
		if !ok {
			return dst[:start], false
		}
		used += cost
		i = j + 1
	}
	return dst, true
}

// split appends to dst the centroids of src (in mean order) with their
// runs of equal samples split as the slots src leaves spare of maxn
// allow: every run pinned on both sides if they suffice (exact answers,
// rounded or not), else, for an integer VOI's samples (unit > 0, see
// exactRuns), matched (exact rounded answers), else the heaviest pinned
// first (splitRuns). The accurate mode's flush and a merge decide here.
func (p *runPlan) split(dst, src []accItem, maxn int, unit int64) []accItem {
	if out, ok := p.exactRuns(dst, src, maxn, 0); ok {
		return out
	}
	if unit != 0 {
		if out, ok := p.exactRuns(dst, src, maxn, unit); ok {
			return out
		}
	}
	p.mark = slices.Grow(p.mark[:0], len(src))[:len(src)]
	return splitRuns(dst, src, maxn, p.mark)
}

// isRun reports whether exactRuns splits it: a run of three or more equal
// samples, or two where runs are matched (unit > 0). Pinned, a run of two
// would take a slot to move its knot by half a sample (whole, its
// answers are within a sample of rank), and splitRuns leaves it whole.
func isRun(it accItem, unit int64) bool {
	return it.exact() && (it.n() >= 3 || unit > 0 && it.n() == 2)
}

// chainEnd returns the last index of the chain of consecutive runs that
// starts at i, or i-1 if src[i] is not a run.
func chainEnd(src []accItem, i int, unit int64) int {
	if !isRun(src[i], unit) {
		return i - 1
	}
	j := i
	for j+1 < len(src) && isRun(src[j+1], unit) {
		j++
	}
	return j
}

// runPlan is the working memory of split: for each run of a chain and
// each cost in spare slots, the ranges of counts the run's low piece can
// take (in), then the pieces chosen, and splitRuns' marks.
type runPlan struct {
	in    []span
	nin   []uint8
	picks []runPick
	mark  []int8 // splitRuns' scratch
	m, nc int    // the chain's runs, and costs 0..nc-1
	whole int    // the fewest pieces a run is kept in: 1 or 2
}

// span is an inclusive range of piece counts.
type span struct{ lo, hi uint64 }

// runPick is how one run is split: into 1, 2 or 3 pieces, the low one of
// x samples, the high one of h.
type runPick struct {
	pieces int
	x, h   uint64
}

const (
	// runSpans is how many disjoint ranges a state keeps; more are
	// dropped, the narrowest first (which may cost a slot, never
	// exactness).
	runSpans = 4
	// runStates bounds a chain's (run, cost) states (runSpans spans of
	// 16 bytes each); a longer chain with more spare slots is left to
	// splitRuns.
	runStates = 4096
)

// solve returns the fewest spare slots, at most budget, that make chain
// src[i..j] exact, and leaves the states for emit; ok is false if budget
// does not suffice (or the chain is too long to plan).
func (p *runPlan) solve(src []accItem, i, j, budget int, unit int64) (cost int, ok bool) {
	m := j - i + 1
	nc := min(budget, 2*m) + 1
	if nc <= 0 || m*nc > runStates {
		return 0, false
	}
	p.m, p.nc = m, nc
	if cap(p.nin) < m*nc {
		p.in = make([]span, m*nc*runSpans)
		p.nin = make([]uint8, m*nc)
	}
	p.in, p.nin = p.in[:m*nc*runSpans], p.nin[:m*nc]
	clear(p.nin)
	// The chain's first run faces a pin unless it begins the digest.
	if i == 0 {
		p.add(0, 0, span{1, src[i].n()})
	} else {
		p.add(0, 0, span{1, 1})
	}
	highFree := j == len(src)-1
	// A run kept whole is a centroid like any other to a merge, which
	// spreads it over its gaps; split, its pieces share their mean and
	// the merge keeps it whole and exact (see splitCentroids). Only a
	// digest of one run keeps it whole.
	p.whole = 2
	if m == 1 && i == 0 && highFree {
		p.whole = 1
	}
	best := -1
	for r := range m {
		n := src[i+r].n()
		last := r == m-1
		match := !last && unit > 0 && src[i+r+1].v-src[i+r].v == unit
		for c := range nc {
			for _, s := range p.spans(r, c) {
				for pieces := p.whole; pieces <= 3; pieces++ {
					h, ok := offer(s, n, pieces)
					c2 := c + pieces - 1
					if !ok || c2 >= nc {
						continue
					}
					switch {
					case last:
						if (highFree || h.lo == 1) && (best < 0 || c2 < best) {
							best = c2
						}
					case match:
						p.add(r+1, c2, h)
					case h.lo == 1:
						p.add(r+1, c2, span{1, 1})
					}
				}
			}
		}
	}
	return best, best >= 0
}

// offer returns the counts a run of n samples split into pieces can give
// its high piece when its low piece's count lies in s (ok false if none).
func offer(s span, n uint64, pieces int) (h span, ok bool) {
	lo := max(s.lo, 1)
	switch pieces {
	case 1:
		return span{n, n}, s.lo <= n && n <= s.hi
	case 2:
		hi := min(s.hi, n-1)
		return span{n - hi, n - lo}, n >= 2 && lo <= hi
	default:
		return span{1, n - 1 - lo}, n >= 3 && lo <= n-2
	}
}

// spans returns the state (r, c)'s ranges.
func (p *runPlan) spans(r, c int) []span {
	k := r*p.nc + c
	return p.in[k*runSpans : k*runSpans+int(p.nin[k])]
}

// add puts s into the state (r, c), joining the ranges it overlaps or
// touches; past runSpans ranges the narrowest is dropped.
func (p *runPlan) add(r, c int, s span) {
	k := r*p.nc + c
	set := p.in[k*runSpans : k*runSpans+runSpans]
	n := int(p.nin[k])
	for q := 0; q < n; {
		if t := set[q]; t.lo <= s.hi+1 && s.lo <= t.hi+1 {
			s = span{min(s.lo, t.lo), max(s.hi, t.hi)}
			n--
			set[q] = set[n]
			continue
		}
		q++
	}
	if n < runSpans {
		set[n] = s
		n++
	} else if w, q := narrowest(set[:n]); s.hi-s.lo > w {
		set[q] = s
	}
	p.nin[k] = uint8(n)
}

// narrowest returns the width and index of the narrowest of set.
func narrowest(set []span) (uint64, int) {
	w, at := set[0].hi-set[0].lo, 0
	for q, s := range set[1:] {
		if s.hi-s.lo < w {
			w, at = s.hi-s.lo, q+1
		}
	}
	return w, at
}

// pick returns the smallest count in the state (r, c) within [lo, hi].
func (p *runPlan) pick(r, c int, lo, hi uint64) (uint64, bool) {
	best, ok := uint64(0), false
	for _, s := range p.spans(r, c) {
		if x := max(s.lo, lo); x <= min(s.hi, hi) && (!ok || x < best) {
			best, ok = x, true
		}
	}
	return best, ok
}

// emit appends chain src[i..j] split as solve planned at cost, choosing
// each run's pieces from the last back; ok is false if the states hold no
// such plan.
func (p *runPlan) emit(dst, src []accItem, i, j, cost int) (_ []accItem, ok bool) {
	m := p.m
	if cap(p.picks) < m {
		p.picks = make([]runPick, m)
	}
	p.picks = p.picks[:m]
	const any = 0
	need := uint64(any) // the count the run's high piece must have
	if j < len(src)-1 {
		need = 1
	}
	c := cost
	for r := m - 1; r >= 0; r-- {
		n := src[i+r].n()
		var pk runPick
		for pieces := p.whole; pieces <= 3 && pk.pieces == 0; pieces++ {
			cc := c - (pieces - 1)
			if cc < 0 {
				break
			}
			switch pieces {
			case 1:
				if need == any || need == n {
					if x, ok := p.pick(r, cc, n, n); ok {
						pk = runPick{1, x, n}
					}
				}
			case 2:
				if n < 2 {
					continue
				}
				if need == any {
					if x, ok := p.pick(r, cc, 1, n-1); ok {
						pk = runPick{2, x, n - x}
					}
				} else if need <= n-1 {
					if x, ok := p.pick(r, cc, n-need, n-need); ok {
						pk = runPick{2, x, need}
					}
				}
			default:
				h := max(need, 1)
				if n < 3 || h > n-2 {
					continue
				}
				if x, ok := p.pick(r, cc, 1, n-1-h); ok {
					pk = runPick{3, x, h}
				}
			}
			if pk.pieces != 0 {
				c = cc
			}
		}
		if pk.pieces == 0 {
			return dst, false
		}
		p.picks[r] = pk
		need = pk.x // a pin boundary's states hold only 1
	}
	for r, pk := range p.picks {
		v, n := src[i+r].v, src[i+r].n()
		switch pk.pieces {
		case 1:
			dst = append(dst, src[i+r])
		case 2:
			dst = append(dst, accItemOf(v, pk.x, true), accItemOf(v, pk.h, true))
		default:
			dst = append(dst, accItemOf(v, pk.x, true), accItemOf(v, n-pk.x-pk.h, true), accItemOf(v, pk.h, true))
		}
	}
	return dst, c == 0
}

// splitRuns appends to dst the centroids of src, giving the slots that
// src leaves spare of maxn to runs of equal samples: a run of n samples
// kept as centroids of 1, n-2 and 1 samples (n-1 and 1 for the first run,
// 1 and n-1 for the last, whose outer side needs no pin) puts the
// quantiles of its whole rank range on its value (the queries interpolate
// between the middles of centroids), which makes discrete data exact when
// the slots suffice. The heaviest runs are split first; mark is scratch of
// len(src).
func splitRuns(dst, src []accItem, maxn int, mark []int8) []accItem {
	const (
		none int8 = iota
		split
		skip
	)
	spare := maxn - len(src)
	mark = mark[:len(src)]
	clear(mark)
	for len(src) > 1 && spare > 0 {
		best := -1
		for i, it := range src {
			if mark[i] == none && it.exact() && it.n() >= 3 && (best < 0 || it.n() > src[best].n()) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		cost := 2
		if best == 0 || best == len(src)-1 {
			cost = 1
		}
		if cost > spare {
			mark[best] = skip
			continue
		}
		mark[best], spare = split, spare-cost
	}
	for i, it := range src {
		if mark[i] != split {
			dst = append(dst, it)
			continue
		}
		v, n := it.v, it.n()
		switch i {
		case 0:
			dst = append(dst, accItemOf(v, n-1, true), accItemOf(v, 1, true))
		case len(src) - 1:
			dst = append(dst, accItemOf(v, 1, true), accItemOf(v, n-1, true))
		default:
			dst = append(dst, accItemOf(v, 1, true), accItemOf(v, n-2, true), accItemOf(v, 1, true))
		}
	}
	return dst
}
