package tpl_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// TestNilRegistry: a nil *Registry is an empty registry that cannot grow;
// nothing falls back to tpl.Default.
func TestNilRegistry(t *testing.T) {
	var r *tpl.Registry
	require.Zero(t, r.Len())
	require.Equal(t, "", r.List())
	_, err := r.ByID(0)
	require.ErrorIs(t, err, voi.ErrNotFound)
	_, err = r.LookupName("x", 0)
	require.ErrorIs(t, err, voi.ErrNoTemplate)
	_, err = r.LookupHash(1)
	require.ErrorIs(t, err, voi.ErrNoTemplate)
	_, err = r.ByHash(1)
	require.ErrorIs(t, err, voi.ErrNoTemplate)
	_, err = r.Resolve(`"x":1`)
	require.ErrorIs(t, err, voi.ErrNoTemplate)
	_, err = r.New("x")
	require.EqualError(t, err, `tpl: template "x": nil registry: invalid argument`)

	src, err := tpl.NewRegistry().New("J")
	require.NoError(t, err)
	js, err := src.MarshalJSON()
	require.NoError(t, err)
	_, err = tpl.ReadJSON(nil, js)
	require.EqualError(t, err, "tpl: template JSON: nil registry: invalid argument")
	_, err = tpl.Default.LookupName("J", 0)
	require.Error(t, err, "nothing was registered in tpl.Default")
}
