package hist

import "math/bits"

// firstHit returns the least x >= 0 with l <= (a*x + b) mod m <= r, for
// m >= 1 and l <= r < m (all below 2^62); ok is false if there is none.
// It is the first time a rotation of the ring Z/m by a, started at b,
// lands in [l, r], found in O(log m) steps like Euclid's algorithm.
func firstHit(a, b, m, l, r uint64) (x uint64, ok bool) {
	a, b = a%m, b%m
	if l <= b && b <= r {
		return 0, true
	}
	// (a*x + b) mod m in [l, r] means a*x mod m in [l-b, r-b] (mod m),
	// an interval that does not wrap: it does not contain 0, as b is
	// outside [l, r].
	return firstMul(a, m, subMod(l, b, m), subMod(r, b, m))
}

// subMod is (x - y) mod m for x, y < m.
func subMod(x, y, m uint64) uint64 {
	if x >= y {
		return x - y
	}
	return x + (m - y)
}

// firstMul returns the least x >= 0 with l <= a*x mod m <= r, for a < m
// and 0 < l <= r < m.
func firstMul(a, m, l, r uint64) (uint64, bool) {
	if a == 0 {
		return 0, false
	}
	if 2*a > m {
		// -a*x mod m is m - (a*x mod m) unless both are 0, and 0 is not
		// in [l, r]: rotate the other way, by at most m/2, so that the
		// moduli at least halve from one level to the next.
		a, l, r = m-a, m-r, m-l
	}
	// The least x whose multiple reaches l, if it is not past r.
	x := l / a
	if x*a < l {
		x++
	}
	if x*a <= r {
		return x, true
	}
	// [l, r] lies strictly between two multiples of a (r-l < a), so the
	// hit needs wraps: the least y >= 0 such that [l + m*y, r + m*y]
	// holds a multiple of a, i.e. (-(l + m*y)) mod a <= r-l, which is
	// the same problem with modulus a.
	y, ok := firstHit((a-m%a)%a, (a-l%a)%a, a, 0, r-l)
	if !ok {
		return 0, false
	}
	// x = ceil((l + m*y) / a), below m.
	hi, lo := bits.Mul64(m, y)
	var c uint64
	lo, c = bits.Add64(lo, l+a-1, 0)
	x, _ = bits.Div64(hi+c, lo, a)
	return x, true
}
