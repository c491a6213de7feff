package tpl

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/statsblob/statsblob/hist"
	"github.com/statsblob/statsblob/qmath"
	"github.com/statsblob/statsblob/voi"
)

// Number is a Go value a histogram bound can be given as: a value of the
// VOI's own Go type (int32 for INT_S32, uint64 for INT_U64, float64 for a
// Q VOI, ...) or any other integer or float that the VOI's type holds
// exactly.
type Number interface {
	~int | ~int32 | ~int64 | ~uint | ~uint32 | ~uint64 | ~float64
}

// num is one bound as given: an integer (signed or not) or a float.
type num struct {
	kind numKind
	i    int64
	u    uint64
	f    float64
}

type numKind uint8

const (
	numInt numKind = iota
	numUint
	numFloat
)

func numOf[T Number](v T) num {
	half := T(1)
	half /= 2
	switch {
	case half != 0: // a float type
		return num{kind: numFloat, f: float64(v)}
	case v < 0:
		return num{kind: numInt, i: int64(v)}
	}
	return num{kind: numUint, u: uint64(v)}
}

func (n num) String() string {
	switch n.kind {
	case numInt:
		return strconv.FormatInt(n.i, 10)
	case numUint:
		return strconv.FormatUint(n.u, 10)
	}
	return strconv.FormatFloat(n.f, 'g', -1, 64)
}

// pattern returns the 8-byte numeric pattern of n as a value of a VOI of
// type dt whose Q values have prec fractional bits (the bits the C's
// stats_ctor_vsd_numeric stores for the same value in C).
func (n num) pattern(dt voi.DType, prec int) (uint64, error) {
	if dt.IsQ() {
		f := n.f
		switch n.kind {
		case numInt:
			f = float64(n.i)
		case numUint:
			f = float64(n.u)
		}
		if n.kind != numFloat && (n.kind == numInt && int64(f) != n.i || n.kind == numUint && (f >= 1<<64 || uint64(f) != n.u)) {
			return 0, fmt.Errorf("bound %v is not exact as a %v value", n, dt)
		}
		if prec < 1 || prec > 64 {
			return 0, fmt.Errorf("bound %v of a %v VOI without a precision (VOIDef.Prec)", n, dt)
		}
		q, err := qmath.FromFloat(voi.QKind(dt), prec, f)
		if err != nil {
			return 0, fmt.Errorf("bound %v does not fit %v at %d fractional bits", n, dt, prec)
		}
		return q.Raw, nil
	}
	var lo, hi float64 // the type's range, for the message
	var i int64
	var u uint64
	neg := false
	switch n.kind {
	case numFloat:
		if n.f != math.Trunc(n.f) || math.IsInf(n.f, 0) || math.IsNaN(n.f) || math.Abs(n.f) >= 1<<63 && !(n.f >= 0 && n.f < 1<<64) {
			return 0, fmt.Errorf("bound %v is not an integer of %v", n, dt)
		}
		if n.f < 0 {
			i, neg = int64(n.f), true
		} else {
			u = uint64(n.f)
		}
	case numInt:
		i, neg = n.i, true
	case numUint:
		u = n.u
	}
	var ok bool
	switch dt {
	case voi.IntS32:
		lo, hi = math.MinInt32, math.MaxInt32
		ok = neg && i >= math.MinInt32 || !neg && u <= math.MaxInt32
	case voi.IntU32:
		lo, hi = 0, math.MaxUint32
		ok = !neg && u <= math.MaxUint32
	case voi.IntS64, voi.IntSLong:
		lo, hi = math.MinInt64, math.MaxInt64
		ok = neg || u <= math.MaxInt64
	case voi.IntU64, voi.IntULong:
		lo, hi = 0, math.MaxUint64
		ok = !neg
	default:
		return 0, fmt.Errorf("VOI data type %v is not numeric", dt)
	}
	if !ok {
		return 0, fmt.Errorf("bound %v is outside %v's range %.0f..%.0f", n, dt, lo, hi)
	}
	if neg {
		return uint64(i), nil // two's complement, sign-extended as the C's int64 argument
	}
	return u, nil
}

// numFromPattern returns the value a pattern holds for a VOI of type dt,
// and whether writing that value back gives the same pattern (it does for
// patterns made from values; not for hand-made bits, e.g. a high half of a
// 32-bit bound that is not the low half's extension).
func numFromPattern(p uint64, dt voi.DType, prec int) (num, bool) {
	var n num
	switch {
	case dt.IsQ():
		n = num{kind: numFloat, f: voi.AsQ(dt, p).Float64()}
	case dt == voi.IntS32:
		n = signedNum(int64(int32(p)))
	case dt == voi.IntU32:
		n = num{kind: numUint, u: uint64(uint32(p))}
	case dt.Signed():
		n = signedNum(int64(p))
	default:
		n = num{kind: numUint, u: p}
	}
	back, err := n.pattern(dt, prec)
	return n, err == nil && back == p
}

func signedNum(i int64) num {
	if i < 0 {
		return num{kind: numInt, i: i}
	}
	return num{kind: numUint, u: uint64(i)}
}

// parseNum reads a JSON number as written: an integer (optionally
// negative) or, with a fraction or exponent, a float.
func parseNum(s string) (num, error) {
	if strings.ContainsAny(s, ".eE") {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsInf(f, 0) {
			return num{}, fmt.Errorf("number %s", s)
		}
		return num{kind: numFloat, f: f}, nil
	}
	if strings.HasPrefix(s, "-") {
		i, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return num{}, fmt.Errorf("number %s is outside -2^63..2^64-1", s)
		}
		return signedNum(i), nil
	}
	u, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return num{}, fmt.Errorf("number %s is outside -2^63..2^64-1", s)
	}
	return num{kind: numUint, u: u}, nil
}

// valueBounds are a histogram's bounds as values of the VOI's type, made
// into the spec's patterns when the VOI is added (its type and precision
// are known then).
type valueBounds struct {
	lb, ub  num
	buckets [][2]num
}

// resolve returns s with its bounds, if given as values, as the patterns of
// a VOI of type dt and precision prec.
func (s StatSpec) resolve(dt voi.DType, prec int) (StatSpec, error) {
	vb := s.values
	if vb == nil {
		return s, nil
	}
	s.values = nil
	h := &s.Hist
	var err error
	if h.Scheme == hist.Usr {
		h.Buckets = make([]hist.Bound, len(vb.buckets))
		for i, b := range vb.buckets {
			if h.Buckets[i].LB, err = b[0].pattern(dt, prec); err != nil {
				return s, fmt.Errorf("histogram bucket %d: %w: %w", i, err, voi.ErrInvalid)
			}
			if h.Buckets[i].UB, err = b[1].pattern(dt, prec); err != nil {
				return s, fmt.Errorf("histogram bucket %d: %w: %w", i, err, voi.ErrInvalid)
			}
		}
		return s, nil
	}
	if h.LB, err = vb.lb.pattern(dt, prec); err != nil {
		return s, fmt.Errorf("histogram lower bound: %w: %w", err, voi.ErrInvalid)
	}
	if h.UB, err = vb.ub.pattern(dt, prec); err != nil {
		return s, fmt.Errorf("histogram upper bound: %w: %w", err, voi.ErrInvalid)
	}
	return s, nil
}

func histValues(h hist.Spec, vb *valueBounds) StatSpec {
	return StatSpec{Type: voi.Hist, Hist: h, values: vb}
}

// HistLin declares a histogram (BKT_LIN) of data type hdt (voi.CRHist32 ..
// voi.DVHist64) whose buckets are step wide, from lb up to the first bucket
// that ends above ub. lb and ub are values of the VOI (-100 for an INT_S32
// VOI, 0.25 for a Q VOI, rounded to its precision); they are checked
// against the VOI's type when the VOI is added (AddVOI: voi.ErrInvalid if
// the type cannot hold them). step is in the VOI's units (whole units for a
// Q VOI, as the C's Q_QADDI adds it).
func HistLin[T Number](hdt voi.DType, lb, ub T, step uint64, flags hist.Flags) StatSpec {
	return histValues(hist.Spec{DType: hdt, Scheme: hist.Lin, Flags: flags, StepInc: step},
		&valueBounds{lb: numOf(lb), ub: numOf(ub)})
}

// HistExp declares a histogram (BKT_EXP) whose bucket k is
// base^(exp+k) wide, from lb up to the first bucket that ends above ub;
// bounds as for HistLin.
func HistExp[T Number](hdt voi.DType, lb, ub T, base, exp uint64, flags hist.Flags) StatSpec {
	return histValues(hist.Spec{DType: hdt, Scheme: hist.Exp, Flags: flags, StepBase: base, StepExp: exp},
		&valueBounds{lb: numOf(lb), ub: numOf(ub)})
}

// HistLinExp declares a histogram (BKT_LINEXP): each power of base is cut
// into linSteps linear buckets, from lb up to the first bucket that ends
// above ub; bounds as for HistLin.
func HistLinExp[T Number](hdt voi.DType, lb, ub T, base, linSteps uint64, flags hist.Flags) StatSpec {
	return histValues(hist.Spec{DType: hdt, Scheme: hist.LinExp, Flags: flags, StepBase: base, LinStepDiv: linSteps},
		&valueBounds{lb: numOf(lb), ub: numOf(ub)})
}

// HistBuckets declares a histogram (BKT_USR) of the given buckets: for a
// CRHIST the lower bounds (a bucket reaches the next one's), for a DVHIST
// the values; values of the VOI as for HistLin. For a DRHIST use
// HistRanges.
func HistBuckets[T Number](hdt voi.DType, flags hist.Flags, bounds ...T) StatSpec {
	vb := &valueBounds{buckets: make([][2]num, len(bounds))}
	for i, b := range bounds {
		vb.buckets[i] = [2]num{numOf(b), numOf(b)}
	}
	return histValues(hist.Spec{DType: hdt, Scheme: hist.Usr, Flags: flags}, vb)
}

// HistRanges declares a DRHIST (BKT_USR) of the given [lower, upper)
// ranges, values of the VOI as for HistLin.
func HistRanges[T Number](hdt voi.DType, flags hist.Flags, ranges ...[2]T) StatSpec {
	vb := &valueBounds{buckets: make([][2]num, len(ranges))}
	for i, r := range ranges {
		vb.buckets[i] = [2]num{numOf(r[0]), numOf(r[1])}
	}
	return histValues(hist.Spec{DType: hdt, Scheme: hist.Usr, Flags: flags}, vb)
}
