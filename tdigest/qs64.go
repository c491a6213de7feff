package tdigest

import (
	"math"
	"math/bits"

	"github.com/statsblob/statsblob/voi"
)

// The Q arithmetic of the update path, specialised. A t-digest computes with
// s64q values: sign-magnitude, sign in bit 63, the combined integer/fraction
// magnitude in bits 3..62 (60 bits), control bits in 0..2. Rather than
// going through package qmath (general, and so slower) on every step, the
// digest decodes a mean to its combined value ("ifv", a plain int64 with
// the Q's number of fractional bits implied by its control bits), computes
// with int64s and encodes back. Each helper states which qmath.h macro it
// stands for (with the reference's fixes, FORMAT.md section 12); the tests
// check every helper against package qmath.

const (
	ctrlMask = 7
	signS64  = uint64(1) << 63
	ifMaxS64 = 1<<60 - 1 // Q_IFMAXVAL of an s64q
	ifMaxS32 = 1<<28 - 1 // Q_IFMAXVAL of an s32q

	// The errno values the C returns, kept as ints on the update path (the
	// C ORs some of them together) and turned into errors at the API.
	eOK        = 0
	eInvalid   = voi.EINVAL
	eRange     = voi.ERANGE
	eAgain     = voi.EAGAIN
	eOverflow  = voi.EOVERFLOW
	eAlready   = voi.EALREADY
	qNF        = 16 // fractional bits of the quantile q (Q_CTRLINI(16))
	qOne       = 1 << qNF
	qIMax      = (ifMaxS64 >> qNF) // Q_IMAXVAL of q
	maxRandDiv = math.MaxInt32
)

// nfc is Q_NFCBITS: the control-encoded number of fractional bits.
func nfc(raw uint64) uint {
	c := raw & ctrlMask
	return uint(c&3+1) << (1 + 3*(c>>2))
}

// nfS64, nfS32, nfU32 and nfU64 are Q_NFBITS for each kind: nfc capped at
// the bits the kind has.
func nfS64(raw uint64) uint { return min(nfc(raw), 60) }
func nfS32(raw uint64) uint { return min(nfc(raw), 28) }
func nfU32(raw uint64) uint { return min(nfc(raw), 29) }
func nfU64(raw uint64) uint { return min(nfc(raw), 61) }

// ctrlIni is Q_CTRLINI(nf) in unsigned arithmetic, reduced to the 3 bits a
// Q keeps.
func ctrlIni(nf uint32) uint64 {
	if nf <= 8 {
		return uint64((nf-1)>>1) & ctrlMask
	}
	return uint64(4|(nf-1)>>4) & ctrlMask
}

// ifvS64 is Q_GIFVAL of an s64q: the signed combined integer/fraction value.
func ifvS64(raw uint64) int64 {
	m := int64(raw << 1 >> 4)
	if int64(raw) < 0 {
		return -m
	}
	return m
}

// ifvS32 is Q_GIFVAL of an s32q held in the low half of raw.
func ifvS32(raw uint64) int64 {
	r := uint32(raw)
	m := int64(r << 1 >> 4)
	if int32(r) < 0 {
		return -m
	}
	return m
}

// setS64 is Q_SIFVAL on an s64q with control bits ctrl and an int64 value:
// the magnitude shifted into place (bits above the field spill into the
// sign bit, as in the C), the sign bit set for negative values.
func setS64(ctrl uint64, v int64) uint64 {
	if v < 0 {
		return ctrl | uint64(-v)<<3 | signS64
	}
	return ctrl | uint64(v)<<3
}

// setS32 is Q_SIFVAL on an s32q with control bits ctrl and an int32 value.
func setS32(ctrl uint64, v int32) uint32 {
	c := uint32(ctrl)
	if v < 0 {
		return c | uint32(-v)<<3 | 1<<31
	}
	return c | uint32(v)<<3
}

// qltParts is Q_QLTQ for two values of possibly different precision: the
// integer parts compared first, then the fraction parts, both with the
// value's sign.
func qltParts(a int64, nfa uint, b int64, nfb uint) bool {
	ia, fa := splitIF(a, nfa)
	ib, fb := splitIF(b, nfb)
	return ia < ib || ia == ib && fa < fb
}

func splitIF(v int64, nf uint) (i, f int64) {
	m := v
	if v < 0 {
		m = -v
	}
	i, f = m>>nf, m&(1<<nf-1)
	if v < 0 {
		return -i, -f
	}
	return i, f
}

// kLimit returns Q_GIVAL(k) of the C's size bound for a centroid
//
//	q = (2·sum + cnt - 1) / (2·(smplcnt - 1))    (1/2 when smplcnt is 1)
//	k = q · 4·smplcnt·attempt · (1 - q)
//
// computed as the C does (Q_QFRACI, Q_QMULI, Q_QSUBI, Q_QABS, Q_QMULQ on
// s64q values with 16 fractional bits), together with the C's error: the
// OR of the errno values of those operations. A q that underflows to zero
// (Q_QFRACI's ERANGE) is not an error: q and k are 0 (FORMAT.md section
// 12, defect 7; the C fails the update and drops the sample).
func kLimit(sum, cnt, smplcnt uint64, attempt int) (uint64, int) {
	num, den := uint64(1), uint64(2)
	if smplcnt != 1 {
		num, den = sum<<1+cnt-1, (smplcnt-1)<<1
	}
	// Q_QFRACI(&q, num, den); q starts as 0 with 16 fractional bits.
	var q uint64 // magnitude; q is never negative
	errno := eOK
	switch {
	case den == 0:
		errno = eInvalid
	case num == 0:
	case num > math.MaxUint64>>(3+qNF):
		errno = eOverflow
	default:
		t := num << qNF / den
		if t&^(qOne-1) > qIMax {
			errno = eOverflow
		} else {
			q = t // 0 on underflow: defect 7, not an error
		}
	}
	// k = q; Q_QMULI(&k, 4·smplcnt·attempt).
	k := q
	if m := 4 * smplcnt * uint64(attempt); m != 0 {
		if int64(m) < 0 {
			// The C divides by the multiplier taken as an int64; the
			// quotient is then at most zero, and k can only be zero.
			if ifMaxS64/int64(m) < int64(k) {
				errno |= eOverflow
			} else {
				k = 0
			}
		} else if hi, lo := bits.Mul64(k, m); hi != 0 || lo > ifMaxS64 {
			errno |= eOverflow
		} else {
			k = lo
		}
	} else {
		k = 0
	}
	// Q_QSUBI(&q, 1) then Q_QABS: |q - 1| (q is at most a little above 1,
	// far from the overflow bound).
	if q >= qOne {
		q -= qOne
	} else {
		q = qOne - q
	}
	// Q_QMULQ(&k, q).
	if q != 0 {
		if hi, lo := bits.Mul64(k, q); hi != 0 || lo > ifMaxS64 {
			errno |= eOverflow
		} else {
			k = lo >> qNF
		}
	} else {
		k = 0
	}
	return k >> qNF, errno
}

// subS64 is Q_QSUBQ(&a, b) for s64q values of equal precision given as
// combined values: the difference, or EOVERFLOW when it leaves the s64q
// range.
func subS64(a, b int64) (int64, int) {
	d := a - b
	if d > ifMaxS64 || d < -ifMaxS64 {
		return 0, eOverflow
	}
	return d, eOK
}

// addS32 is Q_QADDQ(&a, b) for an s32q a (combined value av) and an s64q
// b (combined value bv) of equal precision: the sum, or EOVERFLOW.
func addS32(av, bv int64) (int64, int) {
	s := av + bv
	if s > ifMaxS32 || s < -ifMaxS32 {
		return 0, eOverflow
	}
	return s, eOK
}

// divS64 is Q_QDIVI(&x, n) for an s64q combined value x and a uint64
// divisor (the C converts it to int64): the quotient and EINVAL for a zero
// divisor, ERANGE when a non-zero x underflows to zero.
func divS64(x int64, n uint64) (int64, int) {
	if n == 0 {
		return x, eInvalid
	}
	if x == 0 {
		return 0, eOK
	}
	if x /= int64(n); x == 0 {
		return 0, eRange
	}
	return x, eOK
}

// cpyValI is Q_QCPYVALI(&x, i) for an s64q x with control bits ctrl and
// an integer of magnitude mag (negative if neg): the raw s64q, or
// EOVERFLOW when |i| exceeds the integer range of x (fixed 1b, 1c).
func cpyValI(ctrl uint64, neg bool, mag uint64) (uint64, int) {
	nf := nfS64(ctrl)
	if mag > ifMaxS64>>nf {
		return ctrl, eOverflow
	}
	raw := ctrl | mag<<nf<<3
	if neg {
		raw |= signS64
	}
	return raw, eOK
}

// cpyValQ is Q_QCPYVALQ(&x, r) for an s64q x with control bits ctrl and a
// Q r given by its sign, integer magnitude and raw fraction magnitude: the
// raw fraction bits are copied as they are (not rescaled), and EOVERFLOW is
// returned when either part does not fit x (fixed 1).
func cpyValQ(ctrl uint64, neg bool, imag, fmag uint64) (uint64, int) {
	nf := nfS64(ctrl)
	if imag > ifMaxS64>>nf || fmag > 1<<nf-1 {
		return ctrl, eOverflow
	}
	raw := ctrl | imag<<(3+nf) | fmag<<3
	if neg && imag|fmag != 0 {
		raw |= signS64
	}
	return raw, eOK
}

// splitQ returns the sign, integer magnitude and fraction magnitude of the
// Q value v of Q type dt (Q_LTZ, Q_GIABSVAL, Q_GFABSVAL).
func splitQ(dt voi.DType, v uint64) (neg bool, imag, fmag uint64) {
	var nf uint
	var mag uint64
	switch dt {
	case voi.QS32:
		r := uint32(v)
		neg, mag, nf = int32(r) < 0, uint64(r<<1>>4), nfS32(v)
	case voi.QU32:
		mag, nf = uint64(uint32(v)>>3), nfU32(v)
	case voi.QS64:
		neg, mag, nf = int64(v) < 0, v<<1>>4, nfS64(v)
	default:
		mag, nf = v>>3, nfU64(v)
	}
	return neg, mag >> nf, mag & (1<<nf - 1)
}
