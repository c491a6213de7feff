package qmath

import (
	"math"
	"math/big"
)

// Control bits used throughout the tests, with the fractional bits they
// select (for kinds wide enough).
const (
	c2  = 0 // 2 fractional bits
	c4  = 1 // 4
	c8  = 3 // 8
	c16 = 4 // 16
	c32 = 5 // 32 (28 for S32, 29 for U32)
	c48 = 6 // 48 (28/29 for 32-bit kinds)
	c64 = 7 // 64 (28, 29, 60, 61)
)

// qv builds a Q of kind k from control bits and a signed combined
// integer/fraction value (the value times 2^nf), in sign-magnitude form.
func qv(k Kind, ctrl uint64, ifv int64) Q {
	raw := ctrl
	if ifv < 0 {
		raw |= uint64(-ifv) << 3
		raw |= 1 << (k.Bits() - 1)
	} else {
		raw |= uint64(ifv) << 3
	}
	return New(k, raw)
}

// fx returns x·2^nf, which must be an exact integer (the tests use binary
// fractions only).
func fx(x float64, nf uint) int64 {
	v := math.Ldexp(x, int(nf))
	if v != math.Trunc(v) || math.Abs(v) >= 1<<63 {
		panic("fx: not exact")
	}
	return int64(v)
}

// negQ returns q with its sign bit set.
func negQ(q Q) Q { return New(q.Kind, q.Raw|1<<(q.Kind.Bits()-1)) }

// exact returns q's numeric value: ±ifabs/2^nf.
func exact(q Q) *big.Rat {
	ifabs := (q.Raw & ifRawMask(q.ct())) >> 3
	r := new(big.Rat).SetFrac(new(big.Int).SetUint64(ifabs), new(big.Int).Lsh(big.NewInt(1), q.NFBits()))
	if q.IsNeg() {
		r.Neg(r)
	}
	return r
}

// ifvOf returns q's signed combined value as a big integer.
func ifvOf(q Q) *big.Int {
	v := new(big.Int).SetUint64((q.Raw & ifRawMask(q.ct())) >> 3)
	if q.IsNeg() {
		v.Neg(v)
	}
	return v
}

// bigOf returns the value of an Int operand.
func bigOf(i Int) *big.Int {
	c := fromInt(i)
	if c.t.signed() {
		return big.NewInt(int64(c.v))
	}
	return new(big.Int).SetUint64(c.v)
}

// ifMaxBig is Q_IFMAXVAL of k, iMaxBig Q_IMAXVAL of q, as big integers.
func ifMaxBig(k Kind) *big.Int { return new(big.Int).SetUint64(IFMaxVal(k)) }
func iMaxBig(q Q) *big.Int {
	return new(big.Int).Rsh(ifMaxBig(q.Kind), q.NFBits())
}

// fromIFV builds the Q of q's kind and control bits holding the signed
// combined value v (which must fit).
func fromIFV(q Q, v *big.Int) Q {
	mag := new(big.Int).Abs(v).Uint64()
	raw := q.Ctrl() | mag<<3
	if v.Sign() < 0 {
		raw |= q.signMask()
	}
	return New(q.Kind, raw)
}
