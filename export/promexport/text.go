package promexport

import (
	"bufio"
	"bytes"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/export"
	"github.com/statsblob/statsblob/export/internal/par"
)

// Text writes the metrics of a Collector's source in the Prometheus text
// format (version 0.0.4) without building client_golang metrics: the lines
// client_golang's registry and expfmt would write for them (as sets: the
// series of a family come in the source's order, not sorted), at a
// fraction of the cost. The lines of each blob are kept while the source
// hands out the same *blob.Blob with the same labels and start, so a
// scrape renders only the blobs that changed since the last one: the
// source must hand out a new *blob.Blob when a blob's statistics change
// (as a source of snapshots does; export/aggregate publishes a new blob
// at every fold), never modify one it handed out. Native
// histograms need the protobuf format: use the Collector through a
// registry for those. A blob the mapping rejects is left out. A name gets
// one # HELP and # TYPE, and a series one line, as the format requires: a
// blob's family whose name an extra family has (the registry's own
// process_ and go_ families, say), whose name another type's family has,
// or whose series an earlier blob's family wrote (the same family and
// constant labels: two templates whose names sanitise alike, "web" and
// "WEB") is left out and counted (Omitted.Clashes); the HELP is the first
// writer's. A Text is safe for concurrent use (scrapes take turns).
type Text struct {
	c *Collector

	mu    sync.Mutex
	cache map[*blob.Blob]*rendered
}

// rendered is the text of one blob's metrics, by family.
type rendered struct {
	labels []export.Label
	key    string // the labels, sorted: the series of blobs with other keys differ
	start  time.Time
	fams   []famText
	valid  bool // the mapping accepted the blob
	seen   bool // handed out by the source in the latest scrape
}

// renderChanged renders the blobs of named whose lines the cache does not
// hold (new blobs, or other labels or start), on up to GOMAXPROCS
// goroutines: after a scrape interval of ingest nearly every aggregate is
// a new blob, and mapping them is most of a scrape's work (10,000
// TCP_DEFAULT aggregates: 0.57 of 0.96 s on one core). The caller holds
// t.mu.
func (t *Text) renderChanged(named []export.Named) {
	var todo []int
	for i, n := range named {
		if !t.cache[n.Blob].current(n) {
			todo = append(todo, i)
		}
	}
	out := make([]*rendered, len(todo))
	sc := make([]scratch, par.Workers(len(todo), renderMin))
	par.Do(len(todo), renderMin, func(w, k int) {
		out[k] = t.render(&sc[w], named[todo[k]])
	})
	for k, i := range todo {
		t.cache[named[i].Blob] = out[k]
	}
}

// renderMin is the fewest blobs per goroutine of renderChanged.
const renderMin = 64

// current reports whether r, the lines of n's blob (nil if none), are
// n's: rendered with its labels and start.
func (r *rendered) current(n export.Named) bool {
	return r != nil && slices.Equal(r.labels, n.Labels) && r.start.Equal(n.Start)
}

// scratch is what rendering a blob reuses from one blob to the next.
type scratch struct {
	ms   []export.Metric // the blob's metrics
	buf  []byte          // its lines
	fam  []int           // each metric's family
	ends []int           // where each family's lines end in buf
}

// render maps and renders n's blob, with sc as its scratch.
func (t *Text) render(sc *scratch, n export.Named) *rendered {
	r := &rendered{labels: n.Labels, key: labelsKey(n.Labels), start: n.Start}
	var err error
	if sc.ms, err = t.c.mapper.Append(sc.ms[:0], n); err == nil {
		r.valid = true
		r.fams = renderBlob(sc)
		for i := range r.fams {
			r.fams[i].series = bytes.Count(r.fams[i].lines, []byte{'\n'})
		}
	}
	return r
}

// labelsKey returns a blob's constant labels, sorted and without those of
// empty value (Prometheus's {host=""} is {}), as one string: two blobs'
// families of one name hold the same series only if their keys are equal
// (the metrics' own labels, "bucket", "le" and "quantile", are reserved: no
// constant label has their names).
func labelsKey(labels []export.Label) string {
	ls := slices.DeleteFunc(slices.Clone(labels), func(l export.Label) bool { return l.Value == "" })
	slices.SortFunc(ls, func(a, b export.Label) int { return strings.Compare(a.Name, b.Name) })
	var sb strings.Builder
	for _, l := range ls {
		sb.WriteString(l.Name)
		sb.WriteByte(0xff)
		sb.WriteString(l.Value)
		sb.WriteByte(0xff)
	}
	return sb.String()
}

// famText is one family's lines of one blob.
type famText struct {
	name, help, typ string
	lines           []byte
	series          int // sample lines
}

// NewText returns a Text of c's source and mapping.
func (c *Collector) NewText() *Text {
	return &Text{c: c, cache: map[*blob.Blob]*rendered{}}
}

// Write writes the source's metrics and the families of extra (for
// example a registry's own metrics, from Gather) to w, families in name
// order, and returns the first write error.
func (t *Text) Write(w io.Writer, extra []*dto.MetricFamily) error {
	_, err := t.WriteWithin(w, extra, 0, 0)
	return err
}

// Forget drops the lines kept of every blob, so that the next write
// renders them all again: after a change the blobs do not show (the Off
// of a collector's definition).
func (t *Text) Forget() {
	t.mu.Lock()
	defer t.mu.Unlock()
	clear(t.cache)
}

// Omitted counts what a WriteWithin left out: blobs, by the bound they
// would have passed, and blobs' families that clashed with what the
// exposition already held.
type Omitted struct {
	BySeries, ByBytes int
	// Clashes counts the families of written blobs left out because their
	// name was an extra family's or another type's family's, or an earlier
	// blob's family of that name had the same constant labels (its series).
	Clashes int
}

// WriteWithin is Write with at most maxSeries sample lines and maxBytes
// bytes of the source's blobs (0: no bound): blobs past either bound, in
// the source's order, are left out and counted; families that clash (see
// Text) are left out of the blobs written, counted, and not held against
// the bounds.
func (t *Text) WriteWithin(w io.Writer, extra []*dto.MetricFamily, maxSeries, maxBytes int) (Omitted, error) {
	var om Omitted
	series, size := 0, 0
	t.mu.Lock()
	defer t.mu.Unlock()
	type family struct {
		help, typ string
		parts     [][]byte
		extra     *dto.MetricFamily
	}
	fams := map[string]*family{}
	var names []string
	get := func(name string) *family {
		f := fams[name]
		if f == nil {
			f = &family{}
			fams[name] = f
			names = append(names, name)
		}
		return f
	}
	for _, mf := range extra {
		if len(mf.Metric) > 0 {
			get(mf.GetName()).extra = mf
		}
	}
	// The blobs written, by constant labels: the first one's families
	// become a set only when a second blob has its labels.
	type written struct {
		first *rendered
		names map[string]bool
	}
	byKey := map[string]*written{}
	var keep []int
	for _, r := range t.cache {
		r.seen = false
	}
	named := t.c.src.Blobs()
	t.renderChanged(named)
	for _, n := range named {
		r := t.cache[n.Blob]
		if !r.current(n) {
			// The same blob handed out again under other labels or start
			// (a source may): rendered for each.
			r = t.render(&scratch{}, n)
			t.cache[n.Blob] = r
		}
		r.seen = true
		if !r.valid {
			continue // the mapping rejected it
		}
		wr := byKey[r.key]
		if wr != nil && wr.names == nil {
			wr.names = make(map[string]bool, len(wr.first.fams))
			for _, ft := range wr.first.fams {
				wr.names[ft.name] = true
			}
		}
		keep = keep[:0]
		rs, rz := 0, 0
		for i := range r.fams {
			ft := &r.fams[i]
			if f := fams[ft.name]; f != nil && (f.extra != nil || f.typ != ft.typ) || wr != nil && wr.names[ft.name] {
				continue
			}
			keep = append(keep, i)
			rs, rz = rs+ft.series, rz+len(ft.lines)
		}
		switch {
		case maxSeries > 0 && series+rs > maxSeries:
			om.BySeries++
			continue
		case maxBytes > 0 && size+rz > maxBytes:
			om.ByBytes++
			continue
		}
		series, size = series+rs, size+rz
		om.Clashes += len(r.fams) - len(keep)
		if wr == nil {
			byKey[r.key] = &written{first: r}
		}
		for _, i := range keep {
			ft := &r.fams[i]
			f := get(ft.name)
			if f.parts == nil {
				f.help, f.typ = ft.help, ft.typ
			}
			f.parts = append(f.parts, ft.lines)
			if wr != nil {
				wr.names[ft.name] = true
			}
		}
	}
	for b, r := range t.cache {
		if !r.seen {
			delete(t.cache, b)
		}
	}
	slices.Sort(names)
	bw := bufio.NewWriterSize(w, 64<<10)
	for _, name := range names {
		f := fams[name]
		if f.extra != nil {
			if _, err := expfmt.MetricFamilyToText(bw, f.extra); err != nil {
				return om, err
			}
			if f.parts == nil {
				continue
			}
		}
		_, _ = bw.WriteString("# HELP ")
		_, _ = bw.WriteString(name)
		_ = bw.WriteByte(' ')
		_, _ = helpEscaper.WriteString(bw, f.help)
		_, _ = bw.WriteString("\n# TYPE ")
		_, _ = bw.WriteString(name)
		_ = bw.WriteByte(' ')
		_, _ = bw.WriteString(f.typ)
		_ = bw.WriteByte('\n')
		for _, p := range f.parts {
			if _, err := bw.Write(p); err != nil {
				return om, err
			}
		}
	}
	return om, bw.Flush()
}

var (
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
	valueEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
)

// renderBlob renders the blob's metrics sc.ms by family, as
// client_golang's const metrics and expfmt.MetricFamilyToText would. The
// lines of all families share one allocation of the exact size; the rest
// of sc is the rendering's working memory.
func renderBlob(sc *scratch) []famText {
	ms := sc.ms
	var out []famText
	fam := sc.fam[:0]
	for i := range ms {
		m := &ms[i]
		name, typ := m.PromFamily(), "gauge"
		switch m.Kind {
		case export.KindCounter:
			typ = "counter"
		case export.KindHistogram, export.KindExpHistogram:
			typ = "histogram"
		case export.KindSummary:
			typ = "summary"
		}
		k := slices.IndexFunc(out, func(f famText) bool { return f.name == name })
		if k < 0 {
			k = len(out)
			out = append(out, famText{name: name, help: m.Help, typ: typ})
		}
		fam = append(fam, k)
	}
	// The families' lines one after the other, each in its metrics' order
	// (a family's metrics need not be adjacent in ms).
	buf := sc.buf[:0]
	var labels []export.Label
	ends := sc.ends[:0]
	for k := range out {
		for i := range ms {
			if fam[i] != k {
				continue
			}
			m := &ms[i]
			labels = append(labels[:0], m.Labels...)
			slices.SortStableFunc(labels, func(a, b export.Label) int { return strings.Compare(a.Name, b.Name) })
			buf = appendMetric(buf, out[k].name, m, labels)
		}
		ends = append(ends, len(buf))
	}
	lines := bytes.Clone(buf)
	start := 0
	for k := range out {
		out[k].lines = lines[start:ends[k]:ends[k]]
		start = ends[k]
	}
	sc.buf, sc.fam, sc.ends = buf, fam, ends
	return out
}

// appendMetric appends the sample lines of m, of the family name, with
// labels (m's, sorted by name).
func appendMetric(dst []byte, name string, m *export.Metric, labels []export.Label) []byte {
	switch m.Kind {
	case export.KindCounter:
		dst = sample(dst, name, "", labels, "", 0, m.Value)
	case export.KindHistogram:
		h := m.Histogram
		// NewConstHistogram keeps one bucket per bound (a map) in
		// ascending order; +Inf comes from the count.
		bounds := slices.Clone(h.Bounds)
		cum := make(map[float64]uint64, len(bounds))
		var c uint64
		for k, le := range h.Bounds {
			c += h.Counts[k]
			cum[le] = c
		}
		slices.Sort(bounds)
		bounds = slices.Compact(bounds)
		inf := false
		for _, le := range bounds {
			dst = sample(dst, name, "_bucket", labels, "le", le, float64(cum[le]))
			inf = inf || math.IsInf(le, +1)
		}
		if !inf {
			dst = sample(dst, name, "_bucket", labels, "le", math.Inf(+1), float64(h.Count))
		}
		dst = sample(dst, name, "_sum", labels, "", 0, h.Sum)
		dst = sample(dst, name, "_count", labels, "", 0, float64(h.Count))
	case export.KindSummary:
		s := m.Summary
		qs := slices.Clone(s.Quantiles)
		slices.SortStableFunc(qs, func(a, b export.QuantileValue) int { return cmpFloat(a.Q, b.Q) })
		for k, q := range qs {
			if k > 0 && qs[k-1].Q == q.Q {
				continue
			}
			last := q
			for _, r := range qs[k:] { // a map keeps the last value of a quantile
				if r.Q == q.Q {
					last = r
				}
			}
			dst = sample(dst, name, "", labels, "quantile", q.Q, last.Value)
		}
		dst = sample(dst, name, "_sum", labels, "", 0, s.Sum)
		dst = sample(dst, name, "_count", labels, "", 0, float64(s.Count))
	case export.KindExpHistogram:
		// Native histograms exist in the protobuf format only; the
		// text format shows their count and sum as a histogram.
		e := m.Exp
		dst = sample(dst, name, "_bucket", labels, "le", math.Inf(+1), float64(e.Count))
		dst = sample(dst, name, "_sum", labels, "", 0, e.Sum)
		dst = sample(dst, name, "_count", labels, "", 0, float64(e.Count))
	default:
		dst = sample(dst, name, "", labels, "", 0, m.Value)
	}
	return dst
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// sample appends one sample line: name+suffix{labels,extra="x"} value.
func sample(dst []byte, name, suffix string, labels []export.Label, extra string, extraV float64, v float64) []byte {
	dst = append(dst, name...)
	dst = append(dst, suffix...)
	if len(labels) > 0 || extra != "" {
		dst = append(dst, '{')
		for i, l := range labels {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, l.Name...)
			dst = append(dst, '=', '"')
			dst = appendEscaped(dst, l.Value)
			dst = append(dst, '"')
		}
		if extra != "" {
			if len(labels) > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, extra...)
			dst = append(dst, '=', '"')
			dst = appendFloat(dst, extraV)
			dst = append(dst, '"')
		}
		dst = append(dst, '}')
	}
	dst = append(dst, ' ')
	dst = appendFloat(dst, v)
	return append(dst, '\n')
}

// appendEscaped appends a label value escaped as expfmt escapes it.
func appendEscaped(dst []byte, s string) []byte {
	if !strings.ContainsAny(s, "\\\n\"") {
		return append(dst, s...)
	}
	return append(dst, valueEscaper.Replace(s)...)
}

// appendFloat formats a value as expfmt's writeFloat does.
func appendFloat(dst []byte, f float64) []byte {
	switch {
	case f == 1:
		return append(dst, '1')
	case f == 0:
		return append(dst, '0')
	case f == -1:
		return append(dst, "-1"...)
	case math.IsNaN(f):
		return append(dst, "NaN"...)
	case math.IsInf(f, +1):
		return append(dst, "+Inf"...)
	case math.IsInf(f, -1):
		return append(dst, "-Inf"...)
	}
	return strconv.AppendFloat(dst, f, 'g', -1, 64)
}
