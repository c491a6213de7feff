package hist

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/statsblob/statsblob/voi"
)

// ErrEmpty is returned by Quantile and CDF for a histogram whose buckets
// hold no counts: it is voi.ErrEmpty (which wraps voi.ErrNotFound).
var ErrEmpty = voi.ErrEmpty

var (
	errQuantile = fmt.Errorf("hist: quantile outside [0,1]: %w", voi.ErrInvalid)
	errNaN      = fmt.Errorf("hist: NaN: %w", voi.ErrInvalid)
)

// Float64 returns the number a bound or value pattern of the VOI type dt
// stands for: the integer (a 32-bit type uses the low half) or the Q
// number's value with its own precision. It is 0 for a type that is not
// numeric.
func Float64(dt voi.DType, v uint64) float64 {
	o := orderOf(dt)
	switch {
	case o == nil:
		return 0
	case o.q:
		return float64(o.ifv(v)) / float64(uint64(1)<<o.nf[v&7])
	case o.flip == 0:
		return float64(v & o.mask)
	case dt.Is32():
		return float64(int32(v))
	}
	return float64(int64(v))
}

// mass is one bucket's share of the estimate: count spread uniformly over
// [lo, hi), or sitting at lo when point is set.
type mass struct {
	lo, hi float64
	cnt    float64
	point  bool
}

// masses calls f for every bucket with a non-zero count, in index order,
// with the bucket as an estimate sees it (see Quantile).
func masses(data []byte, g geom, dt voi.DType, f func(mass) bool) {
	o := orderOf(dt)
	n := g.numBuckets(data)
	ext := o.mask &^ qctrlMask(o) // a Q extreme has the histogram's control bits
	isMax := func(v uint64) bool { return (v^voi.LimitMax(dt))&ext == 0 }
	isMin := func(v uint64) bool { return dt.Signed() && (v^voi.LimitMin(dt))&ext == 0 }
	for i := range n {
		lbp, ubp, cnt := g.bucket(data, dt, i, n)
		if cnt == 0 {
			continue
		}
		m := mass{lo: Float64(dt, lbp), hi: Float64(dt, ubp), cnt: float64(cnt)}
		loInf, hiInf := isMin(lbp), isMax(ubp)
		switch {
		case g.kind == kindDV || loInf && hiInf:
			m.point = true
		case loInf:
			m.lo, m.point = m.hi, true
		case hiInf || !(m.lo < m.hi):
			m.point = true
		}
		if !f(m) {
			return
		}
	}
}

// qctrlMask is the mask of the control bits of a Q type (0 for integers).
func qctrlMask(o *order) uint64 {
	if o.q {
		return 7
	}
	return 0
}

// estimate validates the arguments of Quantile and CDF and returns the
// total count.
func estimate(data []byte, hdt, voiDT voi.DType) (geom, uint64, error) {
	g, _, err := check(data, hdt, voiDT)
	if err != nil {
		return g, 0, err
	}
	t := Count(data, hdt)
	if t == 0 {
		return g, 0, ErrEmpty
	}
	return g, t, nil
}

// Quantile estimates the q-quantile (0 <= q <= 1) of the values counted in
// histogram data: the smallest x with CDF(x) >= q, for q = 0 the smallest
// value with a count.
//
// The estimate uses the bucket counts only: oob counts are excluded. A
// bucket's count is spread uniformly over the bucket's range [lb, ub) as
// Bucket reports it (for CRHIST up to the next bucket's lower bound), so
// the CDF is linear inside a bucket. Bounds at the VOI type's extremes (the
// maximum, and for signed types the minimum: the inf buckets and the
// open-ended last bucket of a CRHIST) are infinite: such a bucket's count
// sits at its finite bound, and a bucket with no finite bound keeps it at
// its lower bound. DVHIST buckets and empty or inverted ranges (ub <= lb)
// are point masses at lb. Overlapping buckets (DRHIST, unsorted USR) add
// up. Bounds are read as Float64 does.
//
// Quantile is a byte-level building block: it knows only the histogram.
// blob.Stat.Quantile and blob.Blob.Quantile give a VOI's answer (clamped
// to the VOI's MIN and MAX when it keeps them).
//
// Errors: q outside [0,1] or NaN, or arguments Update rejects, wrap
// voi.ErrInvalid; a histogram without counts is ErrEmpty.
func Quantile(data []byte, hdt, voiDT voi.DType, q float64) (float64, error) {
	if math.IsNaN(q) {
		return 0, errNaN
	}
	if q < 0 || q > 1 {
		return 0, errQuantile
	}
	g, total, err := estimate(data, hdt, voiDT)
	if err != nil {
		return 0, err
	}
	target := q * float64(total)
	if x, ok := walkQuantile(data, g, voiDT, q, target); ok {
		return x, nil
	}
	return sweepQuantile(data, g, voiDT, q, target), nil
}

// walkQuantile is Quantile for buckets whose ranges follow each other in
// index order without overlapping, accumulating counts bucket by bucket.
// ok is false when the buckets are not in such an order.
func walkQuantile(data []byte, g geom, dt voi.DType, q, target float64) (x float64, ok bool) {
	var cum float64
	prevHi := math.Inf(-1)
	found := false
	ok = true
	masses(data, g, dt, func(m mass) bool {
		if m.lo < prevHi {
			ok = false
			return false
		}
		prevHi = m.lo
		if !m.point {
			prevHi = m.hi
		}
		if found {
			return true // keep checking the order
		}
		if q == 0 {
			x, found = m.lo, true
			return true
		}
		if cum+m.cnt >= target {
			x, found = m.lo, true
			if !m.point {
				x = m.lo + (target-cum)/m.cnt*(m.hi-m.lo)
				x = min(max(x, m.lo), m.hi)
			}
			return true
		}
		cum += m.cnt
		return true
	})
	return x, ok && found
}

// sweepQuantile is Quantile for any buckets: the CDF is linear between
// the breakpoints of all buckets (their ends, and the point masses, where
// it jumps), so it finds the first breakpoint where the CDF reaches the
// target by binary search and interpolates before it. Each CDF value is
// summed afresh from the buckets, so rounding does not accumulate.
func sweepQuantile(data []byte, g geom, dt voi.DType, q, target float64) float64 {
	var xs []float64
	masses(data, g, dt, func(m mass) bool {
		xs = append(xs, m.lo)
		if !m.point {
			xs = append(xs, m.hi)
		}
		return true
	})
	slices.Sort(xs)
	xs = slices.Compact(xs)
	if q == 0 {
		return xs[0]
	}
	k, _ := slices.BinarySearchFunc(xs, target, func(x, t float64) int {
		return cmp.Compare(cdfSum(data, g, dt, x, false), t)
	})
	if k == len(xs) { // rounding: the top of the support
		return xs[len(xs)-1]
	}
	if k == 0 {
		return xs[0]
	}
	a, b := xs[k-1], xs[k]
	ca, cb := cdfSum(data, g, dt, a, false), cdfSum(data, g, dt, b, true)
	if cb < target {
		return b // reached by the point masses at b
	}
	return min(max(a+(target-ca)/(cb-ca)*(b-a), a), b)
}

// cdfSum returns the count estimated at most x (below x when left is set:
// point masses at x excluded).
func cdfSum(data []byte, g geom, dt voi.DType, x float64, left bool) float64 {
	var sum float64
	masses(data, g, dt, func(m mass) bool {
		switch {
		case m.point:
			if x > m.lo || x == m.lo && !left {
				sum += m.cnt
			}
		case x >= m.hi:
			sum += m.cnt
		case x > m.lo:
			sum += m.cnt * (x - m.lo) / (m.hi - m.lo)
		}
		return true
	})
	return sum
}

// CDF estimates the fraction of the values counted in histogram data that
// are at most x, with the model of Quantile (oob counts excluded, uniform
// within a bucket, point masses at finite bounds). Like Quantile, it is a
// building block (see blob.Stat.CDF). Errors as for Quantile; a NaN x
// wraps voi.ErrInvalid.
func CDF(data []byte, hdt, voiDT voi.DType, x float64) (float64, error) {
	if math.IsNaN(x) {
		return 0, errNaN
	}
	g, total, err := estimate(data, hdt, voiDT)
	if err != nil {
		return 0, err
	}
	sum := cdfSum(data, g, voiDT, x, false)
	return min(sum/float64(total), 1), nil
}
