package export

import (
	"fmt"
	"hash/maphash"
	"slices"
	"strings"

	"github.com/statsblob/statsblob/export/internal/hashfmt"
)

// Clashes finds what blobs export as one family or one series, so that
// an exporter sends each series once: blobs of one template whose label
// sets are one series ({} and {host=""}: a label of empty value is no
// label; or the same labels twice, as a Source may hand out), template
// names that sanitise alike ("web" and "WEB"), template and VOI names that
// join alike, two versions of a template under one label set, or a family
// whose samples are named like another's (a histogram x writes x_count, as
// a gauge x_count of another template does). names appends to dst the
// names of the samples m is written as, its family's name first
// (PromNames: a histogram's _bucket, _count and _sum). Clashes gives every
// metric of a family holding several templates the HELP of the family's
// first metric and returns, by index into ms, an error wrapping
// ErrNameClash for each metric whose series (a label of empty value is no
// label) an earlier metric holds (naming both templates, or both label
// sets when the template is one), whose family is of another kind there,
// or whose family writes samples an earlier family of another name writes
// (whatever the labels: an exposition's parser reads a gauge x_count after
// a histogram x as x's, and client_golang's registry refuses it): an
// exporter sends the first and reports the others. It returns nil when
// nothing clashes; in the usual case (no name written by several
// templates) it looks at nothing but the names and a hash of each
// metric's series.
func Clashes(ms []Metric, names func(dst []string, m *Metric) []string) map[int]error {
	claimed := make(map[string]claim) // by sample name
	family := make(map[string]int)    // a family name -> the index of its first metric
	mixed := make(map[string]bool)    // the families of names several templates (or families) write
	var dup map[int]int               // a metric -> the earlier one of its template holding its series
	var buf []string
	ss := newSeriesSet(len(ms))
	for i := range ms {
		buf = names(buf[:0], &ms[i])
		if _, ok := family[buf[0]]; !ok {
			family[buf[0]] = i
		}
		for _, n := range buf {
			c, ok := claimed[n]
			if !ok {
				claimed[n] = claim{i, buf[0]}
			} else if ms[c.i].TemplateHash != ms[i].TemplateHash || c.family != buf[0] || ms[c.i].Kind != ms[i].Kind {
				mixed[c.family], mixed[buf[0]] = true, true
			}
		}
		if j := ss.add(ms, i, buf[0], names); j >= 0 && ms[j].TemplateHash == ms[i].TemplateHash {
			if dup == nil {
				dup = map[int]int{}
			}
			dup[i] = j
		}
	}
	if len(mixed) == 0 && dup == nil {
		return nil
	}
	clashes := map[int]error{}
	series := map[string]int{} // a mixed family's series -> index of its first metric
	for i := range ms {
		buf = names(buf[:0], &ms[i])
		name := buf[0]
		if !mixed[name] {
			if j, ok := dup[i]; ok {
				clashes[i] = sameTemplate(ms, i, j, name)
			}
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
			j, ok := series[k]
			switch {
			case !ok:
				series[k] = i
				continue
			case ms[j].TemplateHash != ms[i].TemplateHash:
				clashes[i] = fmt.Errorf("export: series %s of %s is also %s's: %w", k, templateOf(&ms[i], &ms[j]), templateOf(&ms[j], &ms[i]), ErrNameClash)
			default:
				clashes[i] = sameTemplate(ms, i, j, name)
			}
			break
		}
	}
	return clashes
}

// sameTemplate returns the error of ms[i], of the family name, whose
// series ms[j], an earlier metric of its template, holds.
func sameTemplate(ms []Metric, i, j int, name string) error {
	return fmt.Errorf("export: series %s of template %q with labels %s is also its series with labels %s: %w",
		seriesKey(name, ms[i].Labels), ms[i].Template, labelSet(ms[i].Labels), labelSet(ms[j].Labels), ErrNameClash)
}

// seriesSet finds the metrics of one series (family name and labels, a
// label of empty value being no label) by a hash of it, without building
// a string of each.
type seriesSet struct {
	seed  maphash.Seed
	first map[uint64]int // a series' hash (probed on: +1) -> its first metric
}

func newSeriesSet(n int) seriesSet {
	return seriesSet{seed: maphash.MakeSeed(), first: make(map[uint64]int, n)}
}

// add adds ms[i], of the family name, and returns the index of the
// earlier metric of its series, -1 if none.
func (s *seriesSet) add(ms []Metric, i int, name string, names func(dst []string, m *Metric) []string) int {
	var h maphash.Hash
	h.SetSeed(s.seed)
	var labels uint64 // the labels' hashes summed: their order does not matter
	for _, l := range ms[i].Labels {
		if l.Value == "" {
			continue
		}
		h.Reset()
		_, _ = h.WriteString(l.Name)
		_ = h.WriteByte(0xff)
		_, _ = h.WriteString(l.Value)
		labels += h.Sum64()
	}
	k := maphash.String(s.seed, name) ^ labels*0x9e3779b97f4a7c15
	var other []string
	for ; ; k++ {
		j, ok := s.first[k]
		if !ok {
			s.first[k] = i
			return -1
		}
		if other = names(other[:0], &ms[j]); other[0] == name && sameLabels(ms[i].Labels, ms[j].Labels) {
			return j
		}
	}
}

// sameLabels reports whether a and b, label sets of unique names, are
// the same without their labels of empty value.
func sameLabels(a, b []Label) bool {
	n := 0
	for _, l := range a {
		if l.Value == "" {
			continue
		}
		n++
		if !slices.Contains(b, l) {
			return false
		}
	}
	for _, l := range b {
		if l.Value != "" {
			n--
		}
	}
	return n == 0
}

// labelSet writes labels as {name="value",...}, sorted by name, those of
// empty value too.
func labelSet(labels []Label) string {
	var b strings.Builder
	writeLabels(&b, labels, true)
	return b.String()
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
		return fmt.Sprintf("template %q (hash %s)", m.Template, hashfmt.String(m.TemplateHash))
	}
	return fmt.Sprintf("template %q", m.Template)
}

// seriesKey writes a series as the Prometheus exposition does:
// name{label="value",...}, labels sorted by name, without those of empty
// value (for Prometheus, {host=""} is {}).
func seriesKey(name string, labels []Label) string {
	var b strings.Builder
	b.WriteString(name)
	writeLabels(&b, labels, false)
	return b.String()
}

// writeLabels writes labels to b as {name="value",...}, sorted by name,
// those of empty value only if empty.
func writeLabels(b *strings.Builder, labels []Label, empty bool) {
	if !slices.IsSortedFunc(labels, labelOrder) {
		labels = slices.SortedFunc(slices.Values(labels), labelOrder)
	}
	b.WriteByte('{')
	sep := false
	for _, l := range labels {
		if l.Value == "" && !empty {
			continue
		}
		if sep {
			b.WriteByte(',')
		}
		fmt.Fprintf(b, "%s=%q", l.Name, l.Value)
		sep = true
	}
	b.WriteByte('}')
}

func labelOrder(a, b Label) int { return strings.Compare(a.Name, b.Name) }
