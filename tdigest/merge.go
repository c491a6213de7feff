package tdigest

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"sync"

	"github.com/statsblob/statsblob/internal/trusted"
	"github.com/statsblob/statsblob/voi"
)

// Merge adds the samples of digest src to digest dst, both of type dt.
//
// Deprecated: Merge is MergeAll(dst, dt, src); use MergeAll (or, for
// blobs, blob.MergeAll).
func Merge(dst, src []byte, dt voi.DType) error {
	return MergeAll(dst, dt, src)
}

// MergeAll replaces dst, a digest of type dt, with a digest of the samples
// of dst and of every digest in srcs (beyond the C, which has no merge).
// The result has dst's geometry (centroid slots, precision, 32 or 64 bits)
// and is a digest as Build and Update leave one (Validate accepts it;
// updates continue it as the C would).
//
// MergeAll is the byte-level building block of merges: blob.MergeAll,
// which merges whole blobs (every statistic, the digests of all inputs in
// one MergeAll each), is the merge to use for blobs, and it lets the
// digests' centroids spread out to the VOI's MIN and MAX, which MergeAll
// alone does not know.
//
// The algorithm is the merging t-digest of Dunning and Ertl ("Computing
// extremely accurate quantiles using t-digests", 2019), adapted to the C's
// digests:
//
//   - If one input holds samples, the result is that input: dst
//     unchanged, or src's bytes if src has dst's geometry. If none does,
//     dst becomes empty as Build makes it.
//   - If the inputs hold single samples only (each centroid one sample)
//     and they all fit in dst's slots, the result holds them all,
//     unchanged.
//   - Otherwise the centroids of all inputs are pooled; when two or more
//     inputs hold samples, each centroid of count n > 2 is first spread
//     into up to four parts towards its neighbours in its own digest (see
//     splitCentroids: the C's clustering leaves heavy centroids whose
//     samples spread far, and a point mass would put a step into the
//     merged distribution). The parts are sorted by mean and count, the
//     centroids of each run of equal means that holds a single sample
//     become one item (see coalesce), and the items are combined into
//     consecutive groups of equal width on a scale that keeps groups
//     small at both tails (see scale and combine), with as many groups
//     as dst has slots; no group straddles an empty stretch between
//     modes of the samples (see modeGaps). The runs left whole are
//     pinned again while slots remain (see pinRuns), so that discrete
//     samples (a few integers) stay exact through merges of merges.
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
// The result stays inside the data: every centroid's mean lies between
// the least and the greatest centroid mean of the inputs (as read into
// dst's precision), so between the least and the greatest sample any
// input was fed, since a centroid's mean lies between its samples (for
// samples that dst's precision holds exactly; others are truncated toward
// zero first). Spread parts never leave that range; blob merges, which
// know the samples' range from a VOI's MIN and MAX, let them reach out to
// those instead.
//
// Errors (dst is then unchanged): those of Validate for dst or a source
// (each wrapping voi.ErrInvalid and naming the input), and voi.ErrOverflow
// when the samples do not fit dst's counters (more than 2^32-1 in a
// TDGSTCLUST32, 2^64-1 in a TDGSTCLUST64, or a centroid above 2^31-1 or
// 2^63-1 samples). Merging never fails for precision or underflow
// reasons. A source may be dst itself (its samples then count twice).
func MergeAll(dst []byte, dt voi.DType, srcs ...[]byte) error {
	if err := validateMerge(dst, dt, dt, srcs); err != nil {
		return err
	}
	return mergeAllValid(dst, dt, trusted.NoSamples, srcs)
}

// validateMerge checks the digests of a merge from outside: dst of type
// dt, srcs of type sdt (Valid first, Validate for the reason).
func validateMerge(dst []byte, dt, sdt voi.DType, srcs [][]byte) error {
	if !Valid(dst, dt) {
		if err := Validate(dst, dt); err != nil {
			return fmt.Errorf("tdigest: merge destination: %w", err)
		}
	}
	for i, s := range srcs {
		if !Valid(s, sdt) {
			if err := Validate(s, sdt); err != nil {
				return fmt.Errorf("tdigest: merge source %d: %w", i, err)
			}
		}
	}
	return nil
}

func init() {
	trusted.TDigestMergeAll = func(dst []byte, dt voi.DType, srcs ...[]byte) error {
		return mergeAllTrusted(dst, dt, trusted.NoSamples, srcs)
	}
	trusted.TDigestMergeAllIn = func(dst []byte, dt voi.DType, known trusted.Samples, srcs ...[]byte) error {
		return mergeAllTrusted(dst, dt, known, srcs)
	}
}

// mergeAllTrusted is MergeAll for inputs a blob holds, known to be valid:
// without their validation, but with the checks that keep bytes of the
// right type and size from making it panic (see package trusted), and
// with what the caller knows of the inputs' samples.
func mergeAllTrusted(dst []byte, dt voi.DType, known trusted.Samples, srcs [][]byte) error {
	if err := checkTrusted(dst, dt, dt, srcs); err != nil {
		return err
	}
	return mergeAllValid(dst, dt, known, srcs)
}

// checkTrusted is the check of trusted merges: dst a digest of type dt and
// srcs of type sdt, each of its full size.
func checkTrusted(dst []byte, dt, sdt voi.DType, srcs [][]byte) error {
	if !dt.IsTDigest() || !sdt.IsTDigest() {
		return errDType
	}
	ok := func(b []byte, dt voi.DType) bool {
		var t tree
		return t.init(b, dt) == nil && len(b) == Size(dt, uint32(t.maxn))
	}
	if !ok(dst, dt) {
		return errShort
	}
	for _, s := range srcs {
		if !ok(s, sdt) {
			return errShort
		}
	}
	return nil
}

// mergeAllValid is MergeAll for valid inputs whose samples lie in bounds
// (see mergeAllTrusted), its node layout chosen once.
func mergeAllValid(dst []byte, dt voi.DType, known trusted.Samples, srcs [][]byte) error {
	if dt == voi.TDgstClust32 {
		return mergeLayout[node32, node32](dst, known, srcs)
	}
	return mergeLayout[node64, node64](dst, known, srcs)
}

// mergeLayout is mergeAllValid for a dst of layout N and sources of layout
// S (MergeAllFrom: S may be the other width).
func mergeLayout[N, S node](dst []byte, known trusted.Samples, srcs [][]byte) error {
	dt, sdt := dtypeOf[N](), dtypeOf[S]()
	var d digest[N]
	_ = d.init(dst, nil)
	if d.maxn == 0 {
		return errNoNodes
	}
	g := d.geometry()
	sc := mergeScratchPool.Get().(*mergeScratch)
	defer mergeScratchPool.Put(sc)
	// Read every input before writing dst (a source may be dst).
	sc.cs, sc.ins = sc.cs[:0], sc.ins[:0]
	sc.lo, sc.hi = known.Lo, known.Hi
	sc.unit = 0
	if known.Integer {
		sc.unit = 1 << g.nf
	}
	sc.prefetch(dst, srcs)
	nonEmpty, last := 0, 0
	if curNodes(dst, dt) > 0 {
		nonEmpty = 1
		readInput[N](sc, g, dst)
	}
	for i, s := range srcs {
		if curNodes(s, sdt) == 0 {
			continue
		}
		nonEmpty, last = nonEmpty+1, i+1
		readInput[S](sc, g, s)
	}
	switch {
	case nonEmpty == 0:
		d.rebuild(g.ctrl, nil, 0, 0)
		return nil
	case nonEmpty == 1 && last == 0:
		return nil
	case nonEmpty == 1 && sdt == dt && len(srcs[last-1]) == len(dst) && ReadCentroid(srcs[last-1], dt, 0).Mu.Raw&ctrlMask == g.ctrl:
		copy(dst, srcs[last-1])
		return nil
	}
	return d.mergeInputs(g, sc)
}

// prefetch reads a byte of every cache line of the inputs before the
// merge reads them (a fleet's digests, decoded a while ago, are not in the
// cache): its loads are independent, so that their cache misses overlap,
// where the walks of the inputs' trees, following links from node to
// node, would take them one after another.
func (sc *mergeScratch) prefetch(dst []byte, srcs [][]byte) {
	const line = 64
	t := sc.touched
	for i := -1; i < len(srcs); i++ {
		in := dst
		if i >= 0 {
			in = srcs[i]
		}
		for off := 0; off < len(in); off += line {
			t += in[off]
		}
	}
	sc.touched = t // (a store, so that the loads are kept)
}

// curNodes returns the curnodes field of digest bytes that passed
// Validate.
func curNodes(in []byte, dt voi.DType) int {
	t := view(in, dt)
	return t.cur()
}

// mergeScratch is a merge's working memory, pooled: a fleet's merge reads
// hundreds of thousands of centroids, which would otherwise be allocated
// (and collected) per merge.
type mergeScratch struct {
	cs         []item              // every input's centroids, input after input
	ins        []input             // each input's part of cs
	parts      []item              // the split centroids
	tmp        []item              // the sort's second buffer
	cum        []uint64            // combine: samples before each item
	h          []float64           // combine: the scales of its sample of the items
	ends       []int               // combine: where each group starts
	out        []item              // combine's groups
	seg        []int32             // combine: each item's segment
	exact      []bool              // coalesce, exactGroups: which items hold equal samples
	acc        []accItem           // pinRuns: the centroids, exactness marked
	pinned     []accItem           // pinRuns: the same, runs pinned
	out2       []item              // pinRuns' centroids
	touched    byte                // see prefetch
	shapes     map[shapeKey][]byte // rebuilt trees' shapes (rebuildShaped)
	shapeBytes int                 // their bytes
	// lo and hi bound the samples of the inputs, as the caller knows them
	// (a VOI's MIN and MAX), NaN if unknown: see dataRange.
	lo, hi float64
	// unit is the distance between consecutive integers in the
	// destination's combined means when the caller knows the samples are
	// integers, else 0: see pinRuns.
	unit int64
	runs runPlan // pinRuns: the runs' split (runPlan.split)
}

var mergeScratchPool = sync.Pool{New: func() any { return new(mergeScratch) }}

// geometry is what a merge needs to know of the destination: the control
// bits and fractional bits of its means, their largest magnitude, and the
// largest centroid count and sample count.
type geometry struct {
	ctrl             uint64
	nf               uint
	lim              int64
	maxCnt, maxTotal uint64
}

func (d *digest[N]) geometry() geometry {
	ctrl := d.muRaw(0) & ctrlMask
	if is32[N]() {
		return geometry{ctrl, nfS32(ctrl), ifMaxS32, math.MaxInt32, math.MaxUint32}
	}
	return geometry{ctrl, nfS64(ctrl), ifMaxS64, math.MaxInt64, math.MaxUint64}
}

// input is one digest being merged: its centroids in mean order (means
// rescaled to the destination) at cs[start:end] of the scratch, the sum of
// their counts and its compcnt.
type input struct {
	start, end int
	total      uint64
	comp       uint32
	maxn       int // the digest's centroid slots
}

// readInput appends to the scratch the input of digest bytes in that
// passed Validate (so the counts sum to smplcnt, or for TDGSTCLUST32 to
// less than 2^47): its centroids in mean order, walked through the tree.
func readInput[N node](sc *mergeScratch, g geometry, in []byte) {
	var d digest[N]
	_ = d.init(in, nil)
	r := input{start: len(sc.cs), comp: le.Uint32(in[d.compOff():]), maxn: d.maxn}
	// An in-order walk with the path on a stack: a valid tree is at most
	// 30 deep.
	// (Bytes that are not a valid digest, which only trusted callers may
	// pass, end the walk early: a path too deep, a link out of range,
	// more nodes than slots.)
	var stack [maxTreeDepth + 2]int16
	sp, visits := 0, 0
	nodes, nsz, maxn, w32 := d.nodes, nodeLen[N](), d.maxn, is32[N]()
	for n := d.hget(hRoot); ; {
		for n != null {
			if sp == len(stack) || uint(n) >= uint(maxn) || visits >= maxn {
				n, sp = null, 0
				break
			}
			visits++
			stack[sp] = int16(n)
			sp++
			n = lkLeft(le.Uint64(nodes[n*nsz:]))
		}
		if sp == 0 {
			break
		}
		sp--
		e := int(stack[sp])
		nd := nodeAt(nodes, e, w32)
		raw, cnt := nodeMu(nd, w32), uint64(nodeCnt(nd, w32))
		if w32 {
			cnt = uint64(uint32(cnt)) // the C's u32 count
		}
		c := item{g.rescaleParts(ifv(raw, w32), nfOf(raw, w32)), cnt}
		// (Valid digests have no empty centroid and ascending means; the
		// merge's arithmetic relies on both.)
		if prev := len(sc.cs) - 1; prev >= r.start && c.v < sc.cs[prev].v {
			c.v = sc.cs[prev].v
		}
		if c.n > 0 {
			sc.cs = append(sc.cs, c)
			r.total += c.n
		}
		n = lkRight(le.Uint64(nd))
	}
	r.end = len(sc.cs)
	sc.ins = append(sc.ins, r)
}

// errTooMany is the overflow of a merge's sample count.
func (g geometry) errTooMany() error {
	return fmt.Errorf("tdigest: merge of more than %d samples: %w", g.maxTotal, voi.ErrOverflow)
}

// mergeInputs writes into d the merge of the inputs, which hold samples (see
// MergeAll); d is unchanged on error.
func (d *digest[N]) mergeInputs(g geometry, sc *mergeScratch) error {
	var total uint64
	var comp uint32
	ncs, heavy := 0, false
	for _, in := range sc.ins {
		heavy = heavy || in.total > uint64(in.end-in.start)
		n, carry := bits.Add64(total, in.total, 0)
		if carry != 0 || n > g.maxTotal {
			return g.errTooMany()
		}
		total = n
		comp = uint32(min(uint64(comp)+uint64(in.comp), math.MaxUint32))
		ncs += in.end - in.start
	}
	items := sc.cs
	pooled := len(sc.ins) > 1 && (ncs > d.maxn || heavy)
	if pooled {
		lo, hi := sc.dataRange(g)
		items = slices.Grow(sc.parts[:0], 4*ncs)
		for _, in := range sc.ins {
			items = splitCentroids(items, sc.cs[in.start:in.end], lo, hi, in.maxn >= d.maxn)
		}
		sc.parts = items
	}
	sc.tmp = sortItems(items, sc.tmp)
	if pooled {
		items = sc.coalesce(items, g.maxCnt)
	}
	if len(items) > d.maxn {
		items = sc.combine(items, total, d.maxn)
		if pooled {
			sc.exact = exactGroups(sc.exact, sc.ends)
		}
	}
	if pooled {
		items = sc.pinRuns(items, d.maxn)
	}
	for _, c := range items {
		if c.n > g.maxCnt {
			return fmt.Errorf("tdigest: merge: a centroid of %d samples: %w", c.n, voi.ErrOverflow)
		}
	}
	d.rebuildShaped(sc, g.ctrl, items, total, comp)
	return nil
}

// sortItems sorts items by mean, then count, with tmp (returned, grown)
// as the second buffer: a least-significant-digit radix sort of the
// means' offsets from the smallest, in as few passes of at most 12 bits
// as the offsets' range needs, or one more of smaller digits for fewer
// items than a digit has values (a pass clears and sums a counter per
// value: for the few hundred items of a small fold those cost more than
// the items; a pass in which every item has the same digit is skipped),
// then an insertion sort by count of each run of equal means (rare and
// short; a long one, as a fleet of digests of a few integers has, is
// sorted at once: 2,000 digests of eight values merged 8 times faster).
// Items of equal mean and count are interchangeable, so any sort by the
// two gives the same sequence.
func sortItems(items, tmp []item) []item {
	if len(items) < 64 {
		slices.SortFunc(items, func(a, b item) int {
			if c := cmp.Compare(a.v, b.v); c != 0 {
				return c
			}
			return cmp.Compare(a.n, b.n)
		})
		return tmp
	}
	vmin, vmax := items[0].v, items[0].v
	for _, it := range items {
		vmin, vmax = min(vmin, it.v), max(vmax, it.v)
	}
	tmp = slices.Grow(tmp[:0], len(items))[:len(items)]
	src, dst := items, tmp
	width := uint(bits.Len64(uint64(vmax - vmin)))
	passes := (width + 11) / 12
	if passes > 0 && len(items) < 1<<(width/passes) {
		// Few items: one pass more, of smaller digits (each pass clears
		// and sums 2^bits counters).
		passes = min(passes+1, width)
	}
	var counts [1 << 12]uint32
	for p := uint(0); p < passes; p++ {
		shift := width * p / passes
		mask := uint64(1)<<(width*(p+1)/passes-shift) - 1
		if radixPass(src, dst, vmin, shift, mask, &counts) {
			src, dst = dst, src
		}
	}
	if &src[0] != &items[0] {
		copy(items, src)
	}
	for i := 1; i < len(items); i++ {
		if it := items[i]; it.v == items[i-1].v && it.n < items[i-1].n {
			j := i
			for ; j > 0 && items[j-1].v == it.v && items[j-1].n > it.n; j-- {
				items[j] = items[j-1]
			}
			items[j] = it
			if i-j > 32 {
				// A long run of equal means (a fleet's digests of a few
				// integers, or bytes crafted so): sort the rest of the
				// run by count at once, not in quadratic time.
				e := i + 1
				for e < len(items) && items[e].v == it.v {
					e++
				}
				start := i
				for start > 0 && items[start-1].v == it.v {
					start--
				}
				slices.SortFunc(items[start:e], func(a, b item) int { return cmp.Compare(a.n, b.n) })
				i = e - 1
			}
		}
	}
	return tmp
}

// radixPass moves src to dst by digit (v-vmin)>>shift&mask (mask+1 <=
// len(counts)), keeping the order of items of equal digits, and reports
// whether it did: not if every item has the same digit.
func radixPass(src, dst []item, vmin int64, shift uint, mask uint64, counts *[1 << 12]uint32) bool {
	cnt := counts[:mask+1]
	clear(cnt)
	for _, it := range src {
		cnt[uint64(it.v-vmin)>>shift&mask]++
	}
	if int(cnt[uint64(src[0].v-vmin)>>shift&mask]) == len(src) {
		return false // one digit for all: nothing moves
	}
	at := uint32(0)
	for k, c := range cnt {
		cnt[k] = at
		at += c
	}
	dst = dst[:len(src)]
	for _, it := range src {
		k := uint64(it.v-vmin) >> shift & mask
		dst[cnt[k]] = it
		cnt[k]++
	}
	return true
}

// item is a centroid being merged: its mean as a combined value with the
// destination's fractional bits, and its count.
type item struct {
	v int64
	n uint64
}

// rescaleParts returns a mean (combined value v with from fractional
// bits) as a combined value with g's fractional bits, truncated toward
// zero, clamped to g's range.
func (g geometry) rescaleParts(v int64, from uint) int64 {
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

// dataRange returns the range the merge's centroids must stay in, as
// combined values of g: from the least to the greatest mean of the
// inputs' centroids, which lie between the least and the greatest sample
// (a centroid's mean lies between its samples), widened to the bounds the
// caller knows the samples to lie in (sc.lo, sc.hi: a VOI's MIN and MAX;
// NaN when unknown). Means rounded to g's precision (towards zero) stay in
// the range; they need not stay in the samples' range when g cannot hold
// the samples exactly.
func (sc *mergeScratch) dataRange(g geometry) (lo, hi int64) {
	lo, hi = g.lim, -g.lim
	for _, in := range sc.ins {
		if in.end > in.start {
			lo, hi = min(lo, sc.cs[in.start].v), max(hi, sc.cs[in.end-1].v)
		}
	}
	// (NaN fails both tests.)
	if f := math.Ceil(math.Ldexp(sc.lo, int(g.nf))); f < float64(lo) {
		lo = -g.lim
		if f > float64(lo) {
			lo = int64(f)
		}
	}
	if f := math.Floor(math.Ldexp(sc.hi, int(g.nf))); f > float64(hi) {
		hi = g.lim
		if f < float64(hi) {
			hi = int64(f)
		}
	}
	return lo, hi
}

// splitCentroids appends to out the parts of the centroids cs of one
// digest (in mean order). The C's clustering leaves heavy centroids whose
// samples spread far towards their neighbours; as point masses they would
// put steps into the merged distribution, so each centroid of count n > 2
// becomes min(n, 4) parts of equal counts (up to one sample). A centroid
// of two samples stays whole: it is light, and in an accurate-mode digest
// it is most often a run of two equal samples (one too short to pin, see
// splitRuns), which spread parts would put between the integers of a
// discrete stream.
//
// Its samples are modelled as spread from the midpoint to its left
// neighbour to the midpoint to its right one (towards a neighbour of less
// than a third of its count, as far as its share of the two counts, when
// share: see shareOf), with a piecewise linear
// density (as in Dunning's interpolation between centroids): a
// centroid's own density is its count over its width (half the gaps to
// its neighbours on both sides), and the density at a midpoint is the
// average of the two centroids' densities; so the samples lean towards
// the denser neighbour. The side towards a gap more than 4 times the
// other is cut to 4 times the other, and one more than gapCut times the
// other to the other (a digest's centroids next to an empty stretch, as
// between the modes of a bimodal stream, would otherwise throw much of
// their mass into it, and the parts moved back to keep the mean crowd the
// mode: p50 of a fleet of 90/10 bimodal blobs was 0.55-0.6% off, 0.03-0.15%
// with the cut). At either end of the digest, the other side stands in
// for the missing neighbour. The parts are the conditional means of
// consecutive equal-count pieces of that density, moved so that their
// mean is the centroid's (to the rounding of each part's mean to the
// digest's precision): their distances from the density's mean are kept,
// or scaled down together where that would take a part out of [lo, hi],
// the range the samples are known to lie in (see dataRange; a centroid at
// lo or hi stays whole). Before that bound, the end centroids of fleets'
// digests spread past the samples (Q(0) of -21,130 on samples of at least
// 1,000).
//
// Measured against the samples of fleets of C digests, this keeps the
// merged rank errors at a third to a half of those of point masses, and
// up to half of those of spreading each centroid evenly over its share
// of the gaps (the largest at 50 slots over 8 seeds and 300 or 2000
// blobs: Pareto 0.48% -> 0.25%, lognormal 0.31% -> 0.16%).
//
// share is set for a digest with at least the destination's slots (a
// fleet's merge, a collector's levels), whose collapsed centroids the
// spread by share models; the merge of narrow digests into a wider one
// (the collector's batches into its wide levels) spreads them as far
// towards either side: by share, a 90/10 bimodal fleet of 20-slot digests
// folded into 80-slot levels was 0.18% off at p90 and is 0.026% off
// without (20,000 blobs; one MergeAll of them 0.19%).
func splitCentroids(out, cs []item, lo, hi int64, share bool) []item {
	if len(cs) < 2 {
		return append(out, cs...)
	}
	for i, c := range cs {
		if c.n < 3 {
			out = append(out, c)
			continue
		}
		if i > 0 && cs[i-1].v == c.v || i+1 < len(cs) && cs[i+1].v == c.v {
			// A piece of a run of equal samples (see exactRuns): kept
			// whole, one sample apart so that coalesce knows the run
			// (20-slot digests of 1,500 to 4,500 samples over 1..8,
			// their runs matched, merged into 80 slots: p90 1.3-1.5% of
			// rank off without, exact with).
			out = append(out, item{c.v, c.n - 1}, item{c.v, 1})
			continue
		}
		gl, gr := gapAt(cs, i), gapAt(cs, i+1)
		sl, sr := 0.5, 0.5 // each side's share of its gap
		if share && i > 0 {
			sl = shareOf(c.n, cs[i-1].n)
		}
		if share && i+1 < len(cs) {
			sr = shareOf(c.n, cs[i+1].n)
		}
		if i == 0 {
			sl = sr
		} else if i+1 == len(cs) {
			sr = sl
		}
		nl, nr := float64(gl*sl), float64(gr*sr)
		dl, dr := min(nl, float64(4*nr)), min(nr, float64(4*nl))
		if gl > float64(gapCut*gr) {
			dl = nr
		}
		if gr > float64(gapCut*gl) {
			dr = nl
		}
		if !(dl+dr > 0) {
			out = append(out, c)
			continue
		}
		fc := float64(c.n) / float64(dl+dr)
		fa, fb := fc, fc
		if i > 0 {
			fa = float64(fc+densityAt(cs, i-1, gapAt(cs, i-1), gl)) / 2
		}
		if i+1 < len(cs) {
			fb = float64(fc+densityAt(cs, i+1, gr, gapAt(cs, i+2))) / 2
		}
		out = appendParts(out, c, lo, hi, dl, dr, fa, fc, fb)
	}
	return out
}

// shareOf returns how much of the gap between a centroid of count n and
// its neighbour of count nb the centroid's samples are modelled to span:
// half, or n's share of n+nb when the neighbour holds less than a third
// of n (the C's clustering of sorted or drifting input collapses into a
// heavy centroid between light ones, whose samples reach close to them).
func shareOf(n, nb uint64) float64 {
	if nb > n/3 { // n < 3·nb, exactly: most centroids, without a division
		return 0.5
	}
	return float64(n) / float64(float64(n)+float64(nb))
}

// gapAt returns the gap between cs[i-1] and cs[i] (len(cs) >= 2), the
// nearest one for i out of [1, len(cs)-1].
func gapAt(cs []item, i int) float64 {
	i = max(1, min(len(cs)-1, i))
	return float64(cs[i].v - cs[i-1].v)
}

// densityAt returns cs[i]'s count over its width, half its gaps gl and gr
// to its neighbours (0 for no width).
func densityAt(cs []item, i int, gl, gr float64) float64 {
	w := float64(gl+gr) / 2
	if w <= 0 {
		return 0
	}
	return float64(cs[i].n) / w
}

// segment is a piece of a linear density: f0 at x0, slope s.
type segment struct{ x0, f0, s float64 }

// moment returns the first moment of the segment's first mass m, which
// spans t with f0·t + s·t²/2 = m (t computed in the form that does not
// cancel, or given as t > 0).
func (g segment) moment(m, t float64) float64 {
	if t <= 0 {
		if den := g.f0 + math.Sqrt(max(float64(g.f0*g.f0)+float64(2*g.s*m), 0)); den > 0 {
			t = float64(2*m) / den
		}
	}
	tt := float64(t * t)
	return float64(g.x0*m) + float64(g.f0*tt)/2 + float64(g.s*float64(tt*t))/3
}

// appendParts appends to out the parts of centroid c whose samples have
// a density linear from fa at offset -dl to fc at 0 and to fb at dr (dl,
// dr >= 0, dl+dr > 0; densities >= 0, fc > 0): min(c.n, 4) parts of
// equal counts at the conditional means of consecutive pieces of those
// counts, their distances from the density's mean scaled by the largest
// factor up to 1 that keeps them in [lo, hi] around c's mean (lo <= c.v
// <= hi). Every product is converted explicitly, so no fused multiply-add
// makes the parts differ between platforms.
func appendParts(out []item, c item, lo, hi int64, dl, dr, fa, fc, fb float64) []item {
	m1 := float64(float64(fa+fc)/2) * dl // the mass left of the mean
	m2 := float64(float64(fc+fb)/2) * dr
	tot := m1 + m2
	if !(tot > 0) || math.IsInf(tot, 0) {
		return append(out, c)
	}
	left, right := segment{-dl, fa, 0}, segment{0, fc, 0}
	if dl > 0 {
		left.s = float64(fc-fa) / dl
	}
	if dr > 0 {
		right.s = float64(fb-fc) / dr
	}
	g1 := 0.0 // the first moment of the left side
	if dl > 0 {
		g1 = left.moment(m1, dl)
	}
	gTot := g1
	if dr > 0 {
		gTot += right.moment(m2, dr)
	}
	k := min(c.n, 4)
	perSample := tot / float64(c.n)
	mean := gTot / tot  // the density's mean, to be moved to c's
	var offs [4]float64 // each part's distance from the density's mean
	var ns [4]uint64
	var gs [4]float64 // the first moment of the first parts' samples
	q, r := c.n/k, c.n%k
	cum := uint64(0)
	// (The parts' moments are independent of each other: computed
	// first, their square roots and divisions overlap.)
	for j := range k {
		n := q
		if j < r {
			n++
		}
		cum += n
		ns[j] = n
		g := gTot
		if j < k-1 {
			if m := float64(cum) * perSample; m <= m1 {
				g = left.moment(m, 0)
			} else {
				g = g1 + right.moment(min(m-m1, m2), 0)
			}
		}
		gs[j] = g
	}
	prev := 0.0
	room := 1.0 // the largest scale of the distances that fits [lo, hi]
	for j := range k {
		off := (gs[j]-prev)/float64(float64(ns[j])*perSample) - mean
		prev = gs[j]
		offs[j] = off
		// An offset is at most a gap, and lo, c.v and hi are within
		// ±2^62: the differences do not wrap.
		if r := float64(c.v - lo); -off > r {
			room = min(room, r/-off)
		} else if r := float64(hi - c.v); off > r {
			room = min(room, r/off)
		}
	}
	for j := range k {
		v := c.v + int64(math.Round(float64(room*offs[j])))
		out = append(out, item{max(lo, min(hi, v)), ns[j] | partBit})
	}
	return out
}

// combine groups the items (sorted by mean) into at most slots centroids:
// each item goes to group floor(c*scale(r/total)) of its segment (the
// items between two mode gaps, see modeGaps), where r is the rank of its
// middle sample, and c is the largest count of groups for which at most
// slots groups are populated. A centroid's mean is the exact
// count-weighted mean of its items (rounded to nearest, halves away from
// zero), its count their sum.
//
// An item's group never decreases along the items (the ranks grow and
// scale is monotone, in floating point too: square roots, sums and
// products by positive constants are correctly rounded), so the groups
// are runs, and the groups of a sample of the items tell most of them:
// where two consecutive samples are in the same group, so is every item
// between them; where in consecutive groups, one run ends between them.
// Only where the groups of two samples are further apart is the block
// between them searched (binary search). The sample is every item when
// there are at most combineDense items per slot, and combineDense per
// slot otherwise, so the scale is computed about once per sample, and
// counting the populated groups of a c is a tight pass over the samples
// (the binary searches per group of every item it replaced cost a dozen
// evaluations per group with mispredicted branches and cache misses: 25
// per item in a fold of 3 digests into an 80-slot one).
func (sc *mergeScratch) combine(items []item, total uint64, slots int) []item {
	n := len(items)
	cum := slices.Grow(sc.cum[:0], n)[:n]
	sc.cum = cum
	var c uint64
	for i, it := range items {
		cum[i] = c
		c += it.n
	}
	seg := slices.Grow(sc.seg[:0], n)[:n]
	sc.seg = seg
	oneSeg := modeGaps(items, cum, total, slots, seg)
	gr := grouper{items: items, cum: cum, seg: seg, ft: float64(total), oneSeg: oneSeg}
	gr.step = max(1, n/(combineDense*slots))
	m := (n-1+gr.step-1)/gr.step + 1 // samples at j*step, and n-1
	hs := slices.Grow(sc.h[:0], m)[:m]
	sc.h = hs
	for j := range hs {
		hs[j] = gr.h(gr.pos(j))
	}
	gr.hs = hs
	best := bestGroups(slots, func(c int) bool {
		if gr.step == 1 {
			return denseRuns(hs, seg, oneSeg, c, slots) <= slots
		}
		k, _ := gr.runs(c, slots, false, nil)
		return k <= slots
	})
	_, starts := gr.runs(best, n, true, sc.ends[:0])
	sc.ends = starts
	out := sc.out[:0]
	for r, i := range starts {
		j := n
		if r+1 < len(starts) {
			j = starts[r+1]
		}
		var sum sum128
		var cnt uint64
		for _, it := range items[i:j] {
			sum.add(it.v, it.n)
			cnt += it.n
		}
		out = append(out, item{sum.mean(cnt), cnt})
	}
	sc.out = out
	return out
}

// exactGroups returns, in place, which of combine's groups (starting at
// starts) are runs of equal samples, from which of its items were
// (exact): a group of one such item.
func exactGroups(exact []bool, starts []int) []bool {
	for r, i := range starts {
		end := len(exact)
		if r+1 < len(starts) {
			end = starts[r+1]
		}
		exact[r] = exact[i] && end == i+1 // (r <= i: read before written)
	}
	return exact[:len(starts)]
}

// partBit marks, from splitCentroids to coalesce, an item that is a
// part of a spread centroid, not a centroid of an input. (Counts stay
// below 2^63.)
const partBit = 1 << 63

// coalesce makes the centroids of each run of items of equal mean
// (sorted by mean) one item when the run holds a single sample, in
// place, as far as counts stay within maxCnt; it clears partBit and
// records in sc.exact which items are such runs: runs of equal samples.
// The parts of spread centroids in the run stay apart (at the samples'
// range's ends, the parts of a centroid there cannot spread and share
// its mean; groups share them out). A centroid that is not spread has
// neighbours in its digest at its own mean (the accurate mode writes a
// run of equal samples as pieces of the same mean, see exactRuns and
// splitRuns, and so does pinRuns; splitCentroids gives such a piece a
// one-sample part), or two samples; so runs of equal samples stay whole
// and known through merges and merges of merges: a fleet of accurate
// digests of a few integers (a discrete Zipf law over 1..8) merged in two
// levels was 0.19 % of rank off at p90, as groups straddling two integers
// put means between them.
func (sc *mergeScratch) coalesce(items []item, maxCnt uint64) []item {
	exact := sc.exact[:0]
	out := items[:0]
	for i := 0; i < len(items); {
		j, single := i, false
		for ; j < len(items) && items[j].v == items[i].v; j++ {
			single = single || items[j].n == 1 // (a part has partBit)
		}
		if !single {
			for ; i < j; i++ {
				out = append(out, item{items[i].v, items[i].n &^ partBit})
				exact = append(exact, false)
			}
			continue
		}
		// The run's centroids first (they sort before its parts), then
		// its parts.
		it := item{items[i].v, 0}
		for ; i < j && items[i].n&partBit == 0; i++ {
			if it.n > maxCnt-items[i].n {
				out = append(out, it)
				exact = append(exact, true)
				it.n = 0
			}
			it.n += items[i].n
		}
		out = append(out, it)
		exact = append(exact, true)
		for ; i < j; i++ {
			out = append(out, item{items[i].v, items[i].n &^ partBit})
			exact = append(exact, false)
		}
	}
	sc.exact = exact
	return out
}

// pinRuns returns items (a merge's centroids in mean order, sc.exact
// telling which hold equal samples) with the runs of equal samples split
// as the accurate mode splits them (runPlan.split, sc.unit for an integer
// VOI's) while slots remain, so that the queries answer a run's value
// over its whole rank range.
func (sc *mergeScratch) pinRuns(items []item, slots int) []item {
	if len(items) >= slots {
		return items
	}
	some := false
	for i, it := range items {
		some = some || isRun(accItemOf(it.v, it.n, sc.exact[i]), sc.unit)
	}
	if !some {
		return items
	}
	acc := sc.acc[:0]
	for i, it := range items {
		acc = append(acc, accItemOf(it.v, it.n, sc.exact[i]))
	}
	sc.acc = acc
	pinned := sc.runs.split(sc.pinned[:0], acc, slots, sc.unit)
	sc.pinned = pinned
	out := sc.out2[:0]
	for _, it := range pinned {
		out = append(out, item{it.v, it.n()})
	}
	sc.out2 = out
	return out
}

// combineDense is the number of items per slot up to which combine's
// sample of the items is every item, and the size of its sample per slot
// beyond.
const combineDense = 16

// grouper finds combine's groups: items, the samples before each (cum),
// their segments, the total as a float, and the scales of the samples
// (hs) of the items at j*step (and the last item).
type grouper struct {
	items  []item
	cum    []uint64
	seg    []int32
	ft     float64
	step   int
	hs     []float64
	oneSeg bool // every item in segment 0
}

// pos returns the index of sample j.
func (g *grouper) pos(j int) int { return min(j*g.step, len(g.items)-1) }

// h returns item i's scale: of the rank of its middle sample.
func (g *grouper) h(i int) float64 {
	mid := float64(g.cum[i]) + float64(g.items[i].n)/2
	return scale(float64(mid / g.ft))
}

// group returns the group for c of item i of scale x.
func (g *grouper) group(c, i int, x float64) int {
	return int(g.seg[i])*(c+1) + min(int(float64(float64(c)*x)), c-1)
}

// runs returns the number of runs of items of equal groups for c, or a
// number past limit once it is past limit, and, if record, appends to
// starts the index of each run's first item.
func (g *grouper) runs(c, limit int, record bool, starts []int) (int, []int) {
	hs, seg := g.hs, g.seg
	fc, cm, c1 := float64(c), c-1, c+1
	prev := g.group(c, 0, hs[0])
	k := 1
	if record {
		starts = append(starts, 0)
	}
	for j := 1; j < len(hs); j++ {
		var gj int
		if g.oneSeg {
			gj = min(int(float64(fc*hs[j])), cm)
		} else {
			gj = int(seg[g.pos(j)])*c1 + min(int(float64(fc*hs[j])), cm)
		}
		if gj == prev {
			continue
		}
		a, b := g.pos(j-1), g.pos(j)
		switch {
		case b == a+1: // adjacent items
			k++
			if record {
				starts = append(starts, b)
			}
		case gj == prev+1 && !record:
			k++ // one run ends between the two samples
		default:
			// The runs between sample j-1 (group prev) and j: each
			// next one starts at the first item of another group.
			i, gi := a, prev
			for {
				lo, hi := i+1, b // the next run starts in [lo, hi]
				for lo < hi {
					mid := lo + (hi-lo)/2
					if g.group(c, mid, g.h(mid)) == gi {
						lo = mid + 1
					} else {
						hi = mid
					}
				}
				k++
				if record {
					starts = append(starts, lo)
				}
				if lo == b {
					break
				}
				if gi = g.group(c, lo, g.h(lo)); gi == gj {
					break
				}
				i = lo
			}
		}
		prev = gj
		if k > limit {
			break
		}
	}
	return k, starts
}

// denseRuns is runs(c, slots, false, nil) for a sample of every item, of
// scales h: without branches on the groups (which change every few items,
// unpredictably), checking for more than slots every 64 items.
func denseRuns(h []float64, seg []int32, oneSeg bool, c, slots int) int {
	fc, cm := float64(c), c-1
	k, prev := 0, -1
	seg = seg[:len(h)]
	for at := 0; at < len(h); at += 64 {
		blk := h[at:min(at+64, len(h))]
		if oneSeg {
			for _, x := range blk {
				g := min(int(float64(fc*x)), cm)
				d := g ^ prev
				k += int(uint(d|-d) >> 63) // 1 if g != prev
				prev = g
			}
		} else {
			sg := seg[at : at+len(blk)]
			for i, x := range blk {
				g := int(sg[i])*(c+1) + min(int(float64(fc*x)), cm)
				d := g ^ prev
				k += int(uint(d|-d) >> 63)
				prev = g
			}
		}
		if k > slots {
			return k
		}
	}
	return k
}

// bestGroups returns the largest count of groups c in [1, 64·slots] for
// which fits(c) (populated(c) <= slots) as a binary search finds it:
// populated(slots) <= slots unless the segments take slots of their own;
// populated is nearly monotone in c, and the search keeps the best c seen
// that fits.
func bestGroups(slots int, fits func(c int) bool) int {
	lo := slots
	if !fits(lo) {
		lo = 1 // the segments take slots of their own
	}
	best, hi := lo, slots*64
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		if fits(mid) {
			best, lo = mid, mid
		} else {
			hi = mid - 1
		}
	}
	return best
}

// Mode gaps: where the pooled items jump across an empty stretch, as
// between the modes of a bimodal stream, a group that straddled the jump
// would be a centroid in the middle of nothing, and quantiles near the
// jump would read it (a 20-slot merge of merges of a fast/slow stream put
// p90 1.5% of the samples off). A gap between items i-1 and i is a mode
// gap if it is wider than the range's share per slot, and gapFactor times
// wider than the gaps next to it, and at least gapRank of the samples lie
// on either side of it (the sparse far tails of heavy-tailed streams
// jump too, but there the groups are single items already).
const (
	gapFactor = 8
	gapRank   = 0.02
)

// modeGaps numbers in seg (len(items)) the segments that the mode gaps
// cut the items into, 0 upwards; no group of combine straddles a mode
// gap. If there are slots/2 or more, it numbers all items 0: the slots are
// too few to keep those apart. cum holds the samples before each item.
func modeGaps(items []item, cum []uint64, total uint64, slots int, seg []int32) (oneSeg bool) {
	n := len(items)
	if n == 0 {
		return true
	}
	width := float64(items[n-1].v-items[0].v) / float64(slots)
	ft := float64(total)
	seg, cum = seg[:n], cum[:n]
	clear(seg)
	s := int32(0)
	for i := 2; i+1 < n; i++ {
		// (The tests of a gap, the cheap ones first.)
		g := items[i].v - items[i-1].v
		if !(float64(g) > width) {
			continue
		}
		near := max(items[i-1].v-items[i-2].v, items[i+1].v-items[i].v)
		if !(float64(g) > float64(gapFactor*float64(near))) {
			continue
		}
		if r := float64(cum[i]) / ft; r > gapRank && r < 1-gapRank {
			s++
			seg[i] = 1
		}
	}
	if s == 0 || int(s) >= slots/2 {
		clear(seg)
		return true
	}
	s = 0
	for i, g := range seg {
		s += g
		seg[i] = s
	}
	return false
}

// gapCut is how many times wider than the gap on a centroid's other side
// a gap must be for splitCentroids to spread the centroid towards it only
// as far as towards the other side (the gaps of a heavy tail grow by
// factors of 1.5 to 3 from centroid to centroid; between modes by 100s).
// Measured on fleets of 1,000 blobs, 50 and 100 slots: 16 to 64 keep a
// 90/10 bimodal's p50 at 0.03-0.15%; Pareto's (α = 1.1) worst quantile
// grows from 0.22% at 64 to 0.26% at 16 and 0.45% at 4 (50 slots).
const gapCut = 32

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
func (d *digest[N]) rebuild(ctrl uint64, cs []item, total uint64, comp uint32) {
	clear(d.b)
	d.resetHead(d.maxn)
	for i := d.maxn - 1; i >= 0; i-- {
		d.returnFree(i)
		d.setMuRaw(i, ctrl) // mean 0 with the control bits
	}
	d.setSmplcnt(total)
	le.PutUint32(d.b[d.compOff():], comp)
	last, maxV := null, int64(0) // the rightmost node, its mean
	for _, c := range cs {
		e := d.getFree()
		if is32[N]() {
			d.setMuRaw(e, uint64(setS32(ctrl, int32(c.v))))
		} else {
			d.setMuRaw(e, setS64(ctrl, c.v))
		}
		d.setCnt(e, int64(c.n))
		if last != null && c.v < maxV {
			// (Not in order, which no merge passes: the descent finds
			// its place.)
			d.insert(e)
			continue
		}
		d.insertGreatest(e, last)
		last, maxV = e, c.v
	}
}

// rebuildShaped is rebuild with the tree's shape taken from sc's cache.
// Centroids in ascending order go to slots 0, 1, 2, ... (the free list
// is in index order), each linked as the rightmost node's right child
// and rebalanced by colours and links alone, so the bytes rebuild writes
// are those of a rebuild of as many centroids of mean 0 (the shape,
// computed once per geometry, count and control bits), with each slot's
// mean and count set, and the sample counts. (A rebuild of 80 slots was a
// sixth of the CPU of a scrape of many small folds.)
func (d *digest[N]) rebuildShaped(sc *mergeScratch, ctrl uint64, cs []item, total uint64, comp uint32) {
	for i := 1; i < len(cs); i++ {
		if cs[i].v < cs[i-1].v { // (not in order: never from a merge)
			d.rebuild(ctrl, cs, total, comp)
			return
		}
	}
	key := shapeKey{len(d.b), len(cs), ctrl, is32[N]()}
	shape, ok := sc.shapes[key]
	if !ok {
		if sc.shapes == nil || sc.shapeBytes+len(d.b) > maxShapeBytes {
			sc.shapes, sc.shapeBytes = make(map[shapeKey][]byte), 0
		}
		sc.shapeBytes += len(d.b)
		d.rebuild(ctrl, make([]item, len(cs)), 0, 0)
		shape = bytes.Clone(d.b)
		sc.shapes[key] = shape
	}
	copy(d.b, shape)
	for e, c := range cs {
		if is32[N]() {
			d.setMuRaw(e, uint64(setS32(ctrl, int32(c.v))))
		} else {
			d.setMuRaw(e, setS64(ctrl, c.v))
		}
		d.setCnt(e, int64(c.n))
	}
	d.setSmplcnt(total)
	le.PutUint32(d.b[d.compOff():], comp)
}

// shapeKey identifies a rebuilt tree's shape: the digest's size, the
// number of centroids, their control bits and the node layout.
type shapeKey struct {
	size, n int
	ctrl    uint64
	is32    bool
}

// maxShapeBytes bounds the bytes of the shapes a scratch keeps (a wide
// TCP_DEFAULT digest's are 1.9 KB; past it, the shapes are made again).
const maxShapeBytes = 1 << 20

// MergeWeighted adds weighted samples to digest data of type dt: value i
// with weight weights[i] (weight 0 adds nothing), merged as MergeAll
// merges a digest whose centroids they are. A value is converted to the
// digest's precision truncating toward zero. It adds every sample it can
// and returns the first error: voi.ErrInvalid for a NaN or infinite value
// (or len(values) != len(weights)), voi.ErrOverflow for a value out of the
// range of the digest's means or a weight past a centroid's largest count
// (2^31−1 in a TDGSTCLUST32, 2^63−1 in a TDGSTCLUST64), and those of
// MergeAll (which add nothing).
func MergeWeighted(data []byte, dt voi.DType, values []float64, weights []uint64) error {
	if len(values) != len(weights) {
		return fmt.Errorf("tdigest: MergeWeighted: %d values, %d weights: %w", len(values), len(weights), voi.ErrInvalid)
	}
	if err := Validate(data, dt); err != nil {
		return err
	}
	if dt == voi.TDgstClust32 {
		return mergeWeightedLayout[node32](data, values, weights)
	}
	return mergeWeightedLayout[node64](data, values, weights)
}

// mergeWeightedLayout is MergeWeighted for a valid digest of layout N.
func mergeWeightedLayout[N node](data []byte, values []float64, weights []uint64) error {
	var d digest[N]
	_ = d.init(data, nil)
	if d.maxn == 0 {
		return errNoNodes
	}
	g := d.geometry()
	sc := mergeScratchPool.Get().(*mergeScratch)
	defer mergeScratchPool.Put(sc)
	sc.cs, sc.ins = sc.cs[:0], sc.ins[:0]
	sc.lo, sc.hi = math.NaN(), math.NaN()
	var firstErr error
	var in input
	for i, v := range values {
		f := math.Trunc(math.Ldexp(v, int(g.nf)))
		switch {
		case math.IsNaN(v) || math.IsInf(v, 0):
			firstErr = cmp.Or(firstErr, errNaN)
		case math.Abs(f) > float64(g.lim) || weights[i] > g.maxCnt:
			firstErr = cmp.Or(firstErr, errOverflow)
		case weights[i] > 0:
			n, carry := bits.Add64(in.total, weights[i], 0)
			if carry != 0 {
				return g.errTooMany()
			}
			sc.cs, in.total = append(sc.cs, item{int64(f), weights[i]}), n
		}
	}
	if len(sc.cs) == 0 {
		return firstErr
	}
	slices.SortFunc(sc.cs, func(a, b item) int {
		if c := cmp.Compare(a.v, b.v); c != 0 {
			return c
		}
		return cmp.Compare(a.n, b.n)
	})
	in.end = len(sc.cs)
	sc.ins = append(sc.ins, in)
	if d.cur() > 0 {
		readInput[N](sc, g, data)
	}
	return cmp.Or(d.mergeInputs(g, sc), firstErr)
}
