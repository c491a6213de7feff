package export

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/derive"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// What a template's metadata (tpl.Metadata) changes in the mapping:
//   - a VOI's unit is its base unit ("seconds"): Prometheus names carry it
//     as a suffix, replacing a unit suffix the VOI's name has ("latency_us"
//     becomes latency_seconds), OpenTelemetry names drop that suffix and
//     give the unit in UCUM ("s"), and every value in the VOI's units (SUM,
//     MAX, MIN, histogram bounds and bucket labels, sums and quantiles, the
//     level) is multiplied by the unit's scale. Options.Units overrides the unit:
//     its name replaces the template's, and the values are exported
//     unscaled, in that unit.
//   - help replaces the generated help text (the statistic is appended);
//   - kind counter or gauge decides the SUM's kind;
//   - a VOI with a count companion exports its SUM as a summary of count
//     and sum (name_count, name_sum: Prometheus's idiom for an average);
//     the companion VOI is not exported on its own;
//   - derived metrics other than rates and differences are exported as gauges named
//     namespace_template_name (with their unit as a suffix in Prometheus,
//     a percent's aside), valued in their declared unit (package derive
//     converts it: an average of microseconds declared "us" is
//     ..._microseconds in microseconds, OpenTelemetry unit "us"; the OTLP
//     unit is UCUM whatever spelling tpl.ParseUnit took: "sec" is "s",
//     "byte" is "By"); a rate
//     or a difference between readings is what Prometheus's rate() and
//     increase() and OpenTelemetry's delta temporality already give (of a
//     cumulative blob, a difference would be its SUM again).
//
// A VOI that takes relative updates exports its level (the VOI's state,
// the running total of its relative updates) as a gauge: named after the
// VOI, or with "_current" (".current") when its SUM takes that name.

// voiMeta is what the metadata says of one VOI, resolved for one blob.
type voiMeta struct {
	meta   tpl.VOIMeta
	scale  float64    // multiplies the VOI's values (1: none)
	hidden bool       // a companion count, exported in its VOI's summary
	count  *blob.Stat // the companion's SUM
	level  *float64   // the VOI's level (state), for a VOI that takes relative updates
}

// readMeta resolves the metadata of the VOIs of blob b.
func (m *Mapper) readMeta(t *tpl.Template, b *blob.Blob, levels map[int32]float64, vois []*voiStats) {
	for _, vs := range vois {
		vs.scale = 1
		if s, err := b.Fetch(int32(vs.id), voi.StatVoiState); err == nil && s.Type == voi.StatVoiState && len(s.Data) > 0 {
			s.DType = s.VOIDType // the state holds a value of the VOI's type
			v := numeric(&s)
			if lv, ok := levels[int32(vs.id)]; ok {
				v = lv
			}
			vs.level = &v
		}
	}
	for _, vs := range vois {
		if t != nil {
			vs.meta, _ = t.VOIMeta(int32(vs.id))
		}
		vs.unit, vs.scale = vs.meta.Unit, vs.meta.UnitScale()
		if u, ok := m.opts.Units[vs.name]; ok {
			vs.unit, vs.scale = u, 1
		}
		if vs.meta.Count == "" {
			continue
		}
		if c := byName(vois, vs.meta.Count); c != nil && c != vs && c.stats[voi.Sum] != nil && vs.stats[voi.Sum] != nil {
			c.hidden, vs.count = true, c.stats[voi.Sum]
		}
	}
}

// byName returns the VOI of vois named name, or nil. (A template has a few
// VOIs: a map would cost more than it saves.)
func byName(vois []*voiStats, name string) *voiStats {
	for _, vs := range vois {
		if vs.name == name {
			return vs
		}
	}
	return nil
}

// nameForUnit returns the VOI's name for its metric names: without a
// unit suffix ("latency_us", "size_bytes") when the VOI has a unit, which
// the names carry in its place (Prometheus) or beside them
// (OpenTelemetry).
func (vs *voiStats) nameForUnit() string {
	name := vs.name
	if vs.unit == "" {
		return name
	}
	if i := strings.LastIndexByte(name, '_'); i > 0 {
		if sfx := name[i+1:]; tpl.IsUnit(sfx) || PromUnit(sfx) != sfx || UCUM(sfx) != sfx || sfx == vs.unit {
			name = name[:i]
		}
	}
	return name
}

// sumKind returns the kind of the VOI's SUM family.
func (vs *voiStats) sumKind() Kind {
	switch {
	case vs.count != nil:
		return KindSummary
	case vs.meta.Kind == tpl.KindCounter:
		return KindCounter
	case vs.meta.Kind == tpl.KindGauge:
		return KindGauge
	}
	return sumKind(vs.dt)
}

// levelName returns the name of the VOI's level gauge.
func (m *Mapper) levelName(vs *voiStats) string {
	switch {
	case vs.stats[voi.Sum] == nil:
		return vs.base
	case m.otel():
		return vs.base + ".current"
	}
	return vs.base + "_current"
}

// help returns the help text of one of the VOI's families.
func (vs *voiStats) help(tplName, what string) string {
	if vs.meta.Help != "" {
		return fmt.Sprintf("%s (%s)", vs.meta.Help, what)
	}
	return fmt.Sprintf("statsblob %s %s: %s (%s)", tplName, vs.name, what, vs.dt)
}

// scaleVOI multiplies the values in the VOI's units of its metrics ms by
// the VOI's scale.
func (vs *voiStats) scaleVOI(ms []Metric) {
	if vs.scale == 1 {
		return
	}
	sc := func(v float64) float64 { return scaleBy(v, vs.scale) }
	for i := range ms {
		mt := &ms[i]
		switch {
		case mt.Histogram != nil:
			h := *mt.Histogram
			h.Bounds = append([]float64(nil), h.Bounds...)
			for j := range h.Bounds {
				h.Bounds[j] = sc(h.Bounds[j])
			}
			h.Sum, h.Min, h.Max = sc(h.Sum), sc(h.Min), sc(h.Max)
			mt.Histogram = &h
		case mt.Summary != nil:
			mt.Summary.Sum = sc(mt.Summary.Sum)
			for j := range mt.Summary.Quantiles {
				mt.Summary.Quantiles[j].Value = sc(mt.Summary.Quantiles[j].Value)
			}
		case mt.Exp != nil:
			mt.Exp.Sum, mt.Exp.Min, mt.Exp.Max = sc(mt.Exp.Sum), sc(mt.Exp.Min), sc(mt.Exp.Max)
		case mt.Name == vs.base || mt.Kind == KindGauge: // SUM, MAX, MIN, level
			mt.Value = sc(mt.Value)
		}
	}
}

// scaleBy returns v times scale. Dividing by an integer inverse (1e6 for
// microseconds) rounds a whole number of units to the nearest decimal
// (999 µs is 0.000999 s, where multiplying by 1e-6 gives
// 0.0009989999999999999).
func scaleBy(v, scale float64) float64 {
	if inv := 1 / scale; inv == math.Round(inv) {
		return v / inv
	}
	return v * scale
}

// appendScaled appends the bound v of type dt, a bucket label's number,
// times scale: exact, the bound's exact decimal (voi.AppendNumeric) divided
// by an integer inverse of scale or multiplied by an integer scale, in as
// many decimals as the result has (5000 µs is 0.005 s); where that result
// has no finite decimal expansion (or scale is neither), scaleBy's
// float64 in its shortest form.
func appendScaled(dst []byte, dt voi.DType, v uint64, scale float64) []byte {
	if scale == 1 {
		return voi.AppendNumeric(dst, dt, v)
	}
	var r big.Rat
	_, ok := r.SetString(string(voi.AppendNumeric(nil, dt, v)))
	switch inv := 1 / scale; {
	case !ok:
	case inv == math.Round(inv):
		r.Quo(&r, new(big.Rat).SetFloat64(inv))
	case scale == math.Round(scale):
		r.Mul(&r, new(big.Rat).SetFloat64(scale))
	default:
		ok = false
	}
	if ok {
		if n, fin := decimals(r.Denom()); fin {
			return append(dst, r.FloatString(n)...)
		}
	}
	return strconv.AppendFloat(dst, scaleBy(value(dt, v), scale), 'g', -1, 64)
}

// decimals returns the number of decimals of a fraction of denominator d
// (> 0, in lowest terms) and whether it has finitely many: d = 2^a 5^b
// gives max(a, b).
func decimals(d *big.Int) (int, bool) {
	a := d.TrailingZeroBits()
	q := new(big.Int).Rsh(d, a)
	five, m := big.NewInt(5), new(big.Int)
	b := uint(0)
	for q.Cmp(big.NewInt(1)) > 0 {
		if q.DivMod(q, five, m); m.Sign() != 0 {
			return 0, false
		}
		b++
	}
	return int(max(a, b)), true
}

// appendSumAndLevel appends the VOI's SUM family (a counter, gauge or, with
// a count, a summary) and its level.
func (m *Mapper) appendSumAndLevel(out []Metric, vs *voiStats, metric func(string, Kind, string) Metric) []Metric {
	if s := vs.stats[voi.Sum]; s != nil {
		what := "SUM"
		if vs.count != nil {
			what = "SUM and count"
		}
		mt := metric(vs.base, vs.sumKind(), what)
		if vs.count != nil {
			mt.Summary = &SummaryPoint{Count: uint64(numeric(vs.count)), Sum: numeric(s)}
		} else {
			mt.Value = numeric(s)
		}
		out = append(out, mt)
	}
	if vs.level != nil {
		mt := metric(m.levelName(vs), KindGauge, "level (sum of relative updates)")
		mt.Value = *vs.level
		out = append(out, mt)
	}
	return out
}

// appendDerived appends the template's derived metrics (all but rates and
// differences, which need two readings) as
// gauges, refusing names that collide with the VOIs' series.
func (m *Mapper) appendDerived(out []Metric, n Named, tplName string, vois []*voiStats, start Metric) ([]Metric, error) {
	if n.Template == nil || len(n.Template.Derived()) == 0 {
		return out, nil
	}
	vals, err := derive.Compute(n.Template, nil, n.Blob, 0)
	if err != nil {
		return out, err
	}
	taken := map[string]bool{}
	for _, vs := range vois {
		for name, k := range m.families(vs) {
			taken[name] = true
			for _, s := range seriesNames(name, k) {
				taken[s] = true
			}
		}
	}
	for _, v := range vals {
		if v.Op == tpl.OpRate || v.Op == tpl.OpDifference || v.Op == tpl.OpAverage && strings.HasSuffix(v.Name, "_mean") && !declared(n.Template, v.Name) {
			continue
		}
		if n.Off != nil && derivedOff(n, v.Name) {
			continue
		}
		name, unit := join(m.opts.Namespace, tplName, v.Name, PromUnit(v.Unit)), PromUnit(v.Unit)
		switch {
		case m.otel():
			name, unit = otelName(m.opts.Namespace, tplName, v.Name), UCUM(v.Unit)
		case v.Op == tpl.OpPercent:
			name = join(m.opts.Namespace, tplName, v.Name)
		}
		if taken[name] {
			return out, fmt.Errorf("export: template %s: derived metric %q collides with a VOI's series: %w", tplName, v.Name, voi.ErrInvalid)
		}
		taken[name] = true
		help := v.Help
		if help == "" {
			help = fmt.Sprintf("statsblob %s: %s, derived (%s)", tplName, v.Name, v.Op)
		}
		mt := start
		mt.Name, mt.Help, mt.Unit, mt.Kind, mt.Value = name, help, unit, KindGauge, v.Value
		if math.IsNaN(v.Value) {
			continue // undefined (no count yet): no sample
		}
		out = append(out, mt)
	}
	return out, nil
}

// derivedOff reports whether derived metric name reads a VOI n.Off
// reports.
func derivedOff(n Named, name string) bool {
	for _, d := range n.Template.Derived() {
		if d.Name != name {
			continue
		}
		for _, in := range []string{d.Of, d.By, d.SumSq} {
			if v, ok := n.Template.VOI(in); in != "" && ok && n.Off(v.ID) {
				return true
			}
		}
	}
	return false
}

func declared(t *tpl.Template, name string) bool {
	for _, d := range t.Derived() {
		if d.Name == name {
			return true
		}
	}
	return false
}
