package versions_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/export"
	"github.com/statsblob/statsblob/export/internal/versions"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

func version(t *testing.T, name, voiName string, dt voi.DType) *tpl.Template {
	t.Helper()
	tp, err := tpl.NewRegistry().New(name)
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: voiName, DType: dt, Stats: []tpl.StatSpec{tpl.Sum()}}))
	return tp
}

// Label: only versions other than the newest (the last in the index's
// order, whatever the order of ns) that share a label set with another
// version get the label; the labels the aggregates held are not changed.
func TestLabel(t *testing.T) {
	v1, v2, v3 := version(t, "T", "a", voi.IntU64), version(t, "T", "b", voi.IntU64), version(t, "T", "c", voi.IntU64)
	other := version(t, "U", "a", voi.IntU64)
	x := versions.New([]*tpl.Template{v1, v2, other, v3})
	require.True(t, x.Versioned("T"))
	require.False(t, x.Versioned("U"))
	require.Same(t, v3, x.Newest("T"))
	require.Nil(t, x.Newest("V"))

	host := func(h string) []export.Label { return []export.Label{{Name: "host", Value: h}} }
	tagged := func(h string, tp *tpl.Template) string {
		return fmt.Sprintf("[{host %s} {%s %08x}]", h, export.VersionLabel, tp.Hash())
	}
	a := host("a")
	ns := []export.Named{
		{Template: v3, Posted: v3, Labels: a},         // the newest: keeps its series
		{Template: v1, Posted: v1, Labels: a},         // shares host=a
		{Template: v2, Posted: v2, Labels: host("b")}, // alone in host=b
		{Template: v1, Posted: v1, Labels: host("c")}, // host=c: v1 and v2,
		{Template: v2, Posted: v2, Labels: host("c")}, // neither the newest
		{Template: other, Posted: other, Labels: a},   // another name
		{Template: v2, Posted: v2, Labels: []export.Label{{Name: "host", Value: "b"}, {Name: "x", Value: "1"}}},
	}
	got := x.Label(ns)
	var s []string
	for _, n := range got {
		s = append(s, fmt.Sprint(n.Labels))
	}
	require.Equal(t, []string{"[{host a}]", tagged("a", v1), "[{host b}]", tagged("c", v1), tagged("c", v2), "[{host a}]", "[{host b} {x 1}]"}, s)
	require.Equal(t, []export.Label{{Name: "host", Value: "a"}}, a, "the aggregate's own labels")

	// One version only in ns: nothing to tell apart.
	one := []export.Named{{Template: v1, Posted: v1, Labels: host("a")}, {Template: v1, Posted: v1, Labels: host("b")}}
	require.Equal(t, host("a"), x.Label(one)[0].Labels)
}

// PostedHash: without Posted (a closed window recovered from a log), the
// first known template whose wide form the aggregate's is.
func TestPostedHash(t *testing.T) {
	v1, v2 := version(t, "T", "a", voi.IntU32), version(t, "T", "a", voi.IntU64)
	w, err := tpl.Widen(v2)
	require.NoError(t, err)
	x := versions.New([]*tpl.Template{v1, v2})
	require.Equal(t, v2.Hash(), x.PostedHash(export.Named{Template: w, Posted: v2}))
	require.Equal(t, v1.Hash(), x.PostedHash(export.Named{Template: w}), "v1 widens to it too, and came first")
	require.Equal(t, v1.Hash(), x.PostedHash(export.Named{Template: w}), "cached")
	u := version(t, "U", "a", voi.IntU64)
	require.Equal(t, u.Hash(), x.PostedHash(export.Named{Template: u}), "unknown: its own")
}
