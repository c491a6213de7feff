package tpl

import (
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"

	"github.com/statsblob/statsblob/voi"
)

// The unit of a derived metric's result, and the factors that put it in
// its declared unit (the rules: Derived's doc).

// unitOf is what the operands' units make of a result's unit.
type unitOf uint8

const (
	unitRaw      unitOf = iota // no units: Unit labels the result
	unitSingle                 // one unit, base and scale
	unitCompound               // several (seconds per byte, seconds²): no unit names it
)

// resultUnit returns the unit of op's result from operands whose base
// units are of and by ("" for none).
func resultUnit(op Op, of, by string) (unitOf, string, float64) {
	switch op {
	case OpAverage, OpRate, OpDifference:
		if of != "" {
			return unitSingle, of, 1
		}
	case OpRatio:
		switch {
		case of == by && of != "":
			return unitSingle, "ratio", 1
		case of == by: // say a declared ratio or percent
			return unitRaw, "ratio", 1
		case by == "":
			return unitSingle, of, 1
		}
		return unitCompound, "", 0
	case OpPercent:
		if of != "" && by != "" && of != by {
			return unitCompound, "", 0
		}
		return unitSingle, "ratio", 0.01
	case OpVariance:
		return unitCompound, "", 0
	}
	return unitRaw, "", 0
}

// derivedScalesLocked checks d against t's VOIs and their metadata vois
// and returns the factors of its operands (t.mu held).
func (t *Template) derivedScalesLocked(d Derived, vois map[int32]VOIMeta) (DerivedScales, error) {
	if err := t.checkDerivedOne(d); err != nil {
		return DerivedScales{}, err
	}
	meta := func(name string) VOIMeta {
		if v, ok := t.defByNameLocked(name); ok && name != "" {
			return vois[v.ID]
		}
		return VOIMeta{}
	}
	of, by := meta(d.Of), meta(d.By)
	s := DerivedScales{Of: of.UnitScale(), By: by.UnitScale(), SumSq: 1}
	bad := func(format string, args ...any) (DerivedScales, error) {
		return DerivedScales{}, fmt.Errorf(format+": %w", append(args, voi.ErrInvalid)...)
	}
	if d.SumSq != "" { // in the square of Of's unit, in decimal (1e-12 for 1e-6)
		r := decimalRat(s.Of)
		if s.SumSq, _ = r.Mul(r, r).Float64(); s.SumSq == 0 || math.IsInf(s.SumSq, 0) {
			return bad("the scale %v of %q squared is %v, not a finite positive number", s.Of, d.Of, s.SumSq)
		}
	}
	if d.Unit == "" || !IsUnit(d.Unit) {
		return s, nil
	}
	ubase, uscale := ParseUnit(d.Unit)
	kind, base, scale := resultUnit(d.Op, of.Unit, by.Unit)
	switch {
	case d.Op == OpVariance:
		return bad("unit %q: a variance is in the square of its operand's unit, which no unit names (give none, or a label such as seconds_squared)", d.Unit)
	case kind == unitCompound:
		return bad("unit %q: %s of %q (%s) by %q (%s) is in no single unit", d.Unit, d.Op, d.Of, orNone(of.Unit), d.By, orNone(by.Unit))
	case kind == unitRaw && ubase != base:
		return s, nil // operands without units: Unit is a label
	case ubase != base:
		in := base
		if scale == 0.01 {
			in = "percent"
		}
		return bad("unit %q is one of %s, the result is in %s", d.Unit, ubase, in)
	}
	// Of's scale times the conversion to the unit, exactly in decimal:
	// 1e-6 seconds in "us" is 1, not 1e-6 * 1e6.
	f, _ := new(big.Rat).Quo(new(big.Rat).Mul(decimalRat(s.Of), decimalRat(scale)), decimalRat(uscale)).Float64()
	if f == 0 || math.IsInf(f, 0) {
		return bad("unit %q: the result converts to it by %v times %v, not a finite positive number", d.Unit, s.Of, scale/uscale)
	}
	s.Of = f
	return s, nil
}

// orNone returns u, or "no unit" for "".
func orNone(u string) string {
	if u == "" {
		return "no unit"
	}
	return u
}

// decimalRat returns f (finite, positive) as the decimal it is written
// as: 1e-06 is 1/1000000, not the binary fraction nearest it.
func decimalRat(f float64) *big.Rat {
	r, _ := new(big.Rat).SetString(strconv.FormatFloat(f, 'g', -1, 64))
	return r
}

// DerivedScales are the factors package derive multiplies the SUMs of a
// derived metric's operands by before it applies the operation: each
// VOI's scale to its base unit (VOIMeta.Scale), Of's also times the
// conversion of the result to the metric's declared unit, SumSq's the
// square of Of's scale. A factor of 1 changes nothing.
type DerivedScales struct{ Of, By, SumSq float64 }

// DerivedScales returns the factors of derived metric d's operands, with
// the template's VOI metadata (whether or not d is one of its derived
// metrics: its own were worked out when they were set, and are not
// again). Errors wrap voi.ErrInvalid, as SetDerived's: d is not valid
// for the template, or its unit does not fit its result.
func (t *Template) DerivedScales(d Derived) (DerivedScales, error) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if i := slices.Index(t.meta.derived, d); i >= 0 {
		return t.meta.scales[i], nil
	}
	s, err := t.derivedScalesLocked(d, t.meta.vois)
	if err != nil {
		return s, fmt.Errorf("tpl: derived metric %q of %q: %w", d.Name, t.name, err)
	}
	return s, nil
}
