package export_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/export"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

func TestSanitize(t *testing.T) {
	f := func(in, want string) {
		t.Helper()
		require.Equal(t, want, export.Sanitize(in))
	}
	f("TCP_RTT", "tcp_rtt")
	f("rtt.µs", "rtt___s") // µ is two bytes
	f("9lives", "_9lives")
	f("a-b c:d", "a_b_c_d")
	f("", "")
}

func names(t *testing.T, opts export.Options, tplName string, vois ...tpl.VOIDef) ([]string, error) {
	t.Helper()
	reg := tpl.NewRegistry()
	tp, err := reg.New(tplName)
	require.NoError(t, err)
	for _, d := range vois {
		require.NoError(t, tp.AddVOI(d))
	}
	m, err := export.NewMapper(opts)
	require.NoError(t, err)
	ms, err := m.Append(nil, export.Named{Blob: blob.New(tp, nil), Template: tp})
	var out []string
	for _, mt := range ms {
		out = append(out, mt.Name)
	}
	return out, err
}

func TestNames(t *testing.T) {
	sum := []tpl.StatSpec{tpl.Sum()}
	// Sanitised VOI names that meet get their ids appended.
	got, err := names(t, export.Options{}, "T", tpl.VOIDef{ID: 0, Name: "a.b", DType: voi.IntU32, Stats: sum},
		tpl.VOIDef{ID: 1, Name: "a_b", DType: voi.IntU32, Stats: sum}, tpl.VOIDef{ID: 2, Name: "c", DType: voi.IntU32, Stats: sum})
	require.NoError(t, err)
	require.Equal(t, []string{"t_a_b_0", "t_a_b_1", "t_c"}, got)
	// A signed SUM named x and a MAX of VOI "x" (x_max) against VOI "x_max".
	got, err = names(t, export.Options{}, "T", tpl.VOIDef{ID: 0, Name: "x", DType: voi.IntU32, Stats: []tpl.StatSpec{tpl.Max()}},
		tpl.VOIDef{ID: 1, Name: "x_max", DType: voi.IntS32, Stats: sum})
	require.NoError(t, err)
	require.Equal(t, []string{"t_x_max_1"}, got, "MAX never updated: no gauge; the name is still reserved")
	// Namespace, units, a leading digit.
	got, err = names(t, export.Options{Namespace: "Fleet", Units: map[string]string{"9x": "bytes"}}, "T",
		tpl.VOIDef{ID: 0, Name: "9x", DType: voi.IntU64, Stats: sum})
	require.NoError(t, err)
	require.Equal(t, []string{"fleet_t_9x_bytes"}, got)
	// No template: names from the hash and the VOI ids.
	reg := tpl.NewRegistry()
	tp, _ := reg.New("T")
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 3, Name: "x", DType: voi.IntU64, Stats: sum}))
	m, _ := export.NewMapper(export.Options{})
	ms, err := m.Append(nil, export.Named{Blob: blob.New(tp, nil)})
	require.NoError(t, err)
	require.Len(t, ms, 1)
	require.Regexp(t, `^tpl_[0-9a-f]{8}_voi3$`, ms[0].Name)
}

func TestAppendErrors(t *testing.T) {
	reg := tpl.NewRegistry()
	tp, _ := reg.New("T")
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "x", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}))
	other, _ := reg.New("U")
	require.NoError(t, other.AddVOI(tpl.VOIDef{ID: 0, Name: "x", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}))
	b := blob.New(tp, nil)
	m, _ := export.NewMapper(export.Options{})
	prev := []export.Metric{{Name: "kept"}}
	f := func(name string, n export.Named, want string) {
		t.Helper()
		got, err := m.Append(prev, n)
		require.ErrorIs(t, err, voi.ErrInvalid, name)
		require.ErrorContains(t, err, want, name)
		require.Equal(t, prev, got, name)
	}
	f("no blob", export.Named{}, "no blob")
	f("other template", export.Named{Blob: b, Template: other}, `exported with template "U"`)
	f("bad label", export.Named{Blob: b, Labels: []export.Label{{"1x", "v"}}}, `label name "1x"`)
	f("reserved label", export.Named{Blob: b, Labels: []export.Label{{"le", "v"}}}, `"le" is reserved`)
	f("dunder label", export.Named{Blob: b, Labels: []export.Label{{"__name__", "v"}}}, `label name "__name__"`)
	f("twice", export.Named{Blob: b, Labels: []export.Label{{"a", "1"}, {"a", "2"}}}, `"a" given twice`)

	for _, o := range []export.Options{{Quantiles: []float64{1.5}}, {Quantiles: []float64{-0.1}}, {NativeScale: 9}, {NativeScale: -5}} {
		_, err := export.NewMapper(o)
		require.ErrorIs(t, err, voi.ErrInvalid, "%+v", o)
	}
}

// The OpenTelemetry convention: dotted names without units, the VOI ids
// appended where sanitised names meet, a name that must start with a letter.
func TestOTelNames(t *testing.T) {
	otel := export.Options{Convention: export.OpenTelemetry}
	stats := []tpl.StatSpec{tpl.Sum(), tpl.Max(), tpl.Min()}
	got, err := names(t, otel, "TCP_Default", tpl.VOIDef{ID: 0, Name: "a.b", DType: voi.IntU32, Stats: stats},
		tpl.VOIDef{ID: 1, Name: "a_b", DType: voi.IntU32, Stats: []tpl.StatSpec{tpl.Sum()}}, tpl.VOIDef{ID: 2, Name: "RTT", DType: voi.IntS32, Stats: stats})
	require.NoError(t, err)
	require.Equal(t, []string{"tcp_default.a_b_0", "tcp_default.a_b_1", "tcp_default.rtt"}, got, "MAX, MIN never updated")
	otel.Units = map[string]string{"x": "microseconds"}
	otel.Namespace = "9Fleet"
	got, err = names(t, otel, "T", tpl.VOIDef{ID: 0, Name: "x", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}})
	require.NoError(t, err)
	require.Equal(t, []string{"statsblob.9fleet.t.x"}, got)
}

// Every spelling of a unit tpl.ParseUnit reads (a derived metric's or a
// VOI's, an Options.Units entry) has its UCUM code: "sec", "second" and
// "byte" went to OpenTelemetry as written ("sec" is no UCUM unit, "B" is
// the bel), now "s" and "By". A unit tpl does not know is kept as given.
func TestUCUMOfParseUnitSpellings(t *testing.T) {
	for ucum, spellings := range map[string][]string{
		"ns":   {"ns", "nanoseconds", "NS"},
		"us":   {"us", "µs", "microseconds"},
		"ms":   {"ms", "milliseconds", "Milliseconds"},
		"s":    {"s", "sec", "second", "seconds", "SEC", "Seconds"},
		"min":  {"min", "minutes"},
		"h":    {"h", "hours"},
		"By":   {"B", "byte", "bytes", "Bytes"},
		"KBy":  {"KB", "kB", "kilobytes"}, // as Prometheus's OTLP translator pairs it with kilobytes
		"KiBy": {"KiB", "kibibytes"},
		"MBy":  {"MB", "megabytes"},
		"MiBy": {"MiB", "mebibytes"},
		"GBy":  {"GB", "gigabytes"},
		"GiBy": {"GiB", "gibibytes"},
		"1":    {"ratio"},
		"%":    {"percent", "%"},
	} {
		for _, u := range spellings {
			require.True(t, tpl.IsUnit(u), u)
			require.Equal(t, ucum, export.UCUM(u), "UCUM(%q)", u)
			// One word in Prometheus names, as the OTLP translation names the code.
			require.Equal(t, export.PromUnit(ucum), export.PromUnit(u), "PromUnit(%q)", u)
		}
	}
	for _, u := range []string{"", "requests", "{packet}", "By", "KiBy", "d", "per_second"} {
		require.Equal(t, u, export.UCUM(u), "UCUM(%q)", u)
	}
}

func TestUnits(t *testing.T) {
	f := func(in, ucum, prom string) {
		t.Helper()
		require.Equal(t, ucum, export.UCUM(in), "UCUM(%q)", in)
		require.Equal(t, prom, export.PromUnit(in), "PromUnit(%q)", in)
	}
	f("seconds", "s", "seconds")
	f("s", "s", "seconds")
	f("microseconds", "us", "microseconds")
	f("us", "us", "microseconds")
	f("bytes", "By", "bytes")
	f("By", "By", "bytes")
	f("sec", "s", "seconds")
	f("byte", "By", "bytes")
	f("µs", "us", "microseconds")
	f("ratio", "1", "ratio")
	f("{packet}", "{packet}", "{packet}")
	f("", "", "")
}

// CheckPostedLabels refuses what CheckLabels refuses, and also an empty
// value (Prometheus's "no label") and VersionLabel, which only a
// collector adds.
func TestCheckPostedLabels(t *testing.T) {
	for _, c := range []struct {
		labels []export.Label
		err    string
	}{
		{[]export.Label{{Name: "host", Value: "a"}}, ""},
		{[]export.Label{{Name: "host", Value: ""}}, `export: label "host" has an empty value: invalid argument`},
		{[]export.Label{{Name: export.VersionLabel, Value: "1"}}, `export: label name "statsblob_template_hash" is the collector's own: invalid argument`},
		{[]export.Label{{Name: "le", Value: "1"}}, `export: label name "le" is reserved: invalid argument`},
	} {
		err := export.CheckPostedLabels(c.labels)
		if c.err == "" {
			require.NoError(t, err)
			require.NoError(t, export.CheckLabels(c.labels))
			continue
		}
		require.EqualError(t, err, c.err)
	}
	// A collector's own output carries the label: the exports take it.
	require.NoError(t, export.CheckLabels([]export.Label{{Name: export.VersionLabel, Value: "1"}}))
}
