package export

import (
	"fmt"
	"slices"
	"strings"
)

// Clashes finds what blobs of several templates export as one family
// (family gives a metric's family name as the exporter writes it): template
// names that sanitise alike ("web" and "WEB"), template and VOI names that
// join alike, or two versions of a template under one label set. It gives
// every metric of such a family the HELP of the family's first metric and
// returns, by index into ms, an error wrapping ErrNameClash for each
// metric whose series an earlier metric of another template holds, or
// whose family is of another kind there: an exporter sends the first and
// reports the others. It returns nil, having looked at nothing but the
// family names, when no family holds several templates (the usual case).
func Clashes(ms []Metric, family func(*Metric) string) map[int]error {
	first := make(map[string]int)  // family name -> index of its first metric
	mixed := make(map[string]bool) // families of several templates
	for i := range ms {
		name := family(&ms[i])
		if j, ok := first[name]; !ok {
			first[name] = i
		} else if ms[j].TemplateHash != ms[i].TemplateHash {
			mixed[name] = true
		}
	}
	if len(mixed) == 0 {
		return nil
	}
	clashes := map[int]error{}
	series := map[string]int{} // a mixed family's series -> index of its first metric
	for i := range ms {
		name := family(&ms[i])
		if !mixed[name] {
			continue
		}
		f := &ms[first[name]]
		if ms[i].Kind != f.Kind {
			clashes[i] = fmt.Errorf("export: family %s of %s is a %s in %s: %w", name, templateOf(&ms[i], f), f.Kind, templateOf(f, &ms[i]), ErrNameClash)
			continue
		}
		ms[i].Help = f.Help
		k := seriesKey(name, ms[i].Labels)
		if j, ok := series[k]; !ok {
			series[k] = i
		} else if ms[j].TemplateHash != ms[i].TemplateHash {
			clashes[i] = fmt.Errorf("export: series %s of %s is also %s's: %w", k, templateOf(&ms[i], &ms[j]), templateOf(&ms[j], &ms[i]), ErrNameClash)
		}
	}
	return clashes
}

// templateOf names m's template for an error beside other's: by name, and
// by hash too when the two names are the same.
func templateOf(m, other *Metric) string {
	if m.Template == other.Template {
		return fmt.Sprintf("template %q (hash %08x)", m.Template, m.TemplateHash)
	}
	return fmt.Sprintf("template %q", m.Template)
}

// seriesKey writes a series as the Prometheus exposition does:
// name{label="value",...}, labels sorted by name.
func seriesKey(name string, labels []Label) string {
	if !slices.IsSortedFunc(labels, labelOrder) {
		labels = slices.SortedFunc(slices.Values(labels), labelOrder)
	}
	var b strings.Builder
	b.WriteString(name)
	b.WriteByte('{')
	for i, l := range labels {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s=%q", l.Name, l.Value)
	}
	b.WriteByte('}')
	return b.String()
}

func labelOrder(a, b Label) int { return strings.Compare(a.Name, b.Name) }
