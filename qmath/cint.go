package qmath

// This file emulates the C integer types the qmath.h macros compute in, on
// LP64 with gcc and -fwrapv: signed arithmetic and left shifts wrap, right
// shifts of negative values are arithmetic, conversions truncate and then
// sign- or zero-extend. The macros are type-generic, so every intermediate
// result carries its C type along with its bits.

// ctype is a C integer type after the integer promotions: int (int32_t),
// unsigned int (uint32_t), long (int64_t) or unsigned long (uint64_t and
// unsigned long long, which behave identically here). The constants are in
// the same order as the Kinds, so ctype(k) is the type underlying k.
type ctype uint8

const (
	cInt ctype = iota
	cUint
	cLong
	cUlong
)

// wide reports whether t is a 64-bit type.
func (t ctype) wide() bool { return t >= cLong }

// signed reports whether t is a signed type.
func (t ctype) signed() bool { return t&1 == 0 }

// bits is the width of t: 32 or 64.
func (t ctype) bits() uint { return 32 << (t >> 1) }

// cval is a value of a C integer type. v is canonical: a 32-bit signed value
// is sign-extended to 64 bits and a 32-bit unsigned one zero-extended, so
// that converting to a type at least as wide is a no-op on v, as in C.
type cval struct {
	v uint64
	t ctype
}

// mk returns the value of type t with bit pattern v, truncated to t's width.
func mk(t ctype, v uint64) cval {
	switch t {
	case cInt:
		v = uint64(int64(int32(v)))
	case cUint:
		v = uint64(uint32(v))
	}
	return cval{v: v, t: t}
}

// fromInt converts an Int operand into the C value it stands for.
func fromInt(i Int) cval {
	t := cLong
	if i.Bits == 32 {
		t = cInt
	}
	if !i.Signed {
		t |= 1
	}
	return mk(t, i.V)
}

// to is the C cast (t)(x).
func (x cval) to(t ctype) cval { return mk(t, x.v) }

// common is the type the usual arithmetic conversions give to a binary
// operation on a and b: the wider type, or for equal widths the unsigned one
// (long op unsigned long long is unsigned on LP64).
func common(a, b ctype) ctype {
	switch {
	case a.wide() == b.wide():
		return a | b
	case a.wide():
		return a
	default:
		return b
	}
}

// isZero reports whether x == 0.
func (x cval) isZero() bool { return x.v == 0 }

// ltz is Q_LTZ(x): x's type is signed and its sign bit is set.
func (x cval) ltz() bool { return x.t.signed() && int64(x.v) < 0 }

// neg is -x in x's type; the most negative value wraps to itself.
func (x cval) neg() cval { return mk(x.t, -x.v) }

// abs is Q_ABS(x): negation in x's own type, so INT32_MIN and INT64_MIN stay
// negative (C wrap-around).
func (x cval) abs() cval {
	if x.ltz() {
		return x.neg()
	}
	return x
}

// mag is |x| computed exactly as an unsigned 64-bit number (no wrap-around),
// the magnitude the fixed Q_QCANREPI and Q_SHL use.
func (x cval) mag() uint64 {
	if x.ltz() {
		return -x.v
	}
	return x.v
}

// The binary operators convert both operands to their common type. For +, -
// and * the low bits of the result depend only on the low bits of the
// operands, so the canonical patterns can be combined directly.

func add(a, b cval) cval { return mk(common(a.t, b.t), a.v+b.v) }
func sub(a, b cval) cval { return mk(common(a.t, b.t), a.v-b.v) }
func mul(a, b cval) cval { return mk(common(a.t, b.t), a.v*b.v) }

// div is a / b truncated toward zero. b must not be zero. The one signed
// overflow, MIN / -1, traps in C on x86; here it wraps to MIN.
func div(a, b cval) cval {
	t := common(a.t, b.t)
	a, b = a.to(t), b.to(t)
	if t.signed() {
		return mk(t, uint64(int64(a.v)/int64(b.v)))
	}
	return mk(t, a.v/b.v)
}

// less is a < b after the usual arithmetic conversions.
func less(a, b cval) bool {
	t := common(a.t, b.t)
	a, b = a.to(t), b.to(t)
	if t.signed() {
		return int64(a.v) < int64(b.v)
	}
	return a.v < b.v
}

// shl is x << n in x's type, wrapping (gcc shifts signed values as two's
// complement bit patterns).
func (x cval) shl(n uint) cval { return mk(x.t, x.v<<n) }

// shr is x >> n in x's type: arithmetic for signed types, as gcc does.
func (x cval) shr(n uint) cval {
	if x.t.signed() {
		return mk(x.t, uint64(int64(x.v)>>n))
	}
	return cval{v: x.v >> n, t: x.t}
}
