package tpl_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/hist"
	"github.com/statsblob/statsblob/qmath"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// TestHistFromValues: a histogram given with values of the VOI's type
// compiles to the bytes of the same histogram given with the C's patterns.
func TestHistFromValues(t *testing.T) {
	neg := func(v int64) uint64 { return uint64(v) }
	q8 := func(iv int64) uint64 { return qmath.Ini(qmath.S64, iv, 8).Raw }
	f := func(name string, dt voi.DType, prec int, typed, raw tpl.StatSpec) {
		t.Helper()
		build := func(s tpl.StatSpec) ([]byte, []tpl.VOIDef) {
			tp, err := tpl.NewRegistry().New("H")
			require.NoError(t, err)
			require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "v", DType: dt, Prec: prec, Stats: []tpl.StatSpec{s}}), name)
			return tp.Bytes(), tp.VOIs()
		}
		gotB, gotD := build(typed)
		wantB, wantD := build(raw)
		require.Equal(t, wantB, gotB, name)
		require.Equal(t, wantD, gotD, name+": the template keeps the patterns")
	}
	f("S64 lin", voi.IntS64, 0, tpl.HistLin(voi.CRHist64, -100, 1000, 50, hist.UBoundInf),
		tpl.Histogram(hist.Spec{DType: voi.CRHist64, Scheme: hist.Lin, LB: neg(-100), UB: 1000, StepInc: 50, Flags: hist.UBoundInf}))
	f("S32 lin", voi.IntS32, 0, tpl.HistLin[int32](voi.DRHist32, -100, 100, 50, 0),
		tpl.Histogram(hist.Spec{DType: voi.DRHist32, Scheme: hist.Lin, LB: neg(-100), UB: 100, StepInc: 50}))
	f("U32 exp", voi.IntU32, 0, tpl.HistExp[uint32](voi.CRHist32, 1, 1000, 2, 0, 0),
		tpl.Histogram(hist.Spec{DType: voi.CRHist32, Scheme: hist.Exp, LB: 1, UB: 1000, StepBase: 2}))
	f("U64 linexp", voi.IntU64, 0, tpl.HistLinExp(voi.CRHist64, 1, 10000, 10, 4, 0),
		tpl.Histogram(hist.Spec{DType: voi.CRHist64, Scheme: hist.LinExp, LB: 1, UB: 10000, StepBase: 10, LinStepDiv: 4}))
	f("Q buckets", voi.QS64, 8, tpl.HistBuckets(voi.CRHist64, 0, -1.0, 0, 2.5),
		tpl.Histogram(hist.Spec{DType: voi.CRHist64, Scheme: hist.Usr, Buckets: []hist.Bound{
			{LB: q8(-1), UB: q8(-1)}, {LB: q8(0), UB: q8(0)}, {LB: q8(2) | 128<<3 /* +0.5 at 8 bits */, UB: q8(2) | 128<<3}}}))
	f("S32 ranges", voi.IntS32, 0, tpl.HistRanges(voi.DRHist32, 0, [2]int{-10, 0}, [2]int{0, 10}),
		tpl.Histogram(hist.Spec{DType: voi.DRHist32, Scheme: hist.Usr, Buckets: []hist.Bound{{LB: neg(-10), UB: 0}, {LB: 0, UB: 10}}}))
}

func TestHistFromValuesErrors(t *testing.T) {
	f := func(dt voi.DType, prec int, s tpl.StatSpec, msg string) {
		t.Helper()
		tp, err := tpl.NewRegistry().New("E")
		require.NoError(t, err)
		err = tp.AddVOI(tpl.VOIDef{ID: 0, Name: "v", DType: dt, Prec: prec, Stats: []tpl.StatSpec{s}})
		require.ErrorIs(t, err, voi.ErrInvalid)
		require.EqualError(t, err, msg)
		require.Equal(t, 32, tp.Size(), "unchanged")
	}
	f(voi.IntU32, 0, tpl.HistLin(voi.CRHist32, -1, 10, 1, 0),
		`tpl: E: add VOI 0 ("v"): histogram lower bound: bound -1 is outside INT_U32's range 0..4294967295: invalid argument`)
	f(voi.IntS32, 0, tpl.HistLin(voi.CRHist32, 0, 1<<31, 1, 0),
		`tpl: E: add VOI 0 ("v"): histogram upper bound: bound 2147483648 is outside INT_S32's range -2147483648..2147483647: invalid argument`)
	f(voi.IntU64, 0, tpl.HistBuckets(voi.CRHist64, 0, 1, 2.5),
		`tpl: E: add VOI 0 ("v"): histogram bucket 1: bound 2.5 is not an integer of INT_U64: invalid argument`)
	f(voi.QS64, 0, tpl.HistBuckets(voi.CRHist64, 0, 1.5),
		`tpl: E: add VOI 0 ("v"): histogram bucket 0: bound 1.5 of a Q_S64 VOI without a precision (VOIDef.Prec): invalid argument`)
	f(voi.QU32, 8, tpl.HistBuckets(voi.CRHist32, 0, -1.5),
		`tpl: E: add VOI 0 ("v"): histogram bucket 0: bound -1.5 does not fit Q_U32 at 8 fractional bits: invalid argument`)
}
