package tostr_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/tostr"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

func clock1000() *blob.Env { return blob.NewEnv(func() int64 { return blob.SBinTime(1000, 0) }, 1) }

func manpage(t *testing.T, reg *tpl.Registry) *tpl.Template {
	t.Helper()
	tp, err := reg.New("MANPAGE")
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "voi0", DType: voi.IntS64, Flags: voi.FlagRelUpdate, Stats: []tpl.StatSpec{tpl.Min()}}))
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 2, Name: "voi2", DType: voi.IntU32, Stats: []tpl.StatSpec{tpl.Sum(), tpl.Max()}}))
	return tp
}

// Expected texts are the C reference's (golden 01_manpage_example.out and
// 02_manpage_updates.out).
func TestRenderings(t *testing.T) {
	reg := tpl.NewRegistry()
	bl := blob.New(manpage(t, reg), clock1000())
	cases := []struct {
		o    tostr.Options
		want string
	}{
		{tostr.Options{Format: tostr.JSON}, `{"tplname":null,"tplhash":1055273817,"vois":{"[0]":{"stats":{"[3]":null}},"[2]":{"stats":{"[1]":null,"[2]":null}}}}`},
		{tostr.Options{Format: tostr.JSON, Flags: tostr.Meta, Registry: reg}, `{"tplname":"MANPAGE","tplhash":1055273817,"vois":{"voi0":{"stats":{"MIN":null}},"voi2":{"stats":{"SUM":null,"MAX":null}}}}`},
		{tostr.Options{Format: tostr.FreeForm, Flags: tostr.Meta, Registry: reg}, "struct statsblobv1@0xPTR, tplhash=1055273817\n\tvois[0]: id=0, name=\"voi0\"\n\t\tvois[0]stat[3]: stype=MIN, errs=0\n\t\t\tvoistatdata: 9223372036854775807\n\tvois[2]: id=2, name=\"voi2\"\n\t\tvois[2]stat[1]: stype=SUM, errs=0\n\t\t\tvoistatdata: 0\n\t\tvois[2]stat[2]: stype=MAX, errs=0\n\t\t\tvoistatdata: 0"},
	}
	for _, c := range cases {
		got, err := tostr.String(bl, c.o)
		require.NoError(t, err)
		require.Equal(t, c.want, normalise(got))
	}

	require.NoError(t, bl.UpdateU32(2, 7))
	got, err := tostr.String(bl, tostr.Options{Format: tostr.JSON})
	require.NoError(t, err)
	require.Equal(t, `{"tplname":null,"tplhash":1055273817,"vois":{"[0]":{"stats":{"[3]":null}},"[2]":{"stats":{"[1]":{"errs":0,"val":7},"[2]":{"errs":0,"val":7}}}}}`, got)
}

func normalise(s string) string {
	const p = "statsblobv1@0x"
	i := len(p)
	if len(s) >= i && s[:i] == p[:i] {
		j := i
		for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] >= 'a' && s[j] <= 'f') {
			j++
		}
		return s[:i] + "PTR" + s[j:]
	}
	for k := 0; k+len(p) <= len(s); k++ {
		if s[k:k+len(p)] == p {
			return s[:k] + normalise(s[k:])
		}
	}
	return s
}

func TestMetaNeedsRegisteredTemplate(t *testing.T) {
	reg := tpl.NewRegistry()
	tp := manpage(t, reg)
	bl := blob.New(tp, clock1000())
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 5, Name: "late", DType: voi.IntU32, Stats: []tpl.StatSpec{tpl.Sum()}}))
	out, err := tostr.Append([]byte("x"), bl, tostr.Options{Flags: tostr.Meta, Registry: reg})
	require.ErrorIs(t, err, voi.ErrInvalid, "the template's hash changed when a VOI was added")
	require.Equal(t, "x", string(out))
}

func TestJSONMarshalerAlwaysValid(t *testing.T) {
	reg := tpl.NewRegistry()
	empty, err := reg.New("EMPTY")
	require.NoError(t, err)
	eb := blob.New(empty, clock1000())
	s, err := tostr.String(eb, tostr.Options{Format: tostr.JSON})
	require.NoError(t, err)
	require.Empty(t, s, "the C renders a blob without VOIs as nothing")

	for _, c := range []struct {
		flags tostr.Flags
		want  string
	}{
		{0, `{"tplname":null,"tplhash":2045388689,"vois":{}}`},
		{tostr.Meta, `{"tplname":"EMPTY","tplhash":2045388689,"vois":{}}`},
		{tostr.Objdump, `{"abi":1,"endian":1,"maxsz":32,"cursz":32,"created":4294967296000,"lastrst":4294967296000,"flags":0,"stats_off":32,"statsdata_off":32,"tplname":null,"tplhash":2045388689,"vois":{}}`},
	} {
		b, err := json.Marshal(tostr.JSONMarshaler{Blob: eb, Flags: c.flags, Registry: reg})
		require.NoError(t, err)
		require.Equal(t, c.want, string(b))
	}

	bl := blob.New(manpage(t, reg), clock1000())
	require.NoError(t, bl.UpdateRelS64(0, -3))
	for _, f := range []tostr.Flags{0, tostr.Meta, tostr.Objdump, tostr.Objdump | tostr.Meta} {
		b, err := json.Marshal(tostr.JSONMarshaler{Blob: bl, Flags: f, Registry: reg})
		require.NoError(t, err)
		require.True(t, json.Valid(b))
	}
}

// TestNoAddr: with NoAddr the freeform header shows no buffer address, so
// renderings of two copies of a blob are equal (with and without the
// cached skeleton).
func TestNoAddr(t *testing.T) {
	reg := tpl.NewRegistry()
	bl := blob.New(manpage(t, reg), clock1000())
	for _, o := range []tostr.Options{{Flags: tostr.NoAddr}, {Flags: tostr.NoAddr | tostr.Objdump}} {
		a, err := tostr.String(bl, o)
		require.NoError(t, err)
		b, err := tostr.String(bl.Clone(), o)
		require.NoError(t, err)
		require.Equal(t, a, b)
		require.True(t, strings.HasPrefix(a, "struct statsblobv1@0x0, "), a)
	}
}

// A nil blob, or META with neither a template nor a registry, is an error
// wrapping voi.ErrInvalid, never a panic (a nil Registry holds nothing).
func TestRenderNilInputs(t *testing.T) {
	_, err := tostr.String(nil, tostr.Options{})
	require.ErrorIs(t, err, voi.ErrInvalid)
	require.EqualError(t, err, "tostr: render a nil blob: invalid argument")
	_, err = json.Marshal(tostr.JSONMarshaler{})
	require.ErrorIs(t, err, voi.ErrInvalid)

	tp, err := tpl.NewRegistry().New("T")
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "x", DType: voi.IntU32, Stats: []tpl.StatSpec{tpl.Sum()}}))
	_, err = tostr.String(blob.New(tp, clock1000()), tostr.Options{Flags: tostr.Meta})
	require.ErrorIs(t, err, voi.ErrInvalid)
	require.EqualError(t, err, fmt.Sprintf("tostr: no template with hash %d for META: invalid argument", tp.Hash()))
}
