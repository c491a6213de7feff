package natsjs_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/export/natsjs"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// TemplateSet ranks the versions of a name by the templates file last
// added, whatever the set read before: two collectors reading one file
// take the same version for the newest (the one whose series keeps no
// statsblob_template_hash), however their files came and went.
func TestTemplateSetRanks(t *testing.T) {
	mk := func(name, voiName string) *tpl.Template {
		tp, err := tpl.NewRegistry().New(name)
		require.NoError(t, err)
		require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: voiName, DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}))
		return tp
	}
	v1, v2, v3, other := mk("REQ", "a"), mk("REQ", "b"), mk("REQ", "c"), mk("OTHER", "x")
	hashes := func(s *natsjs.TemplateSet) []uint32 {
		var out []uint32
		for _, tp := range s.Templates() {
			out = append(out, tp.Hash())
		}
		return out
	}
	h := func(ts ...*tpl.Template) []uint32 {
		var out []uint32
		for _, tp := range ts {
			out = append(out, tp.Hash())
		}
		return out
	}

	var zero natsjs.TemplateSet
	_, err := zero.ByHash(v1.Hash())
	require.ErrorIs(t, err, voi.ErrNoTemplate)
	require.Empty(t, zero.Templates())

	a, b := &natsjs.TemplateSet{}, &natsjs.TemplateSet{}
	require.Equal(t, 2, a.Add([]*tpl.Template{v2, other})) // a started with an older file
	require.Equal(t, 1, a.Add([]*tpl.Template{v1, v2, other}))
	require.Equal(t, 3, b.Add([]*tpl.Template{v1, v2, other}))
	require.Equal(t, h(v1, v2, other), hashes(a), "the file's order, not a's history")
	require.Equal(t, hashes(b), hashes(a))

	// A version the file no longer lists stays known, below the file's.
	require.Equal(t, 1, a.Add([]*tpl.Template{v2, v3, nil}))
	require.Equal(t, h(v1, other, v2, v3), hashes(a))
	got, err := a.ByHash(v1.Hash())
	require.NoError(t, err)
	require.Same(t, v1, got)

	// A template listed twice ranks at its last place; one already known
	// is kept as it was.
	v2again := mk("REQ", "b")
	require.Zero(t, a.Add([]*tpl.Template{v2again, v1, v2again}))
	require.Equal(t, h(other, v3, v1, v2), hashes(a))
	got, err = a.ByHash(v2.Hash())
	require.NoError(t, err)
	require.Same(t, v2, got)
}
