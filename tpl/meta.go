package tpl

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/statsblob/statsblob/voi"
)

// Metadata says what a template's numbers mean, for the people and
// programs that read them (UMA DCI's units and descriptions, RISC OS DCI4's
// presentation): a description of the template, per VOI a unit with its
// scale, help text, a kind and a companion count, and the derived metrics
// computed on read. It lives beside the template's bytes, never in them:
// setting it changes neither the bytes nor the hash, so blobs built by the
// C stay byte-identical. The template JSON carries it from version 2 on.

// Kind tells exporters how a VOI's SUM behaves.
type Kind uint8

// The kinds. KindDefault lets the exporter decide from the data type (an
// unsigned SUM is a counter, a signed one can fall).
const (
	KindDefault Kind = iota
	KindCounter      // only grows between resets
	KindGauge        // a level that goes up and down
)

// String returns "counter", "gauge" or "" for KindDefault.
func (k Kind) String() string {
	switch k {
	case KindCounter:
		return "counter"
	case KindGauge:
		return "gauge"
	}
	return ""
}

// VOIMeta is the metadata of one VOI.
type VOIMeta struct {
	// Unit is the base unit the VOI's values are exported in, lower case
	// [a-z0-9_] ("seconds", "bytes", "ratio", or any noun such as
	// "packets"); "" for none. SetVOIMeta turns a scaled unit it knows
	// ("us", "milliseconds", "KiB": see ParseUnit) into its base unit and
	// multiplies Scale.
	Unit string
	// Scale converts a value of the VOI to Unit: an INT_U32 of
	// microseconds has Unit "seconds" and Scale 1e-6. 0 means 1.
	Scale float64
	// Help is one line describing the VOI.
	Help string
	// Kind is how its SUM behaves.
	Kind Kind
	// Count names the companion VOI whose SUM counts this VOI's updates
	// (a SUM of ones kept by blob.Counted), so the VOI reports a count
	// and a mean; "" for none.
	Count string
}

// UnitScale returns Scale, or 1 when it is 0.
func (m VOIMeta) UnitScale() float64 {
	if m.Scale == 0 {
		return 1
	}
	return m.Scale
}

// Derived declares a metric computed on read from the statistics of VOIs
// (package derive computes it): Op applied to the SUMs of the VOIs named
// Of, By and SumSq, each in its base unit (VOIMeta.Unit and Scale).
//
// The operands' units give the result a unit: an average's, a rate's or a
// difference's is Of's (a rate's per second), a ratio's Of's when By has none and a ratio
// when both have the same one, a percent's percent, a variance's the
// square of Of's. Unit may name the result's unit in any scale ParseUnit
// knows ("us" or "ms" for seconds, "mebibytes" for bytes, "percent" for a
// ratio): the value is converted to it, so an exporter's name, unit and
// value agree. A unit ParseUnit knows is refused where it is of another
// dimension than the result's, or where the operands make no single unit
// (seconds per byte, any variance). Where the operands have no units, the
// values of an average, a rate, a difference or a ratio are taken as they are and Unit
// labels them (a ratio's "ratio" and "percent" aside: they say the
// operands are alike, and "percent" multiplies by 100); a unit ParseUnit
// does not know ("requests", "seconds_squared") is a label too. Without
// Unit the result is in its base unit, unnamed.
type Derived struct {
	Name  string // metric name, [a-z0-9_], unique in the template
	Op    Op
	Of    string // ratio, percent: numerator; average, variance: sum; rate, difference: what changes
	By    string // ratio, percent: denominator; average, variance: count ("" for rate, difference)
	SumSq string // variance: the VOI whose SUM is the sum of squares ("" otherwise)
	Unit  string // unit of the result, [a-z0-9_] ("" none); see above
	Help  string
}

// Op is a derived metric's operation.
type Op string

// The operations of derived metrics (UMA DCI's derived classes).
const (
	OpRatio      Op = "ratio"      // Of / By
	OpPercent    Op = "percent"    // 100 · Of / By
	OpAverage    Op = "average"    // Of / By (By a count)
	OpVariance   Op = "variance"   // SumSq/By − (Of/By)², the population variance
	OpRate       Op = "rate"       // per second: (Of₂ − Of₁) / (t₂ − t₁) between two readings
	OpDifference Op = "difference" // Of₂ − Of₁ between two readings (in one reading: Of, its change since the reset)
)

// Metadata is a template's metadata.
type Metadata struct {
	Description string
	VOIs        map[int32]VOIMeta // by VOI id
	Derived     []Derived
}

// metadata is what a Template keeps (under its mutex).
type metadata struct {
	desc    string
	vois    map[int32]VOIMeta
	derived []Derived
	scales  []DerivedScales // derived[i]'s, with vois: what DerivedScales returns for it
}

func (m *metadata) empty() bool { return m.desc == "" && len(m.vois) == 0 && len(m.derived) == 0 }

// ParseUnit returns the base unit and the scale to it of a unit name:
// time ("ns", "us", "µs", "ms", "s", "min", "h" and their long names) in
// seconds; sizes ("B", "KB", "KiB", "MB", "MiB", "GB", "GiB", long names)
// in bytes; "percent" as a ratio; any other name lower-cased, with
// scale 1.
func ParseUnit(u string) (string, float64) {
	if s, ok := units[u]; ok {
		return s.base, s.scale
	}
	if s, ok := units[strings.ToLower(u)]; ok {
		return s.base, s.scale
	}
	return strings.ToLower(u), 1
}

// IsUnit reports whether ParseUnit knows u (or its lower-case form) as a
// unit of time, size or ratio.
func IsUnit(u string) bool {
	_, ok := units[u]
	if !ok {
		_, ok = units[strings.ToLower(u)]
	}
	return ok
}

var units = map[string]struct {
	base  string
	scale float64
}{
	"ns": {"seconds", 1e-9}, "nanoseconds": {"seconds", 1e-9},
	"us": {"seconds", 1e-6}, "µs": {"seconds", 1e-6}, "microseconds": {"seconds", 1e-6},
	"ms": {"seconds", 1e-3}, "milliseconds": {"seconds", 1e-3},
	"s": {"seconds", 1}, "sec": {"seconds", 1}, "second": {"seconds", 1}, "seconds": {"seconds", 1},
	"min": {"seconds", 60}, "minutes": {"seconds", 60},
	"h": {"seconds", 3600}, "hours": {"seconds", 3600},
	"B": {"bytes", 1}, "byte": {"bytes", 1}, "bytes": {"bytes", 1},
	"KB": {"bytes", 1e3}, "kB": {"bytes", 1e3}, "kilobytes": {"bytes", 1e3}, "KiB": {"bytes", 1 << 10}, "kibibytes": {"bytes", 1 << 10},
	"MB": {"bytes", 1e6}, "megabytes": {"bytes", 1e6}, "MiB": {"bytes", 1 << 20}, "mebibytes": {"bytes", 1 << 20},
	"GB": {"bytes", 1e9}, "gigabytes": {"bytes", 1e9}, "GiB": {"bytes", 1 << 30}, "gibibytes": {"bytes", 1 << 30},
	"ratio": {"ratio", 1}, "percent": {"ratio", 0.01}, "%": {"ratio", 0.01},
}

// validMetaName reports whether s is a unit or derived name: [a-z0-9_]+.
func validMetaName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// normalize checks m for VOI id of t (t.mu held) and returns it with a
// scaled unit turned into its base unit.
func (t *Template) normalizeVOIMeta(id int32, m VOIMeta) (VOIMeta, error) {
	bad := func(format string, args ...any) (VOIMeta, error) {
		return m, fmt.Errorf("tpl: metadata of VOI %d of %q: "+format+": %w", append(append([]any{id, t.name}, args...), voi.ErrInvalid)...)
	}
	if m.Scale < 0 || math.IsNaN(m.Scale) || math.IsInf(m.Scale, 0) {
		return bad("scale %v is not a finite positive number", m.Scale)
	}
	if m.Unit != "" {
		base, s := ParseUnit(m.Unit)
		if !validMetaName(base) {
			return bad("unit %q", m.Unit)
		}
		scale := s * m.UnitScale()
		if scale == 0 || math.IsInf(scale, 0) { // 0 would read as 1
			return bad("scale %v of unit %q is %v %s, not a finite positive number", m.UnitScale(), m.Unit, scale, base)
		}
		m.Unit, m.Scale = base, scale
		if m.Scale == 1 {
			m.Scale = 0
		}
	}
	if m.Kind > KindGauge {
		return bad("kind %d", m.Kind)
	}
	if strings.ContainsAny(m.Help, "\n\r") {
		return bad("help text of more than one line")
	}
	d, ok := t.defLocked(id)
	if !ok {
		return bad("no such VOI")
	}
	if m.Count != "" {
		c, ok := t.defByNameLocked(m.Count)
		switch {
		case !ok:
			return bad("count VOI %q does not exist", m.Count)
		case c.ID == d.ID:
			return bad("a VOI cannot count itself")
		case !slices.ContainsFunc(c.Stats, func(s StatSpec) bool { return s.Type == voi.Sum }):
			return bad("count VOI %q keeps no SUM", m.Count)
		}
	}
	return m, nil
}

func (t *Template) defLocked(id int32) (VOIDef, bool) {
	for _, d := range t.defs {
		if d.ID == id {
			return d, true
		}
	}
	return VOIDef{}, false
}

func (t *Template) defByNameLocked(name string) (VOIDef, bool) {
	for _, d := range t.defs {
		if d.Name == name {
			return d, true
		}
	}
	return VOIDef{}, false
}

// checkDerived checks derived metrics against t's VOIs and their
// metadata vois (t.mu held), and returns their operands' factors.
func (t *Template) checkDerived(ds []Derived, vois map[int32]VOIMeta) ([]DerivedScales, error) {
	seen := map[string]bool{}
	var scales []DerivedScales
	for i, d := range ds {
		s, err := t.derivedScalesLocked(d, vois)
		if err != nil {
			return nil, fmt.Errorf("tpl: derived metric %d (%q) of %q: %w", i, d.Name, t.name, err)
		}
		if seen[d.Name] {
			return nil, fmt.Errorf("tpl: derived metric %d (%q) of %q: name used twice: %w", i, d.Name, t.name, voi.ErrInvalid)
		}
		seen[d.Name] = true
		scales = append(scales, s)
	}
	return scales, nil
}

// operands says which operands each operation takes: Of, By, SumSq.
var operands = map[Op][3]bool{
	OpRatio: {true, true, false}, OpPercent: {true, true, false}, OpAverage: {true, true, false},
	OpVariance: {true, true, true}, OpRate: {true, false, false}, OpDifference: {true, false, false},
}

// checkDerivedOne checks derived metric d against t's VOIs (t.mu held),
// all but its unit and the uniqueness of its name.
func (t *Template) checkDerivedOne(d Derived) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf(format+": %w", append(args, voi.ErrInvalid)...)
	}
	if !validMetaName(d.Name) {
		return bad("name is not [a-z0-9_]+")
	}
	if d.Unit != "" && !validMetaName(d.Unit) {
		return bad("unit %q is not [a-z0-9_]+", d.Unit)
	}
	if strings.ContainsAny(d.Help, "\n\r") {
		return bad("help text of more than one line")
	}
	n, ok := operands[d.Op]
	if !ok {
		return bad("operation %q (ratio, percent, average, variance, rate, difference)", d.Op)
	}
	for j, ref := range []string{d.Of, d.By, d.SumSq} {
		if (ref != "") != n[j] {
			return bad("%s takes of, by and sumsq as %v, given %q", d.Op, n, []string{d.Of, d.By, d.SumSq})
		}
		if ref == "" {
			continue
		}
		v, ok := t.defByNameLocked(ref)
		if !ok || !slices.ContainsFunc(v.Stats, func(s StatSpec) bool { return s.Type == voi.Sum }) {
			return bad("VOI %q does not exist or keeps no SUM", ref)
		}
	}
	return nil
}

// SetVOIMeta sets the metadata of VOI id, replacing what it had (a zero
// VOIMeta removes it). Errors wrap voi.ErrInvalid: no such VOI, a unit
// that is not [a-z0-9_] once parsed, a negative or non-finite scale, an
// unknown kind, help of more than one line, a Count that names no VOI
// with a SUM or the VOI itself, a unit that a derived metric's declared
// unit no longer fits (see Derived). The template is unchanged on error;
// its bytes and hash never change.
func (t *Template) SetVOIMeta(id int32, m VOIMeta) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	m, err := t.normalizeVOIMeta(id, m)
	if err != nil {
		return err
	}
	vois := make(map[int32]VOIMeta, len(t.meta.vois)+1)
	for i, v := range t.meta.vois {
		vois[i] = v
	}
	if vois[id] = m; m == (VOIMeta{}) {
		delete(vois, id)
	}
	// A new unit may leave a derived metric's declared unit without
	// meaning (a result now in bytes, declared "us").
	scales, err := t.checkDerived(t.meta.derived, vois)
	if err != nil {
		return fmt.Errorf("tpl: metadata of VOI %d of %q does not fit a derived metric: %w", id, t.name, err)
	}
	if len(vois) == 0 {
		vois = nil
	}
	t.meta.vois, t.meta.scales = vois, scales
	return nil
}

// VOIMeta returns the metadata of VOI id and whether it has any.
func (t *Template) VOIMeta(id int32) (VOIMeta, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	m, ok := t.meta.vois[id]
	return m, ok
}

// SetDescription sets the template's description (one line or more).
func (t *Template) SetDescription(s string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.meta.desc = s
}

// Description returns the template's description.
func (t *Template) Description() string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.meta.desc
}

// SetDerived replaces the template's derived metrics. Errors wrap
// voi.ErrInvalid: a name not [a-z0-9_]+ or used twice, an unknown
// operation, operands other than the operation takes, an operand that
// names no VOI with a SUM, a unit the result does not have or cannot be
// converted to (see Derived); the template is then unchanged.
func (t *Template) SetDerived(ds []Derived) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	scales, err := t.checkDerived(ds, t.meta.vois)
	if err != nil {
		return err
	}
	t.meta.derived, t.meta.scales = slices.Clone(ds), scales
	return nil
}

// Derived returns the template's derived metrics.
func (t *Template) Derived() []Derived {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return slices.Clone(t.meta.derived)
}

// Metadata returns a copy of all of the template's metadata.
func (t *Template) Metadata() Metadata {
	t.mu.RLock()
	defer t.mu.RUnlock()
	m := Metadata{Description: t.meta.desc, Derived: slices.Clone(t.meta.derived)}
	if len(t.meta.vois) > 0 {
		m.VOIs = make(map[int32]VOIMeta, len(t.meta.vois))
		for id, v := range t.meta.vois {
			m.VOIs[id] = v
		}
	}
	return m
}

// SetMetadata replaces all of the template's metadata, checked as
// SetVOIMeta and SetDerived check it; on error nothing changes.
func (t *Template) SetMetadata(m Metadata) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	nm := metadata{desc: m.Description}
	for id, v := range m.VOIs {
		v, err := t.normalizeVOIMeta(id, v)
		if err != nil {
			return err
		}
		if v == (VOIMeta{}) {
			continue
		}
		if nm.vois == nil {
			nm.vois = map[int32]VOIMeta{}
		}
		nm.vois[id] = v
	}
	scales, err := t.checkDerived(m.Derived, nm.vois)
	if err != nil {
		return err
	}
	nm.derived, nm.scales = slices.Clone(m.Derived), scales
	t.meta = nm
	return nil
}
