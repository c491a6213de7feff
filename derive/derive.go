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
//
// A counter that was reset between the readings (a restarted process, a
// snapshot taken with reset, statdef's data=reset) counts from its reset,
// as Prometheus's rate() takes a counter that falls: where the blob's
// last reset (its header) is later in cur than in prev, cur stands alone
// (every operand is its own, since that reset, as devstat and iostat(8)
// take a device reset between two readings), and a rate covers the time
// from the reset to when cur was read (ComputeAt); where a counter falls
// with the header unchanged (blob.Blob.ResetVOI), that counter's operand is
// its value in cur. Value.SinceReset marks the values either changed.
// Readings given in the wrong order are refused: ErrWrongOrder.
package derive

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// ErrWrongOrder is wrapped by the errors of two readings given in the
// wrong order (the later one first): prev's last reset is after cur's, or
// every counter that changed fell while the last reset stayed the same.
// It wraps voi.ErrInvalid.
var ErrWrongOrder = fmt.Errorf("readings in the wrong order: %w", voi.ErrInvalid)

// Value is one derived metric's value.
type Value struct {
	Name string // the declared name; "<voi>_mean" for a counted VOI's mean
	Op   tpl.Op
	Unit string // the declared unit (Value is in it), or for a mean the VOI's base unit
	Help string
	// Value is the result; NaN when it is undefined (a division by a
	// zero count or by no elapsed time).
	Value float64
	// SinceReset reports that a counter the value reads was reset between
	// the two readings: the blob (its last reset is later in cur than in
	// prev: every operand is cur's own, since that reset), or the counter
	// alone (it fell: its operand is its value in cur). Always false for
	// one reading.
	SinceReset bool
}

// Compute is ComputeAt without the time cur was read: rates cover elapsed
// even when the blob was reset between the readings, as Prometheus's
// rate() takes a counter reset within its range.
func Compute(t *tpl.Template, prev, cur *blob.Blob, elapsed time.Duration) ([]Value, error) {
	return ComputeAt(t, prev, cur, elapsed, time.Time{})
}

// ComputeAt returns the template's derived metrics for one reading cur (a
// window, or everything since the blob's reset) or, with prev non-nil,
// for the period between two cumulative readings of the same blob.
// Declared metrics come first, in declaration order, then the mean of each
// counted VOI in id order (unless a declared metric has its name). elapsed
// is the time the reading (or the period) covers; rates need it, and are
// NaN when it is not positive.
//
// at is when cur was read, on its blob's clock (time.Now() for blobs of
// the default blob.WallClock), or zero if unknown. Where cur stands alone
// (prev nil, or the blob reset between the readings: cur's last reset is
// after prev's) and at is not zero, rates cover at minus cur's last reset
// in place of elapsed: the time since the reset.
//
// Between two readings an operand is its change, exact for integer VOIs;
// a signed SUM, or one declared tpl.KindGauge, may fall (a negative
// change). A counter operand (tpl.KindCounter, or an unsigned VOI of
// tpl.KindDefault) that falls while the blob's last reset stays the same
// was reset alone (blob.Blob.ResetVOI, statdef's data=reset): its operand
// is its value in cur, over elapsed. Value.SinceReset marks the values a
// reset changed. Errors wrap voi.ErrInvalid: no template or reading, or a
// blob of another template; and ErrWrongOrder too for readings given in
// the wrong order: prev's last reset after cur's, or, with the same last
// reset, counters that fell and none that rose. A reset of every counter
// alone (statdef's data=reset of all VOIs) gives that too, unless some
// counter has since counted more than it had in prev: derive cur alone
// then. (A counter reset alone that has since counted more than it had
// looks like one that grew: its operand is then cur minus prev, as
// rate() takes it.)
func ComputeAt(t *tpl.Template, prev, cur *blob.Blob, elapsed time.Duration, at time.Time) ([]Value, error) {
	if t == nil || cur == nil {
		return nil, fmt.Errorf("derive: no template or no reading: %w", voi.ErrInvalid)
	}
	for _, b := range []*blob.Blob{prev, cur} {
		if b != nil && b.TplHash() != t.Hash() {
			return nil, fmt.Errorf("derive: blob of template hash %d read with %s: %w", b.TplHash(), t.Spec(), voi.ErrInvalid)
		}
	}
	reset := false // the blob was reset between the readings
	if prev != nil {
		switch p, c := prev.Header(), cur.Header(); {
		case c.LastResetRaw > p.LastResetRaw:
			prev, reset = nil, true
		case c.LastResetRaw < p.LastResetRaw:
			return nil, fmt.Errorf("derive: the earlier reading was reset at %s, after the later one (%s): %w",
				p.LastReset.UTC().Format(time.RFC3339Nano), c.LastReset.UTC().Format(time.RFC3339Nano), ErrWrongOrder)
		default:
			if err := checkOrder(t, prev, cur); err != nil {
				return nil, err
			}
		}
	}
	if prev == nil && !at.IsZero() {
		elapsed = at.Sub(cur.Header().LastReset)
	}
	ids := map[string]int32{}
	for _, d := range t.VOIs() {
		if _, dup := ids[d.Name]; !dup { // a name means its first VOI, as in tpl
			ids[d.Name] = d.ID
		}
	}
	// sum returns VOI name's SUM over the reading times scale, and
	// notes in *since a counter reset alone.
	sum := func(name string, scale float64, since *bool) (float64, error) {
		id := ids[name]
		m, _ := t.VOIMeta(id)
		v, fell, err := change(prev, cur, id, m.Kind)
		if err != nil {
			return 0, fmt.Errorf("derive: VOI %q: %w", name, err)
		}
		*since = *since || fell
		return scaled(v, scale), nil
	}
	var out []Value
	declared := map[string]bool{}
	for _, d := range t.Derived() {
		declared[d.Name] = true
		v := Value{Name: d.Name, Op: d.Op, Unit: d.Unit, Help: d.Help, SinceReset: reset}
		sc, err := t.DerivedScales(d)
		if err != nil { // metadata set since: tpl keeps them consistent
			return nil, fmt.Errorf("derive: %w", err)
		}
		of, err := sum(d.Of, sc.Of, &v.SinceReset)
		if err != nil {
			return nil, err
		}
		var by, sq float64
		if d.By != "" {
			if by, err = sum(d.By, sc.By, &v.SinceReset); err != nil {
				return nil, err
			}
		}
		if d.SumSq != "" {
			if sq, err = sum(d.SumSq, sc.SumSq, &v.SinceReset); err != nil {
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
		v := Value{Name: d.Name + "_mean", Op: tpl.OpAverage, Unit: m.Unit, Help: "mean of " + d.Name, SinceReset: reset}
		of, err := sum(d.Name, m.UnitScale(), &v.SinceReset)
		if err != nil {
			return nil, err
		}
		n, err := sum(m.Count, 1, &v.SinceReset)
		if err != nil {
			return nil, err
		}
		v.Value = apply(tpl.OpAverage, of, n, 0, elapsed)
		out = append(out, v)
	}
	return out, nil
}

// isCounter reports whether a SUM of data type dt and kind k only grows
// between resets.
func isCounter(k tpl.Kind, dt voi.DType) bool {
	return k == tpl.KindCounter || k == tpl.KindDefault && !dt.Signed()
}

// checkOrder refuses two readings with the same last reset in which some
// counter SUM of the template fell and none rose: the later reading given
// first (a counter reset alone leaves the others growing).
func checkOrder(t *tpl.Template, prev, cur *blob.Blob) error {
	fell, rose := "", false
	for _, d := range t.VOIs() {
		m, _ := t.VOIMeta(d.ID)
		p, c, err := sums(prev, cur, d.ID)
		if err != nil || !isCounter(m.Kind, c.DType) {
			continue // no SUM (operands report their own errors)
		}
		switch _, sign := diff(p, c); {
		case sign > 0:
			rose = true
		case sign < 0 && fell == "":
			fell = d.Name
		}
	}
	if fell != "" && !rose {
		return fmt.Errorf("derive: counter %q fell and none rose, the blob's last reset unchanged (if every counter was reset alone, derive the later reading alone): %w", fell, ErrWrongOrder)
	}
	return nil
}

// sums returns VOI id's SUM in prev and in cur, of one data type.
func sums(prev, cur *blob.Blob, id int32) (p, c blob.Stat, err error) {
	if c, err = cur.Fetch(id, voi.Sum); err != nil {
		return p, c, err
	}
	if p, err = prev.Fetch(id, voi.Sum); err != nil {
		return p, c, err
	}
	if p.DType != c.DType {
		return p, c, fmt.Errorf("the earlier reading's SUM is %v, the later's %v: %w", p.DType, c.DType, voi.ErrInvalid)
	}
	if _, err = p.Value(); err != nil { // checks the data's size, which intBits reads
		return p, c, err
	}
	_, err = c.Value()
	return p, c, err
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
// (KindCounter, or an unsigned VOI of KindDefault) that fell was reset
// between the readings: its change is its value in cur, and reset is true.
func change(prev, cur *blob.Blob, id int32, kind tpl.Kind) (d float64, reset bool, err error) {
	if prev == nil {
		c, err := cur.Fetch(id, voi.Sum)
		if err != nil {
			return 0, false, err
		}
		v, err := c.Value()
		return v, false, err
	}
	p, c, err := sums(prev, cur, id)
	if err != nil {
		return 0, false, err
	}
	d, sign := diff(p, c)
	if sign < 0 && isCounter(kind, c.DType) {
		d, _ = c.Value() // sums checked it
		return d, true, nil
	}
	return d, false, nil
}

// diff returns c − p, two SUMs of one numeric type whose sizes sums
// checked, exact for integers, and its sign.
func diff(p, c blob.Stat) (float64, int) {
	if !c.DType.IsInt() {
		pv, _ := p.Value()
		cv, _ := c.Value() // a Q value: never NaN
		return cv - pv, cmp.Compare(cv, pv)
	}
	pi, ci := intBits(p), intBits(c)
	sign := cmp.Compare(ci, pi)
	if c.DType.Signed() {
		sign = cmp.Compare(int64(ci), int64(pi))
	}
	// The magnitude of ci - pi fits in 64 bits for any two values of one type.
	if sign < 0 {
		return -float64(pi - ci), sign
	}
	return float64(ci - pi), sign
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
