package export_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/export"
)

func TestClashes(t *testing.T) {
	m := func(tpl string, hash uint32, name, help string, kind export.Kind, labels ...string) export.Metric {
		var ls []export.Label
		for i := 0; i < len(labels); i += 2 {
			ls = append(ls, export.Label{Name: labels[i], Value: labels[i+1]})
		}
		return export.Metric{Name: name, Help: help, Kind: kind, Labels: ls, Template: tpl, TemplateHash: hash}
	}
	name := func(dst []string, m *export.Metric) []string { return append(dst, m.Name) }
	for _, tc := range []struct {
		what  string
		ms    []export.Metric
		errs  map[int]string
		helps []string // after Clashes
	}{
		{"one template, many label sets: nothing to look at",
			[]export.Metric{m("web", 1, "web_hits", "h1", export.KindGauge, "host", "a"), m("web", 1, "web_hits", "h1", export.KindGauge, "host", "b")},
			nil, []string{"h1", "h1"}},
		{"templates of different families",
			[]export.Metric{m("web", 1, "web_hits", "h1", export.KindGauge), m("db", 2, "db_hits", "h2", export.KindGauge)},
			nil, []string{"h1", "h2"}},
		{"web and WEB: distinct series share the first HELP, a shared one clashes",
			[]export.Metric{
				m("web", 1, "web_hits", "h1", export.KindGauge, "host", "a"),
				m("WEB", 2, "web_hits", "h2", export.KindGauge, "host", "b"),
				m("WEB", 2, "web_hits", "h2", export.KindGauge, "host", "a"),
			},
			map[int]string{2: `export: series web_hits{host="a"} of template "WEB" is also template "web"'s: export: two blobs export one series`},
			[]string{"h1", "h1", "h1"}},
		{"two versions of one name, labels in another order",
			[]export.Metric{
				m("web", 1, "web_hits", "h1", export.KindGauge, "host", "a", "dc", "x"),
				m("web", 2, "web_hits", "h2", export.KindGauge, "dc", "x", "host", "a"),
			},
			map[int]string{1: `export: series web_hits{dc="x",host="a"} of template "web" (hash 2 (00000002)) is also template "web" (hash 1 (00000001))'s: export: two blobs export one series`},
			[]string{"h1", "h1"}},
		{"a label of empty value is no label: {} and {host=\"\"} are one series",
			[]export.Metric{m("web", 1, "web_hits", "h1", export.KindGauge), m("WEB", 2, "web_hits", "h2", export.KindGauge, "host", "", "dc", "x"),
				m("WEB", 2, "web_hits", "h2", export.KindGauge, "host", "")},
			map[int]string{2: `export: series web_hits{} of template "WEB" is also template "web"'s: export: two blobs export one series`},
			[]string{"h1", "h1", "h1"}},
		// A library's Source may hand out blobs whose label sets are
		// one series: the first blob's is kept, as across templates.
		{"one template, {} and {host=\"\"}: one series",
			[]export.Metric{m("web", 1, "web_hits", "h1", export.KindGauge), m("web", 1, "web_hits", "h1", export.KindGauge, "host", "b"),
				m("web", 1, "web_hits", "h1", export.KindGauge, "host", "")},
			map[int]string{2: `export: series web_hits{} of template "web" with labels {host=""} is also its series with labels {}: export: two blobs export one series`},
			[]string{"h1", "h1", "h1"}},
		{"one template, the same labels twice in another order",
			[]export.Metric{m("web", 1, "web_hits", "h1", export.KindGauge, "host", "a", "dc", "x", "zone", ""),
				m("web", 1, "web_hits", "h1", export.KindGauge, "dc", "x", "host", "a")},
			map[int]string{1: `export: series web_hits{dc="x",host="a"} of template "web" with labels {dc="x",host="a"} is also its series with labels {dc="x",host="a",zone=""}: export: two blobs export one series`},
			[]string{"h1", "h1"}},
		{"one template, one series in a family two templates write",
			[]export.Metric{m("web", 1, "web_hits", "h1", export.KindGauge, "host", "a"), m("WEB", 2, "web_hits", "h2", export.KindGauge, "host", "b"),
				m("web", 1, "web_hits", "h1", export.KindGauge, "host", "a", "dc", "")},
			map[int]string{2: `export: series web_hits{host="a"} of template "web" with labels {dc="",host="a"} is also its series with labels {host="a"}: export: two blobs export one series`},
			[]string{"h1", "h1", "h1"}},
		{"one template, two families of one name and labels",
			[]export.Metric{m("web", 1, "web_hits", "h1", export.KindGauge), m("web", 1, "web_bytes", "h3", export.KindGauge),
				m("web", 1, "web_bytes", "h3", export.KindGauge, "host", "")},
			map[int]string{2: `export: series web_bytes{} of template "web" with labels {host=""} is also its series with labels {}: export: two blobs export one series`},
			[]string{"h1", "h3", "h3"}},
		{"a family of another kind",
			[]export.Metric{m("a_b", 1, "a_b_c", "h1", export.KindGauge), m("a", 2, "a_b_c", "h2", export.KindCounter, "host", "z")},
			map[int]string{1: `export: family a_b_c of template "a" is a gauge in template "a_b": export: two blobs export one series`},
			[]string{"h1", "h2"}},
		// An exposition's parser reads x_count as x's samples, whatever
		// its labels (client_golang's registry refuses the family): the
		// later family is left out whole.
		{"a histogram x and a gauge x_count of another template",
			[]export.Metric{m("a", 1, "x", "h1", export.KindHistogram, "host", "a"), m("b", 2, "x_count", "h2", export.KindGauge, "host", "a"),
				m("b", 2, "x_count", "h2", export.KindGauge, "host", "b")},
			map[int]string{
				1: `export: family x_count of template "b" writes samples x_count, as family x of template "a" does: export: two blobs export one series`,
				2: `export: family x_count of template "b" writes samples x_count, as family x of template "a" does: export: two blobs export one series`,
			},
			[]string{"h1", "h2", "h2"}},
		{"a gauge x_count, then a histogram x of another template",
			[]export.Metric{m("b", 2, "x_count", "h2", export.KindGauge, "host", "b"), m("a", 1, "x", "h1", export.KindHistogram, "host", "a")},
			map[int]string{1: `export: family x of template "a" writes samples x_count, as family x_count of template "b" does: export: two blobs export one series`},
			[]string{"h2", "h1"}},
		{"one template, a histogram x and a gauge x_count",
			[]export.Metric{m("a", 1, "x", "h1", export.KindHistogram), m("a", 1, "x_count", "h2", export.KindGauge, "host", "b")},
			map[int]string{1: `export: family x_count of template "a" (hash 1 (00000001)) writes samples x_count, as family x of template "a" (hash 1 (00000001)) does: export: two blobs export one series`},
			[]string{"h1", "h2"}},
	} {
		names := name
		if slices.ContainsFunc(tc.ms, func(m export.Metric) bool { return m.Kind == export.KindHistogram }) {
			names = export.PromNames
		}
		t.Run(tc.what, func(t *testing.T) {
			got := export.Clashes(tc.ms, names)
			if tc.errs == nil {
				require.Nil(t, got)
			}
			require.Len(t, got, len(tc.errs))
			for i, want := range tc.errs {
				require.EqualError(t, got[i], want)
				require.True(t, errors.Is(got[i], export.ErrNameClash))
			}
			for i, h := range tc.helps {
				require.Equal(t, h, tc.ms[i].Help, "metric %d", i)
			}
		})
	}
}

// PromFamily is the one place that names a family as Prometheus does:
// the exposition, remote write and Clashes all go by it.
func TestPromFamily(t *testing.T) {
	f := func(k export.Kind, want string) {
		t.Helper()
		m := export.Metric{Name: "web_rtt_seconds", Kind: k}
		require.Equal(t, want, m.PromFamily())
	}
	f(export.KindCounter, "web_rtt_seconds_total")
	f(export.KindUpDownCounter, "web_rtt_seconds")
	f(export.KindGauge, "web_rtt_seconds")
	f(export.KindHistogram, "web_rtt_seconds")
	f(export.KindSummary, "web_rtt_seconds")
	f(export.KindExpHistogram, "web_rtt_seconds")
}

func TestPromNames(t *testing.T) {
	f := func(k export.Kind, want ...string) {
		t.Helper()
		m := export.Metric{Name: "x", Kind: k}
		require.Equal(t, want, export.PromNames([]string{"kept"}, &m)[1:])
	}
	f(export.KindCounter, "x_total")
	f(export.KindGauge, "x")
	f(export.KindHistogram, "x", "x_bucket", "x_count", "x_sum")
	f(export.KindSummary, "x", "x_count", "x_sum")
	f(export.KindExpHistogram, "x")
}

// Many series of one template, none the same: Clashes finds nothing (the
// hash of a series is not mistaken for the series).
func TestClashesManySeries(t *testing.T) {
	var ms []export.Metric
	for i := range 5000 {
		ls := []export.Label{{Name: "host", Value: fmt.Sprint(i % 100)}, {Name: "svc", Value: fmt.Sprint(i / 100)}, {Name: "empty"}}
		ms = append(ms, export.Metric{Name: "web_hits", Kind: export.KindGauge, Labels: ls, Template: "web", TemplateHash: 1},
			export.Metric{Name: "web_hits", Kind: export.KindGauge, Labels: ls[:1], Template: "web", TemplateHash: 1})
	}
	got := export.Clashes(ms, export.PromNames)
	require.Len(t, got, 4900, "the second host-only metric of each host clashes")
	for i := range 100 {
		require.NotContains(t, got, 2*i+1)
		require.NotContains(t, got, 2*i)
	}
	require.EqualError(t, got[201], `export: series web_hits{host="0"} of template "web" with labels {host="0"} is also its series with labels {host="0"}: export: two blobs export one series`)
}
