package hist

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"

	"github.com/statsblob/statsblob/qmath"
	"github.com/statsblob/statsblob/voi"
)

// Limits of bucket generation. The C generates buckets until one ends above
// the spec's UB; specs that never get there (a bound that wraps, a step that
// truncates to 0, an endless LINEXP exponent search) make it loop forever.
// Build stops such loops (FORMAT.md section 12 policy: EINVAL) and gives up
// on specs whose data could never fit a blob (EFBIG, as the C's template
// code reports them).
const (
	// searchLimit bounds one LINEXP exponent search with an odd StepBase
	// (even bases reach 0 within 64 steps, so their searches are decided
	// exactly).
	searchLimit = 1 << 16
	// workLimit bounds the total work (buckets plus search steps) of one
	// Build.
	workLimit = 1 << 20
	// beyondLimit bounds the work spent after the buckets exceed what fits
	// a blob, looking for a wrap (which makes the answer EINVAL, not EFBIG).
	beyondLimit = 1 << 16
)

var (
	errEndless  = errors.New("hist: bucket generation does not end")
	errWraps    = errors.New("hist: a bucket bound wraps past the VOI type's range")
	errStepZero = errors.New("hist: bucket step is 0")
	errBudget   = errors.New("hist: bucket generation takes too many steps")
)

// Build returns the histogram statistic's initial data for a VOI of type
// voiDT: exactly the bytes the C's stats_vss_hist_hlpr produces (len = the
// stat's dsz): zero counters and the bucket bounds.
//
// Buckets are generated as the C does. Lin, Exp and LinExp start with a
// bucket whose lower bound is LB; each next bucket starts at the previous
// one's upper bound; a bucket's upper bound is its lower bound plus the step
// (StepInc; StepBase^(StepExp+k) for bucket k; StepBase^e/LinStepDiv, at
// least 1, with e the smallest exponent >= 1 whose power, cast to the VOI
// type, exceeds the lower bound). The step is added in the VOI's type: the
// low half only for 32-bit types (the high half of every bound is then LB's
// high half), with Q_QADDI for Q types. Generation stops after the first
// bucket whose upper bound exceeds UB (compared in the VOI's type). Usr
// takes the buckets of Buckets as they are. LBoundInf adds a first bucket
// from the VOI type's minimum (the C's numeric_limits entry, with LB's
// control bits for Q types) up to the first bound; UBoundInf adds a last
// bucket from the last bound up to the maximum. A DRHIST stores each
// bucket's upper bound; for the +inf bucket of a generated DRHIST the C
// first computes one more bound, which it then replaces by the maximum.
//
// Q bounds follow the C's Q_QADDI exactly, including its C types: the sum
// of a bound and the step (Q_SHL of the step, a long) is computed in long
// (unsigned long for Q_U64), so from a negative bound the bounds go up
// through zero; a sum whose magnitude does not fit the Q is stored as
// Q_SIFVAL stores it (bits lost, the top one landing in the sign bit), and
// a step that fails Q_QADDI's overflow checks is EINVAL, as in the C.
//
// Errors wrap voi.ErrInvalid where the C returns EINVAL: hdt (s.DType) is
// not a histogram type; voiDT is not numeric; a DVHIST with either inf flag;
// a step of 0; a Q step that overflows; an unknown scheme; Usr without
// buckets. They also wrap voi.ErrInvalid where FORMAT.md section 12 decides
// for the C, which would loop forever or read out of bounds, all while
// buckets are being counted: a bound that wraps past the VOI type's range;
// a Lin or LinExp step that is 0 in the VOI type (the bound does not move),
// a Lin step that is negative there; Lin or LinExp bounds that repeat (their
// steps depend on the bound only, so the generation cycles); a LinExp
// exponent search that never ends (also when the C runs it for the extra
// bound of the +inf bucket); LinExp with LinStepDiv 0; Usr with UBoundInf
// for CRHIST/DRHIST. Errors wrap voi.ErrTooBig when the data would exceed
// 65535 bytes, a size no blob can hold (the C builds it and its template
// code then fails with EFBIG; the caller should report EFBIG only if every
// other spec of the call succeeds, as the C would).
//
// Some cases are decided by a budget rather than exactly: a LinExp exponent
// search with an odd StepBase that finds no power within 65536 steps is
// taken as endless (EINVAL); a generation that needs more than 2^20 steps
// (buckets plus search steps) before its buckets fill a blob is EINVAL; once
// they exceed a blob, an integer Exp or LinExp generation, or a Q Exp one,
// is EFBIG unless it goes wrong within 2^16 more steps (EINVAL). Constant
// steps (Lin, Exp with base 1) are decided exactly for integer bounds, and
// for Q bounds unless a signed generation goes through more than 65536 sums
// that overflow the Q's magnitude (then EFBIG); Q LinExp generations are
// followed run by run (a run ends where the step changes) and are EFBIG
// after 65536 runs. When the buckets exceed a blob and UBoundInf is set, the
// bound after the last is computed as in the C, whose template code reports
// EFBIG only after that step succeeded (else EINVAL).
func (s Spec) Build(voiDT voi.DType) ([]byte, error) {
	g, ok := geomOf(s.DType)
	if !ok {
		return nil, fmt.Errorf("hist: %v is not a histogram data type: %w", s.DType, voi.ErrInvalid)
	}
	if !voiDT.IsNumeric() {
		return nil, fmt.Errorf("hist: VOI data type %v is not numeric: %w", voiDT, voi.ErrInvalid)
	}
	lbinf, ubinf := 0, 0
	if s.Flags&LBoundInf != 0 {
		lbinf = 1
	}
	if s.Flags&UBoundInf != 0 {
		ubinf = 1
	}
	if g.kind == kindDV && lbinf+ubinf > 0 {
		return nil, fmt.Errorf("hist: %v with an infinite bound: %w", s.DType, voi.ErrInvalid)
	}
	maxBkts := (maxDataSize - hdrSize) / g.bsz
	info := s
	var n int
	if s.Scheme == Usr {
		switch {
		case len(s.Buckets) == 0:
			return nil, fmt.Errorf("hist: USR histogram without buckets: %w", voi.ErrInvalid)
		case ubinf > 0:
			// The C reads the bucket after the last one for the +inf bucket.
			return nil, fmt.Errorf("hist: USR %v with ubinf: %w", s.DType, voi.ErrInvalid)
		case len(s.Buckets)+lbinf > maxBkts:
			return nil, fmt.Errorf("hist: %d buckets exceed the %d of a %v in a blob: %w",
				len(s.Buckets)+lbinf, maxBkts, s.DType, voi.ErrTooBig)
		}
		n = len(s.Buckets)
		info.LB = s.Buckets[0].LB
		info.UB = s.Buckets[n-1].LB
	} else {
		if s.Scheme == LinExp && s.LinStepDiv == 0 {
			return nil, fmt.Errorf("hist: LINEXP with nlinsteps 0: %w", voi.ErrInvalid)
		}
		gn := newGen(&info, voiDT)
		var err error
		if n, err = gn.count(maxBkts - lbinf - ubinf); err != nil {
			return nil, err
		}
	}

	nb := n + lbinf + ubinf
	data := make([]byte, DataSize(s.DType, nb))
	put := func(slot int, lb, ub uint64) {
		off := hdrSize + slot*g.bsz
		binary.LittleEndian.PutUint64(data[off:], lb)
		if g.kind == kindDR {
			binary.LittleEndian.PutUint64(data[off+8:], ub)
		}
	}
	if s.Scheme == Usr {
		for k, b := range s.Buckets {
			put(lbinf+k, b.LB, b.UB)
		}
	} else {
		gn := newGen(&info, voiDT)
		gn.work = maxDataSize * (searchLimit + 1) // count succeeded: no budget
		ub := info.LB
		for k := range n + ubinf {
			lb := ub
			var err error
			if ub, _, err = gn.next(uint64(k), lb); err != nil {
				return nil, err
			}
			put(lbinf+k, lb, ub)
		}
	}
	// The infinite buckets take the VOI type's extremes; a Q extreme takes
	// the control bits of the spec's (first) lower bound.
	limit := func(v uint64) uint64 {
		if voiDT.IsQ() {
			return v&^7 | info.LB&7
		}
		return v
	}
	if lbinf > 0 {
		put(0, limit(voi.LimitMin(voiDT)), info.LB)
	}
	if ubinf > 0 && g.kind == kindDR {
		off := hdrSize + (nb-1)*g.bsz
		binary.LittleEndian.PutUint64(data[off+8:], limit(voi.LimitMax(voiDT)))
	}
	return data, nil
}

// gen generates the buckets of a Lin, Exp or LinExp spec for one VOI type,
// one bound at a time, as the C's stats_vss_hist_bkt_hlpr does.
type gen struct {
	s    *Spec
	dt   voi.DType // the VOI's type
	o    *order
	work int // steps left before giving up
}

func newGen(s *Spec, dt voi.DType) *gen {
	return &gen{s: s, dt: dt, o: orderOf(dt), work: workLimit}
}

// step outcomes that only matter while counting: the C ignores them for
// the extra bound it computes for a +inf bucket.
const (
	wrapped  = 1 << iota // the bound wrapped past the VOI type's range
	stuck                // the bound did not move (the step is 0 in the VOI type)
	negative             // the step is negative in a signed integer VOI type
)

// next returns the upper bound of bucket k, whose lower bound is lb, and
// what happened on the way (wrapped, stuck, negative). An error wraps
// voi.ErrInvalid.
func (g *gen) next(k uint64, lb uint64) (ub uint64, what int, err error) {
	var step uint64
	s := g.s
	switch s.Scheme {
	case Lin:
		step = s.StepInc
	case Exp:
		step = powU64(s.StepBase, s.StepExp+k)
	case LinExp:
		var err error
		if step, err = g.linexpStep(lb); err != nil {
			return lb, 0, err
		}
	}
	g.work--
	if step == 0 {
		return lb, 0, fmt.Errorf("%w (%v bucket %d): %w", errStepZero, s.Scheme, k, voi.ErrInvalid)
	}
	return g.add(lb, step)
}

// add adds step to the bound b in the VOI's type.
func (g *gen) add(b, step uint64) (uint64, int, error) {
	what := 0
	switch g.dt {
	case voi.IntS32:
		x, d := int32(b), int32(step)
		r := x + d
		if d > 0 && r < x || d < 0 && r > x {
			what |= wrapped
		}
		if d < 0 {
			what |= negative
		}
		if d == 0 {
			what |= stuck
		}
		return b&^0xFFFFFFFF | uint64(uint32(r)), what, nil
	case voi.IntU32:
		x, d := uint32(b), uint32(step)
		if x+d < x {
			what |= wrapped
		}
		if d == 0 {
			what |= stuck
		}
		return b&^0xFFFFFFFF | uint64(x+d), what, nil
	case voi.IntS64, voi.IntSLong:
		x, d := int64(b), int64(step)
		r := x + d
		if d > 0 && r < x || d < 0 && r > x {
			what |= wrapped
		}
		if d < 0 {
			what |= negative
		}
		if d == 0 {
			what |= stuck
		}
		return uint64(r), what, nil
	case voi.IntU64, voi.IntULong:
		r, carry := bits.Add64(b, step, 0)
		if carry != 0 {
			what |= wrapped
		}
		return r, what, nil // step != 0 here
	}
	q, err := voi.AsQ(g.dt, b).AddI(qmath.U64Int(step))
	if err != nil {
		return b, 0, fmt.Errorf("hist: Q bucket bound + %d: %w: %w", step, err, voi.ErrInvalid)
	}
	r := q.Raw
	if g.dt.Is32() {
		r |= b &^ 0xFFFFFFFF
	}
	if r == b {
		what |= stuck
	}
	return r, what, nil
}

// above reports whether the bound b exceeds the spec's UB in the VOI's type
// (the C's end-of-generation test).
func (g *gen) above(b uint64) bool {
	if g.dt.IsQ() {
		return voi.AsQ(g.dt, b).GT(voi.AsQ(g.dt, g.s.UB))
	}
	return g.o.key(b) > g.o.key(g.s.UB)
}

// count runs the C's counting loop (stats_vss_hist_nbkts_hlpr) and returns
// the number of generated buckets, with the policy checks of Build. capacity
// is the most generated buckets that fit a blob; past it count only decides
// between EINVAL (the generation would go wrong) and EFBIG.
func (g *gen) count(capacity int) (int, error) {
	s := g.s
	ub := s.LB
	// A Lin or LinExp step depends on the bound only, so a bound seen
	// before means the generation cycles (Brent's cycle detection).
	cycles := s.Scheme == Lin || s.Scheme == LinExp
	saved, lap, power := ub, 0, 1
	for k := 0; ; k++ {
		lb := ub
		if k == capacity {
			// As many buckets as fit a blob, none above UB yet.
			if step, ok := g.constStep(); ok && !g.dt.IsQ() {
				return 0, g.linBeyond(lb, step, capacity)
			}
			if step, ok := g.constStep(); ok || s.Scheme == LinExp && g.dt.IsQ() {
				var steps, last uint64
				var err error
				if ok {
					steps, last, err = newQline(g, lb, step).run(lb)
				} else {
					g.work = maxDataSize * (searchLimit + 1) // only the search's own limit applies
					steps, last, err = g.runLinExp(lb)
				}
				switch {
				case errors.Is(err, errBudget):
					return 0, g.tooBig(fmt.Sprint("more than ", k), capacity)
				case err != nil:
					return 0, err
				}
				return 0, g.overflow(uint64(k)+steps, last, capacity)
			}
			// Other generations may go wrong much later; look a little
			// further.
			g.work = min(g.work, beyondLimit)
		}
		var what int
		var err error
		if g.work <= 0 {
			err = errBudget
		} else {
			ub, what, err = g.next(uint64(k), lb)
		}
		if errors.Is(err, errBudget) {
			if k >= capacity {
				return 0, g.tooBig(fmt.Sprint("more than ", k), capacity)
			}
			return 0, fmt.Errorf("%w: %w within %d steps: %w", errEndless, err, workLimit, voi.ErrInvalid)
		}
		if err != nil {
			return 0, err
		}
		if what&wrapped != 0 {
			return 0, fmt.Errorf("%w (%v, bucket %d): %w", errWraps, g.dt, k, voi.ErrInvalid)
		}
		// A bound above UB ends the generation, whatever the step did.
		if g.above(ub) {
			if k+1 > capacity {
				return 0, g.overflow(uint64(k+1), ub, capacity)
			}
			return k + 1, nil
		}
		if what&stuck != 0 && (s.Scheme != Exp || !g.dt.IsQ()) {
			// A stuck Lin or LinExp bound never moves again; a stuck
			// integer Exp step stays 0 in the VOI type until the full
			// step is 0 (EINVAL in the C). Only a Q Exp step can recover.
			return 0, fmt.Errorf("%w: step %v is 0 in %v: %w", errEndless, s.Scheme, g.dt, voi.ErrInvalid)
		}
		if what&negative != 0 && s.Scheme == Lin {
			// Bounds only go down: they never exceed UB without wrapping.
			return 0, fmt.Errorf("%w (the step is negative in %v): %w", errWraps, g.dt, voi.ErrInvalid)
		}
		if cycles {
			if ub == saved {
				return 0, fmt.Errorf("%w: the bounds cycle: %w", errEndless, voi.ErrInvalid)
			}
			if lap++; lap == power {
				saved, lap, power = ub, 0, power*2
			}
		}
	}
}

// tooBig is the EFBIG error of a generation of n buckets (a count, or
// "more than N").
func (g *gen) tooBig(n string, capacity int) error {
	return fmt.Errorf("hist: %s buckets exceed the %d of a %v in a blob: %w", n, capacity, g.s.DType, voi.ErrTooBig)
}

// overflow is the result of a generation of n buckets, more than fit a
// blob, whose last bound is last. The C computes the bucket data before its
// template code fails with EFBIG, and for a +inf bucket that takes one more
// bound, after last: if that step fails, the C's answer is EINVAL.
func (g *gen) overflow(n, last uint64, capacity int) error {
	if g.s.Flags&UBoundInf != 0 {
		g.work = searchLimit + 2 // only the search's own limit applies
		if _, _, err := g.next(n, last); err != nil {
			return err
		}
	}
	return g.tooBig(fmt.Sprint(n), capacity)
}

// constStep returns the step of a generation whose steps are all the same
// (Lin, and Exp with base 1).
func (g *gen) constStep() (uint64, bool) {
	switch {
	case g.s.Scheme == Lin:
		return g.s.StepInc, true
	case g.s.Scheme == Exp && g.s.StepBase == 1:
		return 1, true
	}
	return 0, false
}

// linBeyond decides a constant-step generation over integers that has
// produced n buckets, as many as fit a blob, and whose last bound is ub
// (not above UB): EINVAL if a later bound wraps before one exceeds UB, else
// EFBIG. (The bound after the last never fails: the step is not 0.)
func (g *gen) linBeyond(ub, step uint64, n int) error {
	o := g.o
	// In key order a step that does not wrap adds the step (positive in the
	// VOI type: negative Lin steps were rejected).
	u, t := o.key(ub), o.key(g.s.UB) // u <= t
	step &= o.mask
	k := (t-u)/step + 1 // steps until a bound exceeds UB
	hi, lo := bits.Mul64(k, step)
	end, carry := bits.Add64(u, lo, 0)
	if hi != 0 || carry != 0 || end > o.mask {
		return fmt.Errorf("%w (%v): %w", errWraps, g.dt, voi.ErrInvalid)
	}
	return g.tooBig(fmt.Sprint(uint64(n)+k), n)
}

// linexpStep is the LinExp step from the bound lb: StepBase^e/LinStepDiv,
// at least 1, e found by search.
func (g *gen) linexpStep(lb uint64) (uint64, error) {
	e, err := g.search(lb)
	if err != nil {
		return 0, err
	}
	return max(powU64(g.s.StepBase, e)/g.s.LinStepDiv, 1), nil
}

// search is the C's LINEXP exponent search: the smallest e >= 1 for which
// StepBase^e (mod 2^64), cast to the VOI's type, exceeds the bound x. For
// Q_S32 and Q_U32 the C falls through to the Q_S64 case and searches with
// the 8-byte pattern of x read as an s64q. A search that never ends is an
// error (EINVAL).
func (g *gen) search(x uint64) (uint64, error) {
	var le func(p uint64) bool
	switch g.dt {
	case voi.IntS32:
		le = func(p uint64) bool { return int32(p) <= int32(x) }
	case voi.IntU32:
		le = func(p uint64) bool { return uint32(p) <= uint32(x) }
	case voi.IntS64, voi.IntSLong:
		le = func(p uint64) bool { return int64(p) <= int64(x) }
	case voi.IntU64, voi.IntULong:
		le = func(p uint64) bool { return p <= x }
	case voi.QS32, voi.QU32, voi.QS64:
		iv := int64(voi.AsQ(voi.QS64, x).IntVal())
		le = func(p uint64) bool { return int64(p) <= iv }
	default: // QU64
		iv := voi.AsQ(voi.QU64, x).IntVal()
		le = func(p uint64) bool { return p <= iv }
	}
	b := g.s.StepBase
	p := b
	for e := uint64(1); e <= searchLimit; e++ {
		if !le(p) {
			return e, nil
		}
		if g.work--; g.work <= 0 {
			return 0, errBudget
		}
		// The powers of an even base reach 0 and stay there; those of an
		// odd base are periodic, and the period is complete when the
		// power returns to the base.
		if p == 0 {
			break
		}
		if p *= b; p == b {
			break
		}
	}
	return 0, fmt.Errorf("%w: LINEXP exponent search for base %d on bound %#x: %w",
		errEndless, b, x, voi.ErrInvalid)
}

// powU64 is stats_pow_u64: base^exp modulo 2^64.
func powU64(base, exp uint64) uint64 {
	r := uint64(1)
	for exp != 0 {
		if exp&1 != 0 {
			r *= base
		}
		exp >>= 1
		base *= base
	}
	return r
}
