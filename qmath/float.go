package qmath

import "math"

// FromFloat64 returns the Q number of kind k and precision ctrl (control
// bits, as CtrlIni gives them; only the low 3 are used) nearest to x,
// halfway cases rounded away from zero. A value that rounds to zero is a
// positive zero.
//
// Errors (the returned Q is then zero at that precision): ErrInvalid for
// a NaN or infinite x and for a negative x of an unsigned kind (one that
// rounds to zero is accepted); ErrOverflow when x's magnitude at that
// precision exceeds the kind's largest (IFMaxVal(k) in units of 2^-nf).
func FromFloat64(k Kind, ctrl uint64, x float64) (Q, error) {
	q := New(k, ctrl&7)
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return q, ErrInvalid
	}
	// Scaling by a power of two is exact; rounding is the only inexact step.
	m := math.Round(math.Ldexp(math.Abs(x), int(q.NFBits())))
	if m == 0 {
		return q, nil
	}
	if x < 0 && !k.Signed() {
		return q, ErrInvalid
	}
	// The magnitude field lies between the control bits and the sign bit
	// (the top bit, a magnitude bit for unsigned kinds).
	width := k.Bits() - 3
	if k.Signed() {
		width--
	}
	if m >= math.Ldexp(1, int(width)) {
		return q, ErrOverflow
	}
	raw := q.Raw | uint64(m)<<3
	if x < 0 {
		raw |= q.signMask()
	}
	return New(k, raw), nil
}

// FromFloat returns the Q number of kind k nearest to x with at least prec
// fractional bits (1..64; rounded up to what the control bits can select:
// 2, 4, 6, 8, 16, 32, 48 or 64, capped by the kind's width, as Q_INI
// does). It is FromFloat64 with CtrlIni(prec)'s control bits, and returns
// its errors; a prec outside 1..64 is ErrInvalid.
func FromFloat(k Kind, prec int, x float64) (Q, error) {
	if prec < 1 || prec > 64 {
		return New(k, 0), ErrInvalid
	}
	return FromFloat64(k, uint64(CtrlIni(prec)), x)
}
