package qmath

import (
	"fmt"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// The differential tests compare the operations with a reference computed
// exactly with math/big, on random operands for which the C semantics are
// mathematically clean (no wrap-around in the C types).

var kinds = []Kind{S32, U32, S64, U64}

// iterations is n, or a tenth of it with -short.
func iterations(n int) int {
	if testing.Short() {
		return n / 10
	}
	return n
}

// randMag returns a random magnitude of at most maxBits bits, with bit
// lengths spread uniformly so that small and huge values are both common.
func randMag(r *rand.Rand, maxBits uint) uint64 {
	n := uint(r.IntN(int(maxBits) + 1))
	if n == 0 {
		return 0
	}
	return r.Uint64()>>(64-n) | 1<<(n-1)
}

// randQ returns a random Q of kind k with control bits ctrl and a random
// value; near the extremes now and then.
func randQ(r *rand.Rand, k Kind, ctrl uint64) Q {
	ifmax := IFMaxVal(k)
	mag := randMag(r, uint(64-bitsLeading(ifmax)))
	if r.IntN(8) == 0 {
		mag = ifmax - uint64(r.IntN(3))
	}
	mag = min(mag, ifmax)
	raw := ctrl | mag<<3
	if k.Signed() && r.IntN(2) == 0 {
		raw |= 1 << (k.Bits() - 1)
	}
	return New(k, raw)
}

func bitsLeading(v uint64) int {
	n := 0
	for v&(1<<63) == 0 && n < 64 {
		v <<= 1
		n++
	}
	return n
}

// randInt returns a random Int of a random C type whose magnitude has at
// most maxBits bits (and is never the type's minimum).
func randInt(r *rand.Rand, maxBits uint) Int {
	k := kinds[r.IntN(4)]
	bits := min(maxBits, k.Bits()-1)
	v := randMag(r, bits)
	if k.Signed() && r.IntN(2) == 0 {
		v = -v
	}
	return k.Int(v)
}

// checkOp compares an operation's result with the reference: an error (and
// the receiver returned unchanged) or the Q holding ifv.
func checkOp(t *testing.T, name string, recv Q, got Q, err error, wantErr error, want Q) {
	t.Helper()
	name = fmt.Sprintf("%s on %v %#x (%v)", name, recv.Kind, recv.Raw, recv)
	if wantErr != nil {
		require.ErrorIs(t, err, wantErr, "%s", name)
		require.Equal(t, recv, got, "%s: receiver changed", name)
		return
	}
	require.NoError(t, err, name)
	require.Equal(t, want, got, "%s: got %v want %v", name, got, want)
}

// fits reports whether the signed value v is representable by q's kind.
func fits(q Q, v *big.Int) bool {
	if v.Sign() < 0 && !q.Kind.Signed() {
		return false
	}
	return new(big.Int).Abs(v).Cmp(ifMaxBig(q.Kind)) <= 0
}

// trunc is x/2^nf truncated toward zero (the integer part of a Q).
func trunc(x *big.Int, nf uint) *big.Int {
	return new(big.Int).Quo(x, new(big.Int).Lsh(big.NewInt(1), nf))
}

func TestReferenceAddSubMulQ(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range iterations(40000) {
		k := kinds[r.IntN(4)]
		ctrl := uint64(r.IntN(8))
		checkAddSubMulCmp(t, randQ(r, k, ctrl), randQ(r, k, ctrl))
	}
}

// checkAddSubMulCmp checks AddQ, SubQ, MulQ and the comparisons of two Qs
// of the same kind and control bits against the reference.
func checkAddSubMulCmp(t *testing.T, a, b Q) {
	t.Helper()
	av, bv := ifvOf(a), ifvOf(b)
	nf := a.NFBits()

	sum := new(big.Int).Add(av, bv)
	got, err := a.AddQ(b)
	if fits(a, sum) {
		checkOp(t, "AddQ", a, got, err, nil, fromIFV(a, sum))
	} else {
		checkOp(t, "AddQ", a, got, err, ErrOverflow, Q{})
	}

	diff := new(big.Int).Sub(av, bv)
	got, err = a.SubQ(b)
	if fits(a, diff) {
		checkOp(t, "SubQ", a, got, err, nil, fromIFV(a, diff))
	} else {
		checkOp(t, "SubQ", a, got, err, ErrOverflow, Q{})
	}

	// The C tests the raw product |a|·|b| against the maximum, then shifts
	// the signed product right (flooring).
	prod := new(big.Int).Mul(av, bv)
	got, err = a.MulQ(b)
	if new(big.Int).Abs(prod).Cmp(ifMaxBig(a.Kind)) > 0 {
		checkOp(t, "MulQ", a, got, err, ErrOverflow, Q{})
	} else {
		checkOp(t, "MulQ", a, got, err, nil, fromIFV(a, prod.Rsh(prod, nf)))
	}

	// Comparisons are numeric (same precision), except Q_QEQ, which
	// compares the integer parts only.
	c := av.Cmp(bv)
	require.Equal(t, c < 0, a.LT(b), "LT %v %v", a, b)
	require.Equal(t, c <= 0, a.LE(b), "LE %v %v", a, b)
	require.Equal(t, c > 0, a.GT(b), "GT %v %v", a, b)
	require.Equal(t, c >= 0, a.GE(b), "GE %v %v", a, b)
	require.Equal(t, trunc(av, nf).Cmp(trunc(bv, nf)) == 0, a.EQ(b), "EQ %v %v", a, b)
	require.Equal(t, exact(a).Cmp(exact(b)), c)
}

func TestReferenceDivQ(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	skipped := 0
	for range iterations(20000) {
		k := kinds[r.IntN(4)]
		// frac(a)·2^nf must not wrap in the C type: nf at most 8 bits for
		// 32-bit kinds and 16 for 64-bit ones.
		ctrl := uint64(r.IntN(4))
		if k.Bits() == 64 {
			ctrl = uint64(r.IntN(5))
		}
		a, b := randQ(r, k, ctrl), randQ(r, k, ctrl)
		av, bv := ifvOf(a), ifvOf(b)
		nf := a.NFBits()
		one := new(big.Int).Lsh(big.NewInt(1), nf)
		got, err := a.DivQ(b)
		switch {
		case bv.Sign() == 0:
			checkOp(t, "DivQ", a, got, err, ErrInvalid, Q{})
			continue
		case av.Sign() == 0:
			checkOp(t, "DivQ", a, got, err, nil, a)
			continue
		}
		// (int(a)·2^nf)/b + (frac(a)·2^nf)/frac(b), truncating divisions.
		ia, fa := new(big.Int).QuoRem(av, one, new(big.Int))
		fb := new(big.Int).Rem(bv, one)
		res := new(big.Int).Quo(ia.Mul(ia, one), bv)
		if fb.Sign() != 0 {
			res.Add(res, fa.Quo(fa.Mul(fa, one), fb))
		}
		if !fits(a, res) {
			skipped++ // the C wraps; not a clean case
			continue
		}
		checkOp(t, "DivQ", a, got, err, nil, fromIFV(a, res))
	}
	require.Less(t, skipped, iterations(20000)/5)
}

func TestReferenceIntOps(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for range iterations(40000) {
		k := kinds[r.IntN(4)]
		q := randQ(r, k, uint64(r.IntN(8)))
		qv := ifvOf(q)
		nf := q.NFBits()
		one := new(big.Int).Lsh(big.NewInt(1), nf)
		imax := iMaxBig(q)
		ipart := trunc(qv, nf)

		// AddI/SubI: the C tests the integer parts. Clean when |i| does
		// not wrap in q's type: below 2^(W-2), at most the integer maximum
		// for unsigned kinds, and not of an unsigned type at least as wide
		// as a signed q (which makes SubI's range test unsigned).
		i := randInt(r, k.Bits()-2)
		iv := bigOf(i)
		wideUnsigned := k.Signed() && !i.Signed && uint(i.Bits) >= k.Bits()
		if !wideUnsigned && (k.Signed() || new(big.Int).Abs(iv).Cmp(imax) <= 0) {
			for _, sub := range []bool{false, true} {
				name, op, s := "AddI", q.AddI, new(big.Int).Set(iv)
				if sub {
					name, op, s = "SubI", q.SubI, new(big.Int).Neg(iv)
				}
				got, err := op(i)
				ip := new(big.Int).Add(ipart, s)
				if ip.Cmp(imax) > 0 || ip.Cmp(new(big.Int).Neg(imax)) < 0 || !k.Signed() && ip.Sign() < 0 {
					checkOp(t, fmt.Sprintf("%s(%+v)", name, i), q, got, err, ErrOverflow, Q{})
				} else {
					checkOp(t, fmt.Sprintf("%s(%+v)", name, i), q, got, err, nil, fromIFV(q, s.Add(qv, s.Mul(s, one))))
				}
			}
		}

		// MulI and DivI: clean when i keeps its value in q's type.
		i = randInt(r, k.Bits()-1)
		iv = bigOf(i)
		if !k.Signed() && iv.Sign() < 0 {
			got, err := q.MulI(i)
			checkOp(t, "MulI", q, got, err, ErrInvalid, Q{})
			got, err = q.DivI(i)
			checkOp(t, "DivI", q, got, err, ErrInvalid, Q{})
		} else {
			got, err := q.MulI(i)
			prod := new(big.Int).Mul(qv, iv)
			if new(big.Int).Abs(prod).Cmp(ifMaxBig(k)) > 0 {
				checkOp(t, "MulI", q, got, err, ErrOverflow, Q{})
			} else {
				checkOp(t, "MulI", q, got, err, nil, fromIFV(q, prod))
			}
			got, err = q.DivI(i)
			switch {
			case iv.Sign() == 0:
				checkOp(t, "DivI", q, got, err, ErrInvalid, Q{})
			case qv.Sign() == 0:
				checkOp(t, "DivI", q, got, err, nil, q)
			default:
				quo := new(big.Int).Quo(qv, iv)
				want := fromIFV(q, quo)
				if quo.Sign() == 0 {
					require.ErrorIs(t, err, ErrRange)
					require.Equal(t, want, got)
				} else {
					checkOp(t, "DivI", q, got, err, nil, want)
				}
			}
		}

		// CpyValI (defects 1b and 1c): any integer, exactly.
		i = randInt(r, 64)
		iv = bigOf(i)
		got, err := q.CpyValI(i)
		if iv.Sign() < 0 && !k.Signed() || new(big.Int).Abs(iv).Cmp(imax) > 0 {
			checkOp(t, "CpyValI", q, got, err, ErrOverflow, Q{})
		} else {
			checkOp(t, "CpyValI", q, got, err, nil, fromIFV(q, iv.Mul(iv, one)))
		}
	}
}

func TestReferenceFracI(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for range iterations(40000) {
		k := kinds[r.IntN(4)]
		q := randQ(r, k, uint64(r.IntN(8)))
		nf := q.NFBits()
		if 3+nf >= 64 {
			continue // UINT64_MAX >> 64: undefined in C
		}
		// Clean when |n|·2^nf does not wrap in q's type.
		n := randInt(r, k.Bits()-1-nf-1)
		d := randInt(r, 64)
		nv, dv := bigOf(n), bigOf(d)
		got, err := q.FracI(n, d)
		switch {
		case dv.Sign() == 0:
			checkOp(t, fmt.Sprintf("FracI(%+v, %+v)", n, d), q, got, err, ErrInvalid, Q{})
			continue
		case nv.Sign() == 0:
			checkOp(t, fmt.Sprintf("FracI(%+v, %+v)", n, d), q, got, err, nil, q.setIFVal(mk(cInt, 0)))
			continue
		}
		if new(big.Int).Abs(nv).Cmp(new(big.Int).SetUint64(^uint64(0)>>(3+nf))) > 0 {
			checkOp(t, fmt.Sprintf("FracI(%+v, %+v)", n, d), q, got, err, ErrOverflow, Q{})
			continue
		}
		num := new(big.Int).Lsh(new(big.Int).Abs(nv), nf)
		quo := num.Quo(num, new(big.Int).Abs(dv))
		// The C compares the quotient's integer bits, still in place, with
		// the integer maximum.
		ibits := new(big.Int).Rsh(quo, nf)
		ibits.Lsh(ibits, nf)
		if ibits.Cmp(iMaxBig(q)) > 0 {
			checkOp(t, fmt.Sprintf("FracI(%+v, %+v)", n, d), q, got, err, ErrOverflow, Q{})
			continue
		}
		// Q_SSIGN then sets bit W-1 for a negative quotient of a signed
		// q, and clears it otherwise, also where it is a magnitude bit.
		want := New(k, q.Ctrl()|quo.Uint64()<<3)
		if k.Signed() && nv.Sign() != dv.Sign() {
			want.Raw |= 1 << (k.Bits() - 1)
		} else {
			want.Raw &^= 1 << (k.Bits() - 1)
		}
		if quo.Sign() == 0 {
			require.ErrorIs(t, err, ErrRange)
			require.Equal(t, want, got)
			continue
		}
		checkOp(t, fmt.Sprintf("FracI(%+v, %+v)", n, d), q, got, err, nil, want)
	}
}

func TestReferenceCpyValQCloneQ(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for range iterations(40000) {
		rk, lk := kinds[r.IntN(4)], kinds[r.IntN(4)]
		src := randQ(r, rk, uint64(r.IntN(8)))
		dst := randQ(r, lk, uint64(r.IntN(8)))
		iabs := new(big.Int).Rsh(new(big.Int).Abs(ifvOf(src)), src.NFBits())
		fabs := new(big.Int).SetUint64(src.fabs().v)

		// CpyValQ: integer part and raw fraction, in dst's precision.
		got, err := dst.CpyValQ(src)
		fmax := new(big.Int).SetUint64(1<<dst.NFBits() - 1)
		if src.IsNeg() && !lk.Signed() || iabs.Cmp(iMaxBig(dst)) > 0 || fabs.Cmp(fmax) > 0 {
			checkOp(t, "CpyValQ", dst, got, err, ErrOverflow, Q{})
		} else {
			v := new(big.Int).Lsh(iabs, dst.NFBits())
			v.Add(v, fabs)
			if src.IsNeg() {
				v.Neg(v)
			}
			checkOp(t, "CpyValQ", dst, got, err, nil, fromIFV(dst, v))
		}

		// CloneQ: the combined value, under src's control bits in lk.
		got, err = CloneQ(lk, src)
		l := New(lk, src.Ctrl())
		fmax = new(big.Int).SetUint64(1<<l.NFBits() - 1)
		if src.IsNeg() && !lk.Signed() || iabs.Cmp(iMaxBig(l)) > 0 || fabs.Cmp(fmax) > 0 {
			require.ErrorIs(t, err, ErrOverflow)
			require.Equal(t, l, got)
		} else {
			require.NoError(t, err)
			require.Equal(t, fromIFV(l, ifvOf(src)), got)
			if src.NFBits() == l.NFBits() {
				require.Zero(t, exact(src).Cmp(exact(got)), "CloneQ changed the value")
			}
		}
	}
}
