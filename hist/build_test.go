package hist

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/statsblob/statsblob/qmath"
	"github.com/statsblob/statsblob/voi"
)

// hexData builds histogram data from its header and buckets, for tables.
func histData(hdt voi.DType, oob uint64, bkts ...[3]uint64) []byte {
	g, _ := geomOf(hdt)
	d := make([]byte, DataSize(hdt, len(bkts)))
	storeCount(d, 0, g.is32, oob)
	for i, b := range bkts {
		off := hdrSize + i*g.bsz
		binary.LittleEndian.PutUint64(d[off:], b[0])
		if g.kind == kindDR {
			binary.LittleEndian.PutUint64(d[off+8:], b[1])
		}
		storeCount(d, off+g.coff, g.is32, b[2])
	}
	return d
}

func TestBuildErrors(t *testing.T) {
	f := func(name string, sp Spec, dt voi.DType, want error) {
		t.Helper()
		_, err := sp.Build(dt)
		if !errors.Is(err, want) {
			t.Errorf("%s: Build(%v) = %v, want %v", name, dt, err, want)
		}
	}
	lin := func(hdt voi.DType, lb, ub, step uint64, fl Flags) Spec {
		return Spec{DType: hdt, Scheme: Lin, LB: lb, UB: ub, StepInc: step, Flags: fl}
	}
	f("not a hist", lin(voi.IntU32, 0, 10, 1, 0), voi.IntU32, voi.ErrInvalid)
	f("voi dtype 0", lin(voi.CRHist32, 0, 10, 1, 0), voi.VoiState, voi.ErrInvalid)
	f("voi dtype hist", lin(voi.CRHist32, 0, 10, 1, 0), voi.CRHist64, voi.ErrInvalid)
	f("zero step", lin(voi.CRHist32, 0, 10, 0, 0), voi.IntU32, voi.ErrInvalid)
	f("DV lbinf", lin(voi.DVHist32, 0, 10, 1, LBoundInf), voi.IntU32, voi.ErrInvalid)
	f("DV ubinf", Spec{DType: voi.DVHist64, Scheme: Usr, Flags: UBoundInf, Buckets: []Bound{{1, 1}}}, voi.IntU32, voi.ErrInvalid)
	f("USR ubinf CR", Spec{DType: voi.CRHist64, Scheme: Usr, Flags: UBoundInf, Buckets: []Bound{{1, 1}}}, voi.IntU32, voi.ErrInvalid)
	f("USR ubinf DR", Spec{DType: voi.DRHist32, Scheme: Usr, Flags: UBoundInf, Buckets: []Bound{{1, 2}}}, voi.IntU32, voi.ErrInvalid)
	f("USR empty", Spec{DType: voi.CRHist64, Scheme: Usr}, voi.IntU32, voi.ErrInvalid)
	f("USR too many", Spec{DType: voi.CRHist64, Scheme: Usr, Buckets: make([]Bound, 4096)}, voi.IntU32, voi.ErrTooBig)
	f("USR too many with lbinf", Spec{DType: voi.CRHist64, Scheme: Usr, Flags: LBoundInf, Buckets: make([]Bound, 4095)}, voi.IntU32, voi.ErrTooBig)
	f("unknown scheme", Spec{DType: voi.CRHist64, Scheme: 4, LB: 0, UB: 10, StepInc: 1}, voi.IntU32, voi.ErrInvalid)
	f("LINEXP div 0", Spec{DType: voi.CRHist64, Scheme: LinExp, UB: 10, StepBase: 10}, voi.IntU32, voi.ErrInvalid)
	// FORMAT.md section 12's examples of generation that never ends.
	f("wraps u32", lin(voi.CRHist32, 0, math.MaxUint32, 1000, 0), voi.IntU32, voi.ErrInvalid)
	f("wraps u64 near max", lin(voi.CRHist64, math.MaxUint64-10, math.MaxUint64-1, 7, 0), voi.IntU64, voi.ErrInvalid)
	f("wraps s32", lin(voi.CRHist32, 0, math.MaxInt32, 7, 0), voi.IntS32, voi.ErrInvalid)
	f("wraps s64", lin(voi.CRHist64, 1<<62, math.MaxInt64, 1<<60, 0), voi.IntS64, voi.ErrInvalid)
	f("step truncates to 0", lin(voi.CRHist32, 0, 10, 1<<32, 0), voi.IntU32, voi.ErrInvalid)
	f("negative step", lin(voi.CRHist32, 0, 10, math.MaxUint64, 0), voi.IntS32, voi.ErrInvalid)
	f("LINEXP search never ends", Spec{DType: voi.CRHist32, Scheme: LinExp, LB: 1 << 31, UB: math.MaxUint32, StepBase: 2, LinStepDiv: 1}, voi.IntU32, voi.ErrInvalid)
	f("LINEXP base 1", Spec{DType: voi.CRHist64, Scheme: LinExp, LB: 5, UB: 100, StepBase: 1, LinStepDiv: 1}, voi.IntU64, voi.ErrInvalid)
	f("EXP pow reaches 0", Spec{DType: voi.CRHist64, Scheme: Exp, LB: 1, UB: math.MaxUint64, StepBase: 2, StepExp: 62}, voi.IntU64, voi.ErrInvalid)
	f("EXP base 0", Spec{DType: voi.CRHist64, Scheme: Exp, LB: 1, UB: 100, StepBase: 0}, voi.IntU64, voi.ErrInvalid)
	f("too big", lin(voi.CRHist64, 0, 5000, 1, 0), voi.IntU64, voi.ErrTooBig)
	f("too big DR", lin(voi.DRHist64, 0, 2730, 1, 0), voi.IntU64, voi.ErrTooBig)
	f("too big, far", lin(voi.CRHist64, 0, 1<<62, 1, 0), voi.IntU64, voi.ErrTooBig)
	f("too big EXP base 1", Spec{DType: voi.CRHist32, Scheme: Exp, LB: 0, UB: 1 << 30, StepBase: 1}, voi.IntU32, voi.ErrTooBig)
	f("Q step overflows", lin(voi.CRHist32, 0x13, 0xFFFFFF00, 1<<33, 0), voi.QU32, voi.ErrInvalid)
	// A negative s32q's sign bit is a magnitude bit of the s64q view the
	// LINEXP search falls through to: -5.0 reads as 2^20+5, the exponent is
	// 7 and 10^7 overflows the Q_S32/8 integer part (the s32q view would
	// give 10).
	f("Q linexp fall-through", Spec{DType: voi.DRHist32, Scheme: LinExp, LB: qraw(voi.QS32, 3, -5<<8), UB: qraw(voi.QS32, 3, 100<<8), StepBase: 10, LinStepDiv: 1}, voi.QS32, voi.ErrInvalid)
	// From a negative Q bound the bounds go up by the step (Q_SHL has
	// the C conditional's type, long): 16756 buckets to reach 250.0.
	f("Q from negative, too big", lin(voi.CRHist32, qraw(voi.QS32, 0, -199811), qraw(voi.QS32, 0, 1000), 3, 0), voi.QS32, voi.ErrTooBig)
	// Q bounds that never exceed UB (the C loops forever): a Q_S32 step of
	// 2^32-1 is Q_SHL -1 (the bounds go down, and wrap within the
	// negative values); a Q_U32 step above the integer maximum rotates
	// the values modulo 2^29, here between 0 and 2^28.
	f("Q bounds go down", lin(voi.CRHist32, qraw(voi.QS32, 3, -5<<8), qraw(voi.QS32, 3, 10<<8), 0xFFFFFFFF, 0), voi.QS32, voi.ErrInvalid)
	f("Q bounds rotate", lin(voi.CRHist32, 0, qraw(voi.QU32, 0, 1<<28+5), 1<<27+1<<26, 0), voi.QU32, voi.ErrInvalid)
	// The same rotation from 1: the third bound, 2^29+2 mod 2^29, is above.
	f("Q rotation ends", lin(voi.CRHist32, 0, qraw(voi.QU32, 0, 1<<28+5), 1<<27+1<<26+1, 0), voi.QU32, nil)

	// Sizes at the edge of a blob: 4095 CR buckets fit 65535 bytes.
	if d, err := lin(voi.CRHist64, 0, 4094, 1, 0).Build(voi.IntU64); err != nil || len(d) != 8+4095*16 {
		t.Errorf("4095 buckets: %d bytes, %v", len(d), err)
	}
	if d, err := lin(voi.DRHist32, 0, 2727, 1, LBoundInf|UBoundInf).Build(voi.IntU64); err != nil || len(d) != 8+2730*24 {
		t.Errorf("2730 DR buckets: %d bytes, %v", len(d), err)
	}
}

func TestBuildBytes(t *testing.T) {
	f := func(name string, sp Spec, dt voi.DType, want []byte) {
		t.Helper()
		got, err := sp.Build(dt)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: Build(%v) = %x, %v\nwant %x", name, dt, got, err, want)
		}
	}
	// Lin on a 32-bit type: the high half of LB travels with every bound.
	f("s32 lin", Spec{DType: voi.CRHist32, Scheme: Lin, LB: 0xFFFFFFFFFFFFFFEC, UB: 5, StepInc: 10}, voi.IntS32,
		histData(voi.CRHist32, 0, [3]uint64{0xFFFFFFFFFFFFFFEC}, [3]uint64{0xFFFFFFFFFFFFFFF6}, [3]uint64{0xFFFFFFFF00000000}))
	// A DR histogram with both infinite buckets: the +inf bucket's lower
	// bound is the first bound above UB, its upper bound the maximum.
	f("dr lin inf", Spec{DType: voi.DRHist64, Scheme: Lin, LB: 0, UB: 15, StepInc: 10, Flags: LBoundInf | UBoundInf}, voi.IntS64,
		histData(voi.DRHist64, 0, [3]uint64{1 << 63, 0}, [3]uint64{0, 10}, [3]uint64{10, 20}, [3]uint64{20, 1<<63 - 1}))
	// The extra bound of the +inf bucket may wrap: the C discards it.
	f("ubinf extra wraps", Spec{DType: voi.CRHist32, Scheme: Lin, LB: 0, UB: 2999999999, StepInc: 3000000000, Flags: UBoundInf}, voi.IntU32,
		histData(voi.CRHist32, 0, [3]uint64{0}, [3]uint64{3000000000}))
	// A step that is 0 in the VOI type leaves the bound where it is, but a
	// first bound above UB ends the generation at once (the C's loop tests
	// the bound before anything else).
	f("stuck above", Spec{DType: voi.CRHist32, Scheme: Lin, LB: 20, UB: 10, StepInc: 1 << 32}, voi.IntU32,
		histData(voi.CRHist32, 0, [3]uint64{20}))
	// USR with lbinf: the -inf bucket ends at the first user bucket.
	f("usr lbinf dr", Spec{DType: voi.DRHist32, Scheme: Usr, Flags: LBoundInf, Buckets: []Bound{{5, 7}, {9, 12}}}, voi.IntU32,
		histData(voi.DRHist32, 0, [3]uint64{0, 5}, [3]uint64{5, 7}, [3]uint64{9, 12}))
	// DV takes each bucket's LB as its value; other flag bits are ignored.
	f("dv", Spec{DType: voi.DVHist32, Scheme: Usr, Flags: 0x100, Buckets: []Bound{{3, 4}, {1, 1}}}, voi.IntU32,
		histData(voi.DVHist32, 0, [3]uint64{3}, [3]uint64{1}))
	// EXP: bucket k is base^(exp+k) wide.
	f("exp", Spec{DType: voi.CRHist64, Scheme: Exp, LB: 1, UB: 20, StepBase: 2, StepExp: 1}, voi.IntU64,
		histData(voi.CRHist64, 0, [3]uint64{1}, [3]uint64{3}, [3]uint64{7}, [3]uint64{15}))
	// LINEXP: 10^e / 5 wide, e the first power above the lower bound.
	f("linexp", Spec{DType: voi.CRHist64, Scheme: LinExp, LB: 0, UB: 12, StepBase: 10, LinStepDiv: 5}, voi.IntU64,
		histData(voi.CRHist64, 0, [3]uint64{0}, [3]uint64{2}, [3]uint64{4}, [3]uint64{6}, [3]uint64{8}, [3]uint64{10}))
	// Q: Q_S32 with 8 fractional bits (control bits 3): 10.0 is 0xA00<<3|3.
	q := func(iv int64) uint64 { return qraw(voi.QS32, 3, iv<<8) }
	f("q lin lbinf ubinf", Spec{DType: voi.DRHist32, Scheme: Lin, LB: q(-10), UB: q(5), StepInc: 10, Flags: LBoundInf | UBoundInf}, voi.QS32,
		histData(voi.DRHist32, 0, [3]uint64{0xFFFFFFF8 | 3, q(-10)}, [3]uint64{q(-10), q(0)}, [3]uint64{q(0), q(10)}, [3]uint64{q(10), 0x7FFFFFF8 | 3}))
	// LINEXP on Q_S32 searches with the 8-byte view of the bound (the C's
	// fall-through into the Q_S64 case): with a high half of 1 the bound 0
	// reads as the s64q 2^21, so the exponent is 7 (10^7/10^6 = 10 wide
	// buckets), where the s32q view would give 10^1/10^6, i.e. 1.
	hi := uint64(1) << 32
	f("q linexp fallthrough", Spec{DType: voi.CRHist32, Scheme: LinExp, LB: hi | q(0), UB: q(25), StepBase: 10, LinStepDiv: 1000000}, voi.QS32,
		histData(voi.CRHist32, 0, [3]uint64{hi | q(0)}, [3]uint64{hi | q(10)}, [3]uint64{hi | q(20)}))
	// From a negative bound the C's Q_QADDI adds in long (Q_SHL's type):
	// -5 + 1 is -4.
	f("q negative add", Spec{DType: voi.DRHist32, Scheme: Lin, LB: q(-5), UB: q(-1048575), StepInc: 1}, voi.QS32,
		histData(voi.DRHist32, 0, [3]uint64{q(-5), q(-4)}))
	// The three cases of issue 12 (sizes from the C: 136, 120, 104 bytes).
	f("issue 12 lin", Spec{DType: voi.CRHist64, Scheme: Lin, LB: 0x80039380, UB: 0x80002720, StepInc: 1000}, voi.QS32,
		histData(voi.CRHist64, 0, [3]uint64{0x80039380}, [3]uint64{0x80031680}, [3]uint64{0x80029980}, [3]uint64{0x80021c80},
			[3]uint64{0x80019f80}, [3]uint64{0x80012280}, [3]uint64{0x8000a580}, [3]uint64{0x80002880}))
	f("issue 12 dv", Spec{DType: voi.DVHist64, Scheme: Lin, LB: 0x8000000003600004, UB: 0x8000000001480004, StepInc: 10}, voi.QS64,
		histData(voi.DVHist64, 0, [3]uint64{0x8000000003600004}, [3]uint64{0x8000000003100004}, [3]uint64{0x8000000002c00004},
			[3]uint64{0x8000000002700004}, [3]uint64{0x8000000002200004}, [3]uint64{0x8000000001d00004}, [3]uint64{0x8000000001800004}))
	f("issue 12 exp", Spec{DType: voi.CRHist32, Scheme: Exp, LB: 0x8001c781, UB: 0x8000cc01, StepBase: 2, StepExp: 3}, voi.QS32,
		histData(voi.CRHist32, 0, [3]uint64{0x8001c781}, [3]uint64{0x8001c381}, [3]uint64{0x8001bb81}, [3]uint64{0x8001ab81},
			[3]uint64{0x80018b81}, [3]uint64{0x80014b81}))
}

// bruteCount runs the C's bucket counting loop for a constant-step spec
// without limits, with big integers for integer types and qmath for Q
// types: the number of buckets, or an error where the C fails (Q overflow)
// or the policy says EINVAL (wrap).
func bruteCount(sp Spec, dt voi.DType) (int, error) {
	if dt.IsQ() {
		b, ub := voi.AsQ(dt, sp.LB), voi.AsQ(dt, sp.UB)
		seen := map[uint64]bool{}
		for n := 1; ; n++ {
			var err error
			if b, err = b.AddI(qmath.U64Int(sp.StepInc)); err != nil {
				return 0, voi.ErrInvalid
			}
			if b.GT(ub) {
				return n, nil
			}
			if seen[b.Raw] {
				return 0, voi.ErrInvalid // the C loops forever
			}
			seen[b.Raw] = true
		}
	}
	w := uint(64)
	if dt.Is32() {
		w = 32
	}
	val := func(x uint64) *big.Int {
		x &= ^uint64(0) >> (64 - w)
		v := new(big.Int).SetUint64(x)
		if dt.Signed() && x>>(w-1) != 0 {
			v.Sub(v, new(big.Int).Lsh(big.NewInt(1), w))
		}
		return v
	}
	lo, hi := new(big.Int), new(big.Int).Lsh(big.NewInt(1), w)
	if dt.Signed() {
		lo.Neg(new(big.Int).Lsh(big.NewInt(1), w-1))
		hi.Lsh(big.NewInt(1), w-1)
	}
	b, ub, step := val(sp.LB), val(sp.UB), val(sp.StepInc)
	for n := 1; ; n++ {
		b.Add(b, step)
		if b.Cmp(lo) < 0 || b.Cmp(hi) >= 0 {
			return 0, voi.ErrInvalid
		}
		if b.Cmp(ub) > 0 {
			return n, nil
		}
	}
}

// TestBuildBeyondBlob checks the closed-form decision between EFBIG and
// EINVAL for generations with more buckets than fit a blob against the
// C's loop run to its end.
func TestBuildBeyondBlob(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	n := 300
	if testing.Short() {
		n = 30
	}
	for i := range n {
		dt := []voi.DType{voi.IntS32, voi.IntU32, voi.IntS64, voi.IntU64, voi.QS32, voi.QU32, voi.QS64, voi.QU64}[i%8]
		nbkts := 3000 + r.IntN(60000)
		sp := Spec{DType: voi.CRHist64, Scheme: Lin, StepInc: uint64(1 + r.IntN(9))}
		o := orderOf(dt)
		// Bounds end either near the type's maximum (overflow or wrap may
		// come first) or, for signed types, near zero (no overflow).
		span := int64(nbkts) * int64(sp.StepInc)
		if dt.IsQ() {
			ctrl := uint64(r.IntN(4)) // up to 8 fractional bits
			nf := o.nf[ctrl]
			imax := int64(o.ifmask>>3) >> nf
			x, ub := imax-int64(r.IntN(1000)), imax-int64(r.IntN(2000))
			if dt.Signed() && r.IntN(2) == 0 {
				x = int64(r.IntN(1000))
				ub = x + int64(r.IntN(1000)) - 500
			}
			lb := x - span
			if lb < 0 && !dt.Signed() {
				lb = 0
			}
			sp.LB = qraw(dt, ctrl, lb<<nf|int64(r.IntN(1<<nf)))
			uctrl := ctrl
			if r.IntN(3) == 0 {
				uctrl = uint64(r.IntN(8)) // UB of another precision
			}
			sp.UB = qraw(dt, uctrl, ub<<o.nf[uctrl])
		} else {
			x, ub := voi.LimitMax(dt)-uint64(r.IntN(1000)), voi.LimitMax(dt)-uint64(r.IntN(2000))
			if dt.Signed() && r.IntN(2) == 0 {
				x = uint64(r.IntN(1000))
				ub = x + uint64(r.IntN(1000)) - 500
			}
			sp.LB, sp.UB = x-uint64(span), ub
		}
		want, wantErr := bruteCount(sp, dt)
		_, err := sp.Build(dt)
		switch {
		case wantErr != nil && !errors.Is(err, voi.ErrInvalid):
			t.Errorf("%v %+v: Build %v, the C's loop fails", dt, sp, err)
		case wantErr == nil && want > 4095 && !errors.Is(err, voi.ErrTooBig):
			t.Errorf("%v %+v: Build %v, the C's loop makes %d buckets", dt, sp, err, want)
		case wantErr == nil && want <= 4095 && err != nil:
			t.Errorf("%v %+v: Build %v, the C's loop makes %d buckets", dt, sp, err, want)
		}
	}
}
