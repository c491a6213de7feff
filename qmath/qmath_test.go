package qmath

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestKind(t *testing.T) {
	tests := []struct {
		k      Kind
		bits   uint
		signed bool
		name   string
	}{
		{S32, 32, true, "s32q_t"},
		{U32, 32, false, "u32q_t"},
		{S64, 64, true, "s64q_t"},
		{U64, 64, false, "u64q_t"},
	}
	for _, tc := range tests {
		require.Equal(t, tc.bits, tc.k.Bits(), tc.name)
		require.Equal(t, tc.signed, tc.k.Signed(), tc.name)
		require.Equal(t, tc.name, tc.k.String())
	}
	// Kind.Int builds an operand of the kind's own C type.
	require.Equal(t, I32(-1), S32.Int(0xFFFFFFFF))
	require.Equal(t, U32Int(0xFFFFFFFF), U32.Int(math.MaxUint64))
	require.Equal(t, I64(-2), S64.Int(math.MaxUint64-1))
	require.Equal(t, U64Int(5), U64.Int(5))
	// New truncates to the kind's width.
	require.Equal(t, Q{Raw: 0x89ABCDEF, Kind: U32}, New(U32, 0x0123456789ABCDEF))
	require.Equal(t, Q{Raw: 0x0123456789ABCDEF, Kind: S64}, New(S64, 0x0123456789ABCDEF))
}

func TestCtrlIni(t *testing.T) {
	tests := []struct{ prec, ctrl int }{
		{1, 0}, {2, 0}, {3, 1}, {4, 1}, {5, 2}, {6, 2}, {7, 3}, {8, 3},
		{9, 4}, {16, 4}, {17, 5}, {32, 5}, {33, 6}, {48, 6}, {49, 7}, {64, 7},
		// Outside 1..64: plain C int arithmetic.
		{0, -1}, {-1, -1}, {-2, -2}, {65, 4}, {129, 12},
	}
	for _, tc := range tests {
		require.Equal(t, tc.ctrl, CtrlIni(tc.prec), "prec %d", tc.prec)
	}
}

func TestNFBits(t *testing.T) {
	want := map[Kind][8]uint{
		S32: {2, 4, 6, 8, 16, 28, 28, 28},
		U32: {2, 4, 6, 8, 16, 29, 29, 29},
		S64: {2, 4, 6, 8, 16, 32, 48, 60},
		U64: {2, 4, 6, 8, 16, 32, 48, 61},
	}
	for k, nfs := range want {
		for ctrl, nf := range nfs {
			q := New(k, 0xFFFFFFFFFFFFFFF8|uint64(ctrl))
			require.Equal(t, nf, q.NFBits(), "%v ctrl %d", k, ctrl)
			require.Equal(t, uint64(ctrl), q.Ctrl())
		}
	}
}

func TestIni(t *testing.T) {
	tests := []struct {
		k    Kind
		iv   int64
		prec int
		raw  uint64
	}{
		{S32, 1, 4, 0x81},
		{S32, -5, 4, 0x80000281},
		{U32, 5, 8, 0x2803},
		{S32, 3, 65, 0x180004}, // CTRLINI(65) = 4: 16 bits
		{S64, 0, 0, 0x7},       // CTRLINI(0) = -1: all control bits
		// FORMAT.md 3.2: 2^12 at 48 bits is 2^60, which reaches the sign bit.
		{S64, 4096, 48, 0x8000000000000006},
		// A negative iv sets bit 31 of an unsigned kind.
		{U32, -1, 2, 0x80000020},
		// 2^26 << 5 lands in the sign bit; 2^27 << 5 leaves the 32 bits.
		{S32, 1 << 26, 2, 0x80000000},
		{S32, 1 << 27, 2, 0x0},
		// No integer bits: the C shifts by the full width (undefined); the
		// integer is lost.
		{U64, 7, 64, 0x7},
		{U32, 7, 32, 0x5},
	}
	for _, tc := range tests {
		q := Ini(tc.k, tc.iv, tc.prec)
		require.Equal(t, New(tc.k, tc.raw), q, "Ini(%v, %d, %d)", tc.k, tc.iv, tc.prec)
	}
}

func TestAccessors(t *testing.T) {
	tests := []struct {
		q                 Q
		ival, fval, ifval uint64
		neg               bool
		abs               uint64
		nf                uint
		f                 float64
	}{
		// -1.5 with 4 fractional bits.
		{New(S32, 0x800000C1), math.MaxUint64, neg64(8), neg64(24), true, 0xC1, 4, -1.5},
		// Bit 31 of an unsigned kind is a magnitude bit.
		{New(U32, 0x80000001), 0x1000000, 0, 0x10000000, false, 0x80000001, 4, 16777216},
		// Negative zero.
		{New(S64, 0x8000000000000006), 0, 0, 0, true, 0x6, 48, 0},
		// 2.25 with 32 fractional bits (scenario 30).
		{New(U64, 0x0000001200000005), 2, 0x40000000, 0x240000000, false, 0x0000001200000005, 32, 2.25},
		// -0.7500152587890625 with 16 (scenario 30's SUM).
		{New(S64, 0x800000000006000c), 0, neg64(49153), neg64(49153), true, 0x6000c, 16, -0.7500152587890625},
		// -0.125 with no integer bits.
		{New(S32, 0x90000005), 0, neg64(1 << 25), neg64(1 << 25), true, 0x10000005, 28, -0.125},
	}
	for _, tc := range tests {
		name := tc.q.String()
		require.Equal(t, tc.ival, tc.q.IntVal(), name)
		require.Equal(t, tc.fval, tc.q.FracVal(), name)
		require.Equal(t, tc.ifval, tc.q.IFVal(), name)
		require.Equal(t, tc.neg, tc.q.IsNeg(), name)
		require.Equal(t, New(tc.q.Kind, tc.abs), tc.q.Abs(), name)
		require.Equal(t, tc.nf, tc.q.NFBits(), name)
		require.Equal(t, tc.f, tc.q.Float64(), name)
		require.False(t, math.Signbit(tc.q.Float64()) && tc.f == 0, name)
	}
}

// neg64 is the two's-complement bit pattern of -v.
func neg64(v int64) uint64 { return uint64(-v) }

func TestIFMaxMin(t *testing.T) {
	tests := []struct {
		k        Kind
		max, min uint64
	}{
		{S32, 0x0FFFFFFF, 0xFFFFFFFFF0000001},
		{U32, 0x1FFFFFFF, 0},
		{S64, 0x0FFFFFFFFFFFFFFF, 0xF000000000000001},
		{U64, 0x1FFFFFFFFFFFFFFF, 0},
	}
	for _, tc := range tests {
		require.Equal(t, tc.max, IFMaxVal(tc.k), "%v", tc.k)
		require.Equal(t, tc.min, IFMinVal(tc.k), "%v", tc.k)
	}
}

func TestSetIFVal(t *testing.T) {
	tests := []struct {
		name string
		q    Q
		ifv  Int
		raw  uint64
	}{
		// The reset values of FORMAT.md section 12 item 2 (control bits added).
		{"s32 min", qv(S32, c4, 0), S32.Int(IFMinVal(S32)), 0xFFFFFFF9},
		{"s32 max", qv(S32, c4, 0), S32.Int(IFMaxVal(S32)), 0x7FFFFFF9},
		{"u32 max", qv(U32, c8, 0), U32.Int(IFMaxVal(U32)), 0xFFFFFFFB},
		{"u32 min", qv(U32, c8, 5), U32.Int(IFMinVal(U32)), 0x3},
		{"s64 min", qv(S64, c16, 0), S64.Int(IFMinVal(S64)), 0xFFFFFFFFFFFFFFFC},
		{"s64 max", qv(S64, c16, 0), S64.Int(IFMaxVal(S64)), 0x7FFFFFFFFFFFFFFC},
		{"u64 max", qv(U64, c32, 0), U64.Int(IFMaxVal(U64)), 0xFFFFFFFFFFFFFFFD},
		// The old value and sign are replaced, the control bits kept.
		{"replace", New(S32, 0x800000C1), I32(3), 0x19},
		// A negative ifv sets bit W-1 even for unsigned kinds.
		{"u32 negative", qv(U32, c4, 0), I32(-1), 0x80000009},
		{"u64 negative", qv(U64, c4, 0), I64(-2), 0x8000000000000011},
		// |INT32_MIN| wraps to itself, whose bits are shifted out of an s32q...
		{"s32 int32 min", qv(S32, c4, 0), I32(math.MinInt32), 0x80000001},
		// ...and sign-extend in an s64q.
		{"s64 int32 min", qv(S64, c16, 0), I32(math.MinInt32), 0xFFFFFFFC00000004},
		{"s64 uint32", qv(S64, c16, 0), U32Int(0x80000000), 0x0000000400000004},
		// A magnitude reaching bit W-1 of a signed kind lands in the sign bit.
		{"s32 into sign", qv(S32, c4, 0), I64(1 << 28), 0x80000001},
		// A wide operand is truncated to q's type.
		{"s32 truncate", qv(S32, c4, 0), U64Int(1<<40 | 5), 0x29},
	}
	for _, tc := range tests {
		require.Equal(t, New(tc.q.Kind, tc.raw), tc.q.SetIFVal(tc.ifv), tc.name)
	}
}

func TestWithCtrl(t *testing.T) {
	q := New(S32, 0x800000C1)
	require.Equal(t, New(S32, 0x800000C3), q.WithCtrl(3))
	require.Equal(t, uint(8), q.WithCtrl(3).NFBits())
	// Like Q_SCVAL, bits above the control bits are OR'ed in.
	require.Equal(t, New(S32, 0x800001C0), q.WithCtrl(0x100))
	require.Equal(t, New(U32, 0x800000C0), New(U32, 0x800000C1).WithCtrl(1<<40))
}

func TestCompare(t *testing.T) {
	s := func(x float64) Q { return qv(S64, c16, fx(x, 16)) }
	tests := []struct {
		name               string
		a, b               Q
		lt, le, gt, ge, eq bool
	}{
		{"1.5 2.25", s(1.5), s(2.25), true, true, false, false, false},
		{"2.25 1.5", s(2.25), s(1.5), false, false, true, true, false},
		{"1.5 1.5", s(1.5), s(1.5), false, true, false, true, true},
		{"-2 1", s(-2), s(1), true, true, false, false, false},
		{"1 -2", s(1), s(-2), false, false, true, true, false},
		{"-1.5 -1.25", s(-1.5), s(-1.25), true, true, false, false, true},
		{"-0.5 0.25", s(-0.5), s(0.25), true, true, false, false, true},
		{"-0 +0", negQ(s(0)), s(0), false, true, false, true, true},
		// Q_QEQ only compares the integer parts.
		{"1.25 1.5", s(1.25), s(1.5), true, true, false, false, true},
		// Bit 31 of a u32q is a magnitude bit.
		{"u32 big", New(U32, 0x80000003), qv(U32, c8, 256), false, false, true, true, false},
		{"u32", qv(U32, c8, 3), qv(U32, c8, 2), false, false, true, true, true},
		{"s32", qv(S32, c4, -1), qv(S32, c4, 1), true, true, false, false, true},
		{"u64", qv(U64, c32, 5<<32), qv(U64, c32, 4<<32|1), false, false, true, true, false},
		// Different precisions compare the raw fraction values (1.5 vs 1.25).
		{"mixed nf", qv(S64, c4, 24), s(1.25), true, true, false, false, true},
	}
	for _, tc := range tests {
		require.Equal(t, tc.lt, tc.a.LT(tc.b), "%s LT", tc.name)
		require.Equal(t, tc.le, tc.a.LE(tc.b), "%s LE", tc.name)
		require.Equal(t, tc.gt, tc.a.GT(tc.b), "%s GT", tc.name)
		require.Equal(t, tc.ge, tc.a.GE(tc.b), "%s GE", tc.name)
		require.Equal(t, tc.eq, tc.a.EQ(tc.b), "%s EQ", tc.name)
	}
}

// opCase is one operation with its expected result and error. For
// ErrInvalid/ErrOverflow the expected result is usually the unchanged
// receiver.
type opCase struct {
	name string
	op   func() (Q, error)
	want Q
	err  error
}

func runOps(t *testing.T, tests []opCase) {
	t.Helper()
	for _, tc := range tests {
		got, err := tc.op()
		if tc.err == nil {
			require.NoError(t, err, tc.name)
		} else {
			require.ErrorIs(t, err, tc.err, tc.name)
		}
		require.Equal(t, tc.want, got, "%s: got %v want %v", tc.name, got, tc.want)
	}
}

// s16 is an s64q with 16 fractional bits, u8 a u32q with 8, s4 an s32q
// with 4 and u32 a u64q with 32.
func s16(x float64) Q { return qv(S64, c16, fx(x, 16)) }
func u8(x float64) Q  { return qv(U32, c8, fx(x, 8)) }
func s4(x float64) Q  { return qv(S32, c4, fx(x, 4)) }
func u32(x float64) Q { return qv(U64, c32, fx(x, 32)) }

func TestAddSubQ(t *testing.T) {
	s32max := qv(S32, c4, 1<<28-1)
	s32min := qv(S32, c4, -(1<<28 - 1))
	u32max := qv(U32, c4, 1<<29-1)
	runOps(t, []opCase{
		{"s64 1.5+2.25", func() (Q, error) { return s16(1.5).AddQ(s16(2.25)) }, s16(3.75), nil},
		{"s64 1.5+-2.25", func() (Q, error) { return s16(1.5).AddQ(s16(-2.25)) }, s16(-0.75), nil},
		{"s64 1.5-2.25", func() (Q, error) { return s16(1.5).SubQ(s16(2.25)) }, s16(-0.75), nil},
		{"s64 -1.5--1.5", func() (Q, error) { return s16(-1.5).SubQ(s16(-1.5)) }, s16(0), nil},
		{"s32 0.5+-0.5", func() (Q, error) { return s4(0.5).AddQ(s4(-0.5)) }, s4(0), nil},
		{"s32 -0+1", func() (Q, error) { return negQ(s4(0)).AddQ(s4(1)) }, s4(1), nil},
		{"u32 3.75+1/256", func() (Q, error) { return u8(3.75).AddQ(u8(1.0 / 256)) }, New(U32, 0x1e0b), nil},
		{"u64 100.5+2.25", func() (Q, error) { return u32(100.5).AddQ(u32(2.25)) }, u32(102.75), nil},
		{"u64 5-2.25", func() (Q, error) { return u32(5).SubQ(u32(2.25)) }, u32(2.75), nil},
		// Largest values still fit, one more raw unit overflows.
		{"s32 max", func() (Q, error) { return qv(S32, c4, 1<<28-2).AddQ(qv(S32, c4, 1)) }, s32max, nil},
		{"s32 max+1", func() (Q, error) { return s32max.AddQ(qv(S32, c4, 1)) }, s32max, ErrOverflow},
		{"s32 min-1", func() (Q, error) { return s32min.SubQ(qv(S32, c4, 1)) }, s32min, ErrOverflow},
		{"s32 min+-1", func() (Q, error) { return s32min.AddQ(qv(S32, c4, -1)) }, s32min, ErrOverflow},
		{"s32 min--1", func() (Q, error) { return s32min.SubQ(qv(S32, c4, -1)) }, qv(S32, c4, -(1<<28 - 2)), nil},
		{"u32 max+1", func() (Q, error) { return u32max.AddQ(qv(U32, c4, 1)) }, u32max, ErrOverflow},
		{"u32 1-2", func() (Q, error) { return u8(1).SubQ(u8(2)) }, u8(1), ErrOverflow},
		{"u32 2-2", func() (Q, error) { return u8(2).SubQ(u8(2)) }, u8(0), nil},
		// Q_NORMPREC does not normalise: different precisions are ERANGE.
		{"prec add", func() (Q, error) { return s16(1).AddQ(qv(S64, c32, 1)) }, s16(1), ErrRange},
		{"prec sub", func() (Q, error) { return s4(1).SubQ(qv(S32, c8, 1)) }, s4(1), ErrRange},
	})

	// Scenario 30's SUM: 1.5 - 2.25 + raw:-1 at 16 bits.
	sum := qv(S64, c16, 0)
	for _, v := range []Q{s16(1.5), s16(-2.25), qv(S64, c16, -1)} {
		var err error
		sum, err = sum.AddQ(v)
		require.NoError(t, err)
	}
	require.Equal(t, New(S64, 0x800000000006000c), sum)
	require.Equal(t, "-0.7500152587890625", sum.String())
}

func TestMulQ(t *testing.T) {
	big := qv(S32, c4, 1<<14)
	runOps(t, []opCase{
		{"1.5*2.5", func() (Q, error) { return s16(1.5).MulQ(s16(2.5)) }, s16(3.75), nil},
		{"-1.5*2.5", func() (Q, error) { return s16(-1.5).MulQ(s16(2.5)) }, s16(-3.75), nil},
		{"-1.5*-2.5", func() (Q, error) { return s16(-1.5).MulQ(s16(-2.5)) }, s16(3.75), nil},
		{"1.5*0", func() (Q, error) { return s16(1.5).MulQ(s16(0)) }, s16(0), nil},
		{"u32 1.5*2.5", func() (Q, error) { return u8(1.5).MulQ(u8(2.5)) }, u8(3.75), nil},
		{"u64 0.25*0.25", func() (Q, error) { return u32(0.25).MulQ(u32(0.25)) }, u32(0.0625), nil},
		// With 32 fractional bits the raw product 3·2^32 · 2^30 exceeds
		// 2^61-1 although 0.75 would fit.
		{"u64 3*0.25", func() (Q, error) { return u32(3).MulQ(u32(0.25)) }, u32(3), ErrOverflow},
		// The scaled product is shifted arithmetically: rounds toward -inf.
		{"-1/16*1/2", func() (Q, error) { return s4(-0.0625).MulQ(s4(0.5)) }, s4(-0.0625), nil},
		{"1/16*1/2", func() (Q, error) { return s4(0.0625).MulQ(s4(0.5)) }, s4(0), nil},
		// The overflow test is on the raw product before scaling back.
		{"raw overflow", func() (Q, error) { return big.MulQ(big) }, big, ErrOverflow},
		{"raw fits", func() (Q, error) { return big.MulQ(qv(S32, c4, 1<<14-1)) }, qv(S32, c4, 1<<24-1<<10), nil},
		{"unsigned*negative", func() (Q, error) { return u8(1.5).MulQ(qv(S32, c8, -1)) }, u8(1.5), ErrInvalid},
		{"prec", func() (Q, error) { return s16(1.5).MulQ(s4(1)) }, s16(1.5), ErrRange},
	})
}

func TestDivQ(t *testing.T) {
	runOps(t, []opCase{
		// Q_QDIVQ computes (int(a)·2^nf)/b + (frac(a)·2^nf)/frac(b), which
		// is not a/b: 3/2 gives one raw unit.
		{"3/2", func() (Q, error) { return s16(3).DivQ(s16(2)) }, qv(S64, c16, 1), nil},
		{"-3/2", func() (Q, error) { return s16(-3).DivQ(s16(2)) }, qv(S64, c16, -1), nil},
		{"0.75/0.5", func() (Q, error) { return s16(0.75).DivQ(s16(0.5)) }, s16(1.5), nil},
		{"1.5/0.5", func() (Q, error) { return s16(1.5).DivQ(s16(0.5)) }, qv(S64, c16, 65538), nil},
		{"-1.5/0.5", func() (Q, error) { return s16(-1.5).DivQ(s16(0.5)) }, qv(S64, c16, -65538), nil},
		{"1.5/-0.5", func() (Q, error) { return s16(1.5).DivQ(s16(-0.5)) }, qv(S64, c16, -65538), nil},
		{"u32 0.75/0.5", func() (Q, error) { return u8(0.75).DivQ(u8(0.5)) }, u8(1.5), nil},
		{"0/3", func() (Q, error) { return s16(0).DivQ(s16(3)) }, s16(0), nil},
		{"-0/3", func() (Q, error) { return negQ(s16(0)).DivQ(s16(3)) }, negQ(s16(0)), nil},
		{"1/0", func() (Q, error) { return s16(1).DivQ(s16(0)) }, s16(1), ErrInvalid},
		{"1/-0", func() (Q, error) { return s16(1).DivQ(negQ(s16(0))) }, s16(1), ErrInvalid},
		{"unsigned/negative", func() (Q, error) { return u32(1).DivQ(qv(S64, c32, -1)) }, u32(1), ErrInvalid},
		{"prec", func() (Q, error) { return s16(1).DivQ(s4(1)) }, s16(1), ErrRange},
	})
}

func TestAddSubI(t *testing.T) {
	s32top := qv(S32, c4, (1<<24-1)<<4)
	s32bot := qv(S32, c4, -(1<<24-1)<<4)
	runOps(t, []opCase{
		{"1.5+2", func() (Q, error) { return s16(1.5).AddI(I32(2)) }, s16(3.5), nil},
		{"1.5+-2", func() (Q, error) { return s16(1.5).AddI(I32(-2)) }, s16(-0.5), nil},
		{"1.5-2", func() (Q, error) { return s16(1.5).SubI(I32(2)) }, s16(-0.5), nil},
		{"1.5--2", func() (Q, error) { return s16(1.5).SubI(I64(-2)) }, s16(3.5), nil},
		{"-0.5+1", func() (Q, error) { return s4(-0.5).AddI(I32(1)) }, s4(0.5), nil},
		{"0.5-1", func() (Q, error) { return s4(0.5).SubI(I32(1)) }, s4(-0.5), nil},
		{"u64 1.5+3", func() (Q, error) { return u32(1.5).AddI(U64Int(3)) }, u32(4.5), nil},
		{"u32 2.5-2", func() (Q, error) { return u8(2.5).SubI(U32Int(2)) }, u8(0.5), nil},
		{"s32 top", func() (Q, error) { return qv(S32, c4, (1<<24-2)<<4).AddI(I32(1)) }, s32top, nil},
		{"s32 top+1", func() (Q, error) { return s32top.AddI(I32(1)) }, s32top, ErrOverflow},
		{"s32 bottom-1", func() (Q, error) { return s32bot.SubI(I32(1)) }, s32bot, ErrOverflow},
		{"u32 0-1", func() (Q, error) { return u8(0).SubI(U32Int(1)) }, u8(0), ErrOverflow},
		// |i| wider than q: flsll(Q_ABS(i)) > 32.
		{"s32 +2^32", func() (Q, error) { return s4(1).AddI(U64Int(1 << 32)) }, s4(1), ErrOverflow},
		// |INT32_MIN| wraps negative and sign-extends to 64 bits in flsll.
		{"s32 +INT32_MIN", func() (Q, error) { return s4(1).AddI(I32(math.MinInt32)) }, s4(1), ErrOverflow},
		// For 64-bit q it passes, and the negative |i| scaled by Q_SHL
		// (fixed: exactly) is subtracted: INT32_MIN moves q up by 2^31.
		{"s64 +INT32_MIN", func() (Q, error) { return s16(1).AddI(I32(math.MinInt32)) }, qv(S64, c16, (1<<31+1)<<16), nil},
		{"s64 -INT32_MIN", func() (Q, error) { return s16(1).SubI(I32(math.MinInt32)) }, qv(S64, c16, -(1<<31-1)<<16), nil},
		// The range test wraps in q's type: a huge unsigned i passes and
		// the sum wraps (1 + (2^64-1) = 0).
		{"u64 wrap", func() (Q, error) { return qv(U64, c2, 4).AddI(U64Int(math.MaxUint64)) }, qv(U64, c2, 0), nil},
		// An unsigned int operand makes the range test unsigned for an
		// s32q: the underflow goes unnoticed. The difference is computed
		// in long (Q_SHL's type), -30 - 19546339·16 raw units, and its
		// magnitude does not fit the 28 bits: stored truncated, negative.
		{"s32 -uint32", func() (Q, error) { return s4(-1.875).SubI(U32Int(19546339)) }, New(S32, 0x95207271), nil},
		// Q_SHL is a long for 32-bit q: a negative bound plus a step stays
		// negative (the C's bucket generation from negative Q bounds).
		{"s32 -911+8", func() (Q, error) { return s4(-911).AddI(U64Int(8)) }, s4(-903), nil},
		{"s32 -1+2", func() (Q, error) { return s4(-1).AddI(U64Int(2)) }, s4(1), nil},
		{"u32 0.5+uint64 3", func() (Q, error) { return u8(0.5).AddI(U64Int(3)) }, u8(3.5), nil},
		{"s64 -5+uint64 2", func() (Q, error) { return s16(-5).AddI(U64Int(2)) }, s16(-3), nil},
		// With a uint64 operand the range test is unsigned: 1 - 1 "overflows".
		{"s32 1-uint64 1", func() (Q, error) { return s4(1).SubI(U64Int(1)) }, s4(1), ErrOverflow},
		{"s64 1-uint64 1", func() (Q, error) { return s16(1).SubI(U64Int(1)) }, s16(1), ErrOverflow},
		{"s64 1-uint32 1", func() (Q, error) { return s16(1).SubI(U32Int(1)) }, s16(0), nil},
	})
}

func TestMulI(t *testing.T) {
	big := qv(S32, c4, 1<<24)
	runOps(t, []opCase{
		{"1.5*3", func() (Q, error) { return s16(1.5).MulI(U64Int(3)) }, s16(4.5), nil},
		{"1.5*-3", func() (Q, error) { return s16(1.5).MulI(I64(-3)) }, s16(-4.5), nil},
		{"-1.5*-2", func() (Q, error) { return s16(-1.5).MulI(I32(-2)) }, s16(3), nil},
		{"-1.5*0", func() (Q, error) { return s4(-1.5).MulI(I32(0)) }, s4(0), nil},
		{"u32 1.5*4", func() (Q, error) { return u8(1.5).MulI(U32Int(4)) }, u8(6), nil},
		{"u32*negative", func() (Q, error) { return u8(1.5).MulI(I32(-1)) }, u8(1.5), ErrInvalid},
		{"overflow", func() (Q, error) { return big.MulI(I32(16)) }, big, ErrOverflow},
		{"fits", func() (Q, error) { return qv(S32, c4, 1<<24-1).MulI(I32(16)) }, qv(S32, c4, 1<<28-16), nil},
		// i is converted to q's type: 2^32+2 acts as 2 for an s32q...
		{"truncated", func() (Q, error) { return s4(1.5).MulI(U64Int(1<<32 | 2)) }, s4(3), nil},
		// ...and 2^32 as 0, where the C divides by zero.
		{"zero divisor", func() (Q, error) { return s4(1.5).MulI(U64Int(1 << 32)) }, s4(1.5), ErrOverflow},
	})
}

func TestDivI(t *testing.T) {
	runOps(t, []opCase{
		{"4.5/3", func() (Q, error) { return s16(4.5).DivI(U64Int(3)) }, s16(1.5), nil},
		{"-4.5/3", func() (Q, error) { return s16(-4.5).DivI(I32(3)) }, s16(-1.5), nil},
		{"4.5/-3", func() (Q, error) { return s16(4.5).DivI(I32(-3)) }, s16(-1.5), nil},
		{"1/3", func() (Q, error) { return s16(1).DivI(I32(3)) }, qv(S64, c16, 21845), nil},
		{"-1/3", func() (Q, error) { return s16(-1).DivI(I32(3)) }, qv(S64, c16, -21845), nil},
		{"u32 3/2", func() (Q, error) { return u8(3).DivI(U32Int(2)) }, u8(1.5), nil},
		// Underflow stores the zero (sign cleared) and reports ERANGE.
		{"underflow", func() (Q, error) { return qv(S64, c16, 1).DivI(I32(2)) }, s16(0), ErrRange},
		{"negative underflow", func() (Q, error) { return qv(S64, c16, -1).DivI(I32(2)) }, s16(0), ErrRange},
		// A uint64 of 2^63 is negative in an s64q.
		{"2^63", func() (Q, error) { return s16(1.5).DivI(U64Int(1 << 63)) }, s16(0), ErrRange},
		{"0/5", func() (Q, error) { return s16(0).DivI(I32(5)) }, s16(0), nil},
		{"-0/5", func() (Q, error) { return negQ(s16(0)).DivI(I32(5)) }, negQ(s16(0)), nil},
		{"/0", func() (Q, error) { return s16(1).DivI(I32(0)) }, s16(1), ErrInvalid},
		{"u32/negative", func() (Q, error) { return u8(1).DivI(I32(-1)) }, u8(1), ErrInvalid},
		// 2^32 converts to 0 in an s32q, where the C divides by zero.
		{"zero divisor", func() (Q, error) { return s4(1.5).DivI(U64Int(1 << 32)) }, s4(1.5), ErrInvalid},
	})
}

func TestFracI(t *testing.T) {
	z := s16(-1.5) // any receiver: only its control bits matter
	runOps(t, []opCase{
		{"1/2", func() (Q, error) { return z.FracI(I32(1), I32(2)) }, s16(0.5), nil},
		{"-1/2", func() (Q, error) { return z.FracI(I32(-1), I32(2)) }, s16(-0.5), nil},
		{"1/-2", func() (Q, error) { return z.FracI(I32(1), I32(-2)) }, s16(-0.5), nil},
		{"-1/-2", func() (Q, error) { return z.FracI(I32(-1), I32(-2)) }, s16(0.5), nil},
		{"7/2", func() (Q, error) { return z.FracI(U64Int(7), U64Int(2)) }, s16(3.5), nil},
		{"1/3", func() (Q, error) { return z.FracI(U64Int(1), U64Int(3)) }, qv(S64, c16, 21845), nil},
		{"u64q 3/4", func() (Q, error) { return u32(9).FracI(U64Int(3), U64Int(4)) }, u32(0.75), nil},
		{"0/5", func() (Q, error) { return z.FracI(I32(0), I32(5)) }, s16(0), nil},
		{"1/0", func() (Q, error) { return z.FracI(I32(1), I32(0)) }, z, ErrInvalid},
		{"underflow", func() (Q, error) { return z.FracI(U64Int(1), U64Int(1<<20)) }, s16(0), ErrRange},
		// |INT32_MIN| as a divisor sign-extends to a huge uint64: the result
		// underflows, negative.
		{"1/INT32_MIN", func() (Q, error) { return z.FracI(I32(1), I32(math.MinInt32)) }, negQ(s16(0)), ErrRange},
		// |n| must fit UINT64_MAX >> (3+nf) ...
		{"n too big", func() (Q, error) { return z.FracI(U64Int(1<<45), U64Int(1)) }, z, ErrOverflow},
		{"n INT32_MIN", func() (Q, error) { return z.FracI(I32(math.MinInt32), I32(1)) }, z, ErrOverflow},
		// ... and the quotient's integer bits, still in raw position, must
		// not exceed the integer maximum 2^44-1 (the C's test).
		{"raw int bits", func() (Q, error) { return z.FracI(U64Int(1<<28), U64Int(1)) }, z, ErrOverflow},
		{"raw int bits ok", func() (Q, error) { return z.FracI(U64Int(1<<27), U64Int(1)) }, s16(1 << 27), nil},
		// n is converted to q's type before the shift: 2^28 << 4 wraps to 0
		// in an s32q's int, so 2^28/2^28 underflows...
		{"s32 wrap", func() (Q, error) { return s4(1).FracI(U64Int(1<<28), U64Int(1<<28)) }, s4(0), ErrRange},
		// ... and 2^27 << 4 becomes INT32_MIN, sign-extended: overflow.
		{"s32 sign", func() (Q, error) { return s4(1).FracI(I32(1<<27), I32(1<<27)) }, s4(1), ErrOverflow},
		// Unsigned kinds ignore the signs (Q_SSIGN clears bit W-1).
		{"u32 -1/2", func() (Q, error) { return qv(U32, c2, 0).FracI(I32(-1), I32(2)) }, qv(U32, c2, 2), nil},
		// ... even where bit W-1 is a magnitude bit: 0.5 with 29 bits.
		{"u32 1/2 no int bits", func() (Q, error) { return qv(U32, c32, 0).FracI(I32(1), I32(2)) }, qv(U32, c32, 0), nil},
		{"u32 1/4 no int bits", func() (Q, error) { return qv(U32, c32, 0).FracI(I32(1), I32(4)) }, qv(U32, c32, 1<<27), nil},
	})
}

func TestCpyValI(t *testing.T) {
	runOps(t, []opCase{
		{"-5", func() (Q, error) { return s16(9).CpyValI(I32(-5)) }, s16(-5), nil},
		{"u32 5", func() (Q, error) { return u8(9).CpyValI(U64Int(5)) }, u8(5), nil},
		// Defects 1b and 1c: INT32_MIN fits an s64q with 16 fractional bits
		// and is scaled without overflowing an int32.
		{"INT32_MIN", func() (Q, error) { return s16(0).CpyValI(I32(math.MinInt32)) }, qv(S64, c16, -(1 << 47)), nil},
		{"-1 at 32 bits", func() (Q, error) { return qv(S64, c32, 0).CpyValI(I32(-1)) }, qv(S64, c32, -(1 << 32)), nil},
		{"-5 in s32q", func() (Q, error) { return s4(0).CpyValI(I64(-5)) }, s4(-5), nil},
		// Defect 1b: INT32_MIN does not fit 2^12-1, INT64_MIN no s64q.
		{"INT32_MIN overflow", func() (Q, error) { return qv(S64, c48, 0).CpyValI(I32(math.MinInt32)) }, qv(S64, c48, 0), ErrOverflow},
		{"INT64_MIN", func() (Q, error) { return s16(1).CpyValI(I64(math.MinInt64)) }, s16(1), ErrOverflow},
		{"unsigned negative", func() (Q, error) { return u32(1).CpyValI(I32(-1)) }, u32(1), ErrOverflow},
		{"s32 max", func() (Q, error) { return s4(0).CpyValI(I64(1<<24 - 1)) }, s4(1<<24 - 1), nil},
		{"s32 max+1", func() (Q, error) { return s4(0).CpyValI(I64(1 << 24)) }, s4(0), ErrOverflow},
		{"s64 max+1", func() (Q, error) { return s16(0).CpyValI(U64Int(1 << 44)) }, s16(0), ErrOverflow},
		{"no int bits 0", func() (Q, error) { return qv(S32, c32, 3).CpyValI(I32(0)) }, qv(S32, c32, 0), nil},
		{"no int bits 1", func() (Q, error) { return qv(S32, c32, 3).CpyValI(I32(1)) }, qv(S32, c32, 3), ErrOverflow},
	})
}

func TestCpyValQ(t *testing.T) {
	runOps(t, []opCase{
		// The raw fraction is copied unscaled: 1.5 at 8 bits is 128/256,
		// which becomes 128/65536 (FORMAT.md section 12).
		{"s32/8 to s64/16", func() (Q, error) { return s16(7).CpyValQ(qv(S32, c8, 384)) }, qv(S64, c16, 65536+128), nil},
		{"u32/8 to s64/16", func() (Q, error) { return s16(7).CpyValQ(u8(1.5)) }, qv(S64, c16, 65536+128), nil},
		{"s32/4 to s64/16", func() (Q, error) { return s16(0).CpyValQ(s4(-2.625)) }, qv(S64, c16, -(2<<16 + 10)), nil},
		{"u64/32 to s64/32", func() (Q, error) { return qv(S64, c32, 0).CpyValQ(u32(2.25)) }, qv(S64, c32, fx(2.25, 32)), nil},
		{"s64/4 to s32/4", func() (Q, error) { return s4(0).CpyValQ(qv(S64, c4, 56)) }, s4(3.5), nil},
		{"s64/4 max to s32/4", func() (Q, error) { return s4(0).CpyValQ(qv(S64, c4, 1<<28-1)) }, qv(S32, c4, 1<<28-1), nil},
		{"s64/16 -0.5 to s32/16", func() (Q, error) { return qv(S32, c16, 0).CpyValQ(s16(-0.5)) }, qv(S32, c16, -32768), nil},
		{"-0 to s32", func() (Q, error) { return qv(S32, c16, 5).CpyValQ(negQ(s16(0))) }, qv(S32, c16, 0), nil},
		// Defect 1: narrowing fails exactly when the value does not fit.
		{"fraction too wide", func() (Q, error) { return s4(1).CpyValQ(s16(1.5)) }, s4(1), ErrOverflow},
		{"integer too big", func() (Q, error) { return s4(1).CpyValQ(qv(S64, c4, 1<<28)) }, s4(1), ErrOverflow},
		{"negative to unsigned", func() (Q, error) { return u32(1).CpyValQ(s16(-0.5)) }, u32(1), ErrOverflow},
		{"-0 to unsigned", func() (Q, error) { return u32(1).CpyValQ(negQ(s16(0))) }, u32(1), ErrOverflow},
	})
}

func TestCloneQ(t *testing.T) {
	runOps(t, []opCase{
		// Defect 1: s32q -> s64q always succeeds (the t-digest's compression).
		{"s32 to s64", func() (Q, error) { return CloneQ(S64, s4(-2.625)) }, qv(S64, c4, -42), nil},
		{"s32 1000 to s64", func() (Q, error) { return CloneQ(S64, s4(1000)) }, qv(S64, c4, 16000), nil},
		{"-0 to s64", func() (Q, error) { return CloneQ(S64, negQ(s4(0))) }, qv(S64, c4, 0), nil},
		{"u64 to u32", func() (Q, error) { return CloneQ(U32, qv(U64, c8, 960)) }, u8(3.75), nil},
		{"s64 to s32", func() (Q, error) { return CloneQ(S32, s16(-1.5)) }, qv(S32, c16, -98304), nil},
		// Same control bits, different caps: the raw value is kept, so
		// 0.5 at 28 bits becomes 2^-33 at 60.
		{"28 to 60 bits", func() (Q, error) { return CloneQ(S64, qv(S32, c64, 1<<27)) }, qv(S64, c64, 1<<27), nil},
		{"60 to 28 bits", func() (Q, error) { return CloneQ(S32, qv(S64, c64, 1<<59)) }, New(S32, c64), ErrOverflow},
		{"u64/32 to u32/29", func() (Q, error) { return CloneQ(U32, u32(0.5)) }, New(U32, c32), ErrOverflow},
		{"too big", func() (Q, error) { return CloneQ(S32, New(U32, 0x80000003)) }, New(S32, c8), ErrOverflow},
		{"negative to unsigned", func() (Q, error) { return CloneQ(U64, s4(-1)) }, New(U64, c4), ErrOverflow},
	})
}

func TestAppendText(t *testing.T) {
	zeros := strings.Repeat("0", 59)
	tests := []struct {
		q    Q
		text string
	}{
		{New(S32, 0xC1), "1.5000"}, // 1 | 24<<3
		{s4(-1.5), "-1.5000"},
		{negQ(s4(0)), "-0.0000"},
		{qv(S32, c2, 0), "0.00"},
		{qv(S32, c2, 1), "0.25"},
		{qv(S32, c2, -5), "-1.25"},
		{qv(S32, c8, 1), "0.00390625"},
		{New(U32, 0x1e0b), "3.75390625"},
		{New(U32, 0x80000001), "16777216.0000"},
		{qv(S32, c16, 1), "0.0000152587890625"},
		{qv(S64, c16, 1<<60-1), "17592186044415.9999847412109375"},
		{qv(U64, c32, 1<<61-1), "536870911.99999999976716935634613037109375"},
		{qv(U64, c2, 1<<61-1), "576460752303423487.75"},
		{qv(U32, c8, 1<<29-1), "2097151.99609375"},
		{qv(S32, c4, -(1<<28 - 1)), "-16777215.9375"},
		// Defect 1d: no integer bits, still one integer digit.
		{qv(S32, c32, 1<<28-1), "0.9999999962747097015380859375"},
		{New(U32, 0xc0000005), "0.75000000000000000000000000000"},
		{New(S32, 0x90000005), "-0.1250000000000000000000000000"},
		{qv(S64, c64, 1<<59), "0.5" + zeros},
		{negQ(qv(S64, c48, 0)), "-0." + strings.Repeat("0", 48)},
		{qv(U64, c64, 1), "0.0000000000000000004336808689942017736029811203479766845703125"},
		{qv(U64, c64, 1<<61-1), "0.9999999999999999995663191310057982263970188796520233154296875"},
	}
	for _, tc := range tests {
		require.Equal(t, tc.text, tc.q.String(), "raw %#x", tc.q.Raw)
		require.Equal(t, "x="+tc.text, string(tc.q.AppendText([]byte("x="))))
	}
}

func TestFloat64(t *testing.T) {
	require.Equal(t, 1.5, New(S32, 0xC1).Float64())
	require.Equal(t, -0.7500152587890625, New(S64, 0x800000000006000c).Float64())
	require.Equal(t, 0.75, New(U32, 0xc0000005).Float64())
	require.Equal(t, float64(1<<61-1)/4, qv(U64, c2, 1<<61-1).Float64())
}
