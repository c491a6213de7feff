// Package qmath is fixed-point arithmetic on "Q numbers" exactly as FreeBSD's
// sys/sys/qmath.h defines them, with the defect fixes of the conformance
// reference (testdata/conformance/FORMAT.md section 12, items 1, 1b, 1c, 1d).
//
// A Q number is an integer of one of four storage kinds (signed or unsigned,
// 32 or 64 bits) whose 3 least significant bits are control bits selecting
// how many of the remaining bits hold the fraction (2, 4, 6, 8, 16, 32, 48 or
// 64, capped at the bits available). Signed kinds keep the value in
// sign-magnitude form: the top bit is the sign, the bits between it and the
// control bits are the magnitude of the combined integer/fraction value.
//
// Every operation reproduces the C macro it is named after bit for bit,
// including the C's integer conversions, and returns the same errors: ErrOverflow
// (EOVERFLOW) where the C reports overflow, ErrRange (ERANGE) for underflow and
// for operands of different precision, ErrInvalid (EINVAL) for division by zero
// and unrepresentable signs.
//
// The C semantics assumed are gcc's on LP64 with -fwrapv: signed overflow and
// left shifts wrap, right shifts of negative values are arithmetic. Where
// even that leaves the C undefined, this package picks a result and documents
// it (the conformance scenarios never go there): a shift by the full width
// of the type loses all bits (Ini, FracI on a u64q_t with 61 fractional
// bits), and an integer division by zero or of the minimum by -1, which traps
// on x86, returns an error (MulI, DivI) or wraps (DivQ).
package qmath

import "errors"

// Errors returned by Q operations. They mirror the errno values the C
// macros return; package voi re-exports them as its sentinel errors.
var (
	// ErrOverflow is EOVERFLOW: the result does not fit the destination.
	ErrOverflow = errors.New("value does not fit its type")
	// ErrRange is ERANGE: underflow to zero, or operands whose fractional
	// precision differs.
	ErrRange = errors.New("underflow or precision mismatch")
	// ErrInvalid is EINVAL: division by zero, or a negative operand for an
	// unsigned destination.
	ErrInvalid = errors.New("invalid argument")
)

// Kind is the storage type underlying a Q number: s32q_t, u32q_t, s64q_t or
// u64q_t.
type Kind uint8

// The four storage kinds.
const (
	S32 Kind = iota // s32q_t
	U32             // u32q_t
	S64             // s64q_t
	U64             // u64q_t
)

// Bits is the storage width of k: 32 or 64.
func (k Kind) Bits() uint { return 32 << (k >> 1) }

// Signed reports whether k is a signed kind (sign-magnitude).
func (k Kind) Signed() bool { return k&1 == 0 }

// Q is a Q number: its raw bits and its kind. For 32-bit kinds Raw holds the
// bits in its low half and the high half is zero. The zero value is a
// signed 32-bit Q with 2 fractional bits and value 0.
type Q struct {
	Raw  uint64
	Kind Kind
}

// Int is a C integer operand of an integer/Q operation (Q_QADDI, Q_QMULI,
// Q_QCPYVALI, ...): its bit pattern, its width in bits (32 or 64) and
// whether the C type is signed. The C type matters: it decides whether the
// operand can be negative and how it is converted.
type Int struct {
	V      uint64 // two's-complement bit pattern, sign-extended to 64 bits for signed 32-bit operands
	Bits   uint8  // 32 or 64
	Signed bool
}

// I32 builds an Int operand of the C type int32_t.
func I32(v int32) Int { return Int{V: uint64(int64(v)), Bits: 32, Signed: true} }

// U32Int builds an Int operand of the C type uint32_t.
func U32Int(v uint32) Int { return Int{V: uint64(v), Bits: 32} }

// I64 builds an Int operand of the C type int64_t.
func I64(v int64) Int { return Int{V: uint64(v), Bits: 64, Signed: true} }

// U64Int builds an Int operand of the C type uint64_t.
func U64Int(v uint64) Int { return Int{V: v, Bits: 64} }

// Int returns the Int operand of k's underlying C type (int32_t, uint32_t,
// int64_t or uint64_t) with bit pattern v, e.g. for
// q.SetIFVal(q.Kind.Int(IFMinVal(q.Kind))), which is Q_SIFVAL(q,
// Q_IFMINVAL(q)).
func (k Kind) Int(v uint64) Int {
	return Int{V: mk(k.ct(), v).v, Bits: uint8(k.Bits()), Signed: k.Signed()}
}

// String returns the C name of k's storage type, e.g. "s32q_t".
func (k Kind) String() string {
	switch k {
	case S32:
		return "s32q_t"
	case U32:
		return "u32q_t"
	case S64:
		return "s64q_t"
	case U64:
		return "u64q_t"
	}
	return "Kind(?)"
}

// ct is the C type underlying k (only the four defined kinds are valid).
func (k Kind) ct() ctype { return ctype(k & 3) }

// New returns the Q of kind k with raw bits raw (truncated to k's width).
func New(k Kind, raw uint64) Q { return Q{Kind: k}.withRaw(raw) }

// CtrlIni returns Q_CTRLINI(prec): the control bits that select at least
// prec fractional bits (in C int arithmetic; 1 <= prec <= 64 gives 0..7).
// Out of that range the result is whatever the C expression gives, e.g. -1
// for prec 0; only its 3 low bits ever reach a Q.
func CtrlIni(prec int) int {
	p := int32(prec) // the macro argument is a C int
	if p <= 8 {
		return int((p - 1) >> 1)
	}
	return int(4 | ((p - 1) >> 4))
}

// Ini returns Q_INI(q, iv, 0, prec) for a Q of kind k: control bits
// CtrlIni(prec) and integer value iv (an int64_t operand; bits above the
// integer field are lost, and for signed kinds a magnitude that reaches the
// top bit lands in the sign bit, as in the C). For unsigned kinds without
// integer bits (29 or 61 fractional bits) the C shifts by the full width,
// which is undefined; here iv is lost entirely (a negative iv still sets bit
// W-1).
func Ini(k Kind, iv int64, prec int) Q {
	// The C first assigns CTRLINI's int to q (all of it, e.g. -1 sets every
	// bit), then Q_SIFVALS keeps only the 3 control bits of that.
	q := New(k, uint64(int64(CtrlIni(prec))))
	return q.setIFVals(mk(cLong, uint64(iv)), mk(cUlong, 0))
}

// Ctrl returns the control bits (Q_GCVAL).
func (q Q) Ctrl() uint64 { return q.Raw & 7 }

// WithCtrl returns q with its control bits replaced by cv (Q_SCVAL). Like
// the C, cv is OR'ed in unmasked: bits of cv above the 3 control bits are
// set in the result too (within k's width).
func (q Q) WithCtrl(cv uint64) Q { return q.withRaw(q.Raw&^7 | cv) }

// NFBits is the number of fractional bits (Q_NFBITS).
func (q Q) NFBits() uint { return nfBits(q.ct(), q.Raw) }

// IsNeg reports whether q's sign bit is set (Q_LTZ); always false for
// unsigned kinds.
func (q Q) IsNeg() bool { return q.Kind.Signed() && q.Raw&q.signMask() != 0 }

// Abs returns q with the sign bit cleared (Q_QABS).
func (q Q) Abs() Q {
	if q.Kind.Signed() {
		return q.withRaw(q.Raw &^ q.signMask())
	}
	return q.withRaw(q.Raw)
}

// IntVal returns Q_GIVAL(q), the integer part with q's sign, in q's C type,
// as a 64-bit pattern (sign-extended for signed kinds).
func (q Q) IntVal() uint64 { return q.gival().v }

// FracVal returns Q_GFVAL(q), the fraction bits with q's sign, as IntVal.
func (q Q) FracVal() uint64 { return q.gfval().v }

// IFVal returns Q_GIFVAL(q), the combined integer/fraction value with q's
// sign, as IntVal.
func (q Q) IFVal() uint64 { return q.gifval().v }

// IFMaxVal returns Q_IFMAXVAL for kind k (as a 64-bit pattern).
func IFMaxVal(k Kind) uint64 { return ifMaxVal(k.ct()).v }

// IFMinVal returns Q_IFMINVAL for kind k (as a 64-bit pattern,
// sign-extended for signed kinds).
func IFMinVal(k Kind) uint64 { return ifMinVal(k.ct()).v }

// SetIFVal returns Q_SIFVAL(q, ifv): q with its combined integer/fraction
// value set from ifv, an operand of the given C type. |ifv| is computed in
// ifv's type (INT32_MIN stays negative and, for a 64-bit q, sign-extends),
// converted to q's type and shifted over the control bits, dropping what
// does not fit; bit W-1 is then set when ifv is negative, even for the
// unsigned kinds, where it is a magnitude bit. Kind.Int builds an operand of
// q's own type.
func (q Q) SetIFVal(ifv Int) Q { return q.setIFVal(fromInt(ifv)) }

// LT, LE, GT, GE and EQ compare a and b numerically (Q_QLTQ, Q_QLEQ,
// Q_QGTQ, Q_QGEQ, Q_QEQ). Both must be of the same kind, as in the C (other
// combinations compare with the C's usual arithmetic conversions). Each
// compares the signed integer parts and, only when they are equal, the signed
// raw fraction values (so operands of different precisions compare their raw
// fractions); EQ is the C's Q_QEQ, whose integer test is "==", so it reports
// true whenever the integer parts are equal, whatever the fractions.
func (a Q) LT(b Q) bool {
	ci, cf := cmpParts(a, b)
	return ci < 0 || ci == 0 && cf < 0
}

// LE is Q_QLEQ; see LT.
func (a Q) LE(b Q) bool {
	ci, cf := cmpParts(a, b)
	return ci < 0 || ci == 0 && cf <= 0
}

// GT is Q_QGTQ; see LT.
func (a Q) GT(b Q) bool {
	ci, cf := cmpParts(a, b)
	return ci > 0 || ci == 0 && cf > 0
}

// GE is Q_QGEQ; see LT.
func (a Q) GE(b Q) bool {
	ci, cf := cmpParts(a, b)
	return ci > 0 || ci == 0 && cf >= 0
}

// EQ is Q_QEQ; see LT: only the integer parts are compared.
func (a Q) EQ(b Q) bool {
	ci, _ := cmpParts(a, b)
	return ci == 0
}

// AddQ returns a+b (Q_QADDQ); on error it returns a unchanged. The operands
// must have the same number of fractional bits (else ErrRange); the sum must
// fit a's combined integer/fraction field (else ErrOverflow).
func (a Q) AddQ(b Q) (Q, error) { return a.addSubQ(b, !b.IsNeg()) }

// SubQ returns a-b (Q_QSUBQ); on error it returns a unchanged. Errors as
// AddQ.
func (a Q) SubQ(b Q) (Q, error) { return a.addSubQ(b, b.IsNeg()) }

// MulQ returns a*b (Q_QMULQ); on error it returns a unchanged: ErrRange for
// different precisions, ErrInvalid for a negative b and unsigned a,
// ErrOverflow when |a|·|b| in raw units exceeds a's maximum (the check is on
// the product before it is scaled back). The scaled product is shifted
// right arithmetically, so a negative result rounds toward minus infinity.
func (a Q) MulQ(b Q) (Q, error) {
	if a.NFBits() != b.NFBits() {
		return a, ErrRange
	}
	if !a.Kind.Signed() && b.IsNeg() {
		return a, ErrInvalid
	}
	bAbs := b.ifabs()
	if !bAbs.isZero() && less(div(ifMaxVal(a.ct()), bAbs), a.ifabs()) {
		return a, ErrOverflow
	}
	return a.setIFVal(mul(a.gifval(), b.gifval()).shr(a.NFBits())), nil
}

// DivQ returns a/b (Q_QDIVQ); on error it returns a unchanged: ErrRange for
// different precisions, ErrInvalid for a zero b or a negative b with an
// unsigned a. Like the C (which does not handle overflow here), the result is
// (int(a)·2^nf)/b + (frac(a)·2^nf)/frac(b), each part computed in the C types
// with wrap-around and truncating division, the second term omitted when
// b's fraction is zero; a zero a is returned unchanged.
func (a Q) DivQ(b Q) (Q, error) {
	if a.NFBits() != b.NFBits() {
		return a, ErrRange
	}
	if b.ifabs().isZero() || !a.Kind.Signed() && b.IsNeg() {
		return a, ErrInvalid
	}
	if a.ifabs().isZero() {
		return a, nil
	}
	nf := a.NFBits()
	q := div(a.gival().shl(nf), b.gifval())
	// The conditional (frac(b) == 0 ? 0 : ...) has an int zero in one arm.
	f := mk(cInt, 0)
	if bf := b.gfval(); !bf.isZero() {
		f = div(a.gfval().shl(nf), bf)
	}
	return a.setIFVal(add(q, f)), nil
}

// AddI returns q+i (Q_QADDI); on error it returns q unchanged. ErrOverflow
// when |i| has more significant bits than q's width, or when the integer
// part would leave q's integer range. As in the C, the range test is done in
// q's C type with wrap-around (a huge unsigned i can pass it), and the sum
// in long, Q_SHL's type (unsigned long for u64q_t): a negative q plus i
// stays negative until it reaches zero, and a sum whose magnitude does not
// fit is stored with its excess bits lost (Q_SIFVAL). |i| is Q_ABS(i),
// which stays negative for INT32_MIN and INT64_MIN: INT32_MIN is
// ErrOverflow for 32-bit kinds and u64q_t, and moves an s64q_t up by 2^31
// (SubI: down), the fixed Q_SHL scaling the negative |i| exactly.
func (q Q) AddI(i Int) (Q, error) {
	iv := fromInt(i)
	return q.addSubI(iv, !iv.ltz())
}

// SubI returns q-i (Q_QSUBI); on error it returns q unchanged. See AddI.
// As in the C, an unsigned i at least as wide as a signed q makes the range
// test unsigned: it then reports ErrOverflow for most non-negative q (even
// 1-1) and can miss the underflow of a negative q, whose difference is then
// stored with the bits above the magnitude field lost (the top one landing
// in the sign bit).
func (q Q) SubI(i Int) (Q, error) {
	iv := fromInt(i)
	return q.addSubI(iv, iv.ltz())
}

// MulI returns q*i (Q_QMULI); on error it returns q unchanged: ErrInvalid
// for a negative i and unsigned q, ErrOverflow when |i| (converted to q's
// type) times |q| in raw units exceeds q's maximum. Where the C would divide
// by zero (a non-zero i whose absolute value converts to 0 in q's type, e.g.
// 2^32 for a 32-bit q) this returns ErrOverflow.
func (q Q) MulI(i Int) (Q, error) {
	iv := fromInt(i)
	if !q.Kind.Signed() && iv.ltz() {
		return q, ErrInvalid
	}
	if !iv.isZero() {
		d := iv.abs().to(q.ct())
		if d.isZero() || less(div(ifMaxVal(q.ct()), d), q.ifabs()) {
			return q, ErrOverflow
		}
	}
	return q.setIFVal(mul(q.gifval(), iv.to(q.ct()))), nil
}

// DivI returns q/i (Q_QDIVI). Like the C, an underflow to zero stores the
// zero result and returns ErrRange. ErrInvalid (q unchanged) for a zero i or
// a negative i with an unsigned q; i is converted to q's type first (a
// uint64 i of 2^63 or more is negative for an s64q). Where the C would divide
// by zero (a non-zero i that converts to 0 in q's type) this returns
// ErrInvalid. A zero q is returned unchanged.
func (q Q) DivI(i Int) (Q, error) {
	iv := fromInt(i)
	if iv.isZero() || !q.Kind.Signed() && iv.ltz() {
		return q, ErrInvalid
	}
	if q.ifabs().isZero() {
		return q, nil
	}
	d := iv.to(q.ct())
	if d.isZero() {
		return q, ErrInvalid
	}
	r := q.setIFVal(div(q.gifval(), d))
	if r.ifabs().isZero() {
		return r, ErrRange
	}
	return r, nil
}

// FracI returns q set to n/d (Q_QFRACI), keeping q's control bits. Like the
// C, an underflow to zero stores the result and returns ErrRange.
//
// The quotient is floor(|n|·2^nf / |d|) computed in uint64 (with |n|
// converted to q's type before the shift, as Q_SHL does, and |n| rejected
// with ErrOverflow when it exceeds UINT64_MAX >> (3+nf)); it is rejected
// with ErrOverflow when its integer bits, still in raw position, exceed q's
// integer maximum (the C's test). The sign bit is then set when exactly one
// of n and d is negative and q is signed, and cleared otherwise (bit W-1 is
// cleared for the unsigned kinds too, where it is a magnitude bit: a u32q_t
// with 29 fractional bits loses the 0.5 of a quotient). n == 0 stores +0
// without error; d == 0 is ErrInvalid. On ErrInvalid and ErrOverflow q is
// returned unchanged. For a u64q_t with 61 fractional bits the C's bound
// UINT64_MAX >> 64 is undefined; here it is 0, so every non-zero n is
// ErrOverflow.
func (q Q) FracI(n, d Int) (Q, error) {
	nv, dv := fromInt(n), fromInt(d)
	if dv.isZero() {
		return q, ErrInvalid
	}
	if nv.isZero() {
		return q.setIFVal(nv), nil
	}
	num := nv.abs().to(cUlong) // INT32_MIN's wrapped |n| sign-extends: huge
	if num.v > ^uint64(0)>>(3+q.NFBits()) {
		return q, ErrOverflow
	}
	// Q_SHL's long (unsigned long for a u64q_t) divided by Q_ABS(d), in
	// their common type: signed unless q is a u64q_t or d a uint64_t, so a
	// 32-bit shifted numerator that went negative gives a negative
	// quotient, which the C then stores into its uint64_t.
	quo := div(q.shl(num), dv.abs()).to(cUlong)
	ipart := mk(cUlong, quo.v&q.ifValIMask().to(cUlong).v)
	if !q.canRepI(ipart) {
		return q, ErrOverflow
	}
	r := q.setIFVal(quo).setSign(nv.ltz() != dv.ltz())
	if quo.isZero() {
		return r, ErrRange
	}
	return r, nil
}

// CpyValQ returns q holding r's value, keeping q's kind and control bits
// (Q_QCPYVALQ, which copies the integer part and the raw fraction bits).
// On error it returns q unchanged.
//
// The fraction bits are not rescaled: r's raw fraction value becomes q's raw
// fraction value (1.5 with 8 fractional bits copied into a Q with 16 becomes
// 1 + 128/65536). ErrOverflow (the fixed Q_QCANREPQ) when r is negative and
// q unsigned (this includes a negative zero), or r's integer magnitude
// exceeds q's integer maximum, or r's raw fraction exceeds q's fraction
// maximum. The sign is set when r's integer or fraction value is negative,
// so a negative zero becomes +0.
func (q Q) CpyValQ(r Q) (Q, error) {
	if !r.canRepQ(q) {
		return q, ErrOverflow
	}
	return q.setIFVals(r.gival(), r.gfval()), nil
}

// CloneQ returns a Q of kind k with r's control bits and value (Q_QCLONEQ).
// The combined integer/fraction value is copied as an integer; if the same
// control bits mean a different number of fractional bits for k (the 28/29 vs
// 60/61 bit caps), the numeric value changes accordingly, as in the C. It
// fails with ErrOverflow (the fixed Q_QCANREPQ: r negative and k unsigned, or
// r's integer magnitude or raw fraction larger than k's maxima for those
// control bits); on error it returns the Q of kind k with r's control bits and
// value zero.
func CloneQ(k Kind, r Q) (Q, error) {
	l := New(k, r.Ctrl())
	if !r.canRepQ(l) {
		return l, ErrOverflow
	}
	return l.setIFVal(r.gifval()), nil
}

// CpyValI returns q holding the integer value i (Q_QCPYVALI), keeping q's
// kind and control bits. On error it returns q unchanged: ErrOverflow (the
// fixed Q_QCANREPI) when i is negative and q unsigned, or |i|, computed
// exactly, exceeds q's integer maximum.
func (q Q) CpyValI(i Int) (Q, error) {
	iv := fromInt(i)
	if !q.canRepI(iv) {
		return q, ErrOverflow
	}
	return q.setIFVal(q.shl(iv)), nil
}

// String returns q's text form (see AppendText).
func (q Q) String() string { return string(q.AppendText(nil)) }

// Float64 converts q to the nearest float64 (Q_Q2D): the signed combined
// value converted to double, divided by 2^nf.
func (q Q) Float64() float64 {
	ifv := q.gifval()
	den := float64(uint64(1) << q.NFBits())
	if ifv.t.signed() {
		return float64(int64(ifv.v)) / den
	}
	return float64(ifv.v) / den
}
