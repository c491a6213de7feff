package tostr_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/tostr"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// TestMetaTemplate: Meta takes its names from Options.Template, or from
// the template Registry holds for the blob's hash; no registry is implied
// (tpl.Default is not consulted).
func TestMetaTemplate(t *testing.T) {
	tp := manpage(t, tpl.NewRegistry())
	bl := blob.New(tp, clock1000())
	const want = `{"tplname":"MANPAGE","tplhash":1055273817,"vois":{"voi0":{"stats":{"MIN":null}},"voi2":{"stats":{"SUM":null,"MAX":null}}}}`
	got, err := tostr.String(bl, tostr.Options{Format: tostr.JSON, Flags: tostr.Meta, Template: tp})
	require.NoError(t, err)
	require.Equal(t, want, got)
	js, err := json.Marshal(tostr.JSONMarshaler{Blob: bl, Flags: tostr.Meta, Template: tp})
	require.NoError(t, err)
	require.Equal(t, want, string(js))

	// The same template in the process-wide registry is not found unless
	// passed.
	def, err := tpl.Default.New("tostr_meta_test_MANPAGE")
	require.NoError(t, err)
	require.NoError(t, def.AddVOI(tpl.VOIDef{ID: 0, Name: "voi0", DType: voi.IntS64, Stats: []tpl.StatSpec{tpl.Min()}}))
	db := blob.New(def, clock1000())
	for _, c := range []struct {
		name string
		o    tostr.Options
		msg  string
	}{
		{"no registry", tostr.Options{Flags: tostr.Meta}, "tostr: no template with hash " + itoa(db.TplHash()) + " for META: invalid argument"},
		{"another template", tostr.Options{Flags: tostr.Meta, Template: tp}, `tostr: template "MANPAGE":1055273817 for META, the blob's hash is ` + itoa(db.TplHash()) + ": invalid argument"},
	} {
		out, err := tostr.Append([]byte("x"), db, c.o)
		require.ErrorIs(t, err, voi.ErrInvalid, c.name)
		require.EqualError(t, err, c.msg, c.name)
		require.Equal(t, "x", string(out), c.name)
		_, err = tostr.JSONMarshaler{Blob: db, Flags: c.o.Flags, Template: c.o.Template}.MarshalJSON()
		require.EqualError(t, err, c.msg, c.name)
	}
	got, err = tostr.String(db, tostr.Options{Format: tostr.JSON, Flags: tostr.Meta, Registry: tpl.Default})
	require.NoError(t, err)
	require.Contains(t, got, `"tplname":"tostr_meta_test_MANPAGE"`)
}

func itoa(h uint32) string { b, _ := json.Marshal(h); return string(b) }
