package tpl_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

func httpTemplate(t testing.TB) *tpl.Template {
	t.Helper()
	tp, err := tpl.NewRegistry().New("HTTP")
	require.NoError(t, err)
	for _, d := range []tpl.VOIDef{
		{ID: 0, Name: "latency_us", DType: voi.IntU32, Stats: []tpl.StatSpec{tpl.Sum(), tpl.Max()}},
		{ID: 1, Name: "requests", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}},
		{ID: 2, Name: "inflight", DType: voi.IntS64, Flags: voi.FlagRelUpdate, Stats: []tpl.StatSpec{tpl.Max()}},
		{ID: 3, Name: "latency_sq", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}},
	} {
		require.NoError(t, tp.AddVOI(d))
	}
	return tp
}

func TestMetadataLeavesBytesAndHash(t *testing.T) {
	tp := httpTemplate(t)
	b, h := tp.Bytes(), tp.Hash()
	plain, err := json.Marshal(tp)
	require.NoError(t, err)
	require.NotContains(t, string(plain), `"unit"`)

	tp.SetDescription("HTTP server requests")
	require.NoError(t, tp.SetVOIMeta(0, tpl.VOIMeta{Unit: "us", Help: "request latency", Count: "requests"}))
	require.NoError(t, tp.SetVOIMeta(1, tpl.VOIMeta{Kind: tpl.KindCounter, Help: "requests served"}))
	require.NoError(t, tp.SetVOIMeta(2, tpl.VOIMeta{Kind: tpl.KindGauge}))
	require.NoError(t, tp.SetDerived([]tpl.Derived{
		{Name: "latency_mean", Op: tpl.OpAverage, Of: "latency_us", By: "requests"},
		{Name: "latency_var", Op: tpl.OpVariance, Of: "latency_us", By: "requests", SumSq: "latency_sq"},
		{Name: "request_rate", Op: tpl.OpRate, Of: "requests", Unit: "requests"},
		{Name: "latency_total", Op: tpl.OpDifference, Of: "latency_us", Unit: "ms"},
	}))
	require.Equal(t, b, tp.Bytes())
	require.Equal(t, h, tp.Hash())

	m, ok := tp.VOIMeta(0)
	require.True(t, ok)
	require.Equal(t, tpl.VOIMeta{Unit: "seconds", Scale: 1e-6, Help: "request latency", Count: "requests"}, m)

	got, err := json.Marshal(tp)
	require.NoError(t, err)
	want := `{"format":"statsblob-template","version":2,"name":"HTTP","hash":` + jsonHash(tp) + `,"vois":[` +
		`{"id":0,"name":"latency_us","dtype":"INT_U32","stats":[{"type":"SUM"},{"type":"MAX"}],"unit":"seconds","scale":0.000001,"help":"request latency","count":"requests"},` +
		`{"id":1,"name":"requests","dtype":"INT_U64","stats":[{"type":"SUM"}],"help":"requests served","kind":"counter"},` +
		`{"id":2,"name":"inflight","dtype":"INT_S64","relupdate":true,"stats":[{"type":"MAX"}],"kind":"gauge"},` +
		`{"id":3,"name":"latency_sq","dtype":"INT_U64","stats":[{"type":"SUM"}]}],` +
		`"description":"HTTP server requests","derived":[` +
		`{"name":"latency_mean","op":"average","of":"latency_us","by":"requests"},` +
		`{"name":"latency_var","op":"variance","of":"latency_us","by":"requests","sumsq":"latency_sq"},` +
		`{"name":"request_rate","op":"rate","of":"requests","unit":"requests"},` +
		`{"name":"latency_total","op":"difference","of":"latency_us","unit":"ms"}]}`
	require.Equal(t, want, string(got))
	require.NoError(t, loadSchema(t).validate(decodeNumbers(t, got)), "the schema describes metadata")

	// Read back into another registry: same hash, same metadata, same form.
	back, err := tpl.ReadJSON(tpl.NewRegistry(), got)
	require.NoError(t, err)
	require.Equal(t, h, back.Hash())
	require.Equal(t, tp.Metadata(), back.Metadata())
	again, err := json.Marshal(back)
	require.NoError(t, err)
	require.Equal(t, want, string(again))

	// Documents without metadata still read, and have none; version 1
	// (patterns: the same here, no histogram) carries metadata too.
	old, err := tpl.ReadJSON(tpl.NewRegistry(), plain)
	require.NoError(t, err)
	require.Equal(t, tpl.Metadata{}, old.Metadata())
	v1, err := tpl.ReadJSON(tpl.NewRegistry(), []byte(strings.Replace(string(got), `"version":2`, `"version":1`, 1)))
	require.NoError(t, err)
	require.Equal(t, tp.Metadata(), v1.Metadata())
}

func jsonHash(tp *tpl.Template) string {
	b, _ := json.Marshal(tp.Hash())
	return string(b)
}

func TestMetadataRejects(t *testing.T) {
	tp := httpTemplate(t)
	for _, c := range []struct {
		id int32
		m  tpl.VOIMeta
	}{
		{9, tpl.VOIMeta{Help: "x"}},
		{0, tpl.VOIMeta{Unit: "!!"}},
		{0, tpl.VOIMeta{Scale: -1}},
		{0, tpl.VOIMeta{Unit: "h", Scale: 1e308}},   // 3.6e311 seconds: not finite
		{0, tpl.VOIMeta{Unit: "ns", Scale: 1e-320}}, // 1e-329 seconds: 0, which would mean 1
		{0, tpl.VOIMeta{Kind: 7}},
		{0, tpl.VOIMeta{Help: "two\nlines"}},
		{0, tpl.VOIMeta{Count: "nope"}},
		{0, tpl.VOIMeta{Count: "latency_us"}},
		{0, tpl.VOIMeta{Count: "inflight"}}, // no SUM
	} {
		require.ErrorIs(t, tp.SetVOIMeta(c.id, c.m), voi.ErrInvalid, "%+v", c)
	}
	for _, d := range [][]tpl.Derived{
		{{Name: "Bad Name", Op: tpl.OpRatio, Of: "requests", By: "latency_us"}},
		{{Name: "x", Op: "median", Of: "requests"}},
		{{Name: "x", Op: tpl.OpRatio, Of: "requests"}},
		{{Name: "x", Op: tpl.OpRate, Of: "requests", By: "latency_us"}},
		{{Name: "x", Op: tpl.OpAverage, Of: "inflight", By: "requests"}},
		{{Name: "x", Op: tpl.OpRate, Of: "requests"}, {Name: "x", Op: tpl.OpRate, Of: "requests"}},
	} {
		require.ErrorIs(t, tp.SetDerived(d), voi.ErrInvalid, "%+v", d)
	}
	require.Equal(t, tpl.Metadata{}, tp.Metadata())
	for _, doc := range []string{
		`"kind":"level"`, `"scale":-2`, `"count":"nope"`, `"unit":"a b"`,
	} {
		j := `{"format":"statsblob-template","version":2,"name":"HTTP","hash":` + jsonHash(tp) + `,"vois":[` +
			`{"id":0,"name":"latency_us","dtype":"INT_U32","stats":[{"type":"SUM"},{"type":"MAX"}],` + doc + `},` +
			`{"id":1,"name":"requests","dtype":"INT_U64","stats":[{"type":"SUM"}]},` +
			`{"id":2,"name":"inflight","dtype":"INT_S64","relupdate":true,"stats":[{"type":"MAX"}]},` +
			`{"id":3,"name":"latency_sq","dtype":"INT_U64","stats":[{"type":"SUM"}]}]}`
		r := tpl.NewRegistry()
		_, err := tpl.ReadJSON(r, []byte(j))
		require.ErrorIs(t, err, voi.ErrInvalid, doc)
		require.Equal(t, 0, r.Len(), doc)
	}
}

func TestParseUnit(t *testing.T) {
	f := func(in, base string, scale float64) {
		t.Helper()
		b, s := tpl.ParseUnit(in)
		require.Equal(t, base, b)
		require.Equal(t, scale, s)
	}
	f("us", "seconds", 1e-6)
	f("Milliseconds", "seconds", 1e-3)
	f("KiB", "bytes", 1024)
	f("kB", "bytes", 1000)
	f("%", "ratio", 0.01)
	f("Packets", "packets", 1)
	f("req/s", "req/s", 1)
}

// FuzzReadJSONMeta: metadata that is accepted writes out to a form that
// reads back to the same metadata and the same form.
func FuzzReadJSONMeta(f *testing.F) {
	tp := httpTemplate(f)
	require.NoError(f, tp.SetVOIMeta(0, tpl.VOIMeta{Unit: "us", Scale: 3, Help: "h", Count: "requests"}))
	require.NoError(f, tp.SetVOIMeta(2, tpl.VOIMeta{Kind: tpl.KindGauge}))
	require.NoError(f, tp.SetDerived([]tpl.Derived{{Name: "v", Op: tpl.OpVariance, Of: "latency_us", By: "requests", SumSq: "latency_sq", Unit: "s2"}}))
	data, err := json.Marshal(tp)
	require.NoError(f, err)
	f.Add(data)
	f.Fuzz(func(t *testing.T, data []byte) {
		tp, err := tpl.ReadJSON(tpl.NewRegistry(), data)
		if err != nil {
			return // FuzzReadJSON checks the errors
		}
		out, err := json.Marshal(tp)
		require.NoError(t, err)
		back, err := tpl.ReadJSON(tpl.NewRegistry(), out)
		require.NoError(t, err)
		require.Equal(t, tp.Metadata(), back.Metadata())
		again, err := json.Marshal(back)
		require.NoError(t, err)
		require.Equal(t, string(out), string(again))
	})
}

// A derived metric's declared unit must fit its result, which its
// operands' units make: SetDerived refuses one of another dimension, one
// where no single unit fits, and one the result cannot be converted to;
// SetVOIMeta refuses a unit that would leave a declared one without
// meaning, and the template JSON such metadata.
func TestDerivedUnitRejects(t *testing.T) {
	tp := httpTemplate(t)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 4, Name: "size", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}))
	require.NoError(t, tp.SetVOIMeta(0, tpl.VOIMeta{Unit: "us", Count: "requests"}))
	require.NoError(t, tp.SetVOIMeta(4, tpl.VOIMeta{Unit: "KiB"}))
	avg := func(unit string) tpl.Derived {
		return tpl.Derived{Name: "x", Op: tpl.OpAverage, Of: "latency_us", By: "requests", Unit: unit}
	}
	for _, d := range []tpl.Derived{
		avg("bytes"), avg("percent"), avg("ratio"),
		{Name: "x", Op: tpl.OpRatio, Of: "latency_us", By: "size", Unit: "us"},       // seconds per byte
		{Name: "x", Op: tpl.OpRatio, Of: "requests", By: "latency_us", Unit: "us"},   // per second
		{Name: "x", Op: tpl.OpPercent, Of: "latency_us", By: "requests", Unit: "us"}, // a percent
		{Name: "x", Op: tpl.OpPercent, Of: "latency_us", By: "size", Unit: "percent"},
		{Name: "x", Op: tpl.OpVariance, Of: "latency_us", By: "requests", SumSq: "latency_sq", Unit: "us"},
		{Name: "x", Op: tpl.OpVariance, Of: "requests", By: "requests", SumSq: "latency_sq", Unit: "seconds"},
		{Name: "x", Op: tpl.OpRate, Of: "size", Unit: "seconds"},
		{Name: "x", Op: tpl.OpDifference, Of: "size", Unit: "seconds"},
		{Name: "x", Op: tpl.OpDifference, Of: "size", By: "requests"},
	} {
		require.ErrorIs(t, tp.SetDerived([]tpl.Derived{d}), voi.ErrInvalid, "%+v", d)
		_, err := tp.DerivedScales(d)
		require.ErrorIs(t, err, voi.ErrInvalid, "%+v", d)
	}
	require.Empty(t, tp.Derived())

	// Accepted: the result's unit in any scale, labels, none.
	for _, d := range []tpl.Derived{
		avg(""), avg("us"), avg("ms"), avg("seconds"), avg("per_request"),
		{Name: "x", Op: tpl.OpVariance, Of: "latency_us", By: "requests", SumSq: "latency_sq", Unit: "seconds_squared"},
		{Name: "x", Op: tpl.OpRate, Of: "size", Unit: "mebibytes"},
		{Name: "x", Op: tpl.OpDifference, Of: "size", Unit: "kibibytes"},
		{Name: "x", Op: tpl.OpRatio, Of: "requests", By: "latency_sq", Unit: "us"}, // no units: a label
	} {
		require.NoError(t, tp.SetDerived([]tpl.Derived{d}), "%+v", d)
	}

	// The VOI's unit may change within its dimension, not out of it.
	require.NoError(t, tp.SetDerived([]tpl.Derived{avg("us")}))
	require.NoError(t, tp.SetVOIMeta(0, tpl.VOIMeta{Unit: "ms", Count: "requests"}))
	sc, err := tp.DerivedScales(avg("us"))
	require.NoError(t, err)
	require.Equal(t, tpl.DerivedScales{Of: 1000, By: 1, SumSq: 1}, sc)
	before := tp.Metadata()
	require.ErrorIs(t, tp.SetVOIMeta(0, tpl.VOIMeta{Unit: "bytes", Count: "requests"}), voi.ErrInvalid)
	require.Equal(t, before, tp.Metadata())
	require.NoError(t, tp.SetVOIMeta(0, tpl.VOIMeta{})) // no unit: "us" labels the raw values
	require.ErrorIs(t, tp.SetMetadata(tpl.Metadata{VOIs: map[int32]tpl.VOIMeta{0: {Unit: "bytes"}}, Derived: []tpl.Derived{avg("us")}}), voi.ErrInvalid)

	// A result that would convert to infinity.
	require.ErrorIs(t, tp.SetVOIMeta(0, tpl.VOIMeta{Unit: "h", Scale: 1e300}), voi.ErrInvalid) // "us" of 3.6e303 s
	require.NoError(t, tp.SetDerived(nil))
	require.NoError(t, tp.SetVOIMeta(0, tpl.VOIMeta{Unit: "h", Scale: 1e300}))
	require.ErrorIs(t, tp.SetDerived([]tpl.Derived{avg("ns")}), voi.ErrInvalid)
	require.NoError(t, tp.SetDerived([]tpl.Derived{avg("h")}))

	// The template JSON refuses a derived unit its result does not have.
	small, err := tpl.NewRegistry().New("HTTP")
	require.NoError(t, err)
	require.NoError(t, small.AddVOI(tpl.VOIDef{ID: 0, Name: "latency_us", DType: voi.IntU32, Stats: []tpl.StatSpec{tpl.Sum()}}))
	require.NoError(t, small.AddVOI(tpl.VOIDef{ID: 1, Name: "requests", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}))
	j := `{"format":"statsblob-template","version":2,"name":"HTTP","hash":` + jsonHash(small) + `,"vois":[` +
		`{"id":0,"name":"latency_us","dtype":"INT_U32","stats":[{"type":"SUM"}],"unit":"us"},` +
		`{"id":1,"name":"requests","dtype":"INT_U64","stats":[{"type":"SUM"}]}],` +
		`"derived":[{"name":"lat","op":"average","of":"latency_us","by":"requests","unit":"%s"}]}`
	_, err = tpl.ReadJSON(tpl.NewRegistry(), []byte(strings.Replace(j, "%s", "bytes", 1)))
	require.ErrorIs(t, err, voi.ErrInvalid)
	_, err = tpl.ReadJSON(tpl.NewRegistry(), []byte(strings.Replace(j, "%s", "ms", 1)))
	require.NoError(t, err)
}

// DerivedScales: the factors derive applies, exact in decimal.
func TestDerivedScales(t *testing.T) {
	tp := httpTemplate(t)
	require.NoError(t, tp.SetVOIMeta(0, tpl.VOIMeta{Unit: "us", Count: "requests"}))
	f := func(d tpl.Derived, want tpl.DerivedScales) {
		t.Helper()
		d.Name = "x"
		got, err := tp.DerivedScales(d)
		require.NoError(t, err)
		require.Equal(t, want, got)
		// Declared, the same factors, kept from SetDerived.
		require.NoError(t, tp.SetDerived([]tpl.Derived{d}))
		got, err = tp.DerivedScales(d)
		require.NoError(t, err)
		require.Equal(t, want, got)
		require.NoError(t, tp.SetDerived(nil))
	}
	f(tpl.Derived{Op: tpl.OpAverage, Of: "latency_us", By: "requests"}, tpl.DerivedScales{Of: 1e-6, By: 1, SumSq: 1})
	f(tpl.Derived{Op: tpl.OpAverage, Of: "latency_us", By: "requests", Unit: "us"}, tpl.DerivedScales{Of: 1, By: 1, SumSq: 1})
	f(tpl.Derived{Op: tpl.OpAverage, Of: "latency_us", By: "requests", Unit: "ms"}, tpl.DerivedScales{Of: 0.001, By: 1, SumSq: 1})
	f(tpl.Derived{Op: tpl.OpRatio, Of: "requests", By: "latency_us"}, tpl.DerivedScales{Of: 1, By: 1e-6, SumSq: 1})
	f(tpl.Derived{Op: tpl.OpVariance, Of: "latency_us", By: "requests", SumSq: "latency_sq"}, tpl.DerivedScales{Of: 1e-6, By: 1, SumSq: 1e-12})
	_, err := tp.DerivedScales(tpl.Derived{Name: "x", Op: "median", Of: "requests"})
	require.ErrorIs(t, err, voi.ErrInvalid)
}
