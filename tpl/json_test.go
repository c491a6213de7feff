package tpl_test

import (
	"encoding/json"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/hist"
	"github.com/statsblob/statsblob/internal/alloctest"
	"github.com/statsblob/statsblob/qmath"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// everyStat is a template with every kind of statistic.
func everyStat(t testing.TB, r *tpl.Registry) *tpl.Template {
	t.Helper()
	tp, err := r.New("EVERY")
	require.NoError(t, err)
	defs := []tpl.VOIDef{
		{ID: 3, Name: "sum", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum(), tpl.Max(), tpl.Min()}},
		{ID: 0, Name: "q", DType: voi.QS64, Prec: 16, Flags: voi.FlagRelUpdate, Stats: []tpl.StatSpec{tpl.Sum(), tpl.Max()}},
		{ID: 1, Name: "lin", DType: voi.IntS32, Stats: []tpl.StatSpec{tpl.Histogram(hist.Spec{DType: voi.CRHist32, Scheme: hist.Lin, LB: uint64(1<<64 - 20), UB: 20, StepInc: 10, Flags: hist.LBoundInf | hist.UBoundInf})}},
		{ID: 2, Name: "exp", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Histogram(hist.Spec{DType: voi.CRHist64, Scheme: hist.Exp, LB: 1, UB: 1000, StepBase: 2, StepExp: 0})}},
		{ID: 4, Name: "linexp", DType: voi.IntU32, Stats: []tpl.StatSpec{tpl.Histogram(hist.Spec{DType: voi.CRHist32, Scheme: hist.LinExp, LB: 0, UB: 1000, LinStepDiv: 5, StepBase: 10})}},
		{ID: 5, Name: "dr", DType: voi.IntS64, Stats: []tpl.StatSpec{tpl.Histogram(hist.Spec{DType: voi.DRHist64, Scheme: hist.Usr, Buckets: []hist.Bound{{LB: 0, UB: 10}, {LB: 20, UB: 30}}})}},
		{ID: 6, Name: "dv", DType: voi.IntU32, Stats: []tpl.StatSpec{tpl.Histogram(hist.Spec{DType: voi.DVHist32, Scheme: hist.Usr, Buckets: []hist.Bound{{LB: 1, UB: 1}, {LB: 2, UB: 2}, {LB: 4, UB: 4}}})}},
		{ID: 7, Name: "td32", DType: voi.IntU32, Stats: []tpl.StatSpec{tpl.Max(), tpl.TDigest(voi.TDgstClust32, 20, 4)}},
		{ID: 9, Name: "td64", DType: voi.IntS64, Stats: []tpl.StatSpec{tpl.TDigest(voi.TDgstClust64, 8, 16)}},
	}
	for _, d := range defs {
		require.NoError(t, tp.AddVOI(d), d.Name)
	}
	return tp
}

func TestTemplateJSONRoundTrip(t *testing.T) {
	src := everyStat(t, tpl.NewRegistry())
	data, err := json.Marshal(src)
	require.NoError(t, err)

	r := tpl.NewRegistry()
	other, err := r.New("OTHER")
	require.NoError(t, err)
	got, err := tpl.ReadJSON(r, data)
	require.NoError(t, err)
	require.Equal(t, src.Hash(), got.Hash())
	require.Equal(t, src.Bytes(), got.Bytes())
	require.Equal(t, 1, got.ID(), "registered after the existing template")
	require.Equal(t, src.VOIs(), got.VOIs())
	for id := range int32(10) {
		n1, ok1 := src.VOIName(id)
		n2, ok2 := got.VOIName(id)
		require.Equal(t, ok1, ok2)
		require.Equal(t, n1, n2)
	}
	again, err := tpl.ReadJSON(r, data)
	require.NoError(t, err)
	require.Same(t, got, again, "reading a registered template again returns it")
	require.Equal(t, 2, r.Len())
	_ = other

	data2, err := json.Marshal(got)
	require.NoError(t, err)
	require.JSONEq(t, string(data), string(data2))
}

func TestTemplateJSONRejects(t *testing.T) {
	good := `{"format":"statsblob-template","version":1,"name":"T","hash":%HASH%,"vois":[{"id":0,"name":"v","dtype":"INT_U32","stats":[{"type":"SUM"}]}]}`
	tp, err := tpl.NewRegistry().New("T")
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "v", DType: voi.IntU32, Stats: []tpl.StatSpec{tpl.Sum()}}))
	hash := itoa(tp.Hash())
	ok := strings.ReplaceAll(good, "%HASH%", hash)
	_, err = tpl.ReadJSON(tpl.NewRegistry(), []byte(ok))
	require.NoError(t, err)

	cases := []struct {
		name, in string
		want     error
	}{
		{"not JSON", `{`, voi.ErrInvalid},
		{"wrong format", strings.Replace(ok, "statsblob-template", "other", 1), voi.ErrInvalid},
		{"wrong version", strings.Replace(ok, `"version":1`, `"version":3`, 1), voi.ErrInvalid},
		{"unknown member", strings.Replace(ok, `"name":"T"`, `"name":"T","x":1`, 1), voi.ErrInvalid},
		{"trailing data", ok + `{}`, voi.ErrInvalid},
		{"hash mismatch", strings.Replace(ok, hash, "1", 1), voi.ErrInvalid},
		{"bad dtype", strings.Replace(ok, "INT_U32", "INT_U16", 1), voi.ErrInvalid},
		{"histogram VOI dtype", strings.Replace(ok, "INT_U32", "CRHIST32", 1), voi.ErrInvalid},
		{"lower-case dtype", strings.Replace(ok, "INT_U32", "int_u32", 1), voi.ErrInvalid},
		{"bad stat type", strings.Replace(ok, `"SUM"`, `"MEAN"`, 1), voi.ErrInvalid},
		{"state as a stat", strings.Replace(ok, `"SUM"`, `"VOISTATE"`, 1), voi.ErrInvalid},
		{"no stats", strings.Replace(ok, `[{"type":"SUM"}]`, `[]`, 1), voi.ErrInvalid},
		{"hist members on SUM", strings.Replace(ok, `{"type":"SUM"}`, `{"type":"SUM","tdigest":{"dtype":"TDGSTCLUST32","nctds":4,"prec":4}}`, 1), voi.ErrInvalid},
		{"LIN without stepinc", strings.Replace(ok, `{"type":"SUM"}`, `{"type":"HIST","hist":{"dtype":"CRHIST32","scheme":"LIN","lb":0,"ub":10}}`, 1), voi.ErrInvalid},
		{"USR with lb", strings.Replace(ok, `{"type":"SUM"}`, `{"type":"HIST","hist":{"dtype":"CRHIST32","scheme":"USR","lb":0,"buckets":[[0,0]]}}`, 1), voi.ErrInvalid},
		{"negative id", strings.Replace(ok, `"id":0`, `"id":-1`, 1), voi.ErrInvalid},
		{"long name", strings.Replace(ok, `"name":"T"`, `"name":"`+strings.Repeat("n", 65)+`"`, 1), voi.ErrInvalid},
	}
	for _, c := range cases {
		r := tpl.NewRegistry()
		_, err := tpl.ReadJSON(r, []byte(c.in))
		require.ErrorIs(t, err, c.want, c.name)
		require.Zero(t, r.Len(), c.name+": registry unchanged")
	}

	r := tpl.NewRegistry()
	clash, err := r.New("T")
	require.NoError(t, err)
	_, err = tpl.ReadJSON(r, []byte(ok))
	require.ErrorIs(t, err, voi.ErrExists)
	require.Equal(t, 1, r.Len())
	_ = clash
}

func FuzzReadJSON(f *testing.F) {
	data, err := json.Marshal(everyStat(f, tpl.NewRegistry()))
	require.NoError(f, err)
	f.Add(data)
	f.Add([]byte(`{"format":"statsblob-template","version":1,"name":"","hash":0,"vois":[]}`))
	for _, ex := range []string{"service.json", "conn.json"} { // version 2: signed, Q and DR bounds, flag names
		data, err := os.ReadFile("../templates/examples/" + ex)
		require.NoError(f, err)
		f.Add(data)
	}
	f.Add([]byte(`{"format":"statsblob-template","version":1,"name":"ODD","hash":0,"vois":[{"id":0,"name":"u","dtype":"INT_U32","stats":[{"type":"HIST","hist":{"dtype":"CRHIST32","scheme":"LIN","flags":3,"lb":4294967301,"ub":20,"stepinc":5}}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tp, err := tpl.ReadJSON(tpl.NewRegistry(), data)
		if err != nil {
			// Malformed, or over a limit: nothing else.
			if !errors.Is(err, voi.ErrInvalid) && !errors.Is(err, voi.ErrTooBig) && !errors.Is(err, voi.ErrExists) {
				t.Fatalf("ReadJSON: %v", err)
			}
			return
		}
		if n := len(tp.VOIs()); n > tpl.MaxJSONVOIs {
			t.Fatalf("%d VOIs accepted", n)
		}
		// Whatever is accepted exports to a form that reads back to the
		// same bytes and hash.
		out, err := json.Marshal(tp)
		if err != nil {
			t.Fatal(err)
		}
		back, err := tpl.ReadJSON(tpl.NewRegistry(), out)
		if err != nil || back.Hash() != tp.Hash() || string(back.Bytes()) != string(tp.Bytes()) {
			t.Fatalf("round trip: %v", err)
		}
	})
}

// TestReadJSONLimits: documents over the limits fail before anything is
// decoded, with an error saying which limit, allocating next to nothing
// (before, a 74 MB document allocated 1.1 GB before failing); documents
// within them cost at most 6 bytes per byte plus 8 MiB, the largest
// template included (before, its 2,339 VOIs allocated 139 MB, copying the
// template blob and name table once per VOI).
func TestReadJSONLimits(t *testing.T) {
	head := `{"format":"statsblob-template","version":1,"name":"T","hash":1,"vois":[`
	voiSum := `{"id":0,"name":"v","dtype":"INT_U32","stats":[{"type":"SUM"}]}`
	usr := func(n int) string {
		return `{"id":0,"name":"v","dtype":"INT_U32","stats":[{"type":"HIST","hist":{"dtype":"CRHIST32","scheme":"USR","buckets":[` +
			strings.TrimSuffix(strings.Repeat(`[0,0],`, n), ",") + `]}}]}`
	}
	list := func(elem string, n int) string { return strings.TrimSuffix(strings.Repeat(elem+",", n), ",") }
	for _, c := range []struct {
		name, doc, msg string
	}{
		{"74 MB of VOIs", head + list(voiSum, 74<<20/len(voiSum)) + `]}`, "bytes exceeds 4194304"},
		{"4 MiB + 1", head + strings.Repeat(" ", tpl.MaxJSONSize+1-len(head)-1) + `]}`, "exceeds 4194304"},
		{"4 MiB of empty VOIs", head + list(`{}`, (4<<20-100)/3) + `]}`, "a list of more than 16363 elements"},
		{"a VOI with 300,000 statistics", head + `{"id":0,"stats":[` + list(`{}`, 300000) + `]}]}`, "a list of more than 16363 elements"},
		{"a histogram of 100,000 buckets", head + usr(100000) + `]}`, "lists of more than 30972 elements together"},
		{"160 histograms of 4,090 buckets", head + list(usr(4090), 160) + `]}`, "lists of more than 30972 elements together"},
		{"nested 2 million deep", head + strings.Repeat("[", 2<<20-100) + strings.Repeat("]", 2<<20-100) + `]}`, "nesting deeper than 10 levels"},
		{"2,340 VOIs", head + list(voiSum, tpl.MaxJSONVOIs+1) + `]}`, "2340 VOIs, more than the 2339"},
		{"16,364 statistics", head + `{"id":0,"name":"v","dtype":"INT_U32","stats":[` + list(`{"type":"SUM"}`, tpl.MaxJSONStats+1) + `]}]}`, "a list of more than 16363 elements"},
		{"4,091 buckets in two histograms", head + usr(2000) + `,` + usr(2091) + `]}`, "4091 histogram buckets, more than the 4090"},
	} {
		data := []byte(c.doc)
		var err error
		got := alloctest.Bytes(1, func() { _, err = tpl.ReadJSON(tpl.NewRegistry(), data) })
		t.Logf("%s: %d bytes, %d allocated: %.150v", c.name, len(data), got, err)
		require.ErrorIs(t, err, voi.ErrTooBig, c.name)
		require.ErrorContains(t, err, c.msg, c.name)
		if len(data) > 2<<20 {
			require.Less(t, got, uint64(4096), c.name)
		}
		require.Less(t, got, uint64(6*len(data)+8<<20), c.name)
	}

	// Within the limits: a 4 MiB name (the largest template is measured
	// in TestReadJSONLargestTemplate).
	longName := []byte(head + `{"id":0,"name":"` + strings.Repeat("x", 4<<20-200) + `","dtype":"INT_U32","stats":[{"type":"SUM"}]}]}`)
	var err error
	alloc := alloctest.Bytes(1, func() { _, err = tpl.ReadJSON(tpl.NewRegistry(), longName) })
	t.Logf("4 MiB name: %d bytes, %d allocated: %v", len(longName), alloc, err)
	require.ErrorIs(t, err, voi.ErrInvalid) // the recorded hash is not the name's
	require.Less(t, alloc, uint64(6*len(longName)+8<<20))
}

// ReadJSONList reads one template or an array of them, in order, and says
// which input it refused.
func TestReadJSONList(t *testing.T) {
	a, err := tpl.NewRegistry().New("A")
	require.NoError(t, err)
	require.NoError(t, a.AddVOI(tpl.VOIDef{ID: 0, Name: "x", DType: voi.IntU32, Stats: []tpl.StatSpec{tpl.Sum()}}))
	b, err := tpl.NewRegistry().New("B")
	require.NoError(t, err)
	require.NoError(t, b.AddVOI(tpl.VOIDef{ID: 1, Name: "y", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Max()}}))
	ja, err := json.Marshal(a)
	require.NoError(t, err)
	jab, err := json.Marshal([]*tpl.Template{a, b})
	require.NoError(t, err)

	for _, c := range []struct {
		name   string
		data   string
		hashes []uint32
		err    string
	}{
		{"one", " \n" + string(ja), []uint32{a.Hash()}, ""},
		{"array", string(jab), []uint32{a.Hash(), b.Hash()}, ""},
		{"empty array", "[]", []uint32{}, ""},
		{"empty", "", nil, "neither a template (JSON object) nor an array of templates"},
		{"number", "3", nil, "neither a template"},
		{"broken array", "[{", nil, "unexpected end of JSON input"},
		{"bad member", "[" + string(ja) + ",1]", nil, "template 1: "},
	} {
		t.Run(c.name, func(t *testing.T) {
			ts, err := tpl.ReadJSONList(tpl.NewRegistry(), []byte(c.data))
			if c.err != "" {
				require.ErrorIs(t, err, voi.ErrInvalid)
				require.ErrorContains(t, err, c.err)
				return
			}
			require.NoError(t, err)
			got := []uint32{}
			for _, tp := range ts {
				got = append(got, tp.Hash())
			}
			require.Equal(t, c.hashes, got)
		})
	}

	// Two versions of one name: refused by one registry, read with none.
	a2, err := tpl.NewRegistry().New("A")
	require.NoError(t, err)
	require.NoError(t, a2.AddVOI(tpl.VOIDef{ID: 0, Name: "z", DType: voi.IntU32, Stats: []tpl.StatSpec{tpl.Sum()}}))
	versions, err := json.Marshal([]*tpl.Template{a, a2})
	require.NoError(t, err)
	_, err = tpl.ReadJSONList(tpl.NewRegistry(), versions)
	require.Error(t, err)
	ts, err := tpl.ReadJSONList(nil, versions)
	require.NoError(t, err)
	require.Equal(t, []uint32{a.Hash(), a2.Hash()}, []uint32{ts[0].Hash(), ts[1].Hash()})

	// A template's own error names its index only in an array: a file
	// of one template said "template 0: " before (seen in statsblob
	// record's error).
	one := `{"format":"statsblob-template","version":2,"name":"A","vois":[]}`
	_, err = tpl.ReadJSONList(tpl.NewRegistry(), []byte(" \n"+one))
	require.ErrorIs(t, err, voi.ErrInvalid)
	require.EqualError(t, err, `tpl: template JSON: template "A": no "hash" (add "hash": 281853027): invalid argument`)
	_, err = tpl.ReadJSONList(nil, []byte(" ["+one+"]"))
	require.ErrorIs(t, err, voi.ErrInvalid)
	require.EqualError(t, err, `template 0: tpl: template JSON: template "A": no "hash" (add "hash": 281853027): invalid argument`)
}

// SplitJSONList returns a templates file's documents as they stand in it,
// without reading them: ReadJSONList and the collector's ParseTemplates
// (one registry per template) share it.
func TestSplitJSONList(t *testing.T) {
	for _, c := range []struct {
		name, data string
		docs       []string
		err        string
	}{
		{"one", " \n{\"a\":1}", []string{" \n{\"a\":1}"}, ""},
		{"array", `[{"a":1}, {"b":[2]}]`, []string{`{"a":1}`, `{"b":[2]}`}, ""},
		{"array of anything", `[1,"x"]`, []string{`1`, `"x"`}, ""},
		{"empty array", "[]", []string{}, ""},
		{"empty", "", nil, "neither a template"},
		{"string", `"x"`, nil, "neither a template"},
		{"broken array", "[{", nil, "unexpected end of JSON input"},
	} {
		t.Run(c.name, func(t *testing.T) {
			list, err := tpl.SplitJSONList([]byte(c.data))
			if c.err != "" {
				require.ErrorIs(t, err, voi.ErrInvalid)
				require.ErrorContains(t, err, c.err)
				return
			}
			require.NoError(t, err)
			got := []string{}
			for _, raw := range list {
				got = append(got, string(raw))
			}
			require.Equal(t, c.docs, got)
		})
	}
}

// TestTemplateJSONVersions: version 2 writes bounds as values of the VOI's
// type and flags by name; version 1 documents (uint64 patterns, numeric
// flags) still read to the same template; a template whose bounds no value
// gives is written as version 1.
func TestTemplateJSONVersions(t *testing.T) {
	build := func(name string, defs ...tpl.VOIDef) *tpl.Template {
		tp, err := tpl.NewRegistry().New(name)
		require.NoError(t, err)
		for _, d := range defs {
			require.NoError(t, tp.AddVOI(d))
		}
		return tp
	}
	tp := build("V",
		tpl.VOIDef{ID: 0, Name: "lat", DType: voi.IntS32, Stats: []tpl.StatSpec{tpl.HistLin(voi.CRHist32, -20, 20, 10, hist.LBoundInf|hist.UBoundInf)}},
		tpl.VOIDef{ID: 1, Name: "ratio", DType: voi.QS64, Prec: 8, Stats: []tpl.StatSpec{tpl.Sum(), tpl.HistBuckets(voi.CRHist64, 0, -0.5, 0, 2.25)}})
	got, err := json.Marshal(tp)
	require.NoError(t, err)
	h := itoa(tp.Hash())
	require.Equal(t, `{"format":"statsblob-template","version":2,"name":"V","hash":`+h+`,"vois":[`+
		`{"id":0,"name":"lat","dtype":"INT_S32","stats":[{"type":"HIST","hist":{"dtype":"CRHIST32","scheme":"LIN","flags":["LBOUND_INF","UBOUND_INF"],"lb":-20,"ub":20,"stepinc":10}}]},`+
		`{"id":1,"name":"ratio","dtype":"Q_S64","prec":8,"stats":[{"type":"SUM"},{"type":"HIST","hist":{"dtype":"CRHIST64","scheme":"USR","buckets":[[-0.5,-0.5],[0,0],[2.25,2.25]]}}]}]}`, string(got))

	q := func(x float64) string {
		v, err := qmath.FromFloat(qmath.S64, 8, x)
		require.NoError(t, err)
		return strconv.FormatUint(v.Raw, 10)
	}
	v1 := `{"format":"statsblob-template","version":1,"name":"V","hash":` + h + `,"vois":[` +
		`{"id":0,"name":"lat","dtype":"INT_S32","stats":[{"type":"HIST","hist":{"dtype":"CRHIST32","scheme":"LIN","flags":3,"lb":18446744073709551596,"ub":20,"stepinc":10}}]},` +
		`{"id":1,"name":"ratio","dtype":"Q_S64","prec":8,"stats":[{"type":"SUM"},{"type":"HIST","hist":{"dtype":"CRHIST64","scheme":"USR","buckets":[[` + q(-0.5) + `,` + q(-0.5) + `],[` + q(0) + `,` + q(0) + `],[` + q(2.25) + `,` + q(2.25) + `]]}}]}]}`
	old, err := tpl.ReadJSON(tpl.NewRegistry(), []byte(v1))
	require.NoError(t, err)
	require.Equal(t, tp.Bytes(), old.Bytes())
	require.Equal(t, tp.VOIs(), old.VOIs())

	// A 32-bit bound with a high half of its own: only a pattern says it.
	odd := build("ODD", tpl.VOIDef{ID: 0, Name: "u", DType: voi.IntU32, Stats: []tpl.StatSpec{
		tpl.Histogram(hist.Spec{DType: voi.CRHist32, Scheme: hist.Lin, LB: 1<<32 | 5, UB: 20, StepInc: 5})}})
	got, err = json.Marshal(odd)
	require.NoError(t, err)
	require.Equal(t, `{"format":"statsblob-template","version":1,"name":"ODD","hash":`+itoa(odd.Hash())+`,"vois":[`+
		`{"id":0,"name":"u","dtype":"INT_U32","stats":[{"type":"HIST","hist":{"dtype":"CRHIST32","scheme":"LIN","lb":4294967301,"ub":20,"stepinc":5}}]}]}`, string(got))
	back, err := tpl.ReadJSON(tpl.NewRegistry(), got)
	require.NoError(t, err)
	require.Equal(t, odd.Bytes(), back.Bytes())

	for _, c := range []struct{ name, from, to, msg string }{
		{"negative bound of an unsigned VOI", `"dtype":"INT_S32"`, `"dtype":"INT_U32"`,
			`tpl: template JSON: VOI 0: bound -20 is outside INT_U32's range 0..4294967295: invalid argument`},
		{"unknown flag", `["LBOUND_INF","UBOUND_INF"]`, `["LBOUND_INF","UPPER"]`,
			`tpl: template JSON: histogram flag "UPPER" (valid: LBOUND_INF, UBOUND_INF): invalid argument`},
		{"bound as a string", `"lb":-20`, `"lb":"-20"`,
			`tpl: template JSON: bound "-20" is not a number: invalid argument`},
		{"wrong type name", `"dtype":"CRHIST32"`, `"dtype":"CRHIST16"`,
			`tpl: template JSON: VOI 0: histogram dtype "CRHIST16" (valid: CRHIST32, DRHIST32, DVHIST32, CRHIST64, DRHIST64, DVHIST64): invalid argument`},
		{"wrong VOI type name", `"dtype":"INT_S32"`, `"dtype":"INT32"`,
			`tpl: template JSON: VOI 0: dtype "INT32" (valid: INT_S32, INT_U32, INT_S64, INT_U64, INT_SLONG, INT_ULONG, Q_S32, Q_U32, Q_S64, Q_U64): invalid argument`},
	} {
		in := strings.Replace(string(must(json.Marshal(tp))), c.from, c.to, 1)
		_, err := tpl.ReadJSON(tpl.NewRegistry(), []byte(in))
		require.ErrorIs(t, err, voi.ErrInvalid, c.name)
		require.EqualError(t, err, c.msg, c.name)
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// FuzzCompileJSON: whatever CompileJSON accepts (no hash needed, so the
// fuzzer reaches the bounds, flags and schemes) marshals to a form that
// ReadJSON reads back to the same bytes and hash.
func FuzzCompileJSON(f *testing.F) {
	for _, ex := range []string{"service.json", "conn.json"} {
		data, err := os.ReadFile("../templates/examples/" + ex)
		require.NoError(f, err)
		f.Add(data)
	}
	f.Add([]byte(`{"format":"statsblob-template","version":2,"name":"Q","vois":[{"id":0,"name":"q","dtype":"Q_S32","prec":8,"stats":[{"type":"HIST","hist":{"dtype":"DRHIST32","scheme":"USR","buckets":[[-1.5,0.25],[0.25,3]]}}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tp, _, _, err := tpl.CompileJSON(data)
		if err != nil {
			if !errors.Is(err, voi.ErrInvalid) && !errors.Is(err, voi.ErrTooBig) {
				t.Fatalf("CompileJSON: %v", err)
			}
			return
		}
		out, err := json.Marshal(tp)
		if err != nil {
			t.Fatal(err)
		}
		back, err := tpl.ReadJSON(tpl.NewRegistry(), out)
		if err != nil || back.Hash() != tp.Hash() || string(back.Bytes()) != string(tp.Bytes()) {
			t.Fatalf("round trip of %s: %v", out, err)
		}
	})
}

// TestRegistryMarshalJSON: json.Marshal of a registry is a templates file
// that ReadJSONList reads back to the same templates, in slot order.
func TestRegistryMarshalJSON(t *testing.T) {
	var nilReg *tpl.Registry
	got, err := json.Marshal(nilReg)
	require.NoError(t, err)
	require.Equal(t, "null", string(got), "encoding/json does not call a nil pointer's MarshalJSON")
	got, err = nilReg.MarshalJSON()
	require.NoError(t, err)
	require.Equal(t, "[]", string(got))

	r := tpl.NewRegistry()
	src := everyStat(t, r)
	other, err := r.New("OTHER")
	require.NoError(t, err)
	got, err = json.Marshal(r)
	require.NoError(t, err)
	one, err := json.Marshal(src)
	require.NoError(t, err)
	two, err := json.Marshal(other)
	require.NoError(t, err)
	require.Equal(t, "["+string(one)+","+string(two)+"]", string(got))
	back, err := tpl.ReadJSONList(tpl.NewRegistry(), got)
	require.NoError(t, err)
	require.Len(t, back, 2)
	require.Equal(t, src.Bytes(), back[0].Bytes())
	require.Equal(t, other.Spec(), back[1].Spec())
}

// A VOI whose definition repeats a statistic type (the C allows it: the
// later one takes the slot, the earlier one's data stays in the blob) is
// written and read back to the same template, so a collector can load
// every template AddVOI accepts.
func TestTemplateJSONRepeatedStatistics(t *testing.T) {
	tp, err := tpl.NewRegistry().New("REPEAT")
	require.NoError(t, err)
	stats := []tpl.StatSpec{tpl.Sum(), tpl.Max(), tpl.Min(), tpl.Sum(), tpl.Max(), tpl.Min()}
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "x", DType: voi.IntU32, Stats: stats}))
	data, err := json.Marshal(tp)
	require.NoError(t, err)
	back, err := tpl.ReadJSON(tpl.NewRegistry(), data)
	require.NoError(t, err)
	require.Equal(t, tp.Hash(), back.Hash())
	require.Equal(t, tp.Bytes(), back.Bytes())
	require.Equal(t, stats, back.VOIs()[0].Stats)
}

// TestREADMEJSONLimits: the limits README.md's "Untrusted input" states
// are the constants. It said MaxJSONStats 5 after the bound became what
// a blob can hold (16,363), so a reader took a VOI listing a statistic
// type twice for one ReadJSON refuses.
func TestREADMEJSONLimits(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	for name, v := range map[string]int{"MaxJSONVOIs": tpl.MaxJSONVOIs, "MaxJSONStats": tpl.MaxJSONStats,
		"MaxJSONBuckets": tpl.MaxJSONBuckets, "MaxJSONDepth": tpl.MaxJSONDepth} {
		_, after, ok := strings.Cut(string(readme), "`"+name+"`")
		require.True(t, ok, "README.md does not state %s", name)
		n := strings.TrimRight(strings.ReplaceAll(strings.Fields(after)[0], ",", ""), ")")
		require.Equal(t, strconv.Itoa(v), n, name)
	}
	require.Contains(t, string(readme), "`tpl.MaxJSONSize` (4 MiB)")
	require.Equal(t, 4<<20, tpl.MaxJSONSize)
}

// TestJSONErrorsSayTplOnce: an error of the template JSON form names the
// package once, each layer saying its own part. Before, the errors of the
// template's own building said "tpl: " again after "tpl: template JSON: "
// (and a t-digest's a third time): "tpl: template JSON: tpl: W: add VOI 0
// ("a"): tpl: t-digest with 0 centroid slots: invalid argument".
func TestJSONErrorsSayTplOnce(t *testing.T) {
	const head = `{"format":"statsblob-template","version":2,"name":"W","vois":[`
	sum := `{"id":0,"name":"a","dtype":"INT_U64","stats":[{"type":"SUM"}]}`
	for _, c := range []struct {
		name, doc string
		is        error
		msg       string
	}{
		{"t-digest without centroids", head + `{"id":0,"name":"a","dtype":"INT_U64","stats":[{"type":"TDGST","tdigest":{"dtype":"TDGSTCLUST32","nctds":0,"prec":4}}]}]}`,
			voi.ErrInvalid, `tpl: template JSON: W: add VOI 0 ("a"): t-digest with 0 centroid slots: invalid argument`},
		{"id twice", head + sum + `,` + strings.Replace(sum, `"a"`, `"b"`, 1) + `]}`,
			voi.ErrExists, `tpl: template JSON: W: add VOI 0 ("b"): VOI 0 is already defined: already exists`},
		{"bad unit", head + strings.Replace(sum, `}]}`, `}],"unit":"bogus unit!"}`, 1) + `]}`,
			voi.ErrInvalid, `tpl: template JSON: metadata of VOI 0 of "W": unit "bogus unit!": invalid argument`},
		{"derived of nothing", head + sum + `],"derived":[{"name":"x","op":"average","of":"zz","by":"a"}]}`,
			voi.ErrInvalid, `tpl: template JSON: derived metric 0 ("x") of "W": VOI "zz" does not exist or keeps no SUM: invalid argument`},
	} {
		_, _, _, err := tpl.CompileJSON([]byte(c.doc))
		require.ErrorIs(t, err, c.is, c.name)
		require.EqualError(t, err, c.msg, c.name)
	}
}

// TestHashError: ReadJSON's error for a missing or wrong "hash" is a
// *HashError that says what to write; before, a missing one read
// "rebuilds with hash N, no hash".
func TestHashError(t *testing.T) {
	doc := `{"format":"statsblob-template","version":2,"name":"W",%s"vois":[{"id":0,"name":"a","dtype":"INT_U64","stats":[{"type":"SUM"}]}]}`
	tp, _, _, err := tpl.CompileJSON([]byte(strings.Replace(doc, "%s", "", 1)))
	require.NoError(t, err)
	h := tp.Hash()
	f := func(hashMember, msg string) {
		t.Helper()
		_, err := tpl.ReadJSON(tpl.NewRegistry(), []byte(strings.Replace(doc, "%s", hashMember, 1)))
		require.ErrorIs(t, err, voi.ErrInvalid)
		var he *tpl.HashError
		require.ErrorAs(t, err, &he)
		require.Equal(t, h, he.Hash)
		require.EqualError(t, err, msg)
	}
	f("", `tpl: template JSON: template "W": no "hash" (add "hash": `+itoa(h)+`): invalid argument`)
	f(`"hash":7,`, `tpl: template JSON: template "W": "hash" is 7, the template rebuilds with hash `+itoa(h)+
		` (its VOIs or statistics differ from the ones the hash was made of): invalid argument`)
}

// TestMaxVOIID: MaxVOIID is the largest id a blob holds (with a 32-bit
// SUM, the least a VOI can keep), and an id past it is refused saying
// so. Before, the README gave ids as 0..32767 and AddVOI of 9000 said
// only "the template would take 72064 bytes, more than 65535".
func TestMaxVOIID(t *testing.T) {
	require.Equal(t, 8184, tpl.MaxVOIID)
	add := func(id int32) (*tpl.Template, error) {
		tp, err := tpl.NewRegistry().New("W")
		require.NoError(t, err)
		return tp, tp.AddVOI(tpl.VOIDef{ID: id, Name: "a", DType: voi.IntU32, Stats: []tpl.StatSpec{tpl.Sum()}})
	}
	tp, err := add(tpl.MaxVOIID)
	require.NoError(t, err)
	require.LessOrEqual(t, 65535-4, len(tp.Bytes()), "no room for a larger id")
	for _, id := range []int32{tpl.MaxVOIID + 1, 9000, 32767, 32768} {
		_, err = add(id)
		require.ErrorIs(t, err, voi.ErrTooBig)
		require.EqualError(t, err, `tpl: W: add VOI `+itoa(uint32(id))+` ("a"): id `+itoa(uint32(id))+` above 8184, the largest a blob of 65535 bytes can hold: too big for a blob`)
	}
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	require.Contains(t, string(readme), "`id` (0.."+itoa(tpl.MaxVOIID)+", `tpl.MaxVOIID`", "README.md states the id range")
}
