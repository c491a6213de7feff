package export

import (
	"math"
	"slices"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/tdigest"
)

// expBound returns base^i for base = 2^(2^-scale).
func expBound(i int, scale int32) float64 {
	return math.Exp2(math.Ldexp(float64(i), -int(scale)))
}

// expIndex returns the index i of the exponential bucket (base^i, base^(i+1)]
// that holds v > 0.
func expIndex(v float64, scale int32) int {
	i := int(math.Ceil(math.Ldexp(math.Log2(v), int(scale)))) - 1
	for expBound(i+1, scale) < v {
		i++
	}
	for i > math.MinInt32 && expBound(i, scale) >= v {
		i--
	}
	return i
}

// expFromDigest derives a native histogram from the t-digest s with cnt
// samples summing to sum: its CDF as blob.Stat.CDF answers it (bounded by
// the VOI's MIN and MAX when it keeps them; for an integer VOI, the
// digest's estimate at floor(x) + 1/2, since the samples at or below a
// bound are those at or below its integer part) evaluated at the bucket
// bounds, scaled by cnt and rounded, so that the counts add up to cnt
// exactly. Buckets span the centroid means and, where lo and hi (the VOI's
// MIN and MAX, NaN when unknown) lie beyond them, reach out to them: the
// CDF interpolates from MIN to the first mean and from the last to MAX,
// so mass lies on a side of zero that holds a MIN or MAX even when no mean
// does (see expSpan). Mass between 0 and the means nearest to it goes to
// the buckets nearest to 0, and the zero bucket (threshold 0) holds the
// digest's point mass at 0, if any. Scale 0 chooses the scale (see
// Options.NativeScale). When the means span more than MaxNativeBuckets
// buckets, the scale is lowered (down to -4).
// us (> 0) converts the digest's values to the exported unit; sum is not
// converted here.
//
// Every count is cnt times the digest's mass in the bucket: positive
// bucket i holds the values in (base^i, base^(i+1)], negative bucket i
// those in [-base^(i+1), -base^i), mapped by magnitude as OpenTelemetry
// and Prometheus do, so that v and -v fall in buckets of the same index.
func expFromDigest(s *blob.Stat, scale int32, cnt uint64, sum, us, lo, hi float64) (*ExpHistogramPoint, error) {
	e := &ExpHistogramPoint{Scale: scale, Count: cnt, Sum: sum}
	if cnt == 0 {
		return e, nil
	}
	posLo, posHi, negLo, negHi, scale := expSpan(s, scale, us, lo, hi)
	e.Scale = scale
	// The digest's CDF at every bucket bound (in the VOI's units), in one
	// ascending walk: just below the negative side's bounds (highest
	// index first), just below zero, zero, then the positive side's. The
	// CDF counts the samples at or below its point; a negative bucket
	// holds its lower bound and not its upper one, so its bounds are
	// taken just below.
	var nlo, nhi, plo, phi int
	var xs []float64
	if negLo > 0 {
		nlo, nhi = expIndex(negLo, scale), expIndex(negHi, scale)
		for i := nhi - 1; i >= nlo; i-- {
			xs = append(xs, below(-expBound(i+1, scale)/us))
		}
	}
	xs = append(xs, below(0), 0)
	if posLo > 0 {
		plo, phi = expIndex(posLo, scale), expIndex(posHi, scale)
		for j := plo; j < phi; j++ {
			xs = append(xs, expBound(j+1, scale)/us)
		}
	}
	ps, err := s.CDFs(make([]float64, 0, len(xs)), xs)
	if err != nil {
		return e, err
	}
	n := float64(cnt)
	cum := func(k int) uint64 { return uint64(math.Round(min(max(ps[k], 0), 1) * n)) }
	nneg := max(nhi-nlo, 0)
	zeroBelow, zero := cum(nneg), cum(nneg+1)
	e.ZeroCount = zero - zeroBelow
	if posLo > 0 {
		e.Positive.Offset = int32(plo)
		prev := zero
		for j := plo; j <= phi; j++ {
			c := cnt
			if j < phi {
				c = cum(nneg + 2 + j - plo)
			}
			e.Positive.Counts = append(e.Positive.Counts, c-prev)
			prev = c
		}
	}
	if negLo > 0 {
		e.Negative.Offset = int32(nlo)
		e.Negative.Counts = make([]uint64, nhi-nlo+1)
		upper := zeroBelow
		for i := nlo; i <= nhi; i++ {
			var c uint64
			if i < nhi {
				c = cum(nhi - 1 - i) // xs holds below -expBound(i+1) at nhi-1-i
			}
			e.Negative.Counts[i-nlo] = upper - c
			upper = c
		}
	}
	return e, nil
}

// below returns the greatest float64 below x: blob.Stat.CDF there counts
// the samples below x (an integer VOI's: at or below the integer below x).
func below(x float64) float64 { return math.Nextafter(x, math.Inf(-1)) }

// expSpan returns the smallest and largest magnitudes of a digest's means
// (in the exported unit, us per value) on each side of zero (0 where a
// side has none), widened to the VOI's MIN lo where it is below zero and
// to its MAX hi where it is above (NaN: unknown), and the scale of its
// native histogram: scale, or the resolving scale for 0, lowered (down to
// -4) until the buckets spanning them number at most MaxNativeBuckets.
//
// The widening keeps every sample in a bucket: blob.Stat.CDF interpolates
// from MIN to the first mean, so a MIN below zero puts mass below zero
// even when every mean is at or above it (and MAX mirrored); a side
// without a mean then gets the one bucket of MIN's (MAX's) magnitude. A
// side with neither has no mass: without MIN the CDF is 0 below the first
// mean, with a MIN at or above zero it is 0 below MIN (and mirrored for
// MAX), so expFromDigest's counts add up to the digest's count.
func expSpan(s *blob.Stat, scale int32, us, lo, hi float64) (posLo, posHi, negLo, negHi float64, _ int32) {
	var means []float64
	for c := range tdigest.Centroids(s.Data, s.DType) {
		m := c.Mean() * us
		means = append(means, m)
		switch a := math.Abs(m); {
		case m > 0:
			if posLo == 0 || a < posLo {
				posLo = a
			}
			posHi = max(posHi, a)
		case m < 0:
			if negLo == 0 || a < negLo {
				negLo = a
			}
			negHi = max(negHi, a)
		}
	}
	if a := -lo * us; a > 0 {
		negHi = max(negHi, a)
		if negLo == 0 {
			negLo = a
		}
	}
	if a := hi * us; a > 0 {
		posHi = max(posHi, a)
		if posLo == 0 {
			posLo = a
		}
	}
	span := func(lo, hi float64, s int32) int {
		if lo == 0 {
			return 0
		}
		return expIndex(hi, s) - expIndex(lo, s) + 1
	}
	if scale == 0 {
		scale = resolvingScale(means)
	}
	for scale > -4 && span(posLo, posHi, scale)+span(negLo, negHi, scale) > MaxNativeBuckets {
		scale--
	}
	return posLo, posHi, negLo, negHi, scale
}

// resolvingScale returns the finest scale, up to MaxNativeScale, whose
// buckets are no wider (as a ratio of their bounds, 2^(2^-scale)) than any
// two neighbouring distinct means of one sign: each bucket bound then falls
// between centroids at most one apart, and the histogram's quantiles stay
// within the digest's own interpolation between neighbouring means.
func resolvingScale(means []float64) int32 {
	slices.Sort(means)
	scale := int32(-4)
	for i := 1; i < len(means) && scale < MaxNativeScale; i++ {
		a, b := means[i-1], means[i]
		if a <= 0 && b >= 0 || a == b {
			continue
		}
		r := math.Abs(b / a)
		if r < 1 {
			r = 1 / r
		}
		// base <= r: 2^-s <= log2(r), s >= -log2(log2(r)).
		s := int32(math.Ceil(-math.Log2(math.Log2(r))))
		scale = min(max(scale, s), MaxNativeScale)
	}
	if len(means) < 2 {
		return MaxNativeScale
	}
	return scale
}
