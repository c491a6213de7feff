package gen

import (
	"fmt"
	"strconv"
	"strings"
)

// Coverage columns: the kinds of statistic data a command can meet.
const (
	colState = iota
	colSum
	colMax
	colMin
	colCR32
	colDR32
	colDV32
	colCR64
	colDR64
	colDV64
	colTD32
	colTD64
	numCols
)

var colNames = [numCols]string{"VOISTATE", "SUM", "MAX", "MIN", "CRHIST32", "DRHIST32", "DVHIST32",
	"CRHIST64", "DRHIST64", "DVHIST64", "TDGSTCLUST32", "TDGSTCLUST64"}

func histCol(hdt int) int { return colCR32 + hdt - dtCR32 }

// statSpec is one generated STAT token and what the C makes of it.
type statSpec struct {
	tok   string
	stype int
	col   int
	kind  string // the coverage name: SUM, TDGSTCLUST32, CRHIST32_LIN+lbinf, ...
	dsz   int    // the stat's data size when its helper succeeds
	fails bool   // the helper fails (EINVAL)
	hints []string
}

var flagSuffix = []string{"", "+lbinf", "+ubinf", "+lbinf+ubinf"}

// histKindName is the coverage name of a histogram spec.
func histKindName(hdt, sch int, flags uint64) string {
	return dtNames[hdt] + "_" + schNames[sch] + flagSuffix[flags&3]
}

// caseVariant writes a case-insensitive name in upper case mostly, else in
// lower or mixed case.
func (g *gen) caseVariant(name string) string {
	switch g.r.intn(12) {
	case 0:
		g.hit("syntax lower-case name")
		return strings.ToLower(name)
	case 1:
		b := []byte(strings.ToLower(name))
		for i := range b {
			if g.r.oneIn(2) && b[i] >= 'a' && b[i] <= 'z' {
				b[i] -= 'a' - 'A'
			}
		}
		g.hit("syntax mixed-case name")
		return string(b)
	}
	return name
}

// statFor draws one stat spec for a VOI of type vdt (a numeric type; the
// generator draws bounds for some numeric type even when the VOI's own
// dtype is invalid) and precision prec.
func (g *gen) statFor(vdt, prec int) statSpec {
	r := g.r
	switch r.weighted([]int{12, 12, 12, 7, 7, 50}) {
	case 0, 1, 2:
		st := stSum + r.intn(3)
		tok := g.caseVariant(stNames[st])
		if r.oneIn(40) {
			g.hit("voi stat args ignored")
			tok += "(" + pick(r, "1", "0,0", "x", "lbinf,2,3") + ")"
		}
		return statSpec{tok: tok, stype: st, col: colSum + st - stSum, kind: stNames[st], dsz: dtSize(vdt)}
	case 3, 4:
		dt := dtTD32
		if r.oneIn(2) {
			dt = dtTD64
		}
		var n uint64
		switch k := r.intn(100); {
		case k < 30:
			n = uint64(r.between(1, 4))
		case k < 98:
			n = uint64(r.between(5, 60))
		default:
			n = uint64(r.between(2000, 5000))
		}
		prec := r.between(1, 16)
		if dt == dtTD64 && r.oneIn(3) {
			prec = r.between(17, 64)
		}
		tok := fmt.Sprintf("%s(%s,%s)", g.caseVariant(dtNames[dt]), g.intLit(n), smallLit(prec))
		col := colTD32
		if dt == dtTD64 {
			col = colTD64
		}
		return statSpec{tok: tok, stype: stTDgst, col: col, kind: dtNames[dt], dsz: int(tdgstDataSize(dt, n))}
	}
	return g.histStat(vdt, prec)
}

// histStat draws a histogram spec that the model accepts: random
// parameters first, a simple spec of the same type, scheme and flags if
// none of a few draws is allowed.
func (g *gen) histStat(vdt, prec int) statSpec {
	r := g.r
	hdt := dtCR32 + r.intn(6)
	sch := r.intn(numSchemes)
	_, dv := histKind(hdt)
	flags := uint64(r.intn(4))
	if dv && r.pct(70) {
		flags = 0 // DVHIST with an inf flag fails the whole VOI: mostly none
	}
	if sch == schUsr && !dv {
		flags &^= hfUBInf // FORMAT.md section 13: USR with ubinf reads past the list
	}
	var s histSpec
	var out histOutcome
	var n int
	var lbs []uint64
	found := false
	for attempt := 0; attempt < 12 && !found; attempt++ {
		s = g.histParams(vdt, prec, hdt, sch, flags)
		out, n, lbs = histModel{vdt, &s}.run()
		found = out == histOK || out == histEINVAL && (attempt >= 4 || r.oneIn(5))
	}
	if !found {
		s = g.safeHist(vdt, prec, hdt, sch, flags)
		if out, n, lbs = (histModel{vdt, &s}).run(); out == histForbids {
			panic(fmt.Sprintf("gen: fallback histogram %+v on %s is not allowed", s, dtNames[vdt]))
		}
	}
	tok := g.histTok(&s, vdt)
	for strings.IndexByte(tok, '(') < len(tok)-4096 {
		// FORMAT.md section 13: at most 4095 characters between the
		// parentheses; only long USR lists get there.
		s.usr = s.usr[:len(s.usr)*3/4]
		out, n, lbs = histModel{vdt, &s}.run()
		tok = g.histTok(&s, vdt)
	}
	sp := statSpec{tok: tok, stype: stHist, col: histCol(hdt), kind: histKindName(hdt, sch, flags),
		dsz: histDataSize(hdt, n), fails: out == histEINVAL}
	if out == histOK {
		for i := 0; i < 4 && len(lbs) > 0; i++ {
			b := lbs[r.intn(len(lbs))]
			if isQ(vdt) {
				sp.hints = append(sp.hints, qHint(qOf(vdt), b)...)
			} else {
				sp.hints = append(sp.hints, g.intHints(vdt, b)...)
			}
		}
	}
	return sp
}

// histTok renders a histogram spec as a STAT token.
func (g *gen) histTok(s *histSpec, _ int) string {
	r := g.r
	var args []string
	if s.scheme == schUsr {
		var sb strings.Builder
		for i, b := range s.usr {
			if i > 0 {
				sb.WriteByte('|')
			}
			switch {
			case b[0] != b[1]:
				sb.WriteString(g.numLit(b[0]) + ":" + g.numLit(b[1]))
			case r.oneIn(10):
				g.hit("hist usr lb:ub of one value")
				l := g.numLit(b[0])
				sb.WriteString(l + ":" + l)
			default:
				sb.WriteString(g.numLit(b[0]))
			}
		}
		args = append(args, sb.String())
	} else {
		args = append(args, g.intLit(s.lb), g.intLit(s.ub))
		switch s.scheme {
		case schLin:
			args = append(args, g.intLit(s.stepInc))
		case schExp:
			args = append(args, g.intLit(s.stepBase), g.intLit(s.stepExp))
		case schLinExp:
			args = append(args, g.intLit(s.linStepDiv), g.intLit(s.stepBase))
		}
	}
	if f := g.flagTok(s.flags); f != "" {
		args = append(args, f)
	}
	name := g.caseVariant(dtNames[s.hdt] + "_" + schNames[s.scheme])
	return name + "(" + strings.Join(args, ",") + ")"
}

// numLit renders a bucket value short (USR lists can be long).
func (g *gen) numLit(v uint64) string {
	if g.r.oneIn(4) {
		return g.intLit(v)
	}
	if int64(v) < 0 {
		return "-" + strconv.FormatUint(-v, 10)
	}
	return strconv.FormatUint(v, 10)
}

// flagTok renders histogram flags (an empty string: no HF argument).
func (g *gen) flagTok(f uint64) string {
	r := g.r
	switch f & 3 {
	case 0:
		switch r.intn(10) {
		case 0, 1:
			g.hit("hist flags 0")
			return "0"
		case 2:
			g.hit("hist flags other bits")
			return pick(r, "4", "0x10", "8+0x100")
		}
		return ""
	case hfLBInf:
		return pick(r, "lbinf", "lbinf", "lbinf", "1", "lbinf+4", "0x1")
	case hfUBInf:
		return pick(r, "ubinf", "ubinf", "ubinf", "2", "ubinf+8")
	}
	return pick(r, "lbinf+ubinf", "ubinf+lbinf", "3", "lbinf+2", "1+ubinf")
}

// histParams draws the numbers of a histogram spec.
func (g *gen) histParams(vdt, prec, hdt, sch int, flags uint64) histSpec {
	s := histSpec{hdt: hdt, scheme: sch, flags: flags}
	if isQ(vdt) {
		g.qHistParams(&s, vdt, prec)
	} else {
		g.intHistParams(&s, vdt)
	}
	return s
}

// typeMax and typeMin are an integer type's extremes as 64-bit patterns.
func typeMax(dt int) uint64 {
	switch dt {
	case dtS32:
		return 1<<31 - 1
	case dtU32:
		return 1<<32 - 1
	case dtS64, dtSLong:
		return 1<<63 - 1
	}
	return ^uint64(0)
}

func typeMin(dt int) uint64 {
	switch dt {
	case dtS32:
		return 0xFFFFFFFF80000000
	case dtS64, dtSLong:
		return 1 << 63
	}
	return 0
}

func (g *gen) intHistParams(s *histSpec, vdt int) {
	r := g.r
	w := 64
	if is32(vdt) {
		w = 32
	}
	signed := isSigned(vdt)
	pat := func(x uint64) uint64 {
		if w == 32 {
			return g.pattern32(uint32(x), signed)
		}
		return x
	}
	// start draws a first lower bound; near is set when it lies just below
	// the type's maximum (m steps of step below it).
	start := func(step uint64, m int) uint64 {
		switch r.intn(6) {
		case 0, 1, 2:
			x := uint64(int64(r.between(-30, 120)))
			if !signed && int64(x) < 0 {
				x = -x
			}
			return x
		case 3:
			x := r.logU(w - 1)
			if signed && r.oneIn(2) {
				x = -x
			}
			return x
		case 4:
			g.hit("hist bounds near max")
			return typeMax(vdt) - step*uint64(m+1) - uint64(r.intn(int(min(step, 1000))))
		}
		g.hit("hist bounds near min")
		return typeMin(vdt) + uint64(r.intn(50))
	}
	switch s.scheme {
	case schLin:
		step := uint64(r.between(1, 25))
		if r.oneIn(4) {
			step = r.logU(w-4) + 1
		}
		m := r.between(0, 30)
		lb := start(step, m)
		ub := lb + step*uint64(m)
		switch r.intn(6) {
		case 0:
			ub += uint64(r.intn(int(min(step, 1000))))
		case 1:
			ub -= uint64(r.intn(int(min(step, 1000))))
		case 2:
			if r.oneIn(3) {
				g.hit("hist ub below lb")
				ub = lb - uint64(r.between(1, 100))
			}
		}
		if r.oneIn(30) {
			g.hit("hist negative step")
			step = -step
		}
		s.lb, s.ub, s.stepInc = pat(lb), pat(ub), step
		if w == 32 && r.oneIn(10) {
			s.stepInc |= r.u64() &^ 0xFFFFFFFF
		}
	case schExp:
		base := pick[uint64](r, 0, 1, 2, 2, 2, 3, 4, 5, 7, 10, 16)
		exp := uint64(r.between(0, 4))
		if r.oneIn(15) {
			exp = pick[uint64](r, 10, 20, 31, 32, 62, 63)
		}
		m := r.between(1, 12)
		var total uint64
		for k := range m {
			total += powU64(base, exp+uint64(k))
		}
		lb := start(max(total/uint64(m), 1), m)
		ub := lb + total - uint64(r.intn(2))
		if r.oneIn(5) {
			ub = lb + r.logU(w)
		}
		s.lb, s.ub, s.stepBase, s.stepExp = pat(lb), pat(ub), base, exp
	case schLinExp:
		base := uint64(r.between(2, 10))
		if r.oneIn(20) {
			base = pick[uint64](r, 0, 1, 1000, 1<<20)
		}
		div := uint64(r.between(1, 16))
		if r.oneIn(15) {
			div = pick[uint64](r, 100, 1000, 1<<40)
		}
		lb := uint64(r.between(0, 200))
		switch r.intn(6) {
		case 0:
			if signed {
				lb = -uint64(r.between(1, 200))
			}
		case 1:
			lb = r.logU(w - 2)
		}
		ub := lb + r.logU(12) + 1
		if r.oneIn(5) {
			ub = lb + r.logU(w-2)
		}
		s.lb, s.ub, s.stepBase, s.linStepDiv = pat(lb), pat(ub), base, div
	case schUsr:
		n := r.between(1, 12)
		if r.oneIn(15) {
			n = r.between(13, 80)
		}
		if r.oneIn(150) {
			n = 512
		}
		step := uint64(r.between(1, 20))
		x := start(step, n)
		if n > 40 {
			x = uint64(r.between(0, 50))
		}
		dr, _ := histKind(s.hdt)
		for range n {
			b := [2]uint64{pat(x), 0}
			b[1] = b[0]
			if dr && r.pct(85) || r.oneIn(12) {
				b[1] = pat(x + uint64(r.between(0, int(step))))
				if r.oneIn(10) {
					b[1] = pat(x - 1)
				}
			}
			s.usr = append(s.usr, b)
			x += uint64(r.between(0, int(step)))
			if r.oneIn(10) {
				x = r.logU(w)
			}
		}
		if r.oneIn(8) {
			g.hit("hist usr unsorted")
			for i := len(s.usr) - 1; i > 0; i-- {
				j := r.intn(i + 1)
				s.usr[i], s.usr[j] = s.usr[j], s.usr[i]
			}
		}
	}
}

func (g *gen) qHistParams(s *histSpec, vdt, prec int) {
	r := g.r
	t := qOf(vdt)
	c := ctrlIni(prec)
	if r.pct(30) {
		c = uint64(r.intn(8))
	}
	nf := t.nf(c)
	ibits := int(t.w) - int(t.sbit()) - 3 - int(nf)
	imax := int64(1)<<ibits - 1
	clamp := func(i int64) int64 {
		if i > imax {
			return imax
		}
		if !t.s && i < 0 {
			return 0
		}
		if i < -imax {
			return -imax
		}
		return i
	}
	// q builds the pattern of the value i + a random fraction.
	q := func(c uint64, i int64, frac bool) uint64 {
		nf := t.nf(c)
		var f int64
		if frac && nf > 0 {
			f = int64(r.bitsn(int(nf)))
		}
		i = clamp(i)
		var ifv int64
		if i < 0 {
			ifv = i<<nf - f
		} else {
			ifv = i<<nf + f
		}
		raw := t.qEncode(c, ifv)
		if t.w == 32 && r.oneIn(8) {
			g.hit("hist Q bound high bits")
			raw |= r.u64() &^ 0xFFFFFFFF
		}
		return raw
	}
	c2 := c
	if r.oneIn(6) {
		g.hit("hist Q bounds of two precisions")
		c2 = uint64(r.intn(8))
	}
	frac := r.oneIn(3)
	start := func(step int64, m int) int64 {
		switch r.intn(6) {
		case 0, 1, 2:
			lo := int64(-40)
			if !t.s {
				lo = 0
			}
			return int64(r.between(int(lo), 120))
		case 3:
			if t.s {
				g.hit("hist Q negative bounds")
				return -int64(r.between(1, 10000))
			}
			return int64(r.between(0, 10000))
		case 4:
			g.hit("hist Q bounds near max")
			return imax - step*int64(m+1) - int64(r.intn(3))
		}
		return int64(r.logU(max(ibits, 0)))
	}
	switch s.scheme {
	case schLin:
		step := int64(r.between(1, 20))
		if r.oneIn(8) {
			step = int64(r.logU(40)) + 1
		}
		m := r.between(0, 30)
		lb := start(step, m)
		ub := lb + step*int64(m) + int64(r.between(-1, 1))
		s.lb, s.ub, s.stepInc = q(c, lb, frac), q(c2, ub, frac), uint64(step)
		if r.oneIn(25) {
			g.hit("hist Q huge step")
			s.stepInc = pick(r, uint64(1)<<32, ^uint64(0), uint64(1)<<31, uint64(imax)+1)
		}
	case schExp:
		base := pick[uint64](r, 0, 1, 2, 2, 2, 3, 4, 10)
		exp := uint64(r.between(0, 4))
		m := r.between(1, 10)
		var total int64
		for k := range m {
			total += int64(powU64(base, exp+uint64(k)))
		}
		lb := start(max(total/int64(m), 1), m)
		s.lb, s.ub, s.stepBase, s.stepExp = q(c, lb, frac), q(c2, lb+total-int64(r.intn(2)), frac), base, exp
	case schLinExp:
		base := uint64(r.between(2, 10))
		div := uint64(r.between(1, 16))
		lb := start(1, 1)
		if lb > 1000 {
			lb = int64(r.between(0, 1000))
		}
		s.lb, s.ub, s.stepBase, s.linStepDiv = q(c, lb, frac), q(c2, lb+int64(r.logU(10))+1, frac), base, div
	case schUsr:
		n := r.between(1, 12)
		if r.oneIn(15) {
			n = r.between(13, 60)
		}
		x := start(5, n)
		dr, _ := histKind(s.hdt)
		for range n {
			b := [2]uint64{q(c, x, frac), 0}
			b[1] = b[0]
			if dr && r.pct(85) || r.oneIn(12) {
				b[1] = q(c2, x+int64(r.between(0, 5)), frac)
			}
			s.usr = append(s.usr, b)
			x += int64(r.between(0, 5))
		}
	}
}

// safeHist is a simple spec of the given type, scheme and flags that the
// model allows on every VOI type.
func (g *gen) safeHist(vdt, prec, hdt, sch int, flags uint64) histSpec {
	r := g.r
	s := histSpec{hdt: hdt, scheme: sch, flags: flags}
	num := func(i int64) uint64 { return uint64(i) }
	if isQ(vdt) {
		t := qOf(vdt)
		c := ctrlIni(prec)
		nf := t.nf(c)
		num = func(i int64) uint64 { return t.qEncode(c, i<<nf) }
	}
	if isQ(vdt) && qOf(vdt).nf(ctrlIni(prec)) >= qOf(vdt).w-qOf(vdt).sbit()-3 && sch != schUsr {
		// No integer bits: a step of 1 overflows or vanishes. A first
		// bound above UB still makes one bucket.
		t := qOf(vdt)
		c := ctrlIni(prec)
		s.lb, s.ub = t.qEncode(c, 1<<(t.nf(c)-1)), t.qEncode(c, 0)
		s.stepInc, s.stepBase, s.stepExp, s.linStepDiv = 1, 2, 0, 1
		return s
	}
	switch sch {
	case schLin:
		s.lb, s.ub, s.stepInc = num(0), num(int64(r.between(0, 20))), uint64(r.between(1, 5))
	case schExp:
		s.lb, s.ub, s.stepBase, s.stepExp = num(0), num(int64(r.between(1, 100))), 2, 0
	case schLinExp:
		s.lb, s.ub, s.stepBase, s.linStepDiv = num(0), num(int64(r.between(1, 100))), 2, uint64(r.between(1, 3))
	case schUsr:
		for i := range r.between(1, 4) {
			s.usr = append(s.usr, [2]uint64{num(int64(i)), num(int64(i + 1))})
		}
	}
	return s
}
