package tdigest

import (
	"cmp"
	"fmt"
	"math"
	"math/bits"
	"slices"

	"github.com/statsblob/statsblob/qmath"
	"github.com/statsblob/statsblob/voi"
)

// Merge adds the samples of digest src to digest dst, both of type dt: it
// is MergeAll(dst, dt, src).
func Merge(dst, src []byte, dt voi.DType) error {
	return MergeAll(dst, dt, src)
}

// MergeAll replaces dst, a digest of type dt, with a digest of the samples
// of dst and of every digest in srcs (beyond the C, which has no merge).
// The result has dst's geometry (centroid slots, precision, 32 or 64 bits)
// and is a digest as Build and Update leave one (Validate accepts it;
// updates continue it as the C would).
//
// The algorithm is the merging t-digest of Dunning and Ertl ("Computing
// extremely accurate quantiles using t-digests", 2019), adapted to the C's
// digests:
//
//   - If one input holds samples, the result is that input: dst
//     unchanged, or src's bytes if src has dst's geometry. If none does,
//     dst becomes empty as Build makes it.
//   - If all centroids of all inputs fit in dst's slots, the result holds
//     them all, unchanged.
//   - Otherwise the centroids of all inputs are pooled; when two or more
//     inputs hold samples, each centroid of count n > 1 is first spread
//     into up to four parts towards its neighbours in its own digest (see
//     splitCentroids: the C's clustering leaves heavy centroids whose
//     samples spread far, and a point mass would put a step into the
//     merged distribution). The parts are sorted by mean and count and
//     combined into consecutive groups of equal width on a scale that
//     keeps groups small at both tails (see scale and combine), with as
//     many groups as dst has slots.
//
// Counts are exact: the result holds exactly the sum of the inputs'
// samples, and each centroid's mean is the exact count-weighted mean of
// what it combines, rounded to dst's precision. A mean of a source with
// more fractional bits than dst is truncated toward zero; one outside the
// range of dst's means is clamped to it. compcnt becomes the sum of the
// inputs' compcnt (at most 2^32-1). The result depends only on the inputs
// as a set: MergeAll(a, b) and MergeAll(b, a) give the same bytes, and so
// does MergeAll for any order of its sources. No randomness is drawn.
//
// Errors (dst is then unchanged): those of Validate for dst or a source
// (each wrapping voi.ErrInvalid and naming the input), and voi.ErrOverflow
// when the samples do not fit dst's counters (more than 2^32-1 in a
// TDGSTCLUST32, 2^64-1 in a TDGSTCLUST64, or a centroid above 2^31-1 or
// 2^63-1 samples). Merging never fails for precision or underflow
// reasons. A source may be dst itself (its samples then count twice).
func MergeAll(dst []byte, dt voi.DType, srcs ...[]byte) error {
	if err := Validate(dst, dt); err != nil {
		return fmt.Errorf("tdigest: merge destination: %w", err)
	}
	for i, s := range srcs {
		if err := Validate(s, dt); err != nil {
			return fmt.Errorf("tdigest: merge source %d: %w", i, err)
		}
	}
	var d digest
	_ = d.init(dst, dt, nil)
	if d.maxn == 0 {
		return errNoNodes
	}
	g := d.geometry()
	// Read every input before writing dst (a source may be dst).
	all := append([][]byte{dst}, srcs...)
	ins := make([]input, 0, len(all))
	nonEmpty, last := 0, 0
	for i, in := range all {
		info, _ := ReadInfo(in, dt)
		if info.CurNodes == 0 {
			continue
		}
		nonEmpty, last = nonEmpty+1, i
		ins = append(ins, g.read(in, dt))
	}
	switch {
	case nonEmpty == 0:
		d.rebuild(g.ctrl, nil, 0, 0)
		return nil
	case nonEmpty == 1 && last == 0:
		return nil
	case nonEmpty == 1 && len(all[last]) == len(dst) && ReadCentroid(all[last], dt, 0).Mu.Raw&ctrlMask == g.ctrl:
		copy(dst, all[last])
		return nil
	}
	return d.mergeInputs(g, ins)
}

// geometry is what a merge needs to know of the destination: the control
// bits and fractional bits of its means, their largest magnitude, and the
// largest centroid count and sample count.
type geometry struct {
	ctrl             uint64
	nf               uint
	lim              int64
	maxCnt, maxTotal uint64
}

func (d *digest) geometry() geometry {
	ctrl := d.muRaw(0) & ctrlMask
	if d.is32 {
		return geometry{ctrl, nfS32(ctrl), ifMaxS32, math.MaxInt32, math.MaxUint32}
	}
	return geometry{ctrl, nfS64(ctrl), ifMaxS64, math.MaxInt64, math.MaxUint64}
}

// input is one digest being merged: its centroids in mean order (means
// rescaled to the destination), the sum of their counts and its compcnt.
type input struct {
	cs    []item
	total uint64
	comp  uint32
}

// read returns the input of digest bytes in that passed Validate (so the
// counts sum to smplcnt, or for TDGSTCLUST32 to less than 2^47).
func (g geometry) read(in []byte, dt voi.DType) input {
	info, _ := ReadInfo(in, dt)
	r := input{cs: make([]item, 0, info.CurNodes), comp: info.CompCnt}
	for c := range Centroids(in, dt) {
		r.cs = append(r.cs, item{g.rescale(c), c.Count})
		r.total += c.Count
	}
	return r
}

// errTooMany is the overflow of a merge's sample count.
func (g geometry) errTooMany() error {
	return fmt.Errorf("tdigest: merge of more than %d samples: %w", g.maxTotal, voi.ErrOverflow)
}

// mergeInputs writes into d the merge of the inputs, which hold samples (see
// MergeAll); d is unchanged on error.
func (d *digest) mergeInputs(g geometry, ins []input) error {
	var total uint64
	var comp uint32
	ncs, heavy := 0, false
	for _, in := range ins {
		heavy = heavy || in.total > uint64(len(in.cs))
		n, carry := bits.Add64(total, in.total, 0)
		if carry != 0 || n > g.maxTotal {
			return g.errTooMany()
		}
		total = n
		comp = uint32(min(uint64(comp)+uint64(in.comp), math.MaxUint32))
		ncs += len(in.cs)
	}
	var items []item
	if len(ins) > 1 && (ncs > d.maxn || heavy) {
		items = make([]item, 0, 4*ncs)
		for _, in := range ins {
			items = splitCentroids(items, in.cs, g.lim)
		}
	} else {
		items = make([]item, 0, ncs)
		for _, in := range ins {
			items = append(items, in.cs...)
		}
	}
	slices.SortFunc(items, func(a, b item) int {
		if c := cmp.Compare(a.v, b.v); c != 0 {
			return c
		}
		return cmp.Compare(a.n, b.n)
	})
	if len(items) > d.maxn {
		items = combine(items, total, d.maxn)
	}
	for _, c := range items {
		if c.n > g.maxCnt {
			return fmt.Errorf("tdigest: merge: a centroid of %d samples: %w", c.n, voi.ErrOverflow)
		}
	}
	d.rebuild(g.ctrl, items, total, comp)
	return nil
}

// item is a centroid being merged: its mean as a combined value with the
// destination's fractional bits, and its count.
type item struct {
	v int64
	n uint64
}

// rescale returns c's mean as a combined value with g's fractional bits,
// truncated toward zero, clamped to g's range.
func (g geometry) rescale(c Centroid) int64 {
	raw := c.Mu.Raw
	v, from := ifvS64(raw), nfS64(raw)
	if c.Mu.Kind == qmath.S32 {
		v, from = ifvS32(raw), nfS32(raw)
	}
	m := uint64(v)
	if v < 0 {
		m = -m
	}
	switch {
	case from > g.nf:
		m >>= from - g.nf
	case from < g.nf:
		if bits.Len64(m)+int(g.nf-from) > 62 {
			m = uint64(g.lim)
		} else {
			m <<= g.nf - from
		}
	}
	m = min(m, uint64(g.lim))
	if v < 0 {
		return -int64(m)
	}
	return int64(m)
}

// splitCentroids appends to out the parts of the centroids cs of one
// digest (in mean order). The C's clustering leaves heavy centroids whose
// samples spread far towards their neighbours; as point masses they would
// put steps into the merged distribution, so each centroid of count n > 1
// is spread out. Between two neighbouring centroids the digest's own
// reading (Quantile's linear interpolation) places their samples evenly,
// each centroid's in proportion to its count; so a centroid reaches wl
// towards its left neighbour, its count's share of the two counts times
// the gap, and wr to the right (at either end of the digest, the other
// side stands in for the missing neighbour). It becomes two parts on each
// side at 1/4 and 3/4 of that reach (one part at 1/2 for n < 4), with
// counts on the two sides in the ratio wr:wl, which keeps the centroid's
// mean: the side towards the nearer, denser neighbour holds more.
//
// Measured against the samples of fleets of C digests, this pooling keeps
// the merged rank errors at a third to a half of those of point masses,
// of equal counts on both sides, or of a fixed half-gap reach.
func splitCentroids(out, cs []item, lim int64) []item {
	if len(cs) < 2 {
		return append(out, cs...)
	}
	for i, c := range cs {
		if c.n < 2 {
			out = append(out, c)
			continue
		}
		// Gaps to the neighbours (at most 2*lim) and their counts.
		var dl, dr, nl, nr uint64
		if i > 0 {
			dl, nl = uint64(c.v-cs[i-1].v), cs[i-1].n
		}
		if i+1 < len(cs) {
			dr, nr = uint64(cs[i+1].v-c.v), cs[i+1].n
		}
		if i == 0 {
			dl, nl = dr, nr
		} else if i+1 == len(cs) {
			dr, nr = dl, nl
		}
		wl, wr := share(dl, c.n, nl), share(dr, c.n, nr)
		if wl+wr == 0 {
			out = append(out, c)
			continue
		}
		left := mulDiv(c.n, wr, wl+wr)
		h := uint64(1) // parts per side
		if c.n >= 4 {
			h = 2
		}
		for side, cnt := range [2]uint64{left, c.n - left} {
			w := [2]uint64{wl, wr}[side]
			for k := range h {
				n := cnt / h
				if k < cnt%h {
					n++
				}
				if n == 0 {
					continue
				}
				off := int64(mulDiv(w, 2*k+1, 2*h))
				if side == 0 {
					off = -off
				}
				out = append(out, item{max(-lim, min(lim, c.v+off)), n})
			}
		}
	}
	return out
}

// share returns gap·n/(n+m), n's share of a gap between centroids of
// counts n and m (the whole gap if n+m wraps).
func share(gap, n, m uint64) uint64 {
	if n+m < n {
		return gap
	}
	return mulDiv(gap, n, n+m)
}

// mulDiv returns x*a/b rounded down, for b > 0 and a <= b.
func mulDiv(x, a, b uint64) uint64 {
	hi, lo := bits.Mul64(x, a)
	q, _ := bits.Div64(hi, lo, b)
	return q
}

// combine groups the items (sorted by mean) into at most slots centroids:
// each item goes to group floor(c*scale(r/total)), where r is the rank of
// its middle sample, and c is the largest count of groups for which at
// most slots groups are populated. A centroid's mean is the exact
// count-weighted mean of its items (rounded to nearest, halves away from
// zero), its count their sum.
func combine(items []item, total uint64, slots int) []item {
	h := make([]float64, len(items))
	var cum uint64
	ft := float64(total)
	for i, it := range items {
		mid := float64(cum) + float64(it.n)/2
		h[i] = scale(float64(mid / ft))
		cum += it.n
	}
	groupOf := func(c int, i int) int {
		return min(int(float64(float64(c)*h[i])), c-1)
	}
	populated := func(c int) int {
		n, prev := 0, -1
		for i := range h {
			if g := groupOf(c, i); g != prev {
				n, prev = n+1, g
			}
		}
		return n
	}
	// populated(slots) <= slots; find the largest c with that property
	// (populated is nearly monotone in c; the search keeps the best c seen
	// that fits).
	best, lo, hi := slots, slots, slots*64
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		if populated(mid) <= slots {
			best, lo = mid, mid
		} else {
			hi = mid - 1
		}
	}
	out := make([]item, 0, slots)
	var sum sum128
	var n uint64
	prev := groupOf(best, 0)
	for i, it := range items {
		if g := groupOf(best, i); g != prev {
			out = append(out, item{sum.mean(n), n})
			sum, n, prev = sum128{}, 0, g
		}
		sum.add(it.v, it.n)
		n += it.n
	}
	return append(out, item{sum.mean(n), n})
}

// scale maps a quantile q in [0, 1] to [0, 1], steeply at both ends so
// that groups of equal width on it hold few samples at the tails: 0.65 of
// (q^a - (1-q)^a + 1)/2 for a = 1/2 (the shape of Dunning's k1 scale,
// arcsin(2q-1)) plus 0.35 of it for a = 1/4 (steeper tails, towards his
// logarithmic k2 and k3); the blend was tuned on fleets of 20- and
// 50-slot digests (the k1 shape alone leaves p99 and p99.9 coarse at 20
// slots, more of the steep part starves p50 and p90). Only square roots,
// products and sums: every step is correctly rounded IEEE arithmetic (the
// conversions forbid fused multiply-adds), so the groups are the same on
// every platform.
func scale(q float64) float64 {
	r, s := math.Sqrt(q), math.Sqrt(1-q)
	g2 := float64(r-s)/2 + 0.5
	r, s = math.Sqrt(r), math.Sqrt(s)
	g4 := float64(r-s)/2 + 0.5
	return float64(0.65*g2) + float64(0.35*g4)
}

// sum128 is a signed 128-bit sum of count-weighted means.
type sum128 struct {
	pos, neg [2]uint64 // hi, lo
}

func (s *sum128) add(v int64, n uint64) {
	p := &s.pos
	m := uint64(v)
	if v < 0 {
		p, m = &s.neg, -m
	}
	hi, lo := bits.Mul64(m, n)
	var c uint64
	p[1], c = bits.Add64(p[1], lo, 0)
	p[0] += hi + c
}

// mean returns the sum divided by n > 0, rounded to nearest with halves
// away from zero. The sum is at most n times a mean's magnitude, so the
// quotient fits.
func (s *sum128) mean(n uint64) int64 {
	neg := false
	hi, lo := s.pos[0], s.pos[1]
	if s.neg[0] > hi || s.neg[0] == hi && s.neg[1] > lo {
		neg = true
		hi, lo = s.neg[0], s.neg[1]
		var b uint64
		lo, b = bits.Sub64(lo, s.pos[1], 0)
		hi = hi - s.pos[0] - b
	} else {
		var b uint64
		lo, b = bits.Sub64(lo, s.neg[1], 0)
		hi = hi - s.neg[0] - b
	}
	q, r := bits.Div64(hi, lo, n)
	if r >= n-r {
		q++
	}
	if neg {
		return -int64(q)
	}
	return int64(q)
}

// rebuild writes a fresh digest into d's bytes: every slot cleared to mean
// 0 with control bits ctrl and put on the free list in index order (as
// Build does), then the centroids inserted in ascending order, so the
// bytes depend only on the centroids.
func (d *digest) rebuild(ctrl uint64, cs []item, total uint64, comp uint32) {
	clear(d.b)
	d.resetHead(d.maxn)
	for i := d.maxn - 1; i >= 0; i-- {
		d.returnFree(i)
		d.setMuCtrlOnly(i, ctrl)
	}
	d.setSmplcnt(total)
	le.PutUint32(d.b[d.compOff():], comp)
	for _, c := range cs {
		e := d.getFree()
		if d.is32 {
			le.PutUint32(d.nodes[d.off(e)+8:], setS32(ctrl, int32(c.v)))
		} else {
			le.PutUint64(d.nodes[d.off(e)+8:], setS64(ctrl, c.v))
		}
		d.setCnt(e, int64(c.n))
		d.insert(e)
	}
}

// MergeWeighted adds weighted samples to digest data of type dt: value i
// with weight weights[i] (weight 0 adds nothing), merged as MergeAll
// merges a digest whose centroids they are. A value is converted to the
// digest's precision truncating toward zero. It adds every sample it can
// and returns the first error: voi.ErrInvalid for a NaN or infinite value
// (or len(values) != len(weights)), voi.ErrOverflow for a value out of the
// range of the digest's means, and those of MergeAll (which add nothing).
func MergeWeighted(data []byte, dt voi.DType, values []float64, weights []uint64) error {
	if len(values) != len(weights) {
		return errInvalid
	}
	if err := Validate(data, dt); err != nil {
		return err
	}
	var d digest
	_ = d.init(data, dt, nil)
	if d.maxn == 0 {
		return errNoNodes
	}
	g := d.geometry()
	var firstErr error
	var in input
	for i, v := range values {
		f := math.Trunc(math.Ldexp(v, int(g.nf)))
		switch {
		case math.IsNaN(v) || math.IsInf(v, 0):
			firstErr = cmp.Or(firstErr, errNaN)
		case math.Abs(f) > float64(g.lim):
			firstErr = cmp.Or(firstErr, errOverflow)
		case weights[i] > 0:
			n, carry := bits.Add64(in.total, weights[i], 0)
			if carry != 0 {
				return g.errTooMany()
			}
			in.cs, in.total = append(in.cs, item{int64(f), weights[i]}), n
		}
	}
	if len(in.cs) == 0 {
		return firstErr
	}
	slices.SortFunc(in.cs, func(a, b item) int {
		if c := cmp.Compare(a.v, b.v); c != 0 {
			return c
		}
		return cmp.Compare(a.n, b.n)
	})
	ins := []input{in}
	if d.cur() > 0 {
		ins = append(ins, g.read(data, dt))
	}
	return cmp.Or(d.mergeInputs(g, ins), firstErr)
}
