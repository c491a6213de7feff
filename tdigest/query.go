package tdigest

import (
	"fmt"
	"iter"
	"math"

	"github.com/statsblob/statsblob/qmath"
	"github.com/statsblob/statsblob/voi"
)

// Info is a digest's header: the sample and compression counters and the
// ARB16 head.
type Info struct {
	SmplCnt  uint64 // samples added (u32 for TDGSTCLUST32)
	CompCnt  uint32 // compressions so far
	CurNodes int16  // centroids in the tree
	MaxNodes int16  // centroid slots
	Root     int16  // root index, -1 if the tree is empty
	Free     int16  // head of the free list, -1 if empty
	Min, Max int16  // cached indices of the extreme centroids, -1 if unset
}

// ReadInfo returns the header of digest bytes. It fails only if dt is not
// a t-digest type or data is shorter than the header.
func ReadInfo(data []byte, dt voi.DType) (Info, error) {
	if !dt.IsTDigest() {
		return Info{}, errDType
	}
	if len(data) < Size(dt, 0) {
		return Info{}, errShort
	}
	t := view(data, dt)
	h := func(f int) int16 { return int16(t.hget(f)) }
	return Info{
		SmplCnt:  t.smplcnt(),
		CompCnt:  le.Uint32(data[t.compOff():]),
		CurNodes: h(hCur),
		MaxNodes: h(hMax),
		Root:     h(hRoot),
		Free:     h(hFree),
		Min:      h(hMin),
		Max:      h(hMaxI),
	}, nil
}

// Centroid is one centroid slot of a digest as stored.
type Centroid struct {
	Index  int     // array slot
	Mu     qmath.Q // the mean: an S32 Q for TDGSTCLUST32, S64 for TDGSTCLUST64
	Count  uint64  // the count as the C prints it (uint32 for TDGSTCLUST32)
	Parent int16   // tree link: parent index
	Left   int16   // tree link: left child index
	Right  int16   // tree link: right child index (next free index for free nodes)
	Color  int8    // 0 black, 1 red, -1 free
}

// Mean returns the centroid's mean as a float64 (exact for means of up to
// 53 significant bits).
func (c Centroid) Mean() float64 {
	q := c.Mu
	nf := q.NFBits()
	var v int64
	if q.Kind == qmath.S32 {
		v = ifvS32(q.Raw)
	} else {
		v = ifvS64(q.Raw)
	}
	return float64(v) / float64(uint64(1)<<nf)
}

// ReadCentroid returns slot i of a digest of type dt. Like indexing a
// slice, it panics if data holds no slot i; use Iter for checked access.
func ReadCentroid(data []byte, dt voi.DType, i int) Centroid {
	t := view(data, dt)
	t.setMaxn(i + 1)
	return t.centroid(i)
}

func (t *tree) centroid(i int) Centroid {
	lk := t.links(i)
	mu, n := t.muCount(i)
	return Centroid{
		Index:  i,
		Mu:     mu,
		Count:  n,
		Parent: int16(lkParent(lk)),
		Left:   int16(lkLeft(lk)),
		Right:  int16(lkRight(lk)),
		Color:  int8(lk >> 48),
	}
}

// muCount returns slot i's mean as a Q of the digest's width and its count
// as the C prints it (uint32 for TDGSTCLUST32).
func (t *tree) muCount(i int) (qmath.Q, uint64) {
	if t.is32 {
		return qmath.Q{Raw: t.muRaw(i), Kind: qmath.S32}, uint64(uint32(t.cnt(i)))
	}
	return qmath.Q{Raw: t.muRaw(i), Kind: qmath.S64}, uint64(t.cnt(i))
}

// Order selects how an Iterator walks a digest.
type Order uint8

// The orders an Iterator can walk in.
const (
	// MeanOrder visits the centroids of the tree in ascending mean order,
	// from the true minimum.
	MeanOrder Order = iota
	// CachedOrder visits them in ascending mean order from the head's
	// cached minimum (ARB_CMIN), as the C's renderer does: if the cache is
	// stale, the centroids below it are not visited.
	CachedOrder
	// SlotOrder visits every slot, in the tree or not, in index order (the
	// C's objdump rendering).
	SlotOrder
)

// Iterator walks the centroids of a digest without allocating. Its zero
// value visits nothing. Use it as
//
//	it, err := tdigest.Iter(data, dt, tdigest.MeanOrder)
//	for it.Next() {
//		c := it.Centroid()
//		...
//	}
//
// The digest must not change during the walk. On corrupt bytes the walk
// stops after at most as many steps as the digest has slots.
type Iterator struct {
	t       tree
	order   Order
	cur     int
	steps   int
	started bool
}

// Iter returns an Iterator over digest bytes in the given order. It fails
// if dt is not a t-digest type or data is shorter than the header and
// slots it describes.
func Iter(data []byte, dt voi.DType, order Order) (Iterator, error) {
	it := Iterator{order: order, cur: null}
	if err := it.t.init(data, dt); err != nil {
		return Iterator{}, err
	}
	return it, nil
}

// Next advances to the next centroid and reports whether there is one.
func (it *Iterator) Next() bool {
	t := &it.t
	if it.steps > t.maxn || t.b == nil {
		return false
	}
	it.steps++
	if !it.started {
		it.started = true
		switch it.order {
		case MeanOrder:
			it.cur = t.extreme(lLeft)
		case CachedOrder:
			it.cur = t.minNode()
		default:
			it.cur = t.node(0)
		}
	} else if it.cur != null {
		if it.order == SlotOrder {
			it.cur = t.node(it.cur + 1)
		} else {
			it.cur = t.next(it.cur)
		}
	}
	return it.cur != null
}

// Centroid returns the current centroid; call it only after Next reported
// one.
func (it *Iterator) Centroid() Centroid { return it.t.centroid(it.cur) }

// meanCount returns the current centroid's Mean and Count without reading
// its links.
func (it *Iterator) meanCount() (float64, uint64) {
	mu, n := it.t.muCount(it.cur)
	return Centroid{Mu: mu}.Mean(), n
}

// Centroids returns the centroids of a digest in ascending mean order as a
// sequence (nothing if the bytes are not a digest of type dt).
func Centroids(data []byte, dt voi.DType) iter.Seq[Centroid] {
	return func(yield func(Centroid) bool) {
		it, err := Iter(data, dt, MeanOrder)
		if err != nil {
			return
		}
		for it.Next() {
			if !yield(it.Centroid()) {
				return
			}
		}
	}
}

// Count returns the number of samples the digest's centroids hold (the sum
// of their counts; for a digest updated only through this package, or one
// Validate accepts, it equals the header's smplcnt). Counts that sum past
// 2^64-1 (bytes Validate rejects) give an error wrapping voi.ErrOverflow.
func Count(data []byte, dt voi.DType) (uint64, error) {
	it, err := Iter(data, dt, MeanOrder)
	if err != nil {
		return 0, err
	}
	var n uint64
	for it.Next() {
		_, c := it.t.muCount(it.cur) // the count alone, not the links
		if n, err = addCount(n, c); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// Mean returns the mean of the samples: the count-weighted mean of the
// centroid means, between the least and the greatest of them. It fails
// with ErrEmpty on a digest without samples.
func Mean(data []byte, dt voi.DType) (float64, error) {
	it, err := Iter(data, dt, MeanOrder)
	if err != nil {
		return 0, err
	}
	var sum, n float64
	lo, hi := math.Inf(1), math.Inf(-1)
	for it.Next() {
		c := it.Centroid()
		if c.Count == 0 {
			continue
		}
		m := c.Mean()
		sum += m * float64(c.Count)
		n += float64(c.Count)
		lo, hi = min(lo, m), max(hi, m)
	}
	if n == 0 {
		return 0, ErrEmpty
	}
	return between(sum/n, lo, hi), nil
}

// Quantile estimates the q-quantile (0 <= q <= 1) of the samples of
// digest bytes. It is a building block: it knows only the digest, not the
// VOI's MIN and MAX, which bound the answer (QuantileBounded), nor
// whether its samples are integers; package blob's Stat.Quantile and
// Blob.Quantile give a VOI's answer, bounded when the VOI keeps them and
// rounded to an integer for an integer VOI, and the CLI and exporters
// answer with them.
//
// Each centroid stands for its count of samples spread evenly around its
// mean: with W the total count before it and c its count, it sits at rank
// W + c/2. The estimate at rank q·N (N the total count) interpolates
// linearly between the means of the two centroids whose ranks enclose it;
// below the first centroid's rank it is the first mean, above the last
// one's the last mean (the digest keeps no minimum or maximum sample; see
// QuantileBounded when they are known). One centroid gives its mean for
// every q; equal means give that value. The estimate lies between the
// least and the greatest centroid mean, whatever the bytes hold.
//
// Errors: q NaN or outside [0, 1] (wraps voi.ErrInvalid), ErrEmpty for a
// digest without samples, and those of Iter.
func Quantile(data []byte, dt voi.DType, q float64) (float64, error) {
	return quantile(data, dt, q, math.NaN(), math.NaN())
}

// QuantileBounded is Quantile for samples known to lie in [min, max] (for
// example a VOI that also keeps MIN and MAX statistics): below the first
// centroid's rank the estimate interpolates from min at rank 0, above the
// last one's towards max at rank N, instead of stopping at the outermost
// means, so q = 0 gives min and q = 1 max. min and max must bracket the
// centroid means (else the outermost mean is used on that side).
func QuantileBounded(data []byte, dt voi.DType, q, min, max float64) (float64, error) {
	return quantile(data, dt, q, min, max)
}

// populated returns an iterator in mean order over a digest that holds
// samples, and their number; ErrEmpty if it holds none.
func populated(data []byte, dt voi.DType) (Iterator, float64, error) {
	n, err := Count(data, dt)
	if err != nil {
		return Iterator{}, 0, err
	}
	if n == 0 {
		return Iterator{}, 0, ErrEmpty
	}
	it, err := Iter(data, dt, MeanOrder)
	return it, float64(n), err
}

// quantile implements Quantile; lo and hi are the sample extremes, NaN if
// unknown.
func quantile(data []byte, dt voi.DType, q, lo, hi float64) (float64, error) {
	if !(q >= 0 && q <= 1) {
		return 0, errQuantile
	}
	it, n, err := populated(data, dt)
	if err != nil {
		return 0, err
	}
	target := q * n
	var cum, prevRank, prevMean float64
	first := true
	for it.Next() {
		c := it.Centroid()
		if c.Count == 0 {
			continue
		}
		m, w := c.Mean(), float64(c.Count)
		rank := cum + w/2
		if target <= rank {
			if first {
				if lo <= m && rank > 0 { // lo known (not NaN) and below the mean
					return between(lo+target/rank*(m-lo), lo, m), nil
				}
				return m, nil
			}
			if rank == prevRank {
				return m, nil
			}
			return between(prevMean+(target-prevRank)/(rank-prevRank)*(m-prevMean), prevMean, m), nil
		}
		first = false
		prevRank, prevMean = rank, m
		cum += w
	}
	if hi >= prevMean && n > prevRank { // hi known and above the mean
		return between(prevMean+(target-prevRank)/(n-prevRank)*(hi-prevMean), prevMean, hi), nil
	}
	return prevMean, nil
}

// CDF estimates the fraction of samples at or below x, the inverse of
// Quantile: 0 below the first centroid's mean, 1 at or above the last
// one's, and between two consecutive means the linear interpolation of
// their ranks (see Quantile) divided by the total count. It lies in
// [0, 1] whatever the bytes hold.
//
// Like Quantile, it is a building block: it knows only the digest (see
// CDFBounded, and package blob's Stat.CDF for a VOI's answer).
//
// Errors: x NaN (wraps voi.ErrInvalid), ErrEmpty, and those of Iter.
func CDF(data []byte, dt voi.DType, x float64) (float64, error) {
	return cdf(data, dt, x, math.NaN(), math.NaN())
}

// CDFBounded is CDF for samples known to lie in [min, max], the inverse of
// QuantileBounded: 0 below min, 1 at or above max, and from min to the
// first centroid's mean (and from the last one's to max) the linear
// interpolation from rank 0 (to rank N) instead of a step. min and max
// must bracket the centroid means (else that side is CDF's).
func CDFBounded(data []byte, dt voi.DType, x, min, max float64) (float64, error) {
	return cdf(data, dt, x, min, max)
}

// CDFs appends to out the CDFBounded of each of xs, which must ascend,
// with min and max lo and hi, in one walk of the centroids (CDF's where
// they are NaN): a histogram's bucket bounds at the cost of one query,
// not one each.
//
// Errors: an x that is NaN or below its predecessor (wraps
// voi.ErrInvalid), ErrEmpty, and those of Iter; out is then returned as
// it was.
func CDFs(out []float64, data []byte, dt voi.DType, xs []float64, lo, hi float64) ([]float64, error) {
	for i, x := range xs {
		if math.IsNaN(x) {
			return out, errNaN
		}
		if i > 0 && x < xs[i-1] {
			return out, fmt.Errorf("tdigest: CDFs: x[%d] = %v below x[%d] = %v: %w", i, x, i-1, xs[i-1], voi.ErrInvalid)
		}
	}
	it, n, err := populated(data, dt)
	if err != nil {
		return out, err
	}
	k := 0
	var cum, prevRank, prevMean float64
	seen := false
	for k < len(xs) && it.Next() {
		c := it.Centroid()
		if c.Count == 0 {
			continue
		}
		m, w := c.Mean(), float64(c.Count)
		rank := cum + w/2
		// The points below this mean: interpolated from the previous
		// mean, or from lo below the first, else 0.
		for ; k < len(xs) && xs[k] < m; k++ {
			x := xs[k]
			switch {
			case seen:
				out = append(out, unit((prevRank+(x-prevMean)/(m-prevMean)*(rank-prevRank))/n))
			case lo <= m && x > lo:
				out = append(out, unit((x-lo)/(m-lo)*rank/n))
			default:
				out = append(out, 0)
			}
		}
		seen = true
		prevRank, prevMean = rank, m
		cum += w
	}
	for ; k < len(xs); k++ {
		if x := xs[k]; hi > prevMean && x < hi {
			out = append(out, unit((prevRank+(x-prevMean)/(hi-prevMean)*(n-prevRank))/n))
		} else {
			out = append(out, 1)
		}
	}
	return out, nil
}

// cdf implements CDF: CDFs of the one point x (lo and hi the sample
// extremes, NaN if unknown).
func cdf(data []byte, dt voi.DType, x, lo, hi float64) (float64, error) {
	var p [1]float64
	out, err := CDFs(p[:0], data, dt, []float64{x}, lo, hi)
	if err != nil {
		return 0, err
	}
	return out[0], nil
}
