package hist

import (
	"fmt"
	"math/bits"

	"github.com/statsblob/statsblob/voi"
)

// qline is a Q generation with a constant step (Lin, or Exp with base 1)
// seen through the signed combined integer/fraction values v (Q_GIFVAL) of
// its bounds, which all have the first bound's control bits (Q_QADDI keeps
// them) and, for 32-bit kinds, its high half.
//
// What the C's loop does next depends on v only: whether the step fails
// (Q_QADDI's checks: the step has more bits than the Q, or the integer part
// exceeds IMAXVAL - step in the Q's C type) holds from a threshold on
// (ethr), as does whether a bound is above UB (above t); and the next bound
// is the store (Q_SIFVAL) of v + d, d being Q_SHL of the step. Where v + d
// fits the magnitude field that is plain addition, so the loop advances
// through runs of additions in O(1) each; only a sum that overflows the
// field (whose bits are then lost, or reach the sign bit) is stored as the
// C stores it, one step at a time. For the unsigned kinds that store is a
// rotation of the ring of values and the whole loop is decided in closed
// form (firstHit).
type qline struct {
	g          *gen
	step       uint64
	fixed      uint64 // the control bits and (32-bit kinds) the high half of every bound
	sign       uint64 // the sign bit (0 for the unsigned kinds)
	vmin, vmax int64  // the values of the magnitude field: [-M, M] or [0, M]
	ethr       int64  // the least v whose step fails; vmax+1 if none does
	t          int64  // the greatest v not above UB; vmin-1 if every v is
}

func newQline(g *gen, b, step uint64) *qline {
	o := g.o
	l := &qline{g: g, step: step, fixed: b & 7, sign: o.sign}
	if g.dt.Is32() {
		l.fixed |= b &^ 0xFFFFFFFF
	}
	l.vmax = int64(o.ifmask >> 3)
	if o.sign != 0 {
		l.vmin = -l.vmax
	}
	// Both predicates hold from a threshold on: the step fails when the
	// integer part (monotone in v) exceeds a constant, and Q_QGTQ
	// compares (integer part, fraction) pairs, which order v.
	l.ethr = l.least(func(v int64) bool { _, _, err := g.add(l.raw(v), step); return err != nil })
	l.t = l.least(func(v int64) bool { return g.above(l.raw(v)) }) - 1
	return l
}

// least returns the least v in [vmin, vmax] for which the monotone
// predicate p holds, or vmax+1.
func (l *qline) least(p func(int64) bool) int64 {
	lo, hi := l.vmin, l.vmax+1
	for lo < hi {
		m := lo + (hi-lo)/2
		if p(m) {
			hi = m
		} else {
			lo = m + 1
		}
	}
	return lo
}

// raw is the bound with value v as Q_SIFVAL stores it (0 is +0).
func (l *qline) raw(v int64) uint64 {
	if v < 0 {
		return l.fixed | uint64(-v)<<3 | l.sign
	}
	return l.fixed | uint64(v)<<3
}

// delta is Q_SHL(q, step) for the bounds' precision: the step converted to
// the Q's C type and shifted there (wrapping), then widened to long.
func (l *qline) delta() int64 {
	nf := uint(l.g.o.nf[l.fixed&7])
	switch l.g.dt {
	case voi.QS32:
		return int64(int32(uint32(l.step) << nf))
	case voi.QU32:
		return int64(uint32(l.step) << nf)
	}
	return int64(l.step << nf)
}

// qlineEvents bounds the overflowing stores a Lin generation may go
// through before it is given up as undecided, linexpRuns the runs of a
// LinExp generation (each costs a few dozen exponent searches).
const (
	qlineEvents = 1 << 16
	linexpRuns  = 1 << 16
	shortRun    = 16 // LinExp runs shorter than this are taken step by step
)

// What ends a run of plain additions.
const (
	evFail  = iota // step j fails (Q_QADDI's overflow checks)
	evDone         // the bound after step j, v + (j+1)*d, is above UB
	evStore        // the sum of step j overflows the magnitude field
	evNever        // the bound never moves (d is 0) and is not above UB
)

// event returns what ends the run of plain additions from the bound v
// (signed kinds): steps 0..j-1 add d, none fails and none ends above UB,
// and step j is the event ev.
func (l *qline) event(v, d int64) (j uint64, ev int) {
	if v >= l.ethr {
		return 0, evFail
	}
	switch {
	case d == 0:
		if v > l.t {
			return 0, evDone
		}
		return 0, evNever
	case d > 0:
		jx := uint64(l.vmax-v) / uint64(d) // v + (jx+1)*d overflows
		jd := uint64(0)                    // v + (jd+1)*d is above UB
		if l.t >= v {
			jd = uint64(l.t-v) / uint64(d)
		}
		if l.ethr <= l.vmax {
			if je := ceilDiv(uint64(l.ethr-v), uint64(d)); je <= jx && je <= jd {
				return je, evFail // the failing test comes before the sum
			}
		}
		if jd < jx {
			return jd, evDone
		}
		return jx, evStore
	}
	// Going down, no later step fails or ends above UB.
	jx := uint64(v-l.vmin) / -uint64(d) // v + (jx+1)*d underflows
	if jx > 0 && v+d > l.t {
		return 0, evDone
	}
	return jx, evStore
}

// run continues the C's counting loop from the bound b (not yet tested
// against the step's checks): it returns how many more steps the loop
// makes until a bound is above UB, and that bound. The error wraps
// voi.ErrInvalid when a step fails first or the loop never ends, or is
// errBudget when a signed generation is still undecided after qlineEvents
// overflowing stores.
func (l *qline) run(b uint64) (steps uint64, last uint64, err error) {
	v, d := l.g.o.ifv(b), l.delta()
	if l.sign == 0 {
		// v -> (v + d) mod N, N = 2^(field bits): the first bound to fail
		// and the first to be above UB, whichever comes first.
		n := uint64(l.vmax) + 1
		u, du := uint64(v), uint64(d)&(n-1)
		je, eok := uint64(0), false
		if l.ethr <= l.vmax {
			je, eok = firstHit(du, u, n, uint64(l.ethr), n-1)
		}
		jd, dok := uint64(0), false
		if l.t < l.vmax {
			jd, dok = firstHit(du, (u+du)&(n-1), n, uint64(l.t+1), n-1)
		}
		switch {
		case eok && (!dok || je <= jd):
			return 0, 0, l.fails()
		case !dok:
			return 0, 0, l.endless()
		}
		return jd + 1, l.raw(int64((u + (jd+1)*du) & (n - 1))), nil
	}
	// Brent's cycle detection on the values after overflowing stores.
	saved, lap, power := v, 0, 1
	for range qlineEvents {
		j, ev := l.event(v, d)
		switch ev {
		case evFail:
			return 0, 0, l.fails()
		case evNever:
			return 0, 0, l.endless()
		case evDone:
			return steps + j + 1, l.raw(v + int64(j+1)*d), nil
		}
		// j plain additions, then a sum the C stores as it can.
		nb, err := l.store(v + int64(j)*d)
		if err != nil {
			return 0, 0, err
		}
		steps += j + 1
		if l.g.above(nb) {
			return steps, nb, nil
		}
		v = l.g.o.ifv(nb)
		if v == saved {
			return 0, 0, l.endless()
		}
		if lap++; lap == power {
			saved, lap, power = v, 0, power*2
		}
	}
	return 0, 0, errBudget
}

// store is the step from the bound v whose sum overflows the magnitude
// field, as the C computes it.
func (l *qline) store(v int64) (uint64, error) {
	nb, _, err := l.g.add(l.raw(v), l.step)
	return nb, err // err is nil: v is below ethr
}

func (l *qline) fails() error {
	return fmt.Errorf("hist: Q bucket bound + %d overflows before the bounds exceed UB: %w", l.step, voi.ErrInvalid)
}

func (l *qline) endless() error {
	return fmt.Errorf("%w: the Q bounds never exceed UB: %w", errEndless, voi.ErrInvalid)
}

// runLinExp is run for a LinExp generation, whose step depends on the
// bound through the exponent search: a run of plain additions is cut
// where the search's result changes. Within a run the bounds' search
// value (Q_GIVAL of the bound, or of its 8-byte s64q view for the 32-bit
// kinds) moves in one direction, except where a signed 32-bit bound
// changes sign, so the change is found by bisection.
func (g *gen) runLinExp(b uint64) (steps uint64, last uint64, err error) {
	seen, lap, power := b, 0, 1  // Brent, on the bounds where runs start
	lines := map[uint64]*qline{} // by step: a generation takes few steps
	for range linexpRuns {
		step, err := g.linexpStep(b)
		if err != nil {
			return 0, 0, err
		}
		l := lines[step]
		if l == nil {
			l = newQline(g, b, step)
			lines[step] = l
		}
		v, d := g.o.ifv(b), l.delta()
		j, ev := l.event(v, d)
		if j < shortRun {
			// A short run: one step as the C takes it.
			if b, _, err = g.add(b, step); err != nil {
				return 0, 0, l.fails()
			}
			if steps++; g.above(b) {
				return steps, b, nil
			}
		} else if c, ok := l.stepChange(v, d, j, step); ok {
			// The first step c in 1..j whose bound takes another step:
			// the run ends there, before its event.
			steps += c
			b = l.raw(v + int64(c)*d)
		} else {
			switch ev {
			case evFail:
				return 0, 0, l.fails()
			case evNever:
				return 0, 0, l.endless()
			case evDone:
				return steps + j + 1, l.raw(v + int64(j+1)*d), nil
			}
			if b, err = l.store(v + int64(j)*d); err != nil {
				return 0, 0, err
			}
			steps += j + 1
			if g.above(b) {
				return steps, b, nil
			}
		}
		if b == seen {
			return 0, 0, l.endless()
		}
		if lap++; lap == power {
			seen, lap, power = b, 0, power*2
		}
	}
	return 0, 0, errBudget
}

// stepChange returns the least c in 1..j whose bound v + c*d has a LinExp
// step other than step (or whose search fails), if any.
func (l *qline) stepChange(v, d int64, j uint64, step uint64) (uint64, bool) {
	if j == 0 || d == 0 {
		return 0, false
	}
	differs := func(c uint64) bool {
		s, err := l.g.linexpStep(l.raw(v + int64(c)*d))
		return err != nil || s != step
	}
	// The bounds v + c*d for c in 1..hi have the sign of v + d.
	hi := j
	if l.g.dt == voi.QS32 {
		v1 := v + d
		switch {
		case d > 0 && v1 < 0:
			hi = min(hi, uint64(-v-1)/uint64(d)) // v + c*d <= -1
		case d < 0 && v1 >= 0:
			hi = min(hi, uint64(v)/-uint64(d)) // v + c*d >= 0
		}
	}
	if differs(1) {
		return 1, true
	}
	lo := uint64(1) // differs(lo) is false
	if !differs(hi) {
		if hi < j {
			return hi + 1, true // the sign changes: start a new run there
		}
		return 0, false
	}
	for hi-lo > 1 {
		m := lo + (hi-lo)/2
		if differs(m) {
			hi = m
		} else {
			lo = m
		}
	}
	return hi, true
}

// ceilDiv is ceil(x / y) for y > 0.
func ceilDiv(x, y uint64) uint64 {
	q, r := bits.Div64(0, x, y)
	if r != 0 {
		q++
	}
	return q
}
