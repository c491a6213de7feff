package gen

import "math/bits"

// This file models what the C reference does with the template specs the
// generator writes, independently of the Go engine: the numeric types, the
// Q macros of sys/qmath.h as the C compiler evaluates them (integer
// promotions, wrap-around), the histogram bucket generation of
// stats_vss_hist_nbkts_hlpr/stats_vss_hist_bkt_hlpr, and the sizes
// stats_v1_tpl_add_voistats gives a template. The generator uses it to
// stay inside FORMAT.md section 13 (no bucket generation that wraps or
// never ends) and to know which VOIs the runner records and how large
// every template and blob is.

// The data types (enum vsd_dtype).
const (
	dtVoiState = iota
	dtS32
	dtU32
	dtS64
	dtU64
	dtSLong
	dtULong
	dtQS32
	dtQU32
	dtQS64
	dtQU64
	dtCR32
	dtDR32
	dtDV32
	dtCR64
	dtDR64
	dtDV64
	dtTD32
	dtTD64
	numDTypes
)

var dtNames = [numDTypes]string{"VOISTATE", "INT_S32", "INT_U32", "INT_S64", "INT_U64", "INT_SLONG",
	"INT_ULONG", "Q_S32", "Q_U32", "Q_S64", "Q_U64", "CRHIST32", "DRHIST32", "DVHIST32", "CRHIST64",
	"DRHIST64", "DVHIST64", "TDGSTCLUST32", "TDGSTCLUST64"}

// voiDTypes are the ten numeric VOI types.
var voiDTypes = []int{dtS32, dtU32, dtS64, dtU64, dtSLong, dtULong, dtQS32, dtQU32, dtQS64, dtQU64}

func isQ(dt int) bool  { return dt >= dtQS32 && dt <= dtQU64 }
func is32(dt int) bool { return dt == dtS32 || dt == dtU32 || dt == dtQS32 || dt == dtQU32 }
func isSigned(dt int) bool {
	return dt == dtS32 || dt == dtS64 || dt == dtSLong || dt == dtQS32 || dt == dtQS64
}

// dtSize is vsd_dtype2size of a numeric type.
func dtSize(dt int) int {
	if is32(dt) {
		return 4
	}
	return 8
}

// The stat types (enum voi_stype).
const (
	stVoiState = iota
	stSum
	stMax
	stMin
	stHist
	stTDgst
)

var stNames = []string{"VOISTATE", "SUM", "MAX", "MIN", "HIST", "TDGST"}

// Sizes of the blob structures (LP64).
const (
	hdrSize   = 32 // struct statsblobv1 up to vois[]
	voiSize   = 8
	statSize  = 8
	stateSize = 8
	maxBlobSz = 65535 // SB_V1_MAXSZ
)

// qt is a Q type: its width and signedness.
type qt struct {
	w uint
	s bool
}

func qOf(dt int) qt {
	switch dt {
	case dtQS32:
		return qt{32, true}
	case dtQU32:
		return qt{32, false}
	case dtQS64:
		return qt{64, true}
	}
	return qt{64, false}
}

func (t qt) mask() uint64 { return ^uint64(0) >> (64 - t.w) }

func (t qt) sbit() uint {
	if t.s {
		return 1
	}
	return 0
}

// nfc is Q_NFCBITS of control bits c.
func nfc(c uint64) uint {
	n := uint(c&3) + 1
	if c&4 != 0 {
		return n << 4
	}
	return n << 1
}

// nf is Q_NFBITS of a raw value of type t.
func (t qt) nf(raw uint64) uint { return min(nfc(raw&7), t.w-t.sbit()-3) }

func (t qt) ltz(raw uint64) bool { return t.s && raw>>(t.w-1)&1 != 0 }

func (t qt) ifRawMask() uint64 {
	m := t.mask() &^ 7
	if t.s {
		m &^= 1 << (t.w - 1)
	}
	return m
}

func (t qt) fRawMask(raw uint64) uint64 { return (uint64(1)<<t.nf(raw) - 1) << 3 }

func (t qt) iRawMask(raw uint64) uint64 { return t.ifRawMask() &^ t.fRawMask(raw) }

// giAbs, gifAbs and gfAbs are Q_GIABSVAL, Q_GIFABSVAL and Q_GFABSVAL.
func (t qt) giAbs(raw uint64) uint64  { return (raw & t.iRawMask(raw)) >> (3 + t.nf(raw)) }
func (t qt) gifAbs(raw uint64) uint64 { return (raw & t.ifRawMask()) >> 3 }
func (t qt) gfAbs(raw uint64) uint64  { return (raw & t.fRawMask(raw)) >> 3 }
func (t qt) iMax(raw uint64) uint64   { return t.iRawMask(raw) >> (3 + t.nf(raw)) }

// signedOf returns ±v by the sign of raw, as the two's complement pattern.
func (t qt) signedOf(raw, v uint64) uint64 {
	if t.ltz(raw) {
		return -v
	}
	return v
}

// gtq is Q_QGTQ(a, b): integer parts compared, then fractional parts
// (each read with its own precision), in the type's signedness.
func (t qt) gtq(a, b uint64) bool {
	if !t.s {
		ai, bi := t.giAbs(a), t.giAbs(b)
		return ai > bi || ai == bi && t.gfAbs(a) > t.gfAbs(b)
	}
	ai, bi := int64(t.signedOf(a, t.giAbs(a))), int64(t.signedOf(b, t.giAbs(b)))
	af, bf := int64(t.signedOf(a, t.gfAbs(a))), int64(t.signedOf(b, t.gfAbs(b)))
	return ai > bi || ai == bi && af > bf
}

// addI is Q_QADDI(&q, step) for an unsigned 64-bit step, as the fixed C
// evaluates it: EOVERFLOW (ok false) if the step has more bits than the
// type or the integer part would pass its maximum; otherwise q's combined
// integer/fraction value plus step<<nf, stored with Q_SIFVAL. The fixed
// Q_SHL (FORMAT.md section 12, defect 1c) yields a signed 64-bit value for
// every type but u64q, so from a negative q the sum is a true signed sum
// (the issue 12 cases: -7324 + 1000 steps on a Q_S32/2 give 8 buckets).
// The shift of the step itself happens in q's promoted C type and wraps
// there.
func (t qt) addI(raw, step uint64) (uint64, bool) {
	if uint(bits.Len64(step)) > t.w {
		return raw, false
	}
	nf := t.nf(raw)
	imax, giAbs := t.iMax(raw), t.giAbs(raw)
	switch {
	case t.s && t.w == 32:
		lhs := int32(uint32(imax) - uint32(step))
		if int64(lhs) < int64(t.signedOf(raw, giAbs)) {
			return raw, false
		}
	case t.w == 32:
		if uint32(imax)-uint32(step) < uint32(giAbs) {
			return raw, false
		}
	case t.s:
		if int64(imax-step) < int64(t.signedOf(raw, giAbs)) {
			return raw, false
		}
	default:
		if imax-step < giAbs {
			return raw, false
		}
	}
	gif := t.signedOf(raw, t.gifAbs(raw))
	if !t.s && t.w == 64 {
		return raw&7 | (gif+step<<nf)<<3&t.mask(), true
	}
	var shl int64
	switch {
	case t.s && t.w == 32:
		shl = int64(int32(uint32(step) << nf))
	case t.w == 32:
		shl = int64(uint32(step) << nf)
	default:
		shl = int64(step << nf)
	}
	sum := int64(gif) + shl
	mag := uint64(sum)
	if sum < 0 {
		mag = -mag
	}
	r := raw&7 | mag<<3&t.mask()
	if sum < 0 {
		r |= 1 << (t.w - 1)
	}
	return r, true
}

// giVal64 is Q_GIVAL of the 8-byte numeric read as an s64q (the LINEXP
// exponent search of Q_S32, Q_U32 and Q_S64 VOIs).
func giVal64(num uint64) int64 {
	t := qt{64, true}
	return int64(t.signedOf(num, t.giAbs(num)))
}

// powU64 is stats_pow_u64.
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

// The histogram schemes (enum hist_bkt_alloc).
const (
	schLin = iota
	schExp
	schLinExp
	schUsr
	numSchemes
)

var schNames = []string{"LIN", "EXP", "LINEXP", "USR"}

// The histogram flags.
const (
	hfLBInf = 1
	hfUBInf = 2
)

// histSpec is a histogram stat spec as the engine receives it.
type histSpec struct {
	hdt               int // CRHIST32 .. DVHIST64
	scheme            int
	flags             uint64
	lb, ub            uint64
	stepInc           uint64      // LIN
	stepBase, stepExp uint64      // EXP, LINEXP (StepBase)
	linStepDiv        uint64      // LINEXP
	usr               [][2]uint64 // USR: the buckets' lb and ub
}

func histKind(hdt int) (dr, dv bool) {
	return hdt == dtDR32 || hdt == dtDR64, hdt == dtDV32 || hdt == dtDV64
}

// bktSize is the size of one bucket of a histogram type.
func bktSize(hdt int) int {
	if dr, _ := histKind(hdt); dr {
		return 24
	}
	return 16
}

// histOutcome is what the C does with a histogram spec.
type histOutcome int

const (
	histOK      histOutcome = iota // buckets generated
	histEINVAL                     // the helper fails with EINVAL, deterministically
	histForbids                    // FORMAT.md section 13 excludes it (or it is too large for the generator)
)

// Limits the generator keeps histograms within.
const (
	maxGenBuckets = 400 // generated buckets (LIN, EXP, LINEXP)
	maxSearch     = 200 // LINEXP exponent search steps per bucket
)

// histModel is the C's bucket generation for one spec on a VOI of type vdt.
type histModel struct {
	vdt int
	s   *histSpec
}

// next is stats_vss_hist_bkt_hlpr for a generated scheme: the upper bound
// of bucket k from its lower bound lb. einval: the C returns EINVAL
// (step 0, Q overflow); forbid: the C would loop forever; wrapped: an
// integer bound wrapped past the type's range.
func (m histModel) next(k uint64, lb uint64) (ub uint64, einval, forbid, wrapped bool) {
	s := m.s
	var step uint64
	switch s.scheme {
	case schLin:
		step = s.stepInc
	case schExp:
		step = powU64(s.stepBase, s.stepExp+uint64(uint32(k)))
	case schLinExp:
		e, ok := m.search(lb)
		if !ok {
			return lb, false, true, false
		}
		if s.linStepDiv == 0 {
			return lb, false, true, false
		}
		step = powU64(s.stepBase, e) / s.linStepDiv
		if step == 0 {
			step = 1
		}
	}
	if step == 0 {
		return lb, true, false, false
	}
	switch m.vdt {
	case dtS32:
		x, d := int32(lb), int32(step)
		r := x + d
		wrapped = d > 0 && r < x || d < 0 && r > x
		return lb&^0xFFFFFFFF | uint64(uint32(r)), false, false, wrapped
	case dtU32:
		x, d := uint32(lb), uint32(step)
		return lb&^0xFFFFFFFF | uint64(x+d), false, false, x+d < x
	case dtS64, dtSLong:
		x, d := int64(lb), int64(step)
		r := x + d
		return uint64(r), false, false, d > 0 && r < x || d < 0 && r > x
	case dtU64, dtULong:
		r, c := bits.Add64(lb, step, 0)
		return r, false, false, c != 0
	}
	t := qOf(m.vdt)
	q, ok := t.addI(lb&t.mask(), step)
	if !ok {
		return lb, true, false, false
	}
	return lb&^t.mask() | q, false, false, false
}

// search is the LINEXP exponent search: the smallest e >= 1 whose power,
// cast to the VOI's type, exceeds the bound (for Q_S32 and Q_U32 the C
// falls through into the Q_S64 case, which reads the bound's 8 bytes as an
// s64q).
func (m histModel) search(x uint64) (uint64, bool) {
	b := m.s.stepBase
	for e := uint64(1); e <= maxSearch; e++ {
		p := powU64(b, e)
		var le bool
		switch m.vdt {
		case dtS32:
			le = int32(p) <= int32(x)
		case dtU32:
			le = uint32(p) <= uint32(x)
		case dtS64, dtSLong:
			le = int64(p) <= int64(x)
		case dtU64, dtULong:
			le = p <= x
		case dtQS32, dtQU32, dtQS64:
			le = int64(p) <= giVal64(x)
		default:
			t := qt{64, false}
			le = p <= t.giAbs(x)
		}
		if !le {
			return e, true
		}
	}
	return 0, false
}

// above is the C's end-of-generation test: bound b > the spec's UB in the
// VOI's type.
func (m histModel) above(b uint64) bool {
	ub := m.s.ub
	switch m.vdt {
	case dtS32:
		return int32(b) > int32(ub)
	case dtU32:
		return uint32(b) > uint32(ub)
	case dtS64, dtSLong:
		return int64(b) > int64(ub)
	case dtU64, dtULong:
		return b > ub
	}
	t := qOf(m.vdt)
	return t.gtq(b&t.mask(), ub&t.mask())
}

// run returns the outcome of a spec, the number of buckets (counting the
// ±inf ones) and the bucket lower bounds as 8-byte numerics.
func (m histModel) run() (histOutcome, int, []uint64) {
	s := m.s
	_, dv := histKind(s.hdt)
	lbinf, ubinf := s.flags&hfLBInf != 0, s.flags&hfUBInf != 0
	if dv && (lbinf || ubinf) {
		return histEINVAL, 0, nil
	}
	extra := 0
	if lbinf {
		extra++
	}
	if ubinf {
		extra++
	}
	if s.scheme == schUsr {
		if ubinf || len(s.usr) == 0 || len(s.usr) > 512 {
			return histForbids, 0, nil
		}
		lbs := make([]uint64, len(s.usr))
		for i, b := range s.usr {
			lbs[i] = b[0]
		}
		return histOK, len(s.usr) + extra, lbs
	}
	if s.scheme == schLinExp && s.linStepDiv == 0 {
		return histForbids, 0, nil
	}
	var lbs []uint64
	cur := s.lb
	for k := 0; ; k++ {
		if k >= maxGenBuckets {
			return histForbids, 0, nil
		}
		lbs = append(lbs, cur)
		nx, einval, forbid, wrapped := m.next(uint64(k), cur)
		switch {
		case forbid || wrapped:
			return histForbids, 0, nil
		case einval:
			return histEINVAL, 0, nil
		}
		cur = nx
		if m.above(cur) {
			break
		}
	}
	if ubinf {
		// The C computes one more bound for the +inf bucket; only its
		// failure matters.
		_, einval, forbid, _ := m.next(uint64(len(lbs)), cur)
		switch {
		case forbid:
			return histForbids, 0, nil
		case einval:
			return histEINVAL, 0, nil
		}
		lbs = append(lbs, cur)
	}
	return histOK, len(lbs) + b2i(lbinf), lbs
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// histDataSize is HIST_NBKTS2VSDSZ.
func histDataSize(hdt, nbkts int) int { return 8 + nbkts*bktSize(hdt) }

// tdgstDataSize is TDGST_NCTRS2VSDSZ.
func tdgstDataSize(dt int, nctds uint64) uint64 {
	if dt == dtTD32 {
		return 20 + 16*nctds
	}
	return 32 + 24*nctds
}

// ctrlIni is Q_CTRLINI(prec) & 7, the control bits of a requested precision.
func ctrlIni(prec int) uint64 {
	if prec <= 8 {
		return uint64((prec-1)>>1) & 7
	}
	return uint64(4|((prec-1)>>4)) & 7
}

// qEncode returns the raw pattern of a Q of type t with control bits c and
// combined integer/fraction value ifv (negative: the sign bit and the
// magnitude, as Q_SIFVAL stores a value; unsigned types keep the two's
// complement bits).
func (t qt) qEncode(c uint64, ifv int64) uint64 {
	if !t.s {
		return (c | uint64(ifv)<<3) & t.mask()
	}
	mag := uint64(ifv)
	if ifv < 0 {
		mag = uint64(-ifv)
	}
	r := (c | mag<<3) & t.mask()
	if ifv < 0 {
		r |= 1 << (t.w - 1)
	}
	return r
}
