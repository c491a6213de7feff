package tdigest

import (
	"math/rand/v2"
	"testing"

	"github.com/statsblob/statsblob/qmath"
	"github.com/statsblob/statsblob/voi"
)

// The specialised Q arithmetic of the update path checked against package
// qmath, the general implementation of qmath.h with the reference's fixes.

func errnoOf(err error) int { return voi.Errno(err) }

// edgy returns a random uint64 biased towards boundaries: small values,
// powers of two and their neighbours, and values near the Q limits.
func edgy(r *rand.Rand) uint64 {
	switch r.IntN(6) {
	case 0:
		return uint64(r.IntN(70))
	case 1:
		p := uint(r.IntN(64))
		return 1<<p + uint64(r.IntN(3)) - 1
	case 2:
		return uint64(r.Int64N(1 << 20))
	case 3:
		return ifMaxS64 - uint64(r.IntN(3)) + uint64(r.IntN(3))
	case 4:
		return r.Uint64() >> uint(r.IntN(64))
	}
	return r.Uint64()
}

// rawS64 returns a random s64q raw with control bits ctrl.
func rawS64(r *rand.Rand, ctrl uint64) uint64 {
	return edgy(r)<<3 | ctrl | uint64(r.IntN(2))<<63
}

func TestKLimitMatchesQmath(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	check := func(sum, cnt, smpl uint64, attempt int) {
		t.Helper()
		q := qmath.New(qmath.S64, uint64(qmath.CtrlIni(16)))
		var err error
		var e int
		if smpl == 1 {
			q, err = q.FracI(qmath.I32(1), qmath.I32(2))
		} else {
			q, err = q.FracI(qmath.U64Int(sum<<1+cnt-1), qmath.U64Int((smpl-1)<<1))
		}
		if errnoOf(err) == eRange {
			err = nil // defect 7: q underflowed to 0, which is not an error
		}
		e |= errnoOf(err)
		k := q
		k, err = k.MulI(qmath.U64Int(4 * smpl * uint64(attempt)))
		e |= errnoOf(err)
		q, err = q.SubI(qmath.I32(1))
		e |= errnoOf(err)
		q = q.Abs()
		k, err = k.MulQ(q)
		e |= errnoOf(err)
		want := k.IntVal()
		got, gotE := kLimit(sum, cnt, smpl, attempt)
		if got != want || gotE != e {
			t.Fatalf("kLimit(sum=%d, cnt=%d, smplcnt=%d, attempt=%d) = %d, errno %d; qmath: %d, errno %d",
				sum, cnt, smpl, attempt, got, gotE, want, e)
		}
	}
	// Realistic: sum + cnt <= smplcnt.
	for range 60000 {
		smpl := edgy(r)%(1<<40) + 1
		if r.IntN(4) == 0 {
			smpl = uint64(r.IntN(100)) + 1
		}
		sum := r.Uint64N(smpl)
		cnt := r.Uint64N(smpl-sum) + 1
		check(sum, cnt, smpl, r.IntN(5)+1)
	}
	// Anything.
	for range 60000 {
		check(edgy(r), edgy(r), edgy(r), r.IntN(8))
	}
	check(0, 2, 40000, 1) // underflow of q to zero: ERANGE
	check(0, 1, 1, 1)
	check(0, 0, 0, 1)
}

func TestS64OpsMatchQmath(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 60000 {
		ctrl := uint64(r.IntN(8))
		a, b := rawS64(r, ctrl), rawS64(r, ctrl)
		qa, qb := qmath.New(qmath.S64, a), qmath.New(qmath.S64, b)

		// Q_QSUBQ(&a, b) and Q_QADDQ(&a, b).
		d, e := subS64(ifvS64(a), ifvS64(b))
		w, err := qa.SubQ(qb)
		if e != errnoOf(err) || e == eOK && setS64(ctrl, d) != w.Raw {
			t.Fatalf("subS64(%#x, %#x) = %d, %d; qmath %#x, %v", a, b, d, e, w.Raw, err)
		}
		s, e := subS64(ifvS64(a), -ifvS64(b))
		w, err = qa.AddQ(qb)
		if e != errnoOf(err) || e == eOK && setS64(ctrl, s) != w.Raw {
			t.Fatalf("add(%#x, %#x) = %d, %d; qmath %#x, %v", a, b, s, e, w.Raw, err)
		}

		// Q_QDIVI(&a, n).
		n := edgy(r)
		if r.IntN(2) == 0 {
			n %= 1 << 20
		}
		v, e := divS64(ifvS64(a), n)
		w, err = qa.DivI(qmath.U64Int(n))
		if e != errnoOf(err) || e != eInvalid && setS64(ctrl, v) != w.Raw && ifvS64(a) != 0 {
			t.Fatalf("divS64(%#x, %d) = %d, %d; qmath %#x, %v", a, n, v, e, w.Raw, err)
		}

		// Q_QLTQ, also across precisions.
		c2 := uint64(r.IntN(8))
		b2 := rawS64(r, c2)
		if got, want := qltParts(ifvS64(a), nfS64(a), ifvS64(b2), nfS64(b2)), qa.LT(qmath.New(qmath.S64, b2)); got != want {
			t.Fatalf("qlt(%#x, %#x) = %v, qmath %v", a, b2, got, want)
		}
		if a&7 == b&7 {
			if got, want := ifvS64(a) < ifvS64(b), qa.LT(qb); got != want {
				t.Fatalf("ifv compare(%#x, %#x) = %v, qmath %v", a, b, got, want)
			}
		}

		// Q_SIFVAL round trip.
		if got, want := setS64(ctrl, ifvS64(a)), qmath.New(qmath.S64, ctrl).SetIFVal(qmath.I64(ifvS64(a))).Raw; got != want {
			t.Fatalf("setS64(%d, %d) = %#x, qmath %#x", ctrl, ifvS64(a), got, want)
		}
	}
}

func TestS32OpsMatchQmath(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 60000 {
		ctrl := uint64(r.IntN(8))
		mu := uint64(uint32(rawS64(r, ctrl)))
		if r.IntN(2) == 0 {
			mu = uint64(uint32(edgy(r)))<<3&0x7FFFFFF8 | ctrl | uint64(r.IntN(2))<<31
		}
		qmu := qmath.New(qmath.S32, mu)

		// Q_QCLONEQ(&z, mu): s32q into s64q.
		w, err := qmath.CloneQ(qmath.S64, qmu)
		if err != nil || setS64(ctrl, ifvS32(mu)) != w.Raw {
			t.Fatalf("clone(%#x) = %#x; qmath %#x, %v", mu, setS64(ctrl, ifvS32(mu)), w.Raw, err)
		}

		// Q_QADDQ(&mu32, x64) with equal precision (ctrl 0..4).
		if ctrl <= 4 {
			x := rawS64(r, ctrl)
			if r.IntN(2) == 0 {
				x = ctrl | (edgy(r)%(1<<30))<<3 | uint64(r.IntN(2))<<63
			}
			s, e := addS32(ifvS32(mu), ifvS64(x))
			w, err := qmu.AddQ(qmath.New(qmath.S64, x))
			if e != errnoOf(err) || e == eOK && uint64(setS32(ctrl, int32(s))) != w.Raw {
				t.Fatalf("addS32(%#x, %#x) = %d, %d; qmath %#x, %v", mu, x, s, e, w.Raw, err)
			}
		}

		// Q_QCPYVALQ(&mu32, x64).
		x := rawS64(r, uint64(r.IntN(8)))
		if r.IntN(2) == 0 {
			x = ctrl | (edgy(r)%(1<<34))<<3 | uint64(r.IntN(2))<<63
		}
		neg, im, fm := splitQ(voi.QS64, x)
		got, e := cpyValQ32(mu, neg, im, fm)
		w, err = qmu.CpyValQ(qmath.New(qmath.S64, x))
		if e != errnoOf(err) || e == eOK && uint64(got) != w.Raw {
			t.Fatalf("cpyValQ32(%#x, %#x) = %#x, %d; qmath %#x, %v", mu, x, got, e, w.Raw, err)
		}

		// Q_QLTQ of two s32q.
		mu2 := uint64(uint32(rawS64(r, uint64(r.IntN(8)))))
		if gotL, want := lessRaw(mu, mu2, true), qmu.LT(qmath.New(qmath.S32, mu2)); gotL != want {
			t.Fatalf("less32(%#x, %#x) = %v, qmath %v", mu, mu2, gotL, want)
		}
	}
}

func TestConversionsMatchQmath(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for range 60000 {
		ctrl := uint64(r.IntN(8))
		x0 := qmath.New(qmath.S64, ctrl)
		v := edgy(r)
		// Q_QCPYVALI for each integer type.
		for _, c := range []struct {
			i   qmath.Int
			neg bool
			mag uint64
		}{
			{qmath.I32(int32(v)), int32(v) < 0, absU(int64(int32(v)))},
			{qmath.U32Int(uint32(v)), false, uint64(uint32(v))},
			{qmath.I64(int64(v)), int64(v) < 0, absU(int64(v))},
			{qmath.U64Int(v), false, v},
		} {
			got, e := cpyValI(ctrl, c.neg, c.mag)
			w, err := x0.CpyValI(c.i)
			if e != errnoOf(err) || e == eOK && got != w.Raw {
				t.Fatalf("cpyValI(ctrl %d, %+v) = %#x, %d; qmath %#x, %v", ctrl, c.i, got, e, w.Raw, err)
			}
		}
		// Q_QCPYVALQ from each Q type.
		for _, dt := range []voi.DType{voi.QS32, voi.QU32, voi.QS64, voi.QU64} {
			raw := edgy(r)&^7 | uint64(r.IntN(8))
			if dt.Is32() {
				raw = uint64(uint32(raw))
			}
			neg, im, fm := splitQ(dt, raw)
			got, e := cpyValQ(ctrl, neg, im, fm)
			w, err := x0.CpyValQ(voi.AsQ(dt, raw))
			if e != errnoOf(err) || e == eOK && got != w.Raw {
				t.Fatalf("cpyValQ(ctrl %d, %v %#x) = %#x, %d; qmath %#x, %v", ctrl, dt, raw, got, e, w.Raw, err)
			}
		}
	}
	for prec := uint32(0); prec <= 300; prec++ {
		if prec >= 1 && prec <= 64 {
			if got, want := ctrlIni(prec), uint64(qmath.CtrlIni(int(prec))&7); got != want {
				t.Fatalf("ctrlIni(%d) = %d, qmath %d", prec, got, want)
			}
		}
	}
	for c := uint64(0); c < 8; c++ {
		if got, want := nfS64(c), qmath.New(qmath.S64, c).NFBits(); got != want {
			t.Fatalf("nfS64(%d) = %d, qmath %d", c, got, want)
		}
		if got, want := nfS32(c), qmath.New(qmath.S32, c).NFBits(); got != want {
			t.Fatalf("nfS32(%d) = %d, qmath %d", c, got, want)
		}
	}
}
