package export

import (
	"fmt"
	"slices"
	"strings"
)

// Clashes finds what blobs of several templates export as one family or
// one series: template names that sanitise alike ("web" and "WEB"),
// template and VOI names that join alike, two versions of a template under
// one label set, or a family whose samples are named like another's (a
// histogram x writes x_count, as a gauge x_count of another template
// does). names appends to dst the names of the samples m is written as,
// its family's name first (PromNames: a histogram's _bucket, _count and
// _sum). Clashes gives every metric of a family holding several templates
// the HELP of the family's first metric and returns, by index into ms, an
// error wrapping ErrNameClash for each metric whose series (a label of
// empty value is no label) an earlier metric of another template holds,
// whose family is of another kind there, or whose family writes samples
// an earlier family of another name writes (whatever the labels: an
// exposition's parser reads a gauge x_count after a histogram x as x's,
// and client_golang's registry refuses it): an exporter sends the first
// and reports the others. It returns nil, having looked at nothing but
// the names, when no name is written by several templates (the usual
// case).
func Clashes(ms []Metric, names func(dst []string, m *Metric) []string) map[int]error {
	claimed := make(map[string]claim) // by sample name
	family := make(map[string]int)    // a family name -> the index of its first metric
	mixed := make(map[string]bool)    // the families of names several templates write
	var buf []string
	for i := range ms {
		buf = names(buf[:0], &ms[i])
		if _, ok := family[buf[0]]; !ok {
			family[buf[0]] = i
		}
		for _, n := range buf {
			c, ok := claimed[n]
			if !ok {
				claimed[n] = claim{i, buf[0]}
			} else if ms[c.i].TemplateHash != ms[i].TemplateHash {
				mixed[c.family], mixed[buf[0]] = true, true
			}
		}
	}
	if len(mixed) == 0 {
		return nil
	}
	clashes := map[int]error{}
	series := map[string]int{} // a mixed family's series -> index of its first metric
	for i := range ms {
		buf = names(buf[:0], &ms[i])
		name := buf[0]
		if !mixed[name] {
			continue
		}
		f := &ms[family[name]]
		if ms[i].Kind != f.Kind {
			clashes[i] = fmt.Errorf("export: family %s of %s is a %s in %s: %w", name, templateOf(&ms[i], f), f.Kind, templateOf(f, &ms[i]), ErrNameClash)
			continue
		}
		if err := samplesClash(ms, i, buf, claimed); err != nil {
			clashes[i] = err
			continue
		}
		ms[i].Help = f.Help
		for _, n := range buf {
			k := seriesKey(n, ms[i].Labels)
			if j, ok := series[k]; !ok {
				series[k] = i
			} else if ms[j].TemplateHash != ms[i].TemplateHash {
				clashes[i] = fmt.Errorf("export: series %s of %s is also %s's: %w", k, templateOf(&ms[i], &ms[j]), templateOf(&ms[j], &ms[i]), ErrNameClash)
				break
			}
		}
	}
	return clashes
}

// claim is the first metric of Clashes's ms writing a sample name, and its
// family.
type claim struct {
	i      int
	family string
}

// samplesClash returns the error of ms[i], whose family (names[0]) writes
// the samples names, if an earlier family of another name writes one of
// them first, nil otherwise.
func samplesClash(ms []Metric, i int, names []string, claimed map[string]claim) error {
	for _, n := range names {
		if c := claimed[n]; c.family != names[0] {
			return fmt.Errorf("export: family %s of %s writes samples %s, as family %s of %s does: %w",
				names[0], templateOf(&ms[i], &ms[c.i]), n, c.family, templateOf(&ms[c.i], &ms[i]), ErrNameClash)
		}
	}
	return nil
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
// name{label="value",...}, labels sorted by name, without those of empty
// value (for Prometheus, {host=""} is {}).
func seriesKey(name string, labels []Label) string {
	if !slices.IsSortedFunc(labels, labelOrder) {
		labels = slices.SortedFunc(slices.Values(labels), labelOrder)
	}
	var b strings.Builder
	b.WriteString(name)
	b.WriteByte('{')
	sep := false
	for _, l := range labels {
		if l.Value == "" {
			continue
		}
		if sep {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s=%q", l.Name, l.Value)
		sep = true
	}
	b.WriteByte('}')
	return b.String()
}

func labelOrder(a, b Label) int { return strings.Compare(a.Name, b.Name) }
