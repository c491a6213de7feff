// Package derive computes, on read, the derived metrics a template
// declares (tpl.Derived, UMA DCI's derived classes): ratio and percent of
// two VOIs' SUMs, average, variance from a declared sum of squares,
// per-second rates and differences between two readings; and the mean of every VOI whose
// updates a companion VOI counts (tpl.VOIMeta.Count, Linux's range type).
//
// Operands are the SUMs of the VOIs named, converted to their base unit
// with their metadata's scale (a latency in microseconds with scale 1e-6
// averages in seconds), except a count, and a sum of squares, which takes
// the square of the scale of the VOI it squares; the result is then in
// the metric's declared unit, where it has one of the same dimension
// (tpl.Derived: an average of microseconds declared "us" is in
// microseconds, one declared "ms" in milliseconds), else in the base
// unit. Between two readings (prev and cur, cumulative, prev the earlier)
// every operand is the difference cur − prev, so a ratio or an average is
// the period's, a difference is the period's change, and a rate divides
// that change by the elapsed time.
package derive

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// Value is one derived metric's value.
type Value struct {
	Name string // the declared name; "<voi>_mean" for a counted VOI's mean
	Op   tpl.Op
	Unit string // the declared unit (Value is in it), or for a mean the VOI's base unit
	Help string
	// Value is the result; NaN when it is undefined (a division by a
	// zero count or by no elapsed time).
	Value float64
}

// Compute returns the template's derived metrics for one reading cur (a
// window, or everything since the blob's reset) or, with prev non-nil,
// for the period between two cumulative readings of the same blob.
// Declared metrics come first, in declaration order, then the mean of each
// counted VOI in id order (unless a declared metric has its name). elapsed
// is the time the reading (or the period) covers; rates need it, and are
// NaN when it is not positive.
//
// Between two readings an operand is its change, exact for integer VOIs;
// a signed SUM, or one declared tpl.KindGauge, may fall (a negative
// change). Errors wrap voi.ErrInvalid: no template or reading, a blob of
// another template, or a counter operand (tpl.KindCounter, or an unsigned
// VOI of tpl.KindDefault) that falls from prev to cur (a counter reset
// between them: take the later reading alone).
func Compute(t *tpl.Template, prev, cur *blob.Blob, elapsed time.Duration) ([]Value, error) {
	if t == nil || cur == nil {
		return nil, fmt.Errorf("derive: no template or no reading: %w", voi.ErrInvalid)
	}
	for _, b := range []*blob.Blob{prev, cur} {
		if b != nil && b.TplHash() != t.Hash() {
			return nil, fmt.Errorf("derive: blob of template hash %d read with %s: %w", b.TplHash(), t.Spec(), voi.ErrInvalid)
		}
	}
	ids := map[string]int32{}
	for _, d := range t.VOIs() {
		if _, dup := ids[d.Name]; !dup { // a name means its first VOI, as in tpl
			ids[d.Name] = d.ID
		}
	}
	// sum returns VOI name's SUM over the reading times scale.
	sum := func(name string, scale float64) (float64, error) {
		id := ids[name]
		m, _ := t.VOIMeta(id)
		v, err := change(prev, cur, id, m.Kind)
		if err != nil {
			return 0, fmt.Errorf("derive: VOI %q: %w", name, err)
		}
		return scaled(v, scale), nil
	}
	var out []Value
	declared := map[string]bool{}
	for _, d := range t.Derived() {
		declared[d.Name] = true
		v := Value{Name: d.Name, Op: d.Op, Unit: d.Unit, Help: d.Help}
		sc, err := t.DerivedScales(d)
		if err != nil { // metadata set since: tpl keeps them consistent
			return nil, fmt.Errorf("derive: %w", err)
		}
		of, err := sum(d.Of, sc.Of)
		if err != nil {
			return nil, err
		}
		var by, sq float64
		if d.By != "" {
			if by, err = sum(d.By, sc.By); err != nil {
				return nil, err
			}
		}
		if d.SumSq != "" {
			if sq, err = sum(d.SumSq, sc.SumSq); err != nil {
				return nil, err
			}
		}
		v.Value = apply(d.Op, of, by, sq, elapsed)
		out = append(out, v)
	}
	for _, d := range t.VOIs() {
		m, ok := t.VOIMeta(d.ID)
		if !ok || m.Count == "" || declared[d.Name+"_mean"] {
			continue
		}
		of, err := sum(d.Name, m.UnitScale())
		if err != nil {
			return nil, err
		}
		n, err := sum(m.Count, 1)
		if err != nil {
			return nil, err
		}
		out = append(out, Value{Name: d.Name + "_mean", Op: tpl.OpAverage, Unit: m.Unit, Help: "mean of " + d.Name, Value: apply(tpl.OpAverage, of, n, 0, elapsed)})
	}
	return out, nil
}

// apply computes op on its operands.
func apply(op tpl.Op, of, by, sq float64, elapsed time.Duration) float64 {
	div := func(a, b float64) float64 {
		if b == 0 {
			return math.NaN()
		}
		return a / b
	}
	switch op {
	case tpl.OpRatio, tpl.OpAverage:
		return div(of, by)
	case tpl.OpPercent:
		return div(100*of, by)
	case tpl.OpVariance:
		mean := div(of, by)
		return max(div(sq, by)-mean*mean, 0) // rounding can take it below 0
	case tpl.OpDifference:
		return of
	case tpl.OpRate:
		if elapsed <= 0 {
			return math.NaN()
		}
		return of / elapsed.Seconds()
	}
	return math.NaN()
}

// scaled returns v times scale, dividing by the inverse where scale is
// the nearest float64 to the inverse of an integer, as an exporter scales
// a VOI's values: 999 µs is 0.000999 s, where 999 * 1e-6 is
// 0.0009989999999999999.
func scaled(v, scale float64) float64 {
	if scale >= 1 {
		if scale == 1 {
			return v
		}
		return v * scale
	}
	if inv := math.Round(1 / scale); 1/inv == scale {
		return v / inv
	}
	return v * scale
}

// change returns VOI id's SUM in cur, or with prev its change from prev to
// cur: exact for an integer VOI (rounded to float64 once, so counters near
// 2^64 change by what was added), negative where the SUM fell. A counter
// (KindCounter, or an unsigned VOI of KindDefault) that falls was reset
// between the readings: an error wrapping voi.ErrInvalid.
func change(prev, cur *blob.Blob, id int32, kind tpl.Kind) (float64, error) {
	c, err := cur.Fetch(id, voi.Sum)
	if err != nil {
		return 0, err
	}
	if prev == nil {
		return c.Value()
	}
	p, err := prev.Fetch(id, voi.Sum)
	if err != nil {
		return 0, err
	}
	if p.DType != c.DType {
		return 0, fmt.Errorf("the earlier reading's SUM is %v, the later's %v: %w", p.DType, c.DType, voi.ErrInvalid)
	}
	pv, err := p.Value() // checks the data's size, which intBits reads
	if err != nil {
		return 0, err
	}
	cv, err := c.Value()
	if err != nil {
		return 0, err
	}
	d, fell := cv-pv, cv < pv
	if c.DType.IsInt() {
		pi, ci := intBits(p), intBits(c)
		if fell = ci < pi; c.DType.Signed() {
			fell = int64(ci) < int64(pi)
		}
		// The magnitude of ci - pi fits in 64 bits for any two values of one type.
		if d = float64(ci - pi); fell {
			d = -float64(pi - ci)
		}
	}
	if fell && (kind == tpl.KindCounter || kind == tpl.KindDefault && !c.DType.Signed()) {
		return 0, fmt.Errorf("a counter that fell from %v to %v (reset between the readings?): %w", pv, cv, voi.ErrInvalid)
	}
	return d, nil
}

// intBits returns an integer statistic's value as 64 bits, a signed one
// sign-extended.
func intBits(s blob.Stat) uint64 {
	switch {
	case s.DType.Is32() && s.DType.Signed():
		return uint64(int64(int32(binary.LittleEndian.Uint32(s.Data))))
	case s.DType.Is32():
		return uint64(binary.LittleEndian.Uint32(s.Data))
	}
	return binary.LittleEndian.Uint64(s.Data)
}
