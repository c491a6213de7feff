package qmath

import "github.com/statsblob/statsblob/internal/decimal"

// AppendText appends Q_TOSTR(q, -1, 10): "[-]INT.FRAC" with NFBits decimal
// fraction digits, produced digit by digit and truncated.
//
// The sign is printed whenever the sign bit is set (so a negative zero reads
// "-0.00"); the integer part always has at least one digit (the fixed
// Q_MAXSTRLEN, FORMAT.md section 12 defect 1d, leaves room for it when q has
// no integer bits). Since nf decimal digits represent any nf-bit binary
// fraction exactly, the text is the exact value.
func (q Q) AppendText(dst []byte) []byte {
	if q.IsNeg() {
		dst = append(dst, '-')
	}
	dst = decimal.AppendUint(dst, q.iabs().v)
	dst = append(dst, '.')
	nf := q.NFBits()
	frac := q.fabs().v
	if nf <= decimal.MaxFracBits {
		return decimal.AppendFrac(dst, frac, nf)
	}
	for range nf {
		var d uint64
		d, frac = fracDigit(frac, nf)
		dst = append(dst, byte('0'+d))
	}
	return dst
}

// fracDigit is one step of Q_FBITS2CH with base 10: the next decimal digit
// of the nf-bit binary fraction f, and the remaining fraction. Like the C it
// multiplies in two halves when nf exceeds 4 bits (the bits a decimal digit
// needs) so that nothing overflows, then keeps the low nf bits of f*10. The C
// does this in q's own type; with f < 2^nf and nf <= 61 no intermediate here
// exceeds 64 bits except f*10, whose low nf bits are the same modulo 2^32 or
// 2^64, so uint64 arithmetic gives the C's digits for every kind.
func fracDigit(f uint64, nf uint) (digit, rest uint64) {
	var shift uint
	var carry uint64
	if nf > 4 {
		shift = nf >> 1
		carry = ((f & (1<<shift - 1)) * 10) >> shift
	}
	digit = ((f>>shift)*10 + carry) >> (nf - shift)
	rest = (f * 10) & (1<<nf - 1)
	return digit, rest
}
