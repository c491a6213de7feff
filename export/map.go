package export

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/export/internal/hashfmt"
	"github.com/statsblob/statsblob/hist"
	"github.com/statsblob/statsblob/tdigest"
	"github.com/statsblob/statsblob/voi"
)

// DefaultQuantiles are the quantiles a t-digest summary reports unless
// Options.Quantiles says otherwise.
var DefaultQuantiles = []float64{0.5, 0.9, 0.99, 0.999}

// DefaultNativeScale is a fixed scale (Prometheus: schema) for native
// histograms derived from t-digests where sources must share bucket bounds
// (classic buckets summed across collectors): bounds grow by 2^(1/8), 9%.
// Options.NativeScale 0 chooses the scale per digest instead.
const DefaultNativeScale = 3

// MaxNativeScale is the finest scale of derived exponential histograms, the
// finest Prometheus accepts: bounds grow by 2^(1/256), 0.27%.
const MaxNativeScale = 8

// MaxNativeBuckets bounds the buckets of a native histogram: a digest whose
// means span more buckets at the requested scale gets a coarser one.
const MaxNativeBuckets = 160

// Convention is the naming and typing a Mapper follows.
type Convention uint8

// The conventions.
const (
	// Prometheus: names NAMESPACE_TEMPLATE_VOI_UNIT plus suffixes (_max,
	// _hist, _tdigest), the unit as a word in the name; t-digests as
	// summaries, and as native histograms too with NativeHistogram.
	Prometheus Convention = iota
	// OpenTelemetry: dotted names without units (namespace.template.voi,
	// then .max, .min, .hist, .hist.out_of_range, .tdigest), UCUM units in
	// Metric.Unit; t-digests as exponential histograms (summaries with
	// Options.Summary). NativeHistogram is ignored.
	OpenTelemetry
)

// Options configure the mapping.
type Options struct {
	// Convention is the naming and typing: Prometheus (the zero value) or
	// OpenTelemetry.
	Convention Convention
	// Namespace, if set, prefixes every metric name.
	Namespace string
	// Units maps a VOI name to its unit, a Prometheus word or a UCUM code
	// ("microseconds" or "us": TCP_RTT's MAX is
	// tcp_default_tcp_rtt_microseconds_max in Prometheus, and
	// tcp_default.tcp_rtt.max of unit "us" in OpenTelemetry; see UCUM).
	// It overrides the template's metadata (tpl.VOIMeta): it replaces the
	// VOI's unit and a unit suffix of its name, and values are exported
	// unscaled (meta.go).
	Units map[string]string
	// Quantiles are the quantiles of t-digest summaries, each in [0, 1];
	// nil means DefaultQuantiles. They are reported in ascending order.
	Quantiles []float64
	// NativeHistogram adds, for every t-digest, a native (exponential)
	// histogram derived from the digest's CDF (blob.Stat.CDF).
	NativeHistogram bool
	// NativeScale is the scale of the exponential histograms derived from
	// t-digests, -4..8; 0 chooses it per digest: the finest scale (up to
	// MaxNativeScale) whose buckets still tell every two neighbouring
	// centroid means apart, so that the buckets add no error to the
	// digest's own, lowered while the means span more than
	// MaxNativeBuckets buckets.
	NativeScale int32
	// Summary (OpenTelemetry convention) exports t-digests as Summaries,
	// the type OpenTelemetry keeps for compatibility, instead of
	// exponential histograms.
	Summary bool
}

// Mapper turns blobs into Metrics. It is safe for concurrent use.
type Mapper struct {
	opts      Options
	quantiles []float64
	scale     int32
	names     nameCache
}

// NewMapper checks opts and returns a Mapper. Errors wrap voi.ErrInvalid:
// a quantile outside [0, 1] or NaN, a scale outside -4..8.
func NewMapper(opts Options) (*Mapper, error) {
	qs := opts.Quantiles
	if qs == nil {
		qs = DefaultQuantiles
	}
	qs = slices.Clone(qs)
	for _, q := range qs {
		if !(q >= 0 && q <= 1) {
			return nil, fmt.Errorf("export: quantile %v outside [0, 1]: %w", q, voi.ErrInvalid)
		}
	}
	slices.Sort(qs)
	qs = slices.Compact(qs)
	scale := opts.NativeScale
	if scale < -4 || scale > MaxNativeScale {
		return nil, fmt.Errorf("export: native histogram scale %d outside -4..8: %w", scale, voi.ErrInvalid)
	}
	return &Mapper{opts: opts, quantiles: qs, scale: scale}, nil
}

// voiStats gathers one VOI's statistics.
type voiStats struct {
	id    int
	dt    voi.DType
	name  string // the VOI's name as the template has it
	base  string // the metric name base
	unit  string // the unit: a Prometheus word or a UCUM code, by convention
	stats [voi.NumSTypes]*blob.Stat
	hv    *histView // the histogram statistic, read
	voiMeta
}

// Append appends the metrics of n's blob to dst, VOI by VOI in id order and
// within a VOI in statistic order (SUM, MAX, MIN, HIST, TDGST). On error dst
// is returned unchanged. Errors wrap voi.ErrInvalid: no blob; a template
// whose hash is not the blob's; constant labels CheckLabels rejects; names
// that still collide after disambiguation; statistic data the queries reject.
func (m *Mapper) Append(dst []Metric, n Named) ([]Metric, error) {
	if n.Blob == nil {
		return dst, fmt.Errorf("export: no blob: %w", voi.ErrInvalid)
	}
	if err := CheckLabels(n.Labels); err != nil {
		return dst, err
	}
	b := n.Blob
	tplName := fmt.Sprintf("tpl_%08x", b.TplHash())
	if t := n.Template; t != nil {
		if t.Hash() != b.TplHash() {
			return dst, fmt.Errorf("export: blob of template hash %s exported with template %s: %w", hashfmt.String(b.TplHash()), t.Spec(), voi.ErrInvalid)
		}
		tplName = t.Name()
	}
	var vois []*voiStats
	for id, s := range b.Stats() {
		if len(vois) == 0 || vois[len(vois)-1].id != int(id) {
			vs := &voiStats{id: int(id), dt: s.VOIDType, name: fmt.Sprintf("voi%d", id)}
			if n.Template != nil {
				if name, ok := n.Template.VOIName(id); ok && name != "" {
					vs.name = name
				}
			}
			vois = append(vois, vs)
		}
		st := s
		vois[len(vois)-1].stats[s.Type] = &st
	}
	m.readMeta(n.Template, b, n.Levels, vois)
	for _, vs := range vois {
		if s := vs.stats[voi.Hist]; s != nil {
			h := readHist(s.Data, s.DType, vs.dt, vs.scale)
			vs.hv = &h
		}
	}
	if err := m.cachedName(tplName, vois); err != nil {
		return dst, err
	}
	start := n.Start
	if start.IsZero() {
		start = SBinTime(b.Header().LastResetRaw)
	}
	out := dst
	for _, vs := range vois {
		if vs.hidden || n.Off != nil && n.Off(int32(vs.id)) {
			continue
		}
		var err error
		k := len(out)
		if out, err = m.appendVOI(out, vs, tplName, n.Labels, start); err != nil {
			return dst, fmt.Errorf("export: %s %s: %w", tplName, vs.name, err)
		}
		vs.scaleVOI(out[k:])
	}
	out, err := m.appendDerived(out, n, tplName, vois, Metric{Labels: n.Labels, Start: start})
	if err != nil {
		return dst, err
	}
	for i := len(dst); i < len(out); i++ {
		out[i].Template, out[i].TemplateHash = tplName, b.TplHash()
	}
	return out, nil
}

// Family name suffixes, by convention.
const (
	sfxMax = iota
	sfxMin
	sfxHist
	sfxOOR
	sfxTDigest
	sfxNative
)

var suffixes = [...][2]string{
	sfxMax:     {"_max", ".max"},
	sfxMin:     {"_min", ".min"},
	sfxHist:    {"_hist", ".hist"},
	sfxOOR:     {"_hist_outofrange", ".hist.out_of_range"},
	sfxTDigest: {"_tdigest", ".tdigest"},
	sfxNative:  {"_tdigest_native", ""},
}

// fam returns the name of vs's family with suffix i.
func (m *Mapper) fam(vs *voiStats, i int) string {
	return vs.base + suffixes[i][m.opts.Convention]
}

// otel reports whether the mapper follows the OpenTelemetry convention.
func (m *Mapper) otel() bool { return m.opts.Convention == OpenTelemetry }

// digestKind is the kind a t-digest becomes.
func (m *Mapper) digestKind() Kind {
	if m.otel() && !m.opts.Summary {
		return KindExpHistogram
	}
	return KindSummary
}

// families returns the names and kinds of the families vs becomes (the kind
// of a histogram is decided from its data).
func (m *Mapper) families(vs *voiStats) map[string]Kind {
	f := map[string]Kind{}
	if vs.hidden {
		return f
	}
	if s := vs.stats[voi.Sum]; s != nil {
		f[vs.base] = vs.sumKind()
	}
	if vs.level != nil {
		f[m.levelName(vs)] = KindGauge
	}
	if vs.stats[voi.Max] != nil {
		f[m.fam(vs, sfxMax)] = KindGauge
	}
	if vs.stats[voi.Min] != nil {
		f[m.fam(vs, sfxMin)] = KindGauge
	}
	if h := vs.hv; h != nil {
		if h.shape == shapeCounters {
			f[m.fam(vs, sfxHist)] = KindCounter
		} else {
			f[m.fam(vs, sfxHist)] = KindHistogram
		}
		if h.kind != kindCR || h.shape == shapeCounters {
			f[m.fam(vs, sfxOOR)] = KindCounter
		}
	}
	if vs.stats[voi.TDgst] != nil {
		f[m.fam(vs, sfxTDigest)] = m.digestKind()
		if m.opts.NativeHistogram && !m.otel() {
			f[m.fam(vs, sfxNative)] = KindExpHistogram
		}
	}
	return f
}

// name sets every VOI's base name and unit: namespace, template, VOI and
// (Prometheus) unit, sanitised. VOIs whose families would collide with
// another VOI's (in an exposition: with their series' suffixes) get their
// id appended; a collision that remains is an error.
func (m *Mapper) name(tplName string, vois []*voiStats) error {
	for _, vs := range vois {
		u := vs.unit // the metadata's base unit or Units' (readMeta)
		if m.otel() {
			vs.unit = UCUM(u)
			vs.base = otelName(m.opts.Namespace, tplName, vs.nameForUnit())
			continue
		}
		vs.unit = PromUnit(u)
		vs.base = join(m.opts.Namespace, tplName, vs.nameForUnit(), vs.unit)
		if vs.base == "" || vs.base[0] >= '0' && vs.base[0] <= '9' {
			vs.base = "_" + vs.base
		}
	}
	for round := 0; ; round++ {
		owner := map[string]int{} // series name -> index in vois
		bad := map[int]bool{}
		for i, vs := range vois {
			for name, k := range m.families(vs) {
				series := []string{name}
				if !m.otel() {
					series = seriesNames(name, k)
				}
				for _, s := range series {
					if j, ok := owner[s]; ok && j != i {
						bad[i], bad[j] = true, true
					}
					owner[s] = i
				}
			}
		}
		if len(bad) == 0 {
			return nil
		}
		if round == 1 {
			return fmt.Errorf("export: template %s: metric names of VOIs collide after sanitising: %w", tplName, voi.ErrInvalid)
		}
		for i := range bad {
			vois[i].base += "_" + strconv.Itoa(vois[i].id)
		}
	}
}

func sumKind(dt voi.DType) Kind {
	if dt.Signed() {
		return KindUpDownCounter
	}
	return KindCounter
}

// numeric returns a SUM/MAX/MIN statistic's value.
func numeric(s *blob.Stat) float64 {
	var v uint64
	switch len(s.Data) {
	case 4:
		v = uint64(le32(s.Data))
	case 8:
		v = le64(s.Data)
	}
	return value(s.DType, v)
}

func le32(p []byte) uint32 {
	return uint32(p[0]) | uint32(p[1])<<8 | uint32(p[2])<<16 | uint32(p[3])<<24
}
func le64(p []byte) uint64 { return uint64(le32(p)) | uint64(le32(p[4:]))<<32 }

// clean reports whether the statistic exists and counted no error.
func clean(s *blob.Stat) bool { return s != nil && s.Errs == 0 }

func (m *Mapper) appendVOI(out []Metric, vs *voiStats, tplName string, labels []Label, start time.Time) ([]Metric, error) {
	metric := func(name string, k Kind, what string) Metric {
		return Metric{Name: name, Help: m.help(vs, tplName, what), Unit: vs.unit, Kind: k, Labels: labels, Start: start}
	}
	// counts are counts of values, whatever the VOI's unit (UCUM: an
	// annotation of the unit 1).
	counts := func(name string, what string) Metric {
		mt := metric(name, KindCounter, what)
		mt.ValueCount = true
		if m.otel() {
			mt.Unit = "{value}"
		}
		return mt
	}
	out = m.appendSumAndLevel(out, vs, metric)
	// MAX and MIN start at the type's extremes: no value before an update.
	var mm struct {
		min, max float64
		ok       bool
	}
	if s := vs.stats[voi.Max]; s != nil && s.Valid {
		mt := metric(m.fam(vs, sfxMax), KindGauge, "MAX")
		mt.Value = numeric(s)
		out = append(out, mt)
	}
	if s := vs.stats[voi.Min]; s != nil && s.Valid {
		mt := metric(m.fam(vs, sfxMin), KindGauge, "MIN")
		mt.Value = numeric(s)
		out = append(out, mt)
	}
	if mx, mn := vs.stats[voi.Max], vs.stats[voi.Min]; clean(mx) && clean(mn) && mx.Valid && mn.Valid {
		mm.min, mm.max, mm.ok = numeric(mn), numeric(mx), true
	}
	if s := vs.stats[voi.Hist]; s != nil {
		h := vs.hv
		what := s.DType.String()
		if h.shape == shapeCounters {
			for i, c := range h.counts {
				mt := counts(m.fam(vs, sfxHist), what+" bucket counts")
				mt.Labels = append(slices.Clip(labels), Label{LabelBucket, h.labels[i]})
				mt.Value = float64(c)
				out = append(out, mt)
			}
		} else {
			mt := metric(m.fam(vs, sfxHist), KindHistogram, what)
			p := &HistogramPoint{Bounds: h.bounds, Counts: h.counts, Sum: math.NaN()}
			for _, c := range h.counts {
				p.Count = satAdd(p.Count, c)
			}
			// The VOI's SUM (and MIN/MAX) saw every value the histogram
			// saw, and only those, when nothing went out of range (a CRHIST
			// keeps its under-range count as a bucket) and no update failed.
			whole := (h.kind == kindCR || h.oob == 0) && s.Errs == 0
			if sum := vs.stats[voi.Sum]; whole && clean(sum) {
				p.Sum = numeric(sum)
			}
			if p.Count == 0 {
				p.Sum = 0 // of no values (OpenTelemetry: zero when count is)
			}
			if whole && mm.ok && p.Count > 0 {
				p.Min, p.Max, p.HasMinMax = mm.min, mm.max, true
			}
			mt.Histogram = p
			out = append(out, mt)
		}
		if h.kind != kindCR || h.shape == shapeCounters {
			mt := counts(m.fam(vs, sfxOOR), what+" out-of-range count")
			mt.Value = float64(h.oob)
			out = append(out, mt)
		}
	}
	if s := vs.stats[voi.TDgst]; s != nil {
		dt := s.DType
		cnt, err := tdigest.Count(s.Data, dt)
		if err != nil {
			return out, err
		}
		// The VOI's SUM saw exactly the digest's samples when no update of
		// either failed: then it is the exact sum, where the digest's is
		// an estimate.
		var sum float64
		if vsum := vs.stats[voi.Sum]; clean(vsum) && s.Errs == 0 {
			sum = numeric(vsum)
		} else {
			for c := range tdigest.Centroids(s.Data, dt) {
				sum += c.Mean() * float64(c.Count)
			}
		}
		if m.digestKind() == KindSummary {
			mt := metric(m.fam(vs, sfxTDigest), KindSummary, dt.String()+" t-digest")
			p := &SummaryPoint{Count: cnt, Sum: sum}
			// Stat.Quantile's answers, the library's and the CLI's (bounded
			// by MIN and MAX when the VOI keeps them, an integer VOI's
			// rounded), all from one read of the digest.
			var vals []float64
			if cnt > 0 {
				if vals, err = s.Quantiles(make([]float64, 0, len(m.quantiles)), m.quantiles); err != nil {
					return out, err
				}
			}
			for i, q := range m.quantiles {
				v := math.NaN()
				if vals != nil {
					v = vals[i]
				}
				p.Quantiles = append(p.Quantiles, QuantileValue{Q: q, Value: v})
			}
			mt.Summary = p
			out = append(out, mt)
		}
		if m.digestKind() == KindExpHistogram || m.opts.NativeHistogram && !m.otel() {
			lo, hi := math.NaN(), math.NaN()
			if mm.ok {
				lo, hi = mm.min, mm.max
			}
			e, err := expFromDigest(s, m.scale, cnt, sum, vs.scale, lo, hi)
			if err != nil {
				return out, err
			}
			if mm.ok && cnt > 0 {
				e.Min, e.Max, e.HasMinMax = mm.min, mm.max, true
			}
			name, what := m.fam(vs, sfxNative), dt.String()+" t-digest as a native histogram"
			if m.otel() {
				name, what = m.fam(vs, sfxTDigest), dt.String()+" t-digest as an exponential histogram"
			}
			mt := metric(name, KindExpHistogram, what)
			mt.Exp = e
			out = append(out, mt)
		}
	}
	return out, nil
}

func satAdd(a, b uint64) uint64 {
	if a+b < a {
		return math.MaxUint64
	}
	return a + b
}

// Histogram kinds.
const (
	kindCR = iota
	kindDR
	kindDV
)

// The shapes a histogram is exported in.
const (
	shapeHistogram = iota
	shapeCounters
)

// histView is a histogram statistic read for export.
type histView struct {
	kind   int
	shape  int
	oob    uint64
	bounds []float64 // shapeHistogram
	counts []uint64  // per bucket: shapeHistogram len(bounds)+1; shapeCounters one per bucket
	labels []string  // shapeCounters: the bucket label of each count
}

// readHist reads histogram data of type hdt on a VOI of type dt and decides
// its shape (see the package documentation). scale converts the VOI's
// values to the exported unit: the bucket labels of counters are given in
// it (the histogram's bounds are scaled with its other values, scaleVOI).
func readHist(data []byte, hdt, dt voi.DType, scale float64) histView {
	h := histView{oob: hist.OOB(data, hdt)}
	switch hdt {
	case voi.DRHist32, voi.DRHist64:
		h.kind = kindDR
	case voi.DVHist32, voi.DVHist64:
		h.kind = kindDV
	}
	var bks []hist.BucketInfo
	for _, b := range hist.Buckets(data, hdt, dt) {
		bks = append(bks, b)
	}
	if h.histogram(bks, dt) {
		h.shape = shapeHistogram
		return h
	}
	h.shape, h.bounds, h.counts = shapeCounters, nil, nil
	seen := map[string]bool{}
	for i, b := range bks {
		var l []byte
		if h.kind == kindDV {
			l = appendScaled(l, dt, b.LB, scale)
		} else {
			l = append(l, '[')
			l = appendScaled(l, dt, b.LB, scale)
			l = append(l, ',')
			l = appendScaled(l, dt, b.UB, scale)
			l = append(l, ')')
		}
		s := string(l)
		if seen[s] {
			s += "#" + strconv.Itoa(i)
		}
		seen[s] = true
		h.labels = append(h.labels, s)
		h.counts = append(h.counts, b.Cnt)
	}
	return h
}

// histogram fills bounds and counts when the buckets can be exported as a
// histogram with exact bounds, and reports whether they can.
func (h *histView) histogram(bks []hist.BucketInfo, dt voi.DType) bool {
	n := len(bks)
	if n == 0 {
		return false
	}
	p0 := prec(dt, bks[0].LB)
	for _, b := range bks {
		if prec(dt, b.LB) != p0 || h.kind == kindDR && prec(dt, b.UB) != p0 {
			return false // the C compares Q fractions raw: one precision only
		}
	}
	lb0 := bks[0].LB
	switch h.kind {
	case kindCR:
		// Bucket i takes lb[i] <= v < lb[i+1] when the lower bounds
		// ascend strictly; the last one everything above; oob is below
		// lb[0].
		for i := 1; i < n; i++ {
			if !less(dt, bks[i-1].LB, bks[i].LB) {
				return false
			}
		}
		if isMin(dt, lb0) {
			if h.oob != 0 {
				return false
			}
		} else {
			h.bounds = append(h.bounds, belowUnit(dt, lb0))
			h.counts = append(h.counts, h.oob)
		}
		for i := 0; i < n-1; i++ {
			h.bounds = append(h.bounds, belowUnit(dt, bks[i+1].LB))
			h.counts = append(h.counts, bks[i].Cnt)
		}
		h.counts = append(h.counts, bks[n-1].Cnt)
		return h.ascending()
	case kindDR:
		// Contiguous ranges lb[i] <= v < ub[i] = lb[i+1].
		for i, b := range bks {
			if !less(dt, b.LB, b.UB) || i > 0 && !equal(dt, bks[i-1].UB, b.LB) {
				return false
			}
		}
	case kindDV:
		// Consecutive integer values.
		if !dt.IsInt() {
			return false
		}
		for i := 1; i < n; i++ {
			if !succ(dt, bks[i-1].LB, bks[i].LB) {
				return false
			}
		}
	}
	// DR and DV: the buckets hold the values in range; oob (below and
	// above) is reported apart. A zero bucket below the first bound lets
	// interpolation start there.
	if !isMin(dt, lb0) {
		h.bounds = append(h.bounds, belowUnit(dt, lb0))
		h.counts = append(h.counts, 0)
	}
	for _, b := range bks {
		if h.kind == kindDV {
			h.bounds = append(h.bounds, value(dt, b.LB))
		} else {
			h.bounds = append(h.bounds, belowUnit(dt, b.UB))
		}
		h.counts = append(h.counts, b.Cnt)
	}
	h.counts = append(h.counts, 0)
	return h.ascending()
}

// ascending reports whether the bounds ascend strictly as float64s (64-bit
// bounds beyond 2^53 may round onto each other).
func (h *histView) ascending() bool {
	for i := 1; i < len(h.bounds); i++ {
		if !(h.bounds[i-1] < h.bounds[i]) {
			return false
		}
	}
	return true
}
