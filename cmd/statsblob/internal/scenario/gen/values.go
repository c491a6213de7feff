package gen

import (
	"strconv"
	"strings"
)

// Literal rendering: every number the generator writes denotes an exact
// 64-bit pattern (FORMAT.md 3.1), in one of the syntaxes the language
// allows, so the model sees what the runners see.

var namedInts = []struct {
	name string
	v    uint64
}{
	{"INT32_MIN", 0xFFFFFFFF80000000}, {"INT32_MAX", 0x7FFFFFFF}, {"UINT32_MAX", 0xFFFFFFFF},
	{"INT64_MIN", 0x8000000000000000}, {"INT64_MAX", 0x7FFFFFFFFFFFFFFF}, {"UINT64_MAX", 0xFFFFFFFFFFFFFFFF},
	{"LONG_MIN", 0x8000000000000000}, {"LONG_MAX", 0x7FFFFFFFFFFFFFFF}, {"ULONG_MAX", 0xFFFFFFFFFFFFFFFF},
}

// intLit renders the pattern v as an INT literal, in a syntax drawn from r.
func (g *gen) intLit(v uint64) string {
	r := g.r
	var names []string
	for _, n := range namedInts {
		if n.v == v {
			names = append(names, n.name)
		}
	}
	if len(names) > 0 && r.pct(60) {
		g.hit("literal named")
		return pick(r, names...)
	}
	neg := int64(v) < 0 && r.pct(70)
	switch k := r.intn(20); {
	case k < 12:
		if neg {
			g.hit("literal negative")
			return "-" + strconv.FormatUint(-v, 10)
		}
		if k == 0 {
			g.hit("literal plus")
			return "+" + strconv.FormatUint(v, 10)
		}
		return strconv.FormatUint(v, 10)
	case k < 16:
		g.hit("literal hex")
		h := strconv.FormatUint(v, 16)
		if r.oneIn(3) {
			h = strings.ToUpper(h)
		}
		p := "0x"
		if r.oneIn(4) {
			p = "0X"
		}
		if neg && r.oneIn(2) {
			return "-" + p + strconv.FormatUint(-v, 16)
		}
		return p + h
	case k < 18 && v < 1<<20:
		g.hit("literal octal")
		return "0" + strconv.FormatUint(v, 8)
	default:
		if neg {
			return "-" + strconv.FormatUint(-v, 10)
		}
		return strconv.FormatUint(v, 10)
	}
}

// smallLit renders a small non-negative number plainly (counts, sizes).
func smallLit(v int) string { return strconv.Itoa(v) }

// dtype ranges of the integer types.
func intRange(dt int) (lo, hi int64, ulo, uhi uint64) {
	switch dt {
	case dtS32:
		return -1 << 31, 1<<31 - 1, 0, 0
	case dtU32:
		return 0, 0, 0, 1<<32 - 1
	case dtS64, dtSLong:
		return -1 << 63, 1<<63 - 1, 0, 0
	}
	return 0, 0, 0, ^uint64(0)
}

// pattern32 gives a 32-bit type's value x its 64-bit pattern: usually the
// value's own extension, sometimes with other high bits (which the engine
// ignores for updates and keeps in histogram bounds).
func (g *gen) pattern32(x uint32, signed bool) uint64 {
	switch k := g.r.intn(10); {
	case k < 6:
		if signed {
			return uint64(int64(int32(x)))
		}
		return uint64(x)
	case k < 9:
		return uint64(x)
	default:
		g.hit("literal high bits")
		return g.r.u64()&^0xFFFFFFFF | uint64(x)
	}
}

// intValue draws an interesting value of an integer dtype as a pattern.
func (g *gen) intValue(dt int) uint64 {
	r := g.r
	var v uint64
	lo, hi, _, uhi := intRange(dt)
	signed := isSigned(dt)
	switch k := r.intn(10); {
	case k < 4:
		v = uint64(int64(r.between(-20, 1000)))
		if !signed && int64(v) < 0 {
			v = -v
		}
	case k < 6:
		v = r.logU(64)
		if signed && r.oneIn(2) {
			v = -v
		}
	case k < 8:
		if signed {
			v = uint64(pick(r, lo, hi, lo+1, hi-1, 0, -1, 1))
		} else {
			v = pick(r, uhi, uhi-1, 0, 1, uhi/2, uhi/2+1)
		}
	default:
		v = r.u64()
	}
	if is32(dt) {
		return g.pattern32(uint32(v), signed)
	}
	return v
}

// qValueLit draws a Q literal (FORMAT.md 3.2) for a Q dtype of precision
// prec.
func (g *gen) qValueLit(dt, prec int) string {
	r := g.r
	t := qOf(dt)
	nf := t.nf(ctrlIni(prec))
	ibits := int(t.w) - int(t.sbit()) - 3 - int(nf)
	switch k := r.intn(20); {
	case k < 3:
		g.hit("literal Q raw")
		ifv := r.logU(int(t.w) - int(t.sbit()) - 3)
		if t.s && r.oneIn(2) {
			return "raw:-" + strconv.FormatUint(ifv, 10)
		}
		if r.oneIn(5) {
			return "raw:" + g.intLit(r.u64())
		}
		return "raw:" + strconv.FormatUint(ifv, 10)
	case k < 4:
		g.hit("literal Q named")
		return pick(r, "INT32_MAX", "INT32_MIN", "UINT32_MAX", "INT64_MAX", "0x10") + pick(r, "", ".5", ".25")
	}
	var ip string
	switch k := r.intn(10); {
	case k < 6:
		ip = strconv.Itoa(r.between(0, 200))
	case k < 8 && ibits > 0:
		ip = strconv.FormatUint(r.bitsn(r.between(0, min(ibits, 63))), 10)
	case k < 9:
		g.hit("literal Q hex")
		ip = "0x" + strconv.FormatUint(r.bitsn(r.between(0, 16)), 16)
	default:
		ip = strconv.FormatUint(r.logU(64), 10)
	}
	if r.oneIn(20) {
		ip = "+" + ip
	}
	lit := ip
	if r.pct(60) {
		n := r.between(0, 6)
		if r.oneIn(8) {
			n = r.between(7, 18)
		}
		var sb strings.Builder
		for range n {
			sb.WriteByte(byte('0' + r.intn(10)))
		}
		lit += "." + sb.String()
		g.hit("literal Q fraction")
	}
	if r.pct(30) {
		lit = "-" + lit
		g.hit("literal Q negative")
	}
	return lit
}

// valueLit draws an update value for a dtype token (the `as` dtype or the
// VOI's record): a Q literal for Q dtypes, else an INT.
func (g *gen) valueLit(dt, prec int, v *voiRec) string {
	r := g.r
	if v != nil && v.dt == dt && len(v.hints) > 0 && r.pct(45) {
		return pick(r, v.hints...)
	}
	if isQ(dt) {
		return g.qValueLit(dt, prec)
	}
	if dt >= dtS32 && dt <= dtULong {
		return g.intLit(g.intValue(dt))
	}
	return g.intLit(r.logU(64))
}

// qHint returns an update literal whose value is near the Q bound b (a raw
// pattern of type t): its integer part, and a value just below or above.
func qHint(t qt, b uint64) []string {
	b &= t.mask()
	i := t.giAbs(b)
	neg := t.ltz(b)
	s := strconv.FormatUint(i, 10)
	if neg {
		s = "-" + s
	}
	out := []string{s}
	if !neg {
		out = append(out, s+".5", strconv.FormatUint(i+1, 10))
		if i > 0 {
			out = append(out, strconv.FormatUint(i-1, 10)+".99")
		}
	} else {
		out = append(out, s+".5", "-"+strconv.FormatUint(i+1, 10))
	}
	return out
}

// intHint returns update literals at and next to the bound b of an integer
// dtype.
func (g *gen) intHints(dt int, b uint64) []string {
	out := make([]string, 0, 3)
	for _, d := range []uint64{0, 1, ^uint64(0)} {
		x := b + d
		if is32(dt) {
			x = uint64(uint32(x))
			if isSigned(dt) {
				x = uint64(int64(int32(x)))
			}
		}
		out = append(out, g.intLit(x))
	}
	return out
}
