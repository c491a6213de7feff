package export

import (
	"math"

	"github.com/statsblob/statsblob/hist"
	"github.com/statsblob/statsblob/voi"
)

// A bound is an 8-byte numeric pattern of the VOI's data type, read here as
// an exact number of units: an integer for integer types (a 32-bit type uses
// the low half), the signed combined integer/fraction value for Q types
// (units of 2^-prec, prec from the pattern's own control bits).

// units returns the bound v of type dt as a signed number of units and, for
// unsigned 64-bit integers above the int64 range, ok = false.
func units(dt voi.DType, v uint64) (u int64, ok bool) {
	switch {
	case dt.IsQ():
		return int64(voi.AsQ(dt, v).IFVal()), true
	case dt.Is32() && dt.Signed():
		return int64(int32(v)), true
	case dt.Is32():
		return int64(uint32(v)), true
	case dt.Signed():
		return int64(v), true
	}
	return int64(v), v <= math.MaxInt64
}

// prec returns the number of fractional bits of the pattern v (0 for
// integer types).
func prec(dt voi.DType, v uint64) uint {
	if !dt.IsQ() {
		return 0
	}
	return voi.AsQ(dt, v).NFBits()
}

// less reports whether a < b in the order the histogram lookup uses.
// For Q types both must have the same precision (see samePrec).
func less(dt voi.DType, a, b uint64) bool {
	if dt.IsInt() && !dt.Signed() {
		if dt.Is32() {
			return uint32(a) < uint32(b)
		}
		return a < b
	}
	ua, _ := units(dt, a)
	ub, _ := units(dt, b)
	return ua < ub
}

// equal reports whether a and b are the same number of units (and, for Q,
// the same precision).
func equal(dt voi.DType, a, b uint64) bool {
	return !less(dt, a, b) && !less(dt, b, a) && prec(dt, a) == prec(dt, b)
}

// succ reports whether b = a + one unit, for integer types.
func succ(dt voi.DType, a, b uint64) bool {
	if !dt.IsInt() {
		return false
	}
	if !dt.Signed() {
		if dt.Is32() {
			return uint32(a) != math.MaxUint32 && uint32(a)+1 == uint32(b)
		}
		return a != math.MaxUint64 && a+1 == b
	}
	ua, _ := units(dt, a)
	ub, _ := units(dt, b)
	return ua != math.MaxInt64 && ua+1 == ub
}

// isMin reports whether v is the smallest value of dt (for Q types: of v's
// precision), below which no value exists.
func isMin(dt voi.DType, v uint64) bool {
	switch {
	case dt.IsQ():
		q := voi.AsQ(dt, v)
		min := voi.AsQ(dt, voi.LimitMin(dt)|q.Ctrl())
		return q.IFVal() == min.IFVal()
	case !dt.Signed():
		if dt.Is32() {
			return uint32(v) == 0
		}
		return v == 0
	}
	u, _ := units(dt, v)
	if dt.Is32() {
		return u == math.MinInt32
	}
	return u == math.MinInt64
}

// value returns the number v of type dt stands for.
func value(dt voi.DType, v uint64) float64 { return hist.Float64(dt, v) }

// belowUnit returns v minus one unit of its resolution: the largest value
// below v, the inclusive upper bound ("le") of a range that ends before v.
// v must not be the type's minimum.
func belowUnit(dt voi.DType, v uint64) float64 {
	if dt.IsInt() && !dt.Signed() {
		if dt.Is32() {
			return float64(uint32(v) - 1)
		}
		return float64(v - 1)
	}
	u, _ := units(dt, v)
	return float64(u-1) / math.Exp2(float64(prec(dt, v)))
}
