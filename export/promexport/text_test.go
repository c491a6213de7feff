package promexport_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/export"
	"github.com/statsblob/statsblob/export/internal/fixture"
	"github.com/statsblob/statsblob/export/promexport"
	"github.com/statsblob/statsblob/hist"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// TestTextRendersInParallel: a Text renders the blobs it has not seen on
// up to GOMAXPROCS goroutines (from 128 of them); the text is the one a
// single goroutine writes, every blob's series once (a blob handed out
// twice under two label sets twice), and a blob the mapping rejects
// (exported with another template) left out either way.
func TestTextRendersInParallel(t *testing.T) {
	tp := fixture.Kitchen()
	other, err := tpl.NewRegistry().New("OTHER")
	require.NoError(t, err)
	require.NoError(t, other.AddVOI(tpl.VOIDef{ID: 0, Name: "x", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}))
	const n = 300
	var named []export.Named
	for i := range n {
		named = append(named, export.Named{Blob: fixture.KitchenBlob(tp), Template: tp,
			Labels: []export.Label{{Name: "host", Value: fmt.Sprintf("h%03d", i)}}})
		if i == n/2 {
			named = append(named, export.Named{Blob: fixture.KitchenBlob(tp), Template: other})
			// The same blob under another label set: its own series.
			dup := named[len(named)-2]
			dup.Labels = []export.Label{{Name: "host", Value: "dup"}}
			named = append(named, dup)
		}
	}
	c, err := promexport.New(export.Static(named...), export.Options{})
	require.NoError(t, err)
	render := func(procs int) string {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		var b strings.Builder
		require.NoError(t, c.NewText().Write(&b, nil))
		return b.String()
	}
	serial := render(1)
	require.Equal(t, n+1, strings.Count(serial, "kitchen_bytes_total{host="))
	require.Contains(t, serial, `kitchen_bytes_total{host="dup"}`)
	require.Contains(t, serial, fmt.Sprintf(`kitchen_bytes_total{host="h%03d"}`, n/2))
	require.NotContains(t, serial, "other_")
	require.Equal(t, serial, render(4))

	// A Text keeps what it rendered: a second write renders nothing new
	// and writes the same text.
	text := c.NewText()
	var first, second strings.Builder
	require.NoError(t, text.Write(&first, nil))
	require.NoError(t, text.Write(&second, nil))
	require.Equal(t, serial, first.String())
	require.Equal(t, serial, second.String())
}

// sumBlob returns a blob of a template name with one SUM VOI voiName of
// type dt, updated with v.
func sumBlob(t *testing.T, name, voiName string, dt voi.DType, v uint64) (*blob.Blob, *tpl.Template) {
	t.Helper()
	tp, err := tpl.NewRegistry().New(name)
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: voiName, DType: dt, Stats: []tpl.StatSpec{tpl.Sum()}}))
	b := blob.New(tp, blob.NewEnv(func() int64 { return 0 }, 1))
	switch dt {
	case voi.IntS64:
		require.NoError(t, b.UpdateS64(0, int64(v)))
	default:
		require.NoError(t, b.UpdateU64(0, v))
	}
	return b, tp
}

// parses reports the exposition's families as expfmt's parser reads them.
func parses(t *testing.T, text string) map[string]*dto.MetricFamily {
	t.Helper()
	parser := expfmt.NewTextParser(model.LegacyValidation)
	mfs, err := parser.TextToMetricFamilies(strings.NewReader(text))
	require.NoError(t, err, text)
	return mfs
}

// gathered returns what a pedantic registry gathers of c, written family
// by family as the text format, and Gather's error.
func gathered(t *testing.T, c prometheus.Collector) (string, error) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(c))
	mfs, err := reg.Gather()
	var sb strings.Builder
	for _, mf := range mfs {
		_, ferr := expfmt.MetricFamilyToText(&sb, mf)
		require.NoError(t, ferr)
	}
	return sb.String(), err
}

// withoutClash returns om without its FirstClash, and the error's text
// ("" if none), having checked that it wraps export.ErrNameClash.
func withoutClash(t *testing.T, om promexport.Omitted) (promexport.Omitted, string) {
	t.Helper()
	err := om.FirstClash
	if err == nil {
		return om, ""
	}
	require.ErrorIs(t, err, export.ErrNameClash)
	om.FirstClash = nil
	return om, err.Error()
}

// TestTextOneHeaderPerNameBesideExtraFamilies: a blob's family whose name
// an extra family has (template "process", VOI cpu_seconds: the process
// collector's process_cpu_seconds_total) is left out and counted as a
// clash; the extra family is written once, with its own header, and the
// exposition parses.
func TestTextOneHeaderPerNameBesideExtraFamilies(t *testing.T) {
	b, tp := sumBlob(t, "process", "cpu_seconds", voi.IntU64, 3)
	b2, tp2 := sumBlob(t, "app", "requests", voi.IntU64, 7)
	c, err := promexport.New(export.Static(
		export.Named{Blob: b, Template: tp, Labels: []export.Label{{Name: "host", Value: "a"}}},
		export.Named{Blob: b2, Template: tp2, Labels: []export.Label{{Name: "host", Value: "a"}}}), export.Options{})
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	cpu := prometheus.NewCounter(prometheus.CounterOpts{Name: "process_cpu_seconds_total", Help: "Total user and system CPU time spent in seconds."})
	cpu.Add(1.5)
	reg.MustRegister(cpu)
	extra, err := reg.Gather()
	require.NoError(t, err)

	var sb strings.Builder
	om, err := c.NewText().WriteWithin(&sb, extra, 0, 0)
	require.NoError(t, err)
	require.Equal(t, promexport.Omitted{Clashes: 1}, om)
	require.Equal(t, `# HELP app_requests_total statsblob app requests: SUM (INT_U64)
# TYPE app_requests_total counter
app_requests_total{host="a"} 7
# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.
# TYPE process_cpu_seconds_total counter
process_cpu_seconds_total 1.5
`, sb.String())
	require.Len(t, parses(t, sb.String()), 2)

	// The real process collector's families too, whatever this platform
	// gives.
	reg = prometheus.NewRegistry()
	reg.MustRegister(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	extra, err = reg.Gather()
	require.NoError(t, err)
	sb.Reset()
	require.NoError(t, c.NewText().Write(&sb, extra))
	parses(t, sb.String())
}

// TestTextEachSeriesOnce: two templates whose names sanitise alike ("web",
// "WEB") export the family web_hits_total; with the same constant labels
// their series are the same, and the later blob's is left out, counted and
// named (export.Clashes); with other labels both are written under the
// first one's header. A family of one name and another type is left out
// too.
func TestTextEachSeriesOnce(t *testing.T) {
	web, webTp := sumBlob(t, "web", "hits", voi.IntU64, 1)
	WEB, WEBTp := sumBlob(t, "WEB", "hits", voi.IntU64, 2)
	a := []export.Label{{Name: "host", Value: "a"}}
	write := func(named ...export.Named) (string, promexport.Omitted, string) {
		t.Helper()
		c, err := promexport.New(export.Static(named...), export.Options{})
		require.NoError(t, err)
		var sb strings.Builder
		om, err := c.NewText().WriteWithin(&sb, nil, 0, 0)
		require.NoError(t, err)
		parses(t, sb.String())
		om, clash := withoutClash(t, om)
		return sb.String(), om, clash
	}
	text, om, clash := write(export.Named{Blob: web, Template: webTp, Labels: a}, export.Named{Blob: WEB, Template: WEBTp, Labels: a})
	require.Equal(t, promexport.Omitted{Clashes: 1}, om)
	require.Equal(t, `export: series web_hits_total{host="a"} of template "WEB" is also template "web"'s: export: two blobs export one series`, clash)
	require.Equal(t, `# HELP web_hits_total statsblob web hits: SUM (INT_U64)
# TYPE web_hits_total counter
web_hits_total{host="a"} 1
`, text)

	// The same blob handed out twice with the same labels: once, the
	// other named as a clash of one template (export.Clashes).
	text, om, clash = write(export.Named{Blob: web, Template: webTp, Labels: a}, export.Named{Blob: web, Template: webTp, Labels: a})
	require.Equal(t, promexport.Omitted{Clashes: 1}, om)
	require.Equal(t, `export: series web_hits_total{host="a"} of template "web" with labels {host="a"} is also its series with labels {host="a"}: export: two blobs export one series`, clash)
	require.Equal(t, 1, strings.Count(text, "web_hits_total{"))

	// Two blobs of one template under {} and {host=""}: one series, the
	// first blob's. Before, both were written (web_hits_total 1 and
	// web_hits_total{host=""} 5, one series to Prometheus) and nothing
	// was named.
	other, _ := sumBlob(t, "web", "hits", voi.IntU64, 5)
	text, om, clash = write(export.Named{Blob: web, Template: webTp},
		export.Named{Blob: other, Template: webTp, Labels: []export.Label{{Name: "host", Value: ""}}})
	require.Equal(t, promexport.Omitted{Clashes: 1}, om)
	require.Equal(t, `export: series web_hits_total{} of template "web" with labels {host=""} is also its series with labels {}: export: two blobs export one series`, clash)
	require.Equal(t, `# HELP web_hits_total statsblob web hits: SUM (INT_U64)
# TYPE web_hits_total counter
web_hits_total 1
`, text)

	text, om, clash = write(export.Named{Blob: WEB, Template: WEBTp, Labels: a},
		export.Named{Blob: web, Template: webTp, Labels: []export.Label{{Name: "host", Value: "b"}}})
	require.Equal(t, promexport.Omitted{}, om)
	require.Empty(t, clash)
	require.Equal(t, `# HELP web_hits_total statsblob WEB hits: SUM (INT_U64)
# TYPE web_hits_total counter
web_hits_total{host="a"} 2
web_hits_total{host="b"} 1
`, text)

	// An empty label value is no label: {host=""} is {}.
	text, om, clash = write(export.Named{Blob: web, Template: webTp},
		export.Named{Blob: WEB, Template: WEBTp, Labels: []export.Label{{Name: "host", Value: ""}}})
	require.Equal(t, promexport.Omitted{Clashes: 1}, om)
	require.Equal(t, `export: series web_hits_total{} of template "WEB" is also template "web"'s: export: two blobs export one series`, clash)
	require.Equal(t, 1, strings.Count(text, "web_hits_total"+" 1\n"))
	require.NotContains(t, text, "web_hits_total{")

	// web_hits_total a gauge (a signed SUM of VOI hits_total) beside the
	// counter: the later family is left out, whatever its labels.
	gauge, gaugeTp := sumBlob(t, "web", "hits_total", voi.IntS64, 5)
	text, om, clash = write(export.Named{Blob: web, Template: webTp, Labels: a},
		export.Named{Blob: gauge, Template: gaugeTp, Labels: []export.Label{{Name: "host", Value: "b"}}})
	require.Equal(t, promexport.Omitted{Clashes: 1}, om)
	require.Equal(t, fmt.Sprintf(`export: family web_hits_total of template "web" (hash %d (%08x)) is a counter in template "web" (hash %d (%08x)): export: two blobs export one series`,
		gaugeTp.Hash(), gaugeTp.Hash(), webTp.Hash(), webTp.Hash()), clash)
	require.Equal(t, `# HELP web_hits_total statsblob web hits: SUM (INT_U64)
# TYPE web_hits_total counter
web_hits_total{host="a"} 1
`, text)
}

// A clashing family is not held against the bounds, and a blob left out by
// a bound is no clash: "WEB"'s family is "web"'s series (the first
// template's is written), so that a bound of 2 series writes web's and
// other's, and a bound of 1 web's alone, both naming the one clash.
func TestTextClashesNotCountedAgainstBounds(t *testing.T) {
	web, webTp := sumBlob(t, "web", "hits", voi.IntU64, 1)
	WEB, WEBTp := sumBlob(t, "WEB", "hits", voi.IntU64, 2)
	other, otherTp := sumBlob(t, "other", "x", voi.IntU64, 3)
	a := []export.Label{{Name: "host", Value: "a"}}
	c, err := promexport.New(export.Static(export.Named{Blob: web, Template: webTp, Labels: a},
		export.Named{Blob: WEB, Template: WEBTp, Labels: a}, export.Named{Blob: other, Template: otherTp, Labels: a}), export.Options{})
	require.NoError(t, err)
	const wantClash = `export: series web_hits_total{host="a"} of template "WEB" is also template "web"'s: export: two blobs export one series`
	const webLines = `# HELP web_hits_total statsblob web hits: SUM (INT_U64)
# TYPE web_hits_total counter
web_hits_total{host="a"} 1
`
	var sb strings.Builder
	om, err := c.NewText().WriteWithin(&sb, nil, 2, 0)
	require.NoError(t, err)
	om, clash := withoutClash(t, om)
	require.Equal(t, promexport.Omitted{Clashes: 1}, om)
	require.Equal(t, wantClash, clash)
	require.Equal(t, `# HELP other_x_total statsblob other x: SUM (INT_U64)
# TYPE other_x_total counter
other_x_total{host="a"} 3
`+webLines, sb.String()) // families in name order
	sb.Reset()
	om, err = c.NewText().WriteWithin(&sb, nil, 1, 0)
	require.NoError(t, err)
	om, clash = withoutClash(t, om)
	require.Equal(t, promexport.Omitted{BySeries: 1, Clashes: 1}, om)
	require.Equal(t, wantClash, clash)
	require.Equal(t, webLines, sb.String())
}

// TestTextClashesAsCollector: a histogram a_b_hist of template "a" writes
// the samples a_b_hist_count, as a gauge a_b_hist_count of template "a_b"
// does, and Text decides as the Collector does (export.Clashes): the
// first template's family is written, the other's left out whole (a
// parser would read its samples as the histogram's), counted and named.
// Before, Text compared family names only and wrote both families, and
// a_b_hist_count{host="a"} twice: an exposition expfmt refuses ("second
// HELP line for metric name").
func TestTextClashesAsCollector(t *testing.T) {
	histTp, err := tpl.NewRegistry().New("a")
	require.NoError(t, err)
	require.NoError(t, histTp.AddVOI(tpl.VOIDef{ID: 0, Name: "b", DType: voi.IntU64,
		Stats: []tpl.StatSpec{tpl.Histogram(hist.Spec{DType: voi.CRHist32, Scheme: hist.Lin, LB: 0, UB: 200, StepInc: 100})}}))
	h := blob.New(histTp, blob.NewEnv(func() int64 { return 0 }, 1))
	require.NoError(t, h.UpdateU64(0, 50))
	require.NoError(t, h.UpdateU64(0, 150))
	ga, gaTp := sumBlob(t, "a_b", "hist_count", voi.IntS64, 7)
	gb, _ := sumBlob(t, "a_b", "hist_count", voi.IntS64, 9)
	named := []export.Named{
		{Blob: h, Template: histTp, Labels: []export.Label{{Name: "host", Value: "a"}}},
		{Blob: ga, Template: gaTp, Labels: []export.Label{{Name: "host", Value: "a"}}},
		{Blob: gb, Template: gaTp, Labels: []export.Label{{Name: "host", Value: "b"}}},
	}
	c, err := promexport.New(export.Static(named...), export.Options{})
	require.NoError(t, err)
	var sb strings.Builder
	text := c.NewText()
	om, err := text.WriteWithin(&sb, nil, 0, 0)
	require.NoError(t, err)
	parses(t, sb.String())
	// A scrape of the same blobs reuses the decision: the same text.
	var again strings.Builder
	omAgain, err := text.WriteWithin(&again, nil, 0, 0)
	require.NoError(t, err)
	require.Equal(t, om, omAgain)
	require.Equal(t, sb.String(), again.String())
	om, clash := withoutClash(t, om)
	require.Equal(t, promexport.Omitted{Clashes: 2}, om)
	require.Equal(t, `export: family a_b_hist_count of template "a_b" writes samples a_b_hist_count, as family a_b_hist of template "a" does: export: two blobs export one series`, clash)
	want := `# HELP a_b_hist statsblob a b: CRHIST32 (INT_U64)
# TYPE a_b_hist histogram
a_b_hist_bucket{host="a",le="99"} 1
a_b_hist_bucket{host="a",le="199"} 2
a_b_hist_bucket{host="a",le="+Inf"} 2
a_b_hist_sum{host="a"} NaN
a_b_hist_count{host="a"} 2
`
	require.Equal(t, want, sb.String())

	// What a registry gathers of the Collector, written family by family
	// in name order: the same text, and the two gauges refused with the
	// same error.
	got, err := gathered(t, c)
	var errs prometheus.MultiError
	require.ErrorAs(t, err, &errs)
	require.Len(t, errs, 2)
	for _, err := range errs {
		require.EqualError(t, err, clash)
	}
	require.Equal(t, want, got)
}

// TestTextNativeHistogramSamples: the text format writes a native
// histogram n_x_tdigest_native as a classic one's _bucket, _count and
// _sum, so a gauge n_x_tdigest_native_count of another template clashes
// with it there (whatever its labels), though not in the protobuf format:
// Text looks at the names it writes. Before, both families were written.
func TestTextNativeHistogramSamples(t *testing.T) {
	tp, err := tpl.NewRegistry().New("n")
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "x", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.TDigest(voi.TDgstClust64, 20, 8)}}))
	b := blob.New(tp, blob.NewEnv(func() int64 { return 0 }, 1))
	require.NoError(t, b.UpdateU64(0, 3))
	g, gTp := sumBlob(t, "n_x", "tdigest_native_count", voi.IntS64, 5)
	c, err := promexport.New(export.Static(export.Named{Blob: b, Template: tp},
		export.Named{Blob: g, Template: gTp, Labels: []export.Label{{Name: "host", Value: "b"}}}),
		export.Options{NativeHistogram: true, NativeScale: -1})
	require.NoError(t, err)
	var sb strings.Builder
	om, err := c.NewText().WriteWithin(&sb, nil, 0, 0)
	require.NoError(t, err)
	require.Len(t, parses(t, sb.String()), 2)
	om, clash := withoutClash(t, om)
	require.Equal(t, promexport.Omitted{Clashes: 1}, om)
	require.Equal(t, `export: family n_x_tdigest_native_count of template "n_x" writes samples n_x_tdigest_native_count, as family n_x_tdigest_native of template "n" does: export: two blobs export one series`, clash)
	require.NotContains(t, sb.String(), "# TYPE n_x_tdigest_native_count")
}

// TestTextExtraFamiliesBySampleNames: an extra family takes the names of
// the samples it writes from the blobs' families, as export.Clashes does
// between blobs: a blob's gauge x_count beside a registry's histogram x,
// or a blob's histogram beside a registry's gauge named as its _count, is
// left out and counted, and the exposition parses. Before, Text compared
// family names only and wrote both families: expfmt's parser refused the
// exposition ("second HELP line", or a histogram's _count read as a
// gauge's).
func TestTextExtraFamiliesBySampleNames(t *testing.T) {
	histTp, err := tpl.NewRegistry().New("a")
	require.NoError(t, err)
	require.NoError(t, histTp.AddVOI(tpl.VOIDef{ID: 0, Name: "b", DType: voi.IntU64,
		Stats: []tpl.StatSpec{tpl.Histogram(hist.Spec{DType: voi.CRHist32, Scheme: hist.Lin, LB: 0, UB: 200, StepInc: 100})}}))
	h := blob.New(histTp, blob.NewEnv(func() int64 { return 0 }, 1))
	require.NoError(t, h.UpdateU64(0, 50))
	g, gTp := sumBlob(t, "x", "count", voi.IntS64, 7) // gauge x_count
	for _, tc := range []struct {
		what  string
		named export.Named
		extra prometheus.Collector
		want  string
	}{
		{"a blob's gauge x_count, a registry's histogram x",
			export.Named{Blob: g, Template: gTp, Labels: []export.Label{{Name: "host", Value: "a"}}},
			prometheus.NewHistogram(prometheus.HistogramOpts{Name: "x", Help: "The registry's.", Buckets: []float64{1}}),
			`# HELP x The registry's.
# TYPE x histogram
x_bucket{le="1"} 0
x_bucket{le="+Inf"} 0
x_sum 0
x_count 0
`},
		{"a blob's histogram a_b_hist, a registry's gauge a_b_hist_count",
			export.Named{Blob: h, Template: histTp, Labels: []export.Label{{Name: "host", Value: "a"}}},
			prometheus.NewGauge(prometheus.GaugeOpts{Name: "a_b_hist_count", Help: "The registry's."}),
			`# HELP a_b_hist_count The registry's.
# TYPE a_b_hist_count gauge
a_b_hist_count 0
`},
		{"a blob's histogram a_b_hist, a registry's summary a_b",
			export.Named{Blob: h, Template: histTp, Labels: []export.Label{{Name: "host", Value: "a"}}},
			prometheus.NewSummary(prometheus.SummaryOpts{Name: "a_b", Help: "The registry's."}),
			`# HELP a_b The registry's.
# TYPE a_b summary
a_b_sum 0
a_b_count 0
# HELP a_b_hist statsblob a b: CRHIST32 (INT_U64)
# TYPE a_b_hist histogram
a_b_hist_bucket{host="a",le="99"} 1
a_b_hist_bucket{host="a",le="199"} 1
a_b_hist_bucket{host="a",le="+Inf"} 1
a_b_hist_sum{host="a"} NaN
a_b_hist_count{host="a"} 1
`},
	} {
		t.Run(tc.what, func(t *testing.T) {
			c, err := promexport.New(export.Static(tc.named), export.Options{})
			require.NoError(t, err)
			reg := prometheus.NewRegistry()
			reg.MustRegister(tc.extra)
			extra, err := reg.Gather()
			require.NoError(t, err)
			var sb strings.Builder
			om, err := c.NewText().WriteWithin(&sb, extra, 0, 0)
			require.NoError(t, err)
			parses(t, sb.String())
			require.Equal(t, tc.want, sb.String())
			if strings.Contains(tc.want, "statsblob") {
				require.Equal(t, promexport.Omitted{}, om)
			} else {
				require.Equal(t, promexport.Omitted{Clashes: 1}, om)
			}
		})
	}
}
