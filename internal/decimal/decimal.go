// Package decimal appends integers in decimal, as strconv does, with a
// fast path for the small numbers that make up most of statsblob's
// renderings (counts, bucket bounds, error counts): up to four digits are
// appended directly, two per division, where strconv formats into a
// scratch buffer and copies it out.
package decimal

import (
	"slices"
	"strconv"
)

// pairs holds "00" through "99".
const pairs = "00010203040506070809" +
	"10111213141516171819" +
	"20212223242526272829" +
	"30313233343536373839" +
	"40414243444546474849" +
	"50515253545556575859" +
	"60616263646566676869" +
	"70717273747576777879" +
	"80818283848586878889" +
	"90919293949596979899"

// AppendUint appends v in decimal: strconv.AppendUint(dst, v, 10).
func AppendUint(dst []byte, v uint64) []byte {
	switch {
	case v < 10:
		return append(dst, byte('0'+v))
	case v < 100:
		return append(dst, pairs[2*v], pairs[2*v+1])
	case v < 1000:
		q := v / 100
		r := (v - q*100) * 2
		return append(dst, byte('0'+q), pairs[r], pairs[r+1])
	case v < 10000:
		q := v / 100
		r := (v - q*100) * 2
		return append(dst, pairs[2*q], pairs[2*q+1], pairs[r], pairs[r+1])
	}
	return strconv.AppendUint(dst, v, 10)
}

// AppendInt appends v in decimal: strconv.AppendInt(dst, v, 10).
func AppendInt(dst []byte, v int64) []byte {
	if v < 0 {
		return AppendUint(append(dst, '-'), -uint64(v))
	}
	return AppendUint(dst, uint64(v))
}

// AppendPadded appends the width low decimal digits of v, zero-padded on
// the left (the fraction digits of a Q value), written in place two per
// division. width must not be negative.
func AppendPadded(dst []byte, v uint64, width int) []byte {
	l := len(dst)
	dst = slices.Grow(dst, width)[:l+width]
	b := dst[l:]
	i := len(b)
	for ; i >= 2; i -= 2 {
		q := v / 100
		r := (v - q*100) * 2
		b[i-1], b[i-2] = pairs[r+1], pairs[r]
		v = q
	}
	if i == 1 {
		b[0] = byte('0' + v%10)
	}
	return dst
}

// MaxFracBits is the widest binary fraction AppendFrac writes: for nf up
// to 19, frac·5^nf < 10^nf fits a uint64.
const MaxFracBits = 19

// AppendFrac appends the nf decimal digits of the binary fraction
// frac/2^nf (frac < 2^nf, nf <= MaxFracBits): exactly the digits of the
// C's digit-by-digit Q_TOSTR loop, since frac/2^nf = frac·5^nf/10^nf.
func AppendFrac(dst []byte, frac uint64, nf uint) []byte {
	return AppendPadded(dst, frac*pow5[nf], int(nf))
}

var pow5 = func() (p [MaxFracBits + 1]uint64) {
	p[0] = 1
	for i := 1; i < len(p); i++ {
		p[i] = p[i-1] * 5
	}
	return p
}()
