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

// qlineEvents bounds the overflowing stores a signed run may go through
// before it is given up as undecided.
const qlineEvents = 1 << 16

// run continues the C's counting loop from the bound b (not yet tested
// against the step's checks): it returns how many more steps the loop
// makes until a bound is above UB, and that bound. The error wraps
// voi.ErrInvalid when a step fails first or the loop never ends, or is
// errBudget when a signed generation is still undecided after qlineEvents
// overflowing stores.
func (l *qline) run(b uint64) (steps uint64, last uint64, err error) {
	fails := fmt.Errorf("hist: Q bucket bound + %d overflows before the bounds exceed UB: %w", l.step, voi.ErrInvalid)
	endless := fmt.Errorf("%w: the Q bounds never exceed UB: %w", errEndless, voi.ErrInvalid)
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
			return 0, 0, fails
		case !dok:
			return 0, 0, endless
		}
		return jd + 1, l.raw(int64((u + (jd+1)*du) & (n - 1))), nil
	}
	// Brent's cycle detection on the values after overflowing stores.
	saved, lap, power := v, 0, 1
	for range qlineEvents {
		if v >= l.ethr {
			return 0, 0, fails
		}
		var j uint64 // steps of plain addition before the next stored sum
		switch {
		case d == 0:
			if v > l.t {
				return steps + 1, l.raw(v), nil
			}
			return 0, 0, endless
		case d > 0:
			jx := uint64(l.vmax-v) / uint64(d) // v + (jx+1)*d overflows
			if je := ceilDiv(uint64(l.ethr-v), uint64(d)); l.ethr <= l.vmax && je <= jx {
				// Fails before it overflows, unless it is above UB first.
				if l.t < v || uint64(l.t-v)/uint64(d) < je {
					jd := uint64(0)
					if l.t >= v {
						jd = uint64(l.t-v) / uint64(d)
					}
					return steps + jd + 1, l.raw(v + int64(jd+1)*d), nil
				}
				return 0, 0, fails
			}
			if jd := uint64(0); l.t < v || uint64(l.t-v)/uint64(d) < jx {
				if l.t >= v {
					jd = uint64(l.t-v) / uint64(d)
				}
				return steps + jd + 1, l.raw(v + int64(jd+1)*d), nil
			}
			j = jx
		default:
			ad := -uint64(d)
			jx := uint64(v-l.vmin) / ad // v + (jx+1)*d underflows
			if jx > 0 && v+d > l.t {
				return steps + 1, l.raw(v + d), nil
			}
			j = jx
		}
		// j steps of plain addition (none fails, none is above UB), then
		// one whose sum the C stores as it can.
		v += int64(j) * d
		nb, _, err := l.g.add(l.raw(v), l.step)
		if err != nil {
			return 0, 0, fails // not reached: v < ethr
		}
		steps += j + 1
		if l.g.above(nb) {
			return steps, nb, nil
		}
		v = l.g.o.ifv(nb)
		if v == saved {
			return 0, 0, endless
		}
		if lap++; lap == power {
			saved, lap, power = v, 0, power*2
		}
	}
	return 0, 0, errBudget
}

// ceilDiv is ceil(x / y) for y > 0.
func ceilDiv(x, y uint64) uint64 {
	q, r := bits.Div64(0, x, y)
	if r != 0 {
		q++
	}
	return q
}
