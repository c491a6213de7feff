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
// one # HELP and # TYPE, and a series one line, as the format requires,
// and a clash is decided as the Collector decides it: where blobs of
// several templates export one family or one series (export.Clashes,
// over all the blobs the source hands out: "web" and "WEB", or a
// histogram x whose x_count is another template's gauge), the first
// template's series is written and the other's left out and counted
// (Omitted.Clashes, Omitted.FirstClash), and a family's HELP is its first
// writer's; so is a series blobs of one template both export (the same
// blob handed out twice, or label sets {} and {host=""}: a label of empty
// value is no label). Besides, a blob's family that writes a sample an
// extra family writes (the registry's own process_ and go_ families, say;
// a blob's gauge x_count beside an extra histogram x, or a blob's
// histogram x beside an extra gauge x_count) is left out and counted. A
// Text is safe for concurrent use (scrapes take turns).
type Text struct {
	c *Collector

	mu    sync.Mutex
	cache map[*blob.Blob]*rendered
	// decided is export.Clashes of the blobs of the latest scrape: a
	// scrape of the same blobs (nothing changed) decides nothing again.
	decided clashes
	flat    []export.Metric // Clashes's input, kept for its capacity
}

// rendered is the text of one blob's metrics, by family.
type rendered struct {
	labels []export.Label
	start  time.Time
	fams   []famText
	// heads are the blob's metrics as export.Clashes reads them, and
	// where their lines are; tplName and hash name the blob's template.
	heads   []head
	tplName string
	hash    uint32
	valid   bool // the mapping accepted the blob
	seen    bool // handed out by the source in the latest scrape
}

// head is what a Text keeps of one of a blob's metrics: what
// export.Clashes reads, and where its lines are.
type head struct {
	name   string
	labels []export.Label
	kind   export.Kind
	fam    int // its family, in rendered.fams
	end    int // where its lines end in its family's lines
}

// metric returns h as a metric of r's blob, without its data.
func (r *rendered) metric(h *head) export.Metric {
	return export.Metric{Name: h.name, Kind: h.kind, Labels: h.labels, Template: r.tplName, TemplateHash: r.hash}
}

// linesWithout returns the lines of r's family k without those of the
// metrics cut leaves out (by index into r.heads), their sample lines, and
// how many metrics of the family it left out.
func (r *rendered) linesWithout(k int, cut []error) (lines []byte, series, left int) {
	ft := &r.fams[k]
	start := 0
	for i := range r.heads {
		h := &r.heads[i]
		if h.fam != k {
			continue
		}
		if cut[i] != nil {
			left++
		} else {
			lines = append(lines, ft.lines[start:h.end]...)
		}
		start = h.end
	}
	if left == 0 {
		return ft.lines, ft.series, 0
	}
	return lines, bytes.Count(lines, []byte{'\n'}), left
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
	mend []int           // where each metric's lines end in its family's
}

// render maps and renders n's blob, with sc as its scratch.
func (t *Text) render(sc *scratch, n export.Named) *rendered {
	r := &rendered{labels: n.Labels, start: n.Start}
	var err error
	if sc.ms, err = t.c.mapper.Append(sc.ms[:0], n); err == nil {
		r.valid = true
		r.fams = renderBlob(sc)
		for i := range r.fams {
			r.fams[i].series = bytes.Count(r.fams[i].lines, []byte{'\n'})
		}
		r.heads = make([]head, len(sc.ms))
		for i := range sc.ms {
			m := &sc.ms[i]
			r.heads[i] = head{name: m.Name, labels: m.Labels, kind: m.Kind, fam: sc.fam[i], end: sc.mend[i]}
			r.fams[sc.fam[i]].metrics++
		}
		if len(sc.ms) > 0 {
			r.tplName, r.hash = sc.ms[0].Template, sc.ms[0].TemplateHash
		}
	}
	return r
}

// famText is one family's lines of one blob.
type famText struct {
	name, help, typ string
	lines           []byte
	series          int // sample lines
	metrics         int // the blob's metrics in the family
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
	t.decided = clashes{}
}

// Omitted counts what a WriteWithin left out: blobs, by the bound they
// would have passed, and metrics of the blobs written that clashed with
// others (see Text).
type Omitted struct {
	BySeries, ByBytes int
	// Clashes counts the metrics of written blobs left out because
	// export.Clashes gave their series or family to another blob, or
	// their family writes a sample an extra family writes.
	Clashes int
	// FirstClash is export.Clashes's error for the first metric it left
	// out of the blobs written (wrapping export.ErrNameClash and naming
	// both templates), nil if none.
	FirstClash error
}

// WriteWithin is Write with at most maxSeries sample lines and maxBytes
// bytes of the source's blobs (0: no bound): blobs past either bound, in
// the source's order, are left out and counted; metrics that clash (see
// Text) are left out of the blobs written, counted, and not held against
// the bounds. Which template's series a clash keeps does not depend on
// the bounds: it is the first one the source hands out.
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
	for _, r := range t.cache {
		r.seen = false
	}
	named := t.c.src.Blobs()
	t.renderChanged(named)
	rs := make([]*rendered, 0, len(named)) // the blobs the mapping accepted
	for _, n := range named {
		r := t.cache[n.Blob]
		if !r.current(n) {
			// The same blob handed out again under other labels or start
			// (a source may): rendered for each.
			r = t.render(&scratch{}, n)
			t.cache[n.Blob] = r
		}
		r.seen = true
		if r.valid {
			rs = append(rs, r)
		}
	}
	cuts := t.clashes(rs)
	taken := extraTaken(extra)
	type part struct {
		fam    int
		lines  []byte
		series int
	}
	var keep []part
	for k, r := range rs {
		var cut []error
		if cuts != nil {
			cut = cuts[k]
		}
		keep = keep[:0]
		ns, nz, left := 0, 0, 0
		for i := range r.fams {
			ft := &r.fams[i]
			if taken.has(ft) {
				left += ft.metrics
				continue
			}
			p := part{fam: i, lines: ft.lines, series: ft.series}
			if cut != nil {
				var l int
				p.lines, p.series, l = r.linesWithout(i, cut)
				left += l
				if len(p.lines) == 0 {
					continue
				}
			}
			keep = append(keep, p)
			ns, nz = ns+p.series, nz+len(p.lines)
		}
		switch {
		case maxSeries > 0 && series+ns > maxSeries:
			om.BySeries++
			continue
		case maxBytes > 0 && size+nz > maxBytes:
			om.ByBytes++
			continue
		}
		series, size = series+ns, size+nz
		om.Clashes += left
		if om.FirstClash == nil {
			for _, err := range cut {
				if err != nil {
					om.FirstClash = err
					break
				}
			}
		}
		for _, p := range keep {
			ft := &r.fams[p.fam]
			f := get(ft.name)
			if f.parts == nil {
				f.help, f.typ = ft.help, ft.typ
			}
			f.parts = append(f.parts, p.lines)
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

// taken is what the extra families of a write take from the blobs' families:
// the names of the samples they write (an extra histogram x writes x_count,
// as a blob's gauge x_count would), and, by name, the blobs' families
// found to write one of them.
type taken struct {
	samples map[string]bool
	fams    map[string]bool // a blob's family name -> whether it writes one of samples
	buf     []byte
}

// extraTaken returns what the families of extra (those with metrics) take.
func extraTaken(extra []*dto.MetricFamily) *taken {
	tk := &taken{samples: map[string]bool{}, fams: map[string]bool{}}
	for _, mf := range extra {
		if len(mf.Metric) == 0 {
			continue
		}
		name := mf.GetName()
		tk.samples[name] = true
		for _, sfx := range suffixes(mf.GetType().String()) {
			tk.samples[name+sfx] = true
		}
	}
	return tk
}

// suffixes returns what a family of the type typ ("histogram", or dto's
// "HISTOGRAM") appends to its name in the names of its samples, beside
// the name itself: as export.PromNames.
func suffixes(typ string) []string {
	switch strings.ToLower(typ) {
	case "histogram", "gauge_histogram":
		return []string{"_bucket", "_count", "_sum"}
	case "summary":
		return []string{"_count", "_sum"}
	}
	return nil
}

// has reports whether a sample of the blob's family ft is an extra
// family's.
func (tk *taken) has(ft *famText) bool {
	if len(tk.samples) == 0 {
		return false
	}
	is, ok := tk.fams[ft.name]
	if !ok {
		is = tk.samples[ft.name]
		for _, sfx := range suffixes(ft.typ) {
			tk.buf = append(append(tk.buf[:0], ft.name...), sfx...)
			is = is || tk.samples[string(tk.buf)]
		}
		tk.fams[ft.name] = is
	}
	return is
}

// clashes is export.Clashes of the metrics of rs's blobs, one blob after
// the other, by blob and then by metric (rendered.heads): nil, as are the
// entries of the blobs it leaves whole, when nothing clashes. A scrape of
// the blobs of the one before reuses its decision.
func (t *Text) clashes(rs []*rendered) [][]error {
	if slices.Equal(rs, t.decided.rs) {
		return t.decided.cuts
	}
	flat := t.flat[:0]
	for _, r := range rs {
		for i := range r.heads {
			flat = append(flat, r.metric(&r.heads[i]))
		}
	}
	// The blobs of a template write the same names: each is made once.
	type nameKind struct {
		name string
		kind export.Kind
	}
	memo := map[nameKind][]string{}
	found := export.Clashes(flat, func(dst []string, m *export.Metric) []string {
		k := nameKind{m.Name, m.Kind}
		ns, ok := memo[k]
		if !ok {
			ns = textNames(nil, m)
			memo[k] = ns
		}
		return append(dst, ns...)
	})
	clear(flat) // keeps no blob's names or labels alive
	t.flat = flat[:0]
	var cuts [][]error
	if found != nil {
		cuts = make([][]error, len(rs))
		base := 0
		for k, r := range rs {
			for i := range r.heads {
				if err := found[base+i]; err != nil {
					if cuts[k] == nil {
						cuts[k] = make([]error, len(r.heads))
					}
					cuts[k][i] = err
				}
			}
			base += len(r.heads)
		}
	}
	t.decided = clashes{rs: rs, cuts: cuts}
	return cuts
}

// textNames is export.PromNames for the text format, where a native
// histogram is written as a classic one's count and sum (appendMetric):
// its _bucket, _count and _sum too.
func textNames(dst []string, m *export.Metric) []string {
	if m.Kind == export.KindExpHistogram {
		classic := *m
		classic.Kind = export.KindHistogram
		return export.PromNames(dst, &classic)
	}
	return export.PromNames(dst, m)
}

// clashes is a decision of Text.clashes: for the blobs rs, by blob and
// then by metric, the error of each metric left out.
type clashes struct {
	rs   []*rendered
	cuts [][]error
}

var (
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
	valueEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
)

// renderBlob renders the blob's metrics sc.ms by family, as
// client_golang's const metrics and expfmt.MetricFamilyToText would, and
// leaves in sc.fam and sc.mend each metric's family and where its lines
// end in the family's. The lines of all families share one allocation of
// the exact size; the rest of sc is the rendering's working memory.
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
	mend := slices.Grow(sc.mend[:0], len(ms))[:len(ms)] // every metric is in a family: all set
	for k := range out {
		start := len(buf)
		for i := range ms {
			if fam[i] != k {
				continue
			}
			m := &ms[i]
			labels = append(labels[:0], m.Labels...)
			slices.SortStableFunc(labels, func(a, b export.Label) int { return strings.Compare(a.Name, b.Name) })
			buf = appendMetric(buf, out[k].name, m, labels)
			mend[i] = len(buf) - start
		}
		ends = append(ends, len(buf))
	}
	lines := bytes.Clone(buf)
	start := 0
	for k := range out {
		out[k].lines = lines[start:ends[k]:ends[k]]
		start = ends[k]
	}
	sc.buf, sc.fam, sc.ends, sc.mend = buf, fam, ends, mend
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
