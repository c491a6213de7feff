package qmath

import (
	"cmp"
	"math/bits"
)

// The Q macros, expressed on cval. Each helper names the macro it stands for.

// ct is the C type underlying q.
func (q Q) ct() ctype { return q.Kind.ct() }

// widthMask has the low W bits of q's kind set.
func widthMask(t ctype) uint64 {
	if t.wide() {
		return ^uint64(0)
	}
	return 0xFFFFFFFF
}

// withRaw returns a Q of q's kind with raw bits raw truncated to the kind's
// width, as an assignment to the C variable would.
func (q Q) withRaw(raw uint64) Q { return Q{Raw: raw & widthMask(q.ct()), Kind: q.Kind} }

// signMask is Q_SRAWMASK: bit W-1 (a magnitude bit for the unsigned kinds).
func (q Q) signMask() uint64 { return 1 << (q.ct().bits() - 1) }

// nfBits is Q_NFBITS for a Q of type t whose raw bits (or control bits) are
// ctrl: the control-encoded count (2, 4, 6, 8, 16, 32, 48, 64) capped at the
// bits available below the sign bit and above the control bits.
func nfBits(t ctype, ctrl uint64) uint { return uint(nfTable[t&3][ctrl&7]) }

// nfTable holds nfBits for every type and control value.
var nfTable = func() (tab [4][8]uint8) {
	for t := range tab {
		maxnf := ctype(t).bits() - 3
		if ctype(t).signed() {
			maxnf--
		}
		for c := range tab[t] {
			n := uint(c&3 + 1)
			if c&4 != 0 {
				n <<= 4
			} else {
				n <<= 1
			}
			tab[t][c] = uint8(min(n, maxnf))
		}
	}
	return tab
}()

// ifRawMask is Q_IFRAWMASK: the bits between the control bits and the sign
// bit (or the top, for unsigned kinds).
func ifRawMask(t ctype) uint64 { return ifRawMasks[t&3] }

// ifRawMasks holds Q_IFRAWMASK for int, unsigned int, long, unsigned long.
var ifRawMasks = [4]uint64{0x7FFFFFF8, 0xFFFFFFF8, 0x7FFFFFFFFFFFFFF8, 0xFFFFFFFFFFFFFFF8}

// ifMaxVal is Q_IFMAXVAL, ifMinVal Q_IFMINVAL (the negated maximum for
// signed types, else 0).
func ifMaxVal(t ctype) cval { return mk(t, ifRawMask(t)>>3) }

func ifMinVal(t ctype) cval {
	if t.signed() {
		return ifMaxVal(t).neg()
	}
	return mk(t, 0)
}

// iMaxVal is Q_IMAXVAL and iMinVal Q_IMINVAL: the integer part's range.
func (q Q) iMaxVal() cval { return ifMaxVal(q.ct()).shr(q.NFBits()) }

func (q Q) iMinVal() cval {
	if q.Kind.Signed() {
		return q.iMaxVal().neg()
	}
	return mk(q.ct(), 0)
}

// fMaxVal is Q_FMAXVAL: the largest raw fraction value.
func (q Q) fMaxVal() cval { return mk(q.ct(), 1<<q.NFBits()-1) }

// ifValIMask is Q_IFVALIMASK: ~(2^nf - 1) in q's type (for s32q_t a negative
// int, which sign-extends when widened; for u32q_t only 32 bits wide).
func (q Q) ifValIMask() cval { return mk(q.ct(), ^uint64(1<<q.NFBits()-1)) }

// ifabs is Q_GIFABSVAL, iabs Q_GIABSVAL and fabs Q_GFABSVAL: magnitudes,
// never negative.
func (q Q) ifabs() cval { return mk(q.ct(), (q.Raw&ifRawMask(q.ct()))>>3) }
func (q Q) iabs() cval  { return q.ifabs().shr(q.NFBits()) }
func (q Q) fabs() cval  { return mk(q.ct(), q.ifabs().v&(1<<q.NFBits()-1)) }

// withSign negates x (in q's type) when q is negative.
func (q Q) withSign(x cval) cval {
	if q.IsNeg() {
		return x.neg()
	}
	return x
}

// gifval is Q_GIFVAL, gival Q_GIVAL and gfval Q_GFVAL: the magnitudes with
// q's sign, in q's type.
func (q Q) gifval() cval { return q.withSign(q.ifabs()) }
func (q Q) gival() cval  { return q.withSign(q.iabs()) }
func (q Q) gfval() cval  { return q.withSign(q.fabs()) }

// setIFVal is Q_SIFVAL(q, ifv). Q_ABS(ifv) is taken in ifv's own type,
// converted to q's type and shifted over the control bits in that type; what
// leaves the W bits is lost and what reaches bit W-1 of a signed kind lands
// in the sign bit. Bit W-1 is then OR'ed in when ifv is negative, for the
// unsigned kinds as well.
func (q Q) setIFVal(ifv cval) Q {
	raw := q.Raw&7 | ifv.abs().to(q.ct()).shl(3).v
	if ifv.ltz() {
		raw |= q.signMask()
	}
	return q.withRaw(raw)
}

// setIFVals is Q_SIFVALS(q, iv, fv): like setIFVal with the integer part
// shifted to the radix point and the raw fraction bits OR'ed in unscaled;
// negative if either is negative.
func (q Q) setIFVals(iv, fv cval) Q {
	t := q.ct()
	raw := q.Raw&7 | iv.abs().to(t).shl(3+q.NFBits()).v | fv.abs().to(t).shl(3).v
	if iv.ltz() || fv.ltz() {
		raw |= q.signMask()
	}
	return q.withRaw(raw)
}

// setSign is Q_SSIGN: sets bit W-1 if q is signed and neg, else clears it
// (also for unsigned kinds, where it is a magnitude bit).
func (q Q) setSign(neg bool) Q {
	if q.Kind.Signed() && neg {
		return q.withRaw(q.Raw | q.signMask())
	}
	return q.withRaw(q.Raw &^ q.signMask())
}

// shl is Q_SHL(q, iv): iv scaled by 2^nf. The macro is a conditional
// whose arms are an int64_t (the negative arm) and q's own type, so its
// result has their common type: long (int64_t) for s32q_t, u32q_t and
// s64q_t, unsigned long for u64q_t, whatever iv's type. A non-negative iv
// is converted to q's type and shifted there (losing what does not fit; a
// 32-bit signed result that reaches bit 31 is negative and sign-extends).
// For a negative iv this is the fixed macro (FORMAT.md section 12, defect
// 1c), -(int64_t)((0-(uint64_t)iv) << nf): the exact magnitude is shifted
// as a uint64 and negated, so the result is iv·2^nf modulo 2^64; the
// unfixed C overflowed an int32 magnitude instead.
func (q Q) shl(iv cval) cval {
	t := common(cLong, q.ct())
	nf := q.NFBits()
	if iv.ltz() {
		return mk(t, -(iv.mag() << nf))
	}
	return iv.to(q.ct()).shl(nf).to(t)
}

// canRepQ is the fixed Q_QCANREPQ(a, b) (defect 1): can a's value be held
// by b? a must not be negative unless b is signed, and a's integer magnitude
// and raw fraction must not exceed b's maxima, compared as uint64 (the C
// cast b's maxima to a's type, truncating them).
func (a Q) canRepQ(b Q) bool {
	if a.IsNeg() && !b.Kind.Signed() {
		return false
	}
	return a.iabs().v <= b.iMaxVal().v && a.fabs().v <= b.fMaxVal().v
}

// canRepI is the fixed Q_QCANREPI(q, i) (defect 1b): i must not be negative
// unless q is signed, and |i|, computed exactly, must not exceed q's integer
// maximum (the C compared Q_ABS(i), which wraps for INT32_MIN/INT64_MIN,
// with the maximum cast to i's type).
func (q Q) canRepI(i cval) bool {
	if i.ltz() && !q.Kind.Signed() {
		return false
	}
	return i.mag() <= q.iMaxVal().v
}

// parts returns Q_GIVAL(q) and Q_GFVAL(q) as int64s, which hold them
// exactly for every kind (magnitudes stay below 2^61).
func (q Q) parts() (i, f int64) {
	t := q.ct()
	ifabs := int64((q.Raw & ifRawMask(t)) >> 3)
	nf := nfBits(t, q.Raw)
	i, f = ifabs>>nf, ifabs&(1<<nf-1)
	if q.IsNeg() {
		return -i, -f
	}
	return i, f
}

// cmpParts is the core of Q_QCMPQ: the three-way comparisons (-1, 0, +1)
// of a's and b's signed integer parts and of their signed raw fraction
// values, in the C types.
func cmpParts(a, b Q) (ci, cf int) {
	if a.Kind == b.Kind {
		// Within one kind the values compare in its own type, where none
		// of them wraps: the int64 comparison is the C's.
		ai, af := a.parts()
		bi, bf := b.parts()
		return cmp.Compare(ai, bi), cmp.Compare(af, bf)
	}
	return cmpC(a.gival(), b.gival()), cmpC(a.gfval(), b.gfval())
}

// cmpC compares x and y after the usual arithmetic conversions.
func cmpC(x, y cval) int {
	switch {
	case less(x, y):
		return -1
	case less(y, x):
		return 1
	}
	return 0
}

// addSubQ is Q_QADDSUBQ: a + |b| when plus, else a - |b|.
func (a Q) addSubQ(b Q, plus bool) (Q, error) {
	if a.NFBits() != b.NFBits() { // Q_NORMPREC does not normalise
		return a, ErrRange
	}
	if a.Kind == b.Kind {
		return a.addSubSameKind(b, plus)
	}
	av, bAbs := a.gifval(), b.ifabs()
	t := a.ct()
	if plus {
		if less(sub(ifMaxVal(t), bAbs), av) {
			return a, ErrOverflow
		}
		return a.setIFVal(add(av, bAbs.to(t))), nil
	}
	if less(av, add(ifMinVal(t), bAbs)) {
		return a, ErrOverflow
	}
	return a.setIFVal(sub(av, bAbs.to(t))), nil
}

// addSubSameKind is addSubQ for operands of one kind. Nothing wraps then:
// the C's range test is exactly "the result lies within [IFMINVAL,
// IFMAXVAL]", and the result is stored as it is.
func (a Q) addSubSameKind(b Q, plus bool) (Q, error) {
	ai, af := a.parts()
	av := ai<<a.NFBits() + af
	bAbs := int64((b.Raw & ifRawMask(b.ct())) >> 3)
	r := av - bAbs
	if plus {
		r = av + bAbs
	}
	max := int64(ifMaxVal(a.ct()).v)
	if r > max || r < 0 && (!a.Kind.Signed() || r < -max) {
		return a, ErrOverflow
	}
	raw := a.Raw&7 | uint64(r)<<3
	if r < 0 {
		raw = a.Raw&7 | uint64(-r)<<3 | a.signMask()
	}
	return a.withRaw(raw), nil
}

// addSubI is Q_QADDSUBI: q + |i| when plus, else q - |i|, with |i| = Q_ABS(i)
// in i's type (so INT32_MIN/INT64_MIN stay negative).
func (q Q) addSubI(i cval, plus bool) (Q, error) {
	ai := i.abs()
	// flsll(Q_ABS(i)): the value is converted to long long, so a wrapped
	// INT32_MIN sign-extends and has 64 significant bits.
	if q.ct().bits() < uint(bits.Len64(ai.to(cLong).v)) {
		return q, ErrOverflow
	}
	if plus {
		if less(sub(q.iMaxVal(), ai.to(q.ct())), q.gival()) {
			return q, ErrOverflow
		}
		return q.setIFVal(add(q.gifval(), q.shl(ai))), nil
	}
	if less(q.gival(), add(q.iMinVal(), ai)) {
		return q, ErrOverflow
	}
	return q.setIFVal(sub(q.gifval(), q.shl(ai))), nil
}
