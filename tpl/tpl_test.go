package tpl_test

import (
	"encoding/hex"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/hist"

	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	require.NoError(t, err)
	return b
}

func TestRegistry(t *testing.T) {
	r := tpl.NewRegistry()
	a, err := r.New("A")
	require.NoError(t, err)
	require.Equal(t, 0, a.ID())
	_, err = r.New("A")
	require.ErrorIs(t, err, voi.ErrExists)
	_, err = r.New(strings.Repeat("x", 65))
	require.ErrorIs(t, err, voi.ErrInvalid)
	b, err := r.New(strings.Repeat("x", 64))
	require.NoError(t, err)
	require.Equal(t, 1, b.ID())
	require.Equal(t, 2, r.Len())

	got, err := r.ByID(1)
	require.NoError(t, err)
	require.Same(t, b, got)
	_, err = r.ByID(2)
	require.ErrorIs(t, err, voi.ErrNotFound)
	_, err = r.ByID(-1)
	require.ErrorIs(t, err, voi.ErrNotFound)

	id, err := r.LookupName("A", 0)
	require.NoError(t, err)
	require.Equal(t, 0, id)
	id, err = r.LookupName("A", a.Hash())
	require.NoError(t, err)
	require.Equal(t, 0, id)
	_, err = r.LookupName("A", a.Hash()+1)
	require.ErrorIs(t, err, voi.ErrNoTemplate)
	id, err = r.LookupHash(b.Hash())
	require.NoError(t, err)
	require.Equal(t, 1, id)
	_, err = r.LookupHash(0)
	require.ErrorIs(t, err, voi.ErrNoTemplate)
}

func TestHashesMatchC(t *testing.T) {
	// Hashes from the golden outputs of scenarios 31 and 33.
	r := tpl.NewRegistry()
	e, err := r.New("EMPTY")
	require.NoError(t, err)
	require.Equal(t, uint32(2045388689), e.Hash())

	for _, c := range []struct {
		tpl, voiName string
		want         uint32
	}{{"A", "x", 153453948}, {"B", "x", 1836918045}} {
		tp, err := r.New(c.tpl)
		require.NoError(t, err)
		require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: c.voiName, DType: voi.IntU32, Stats: []tpl.StatSpec{tpl.Sum()}}))
		require.Equal(t, c.want, tp.Hash(), c.tpl)
	}
	require.Equal(t, `"EMPTY":2045388689,"A":153453948,"B":1836918045`, r.List())
}

func TestAddVOILayoutMatchesC(t *testing.T) {
	// Scenario 21: sparse ids added out of order (63, 0, 5); the golden's
	// template layout puts each new VOI's voistats and data first.
	tp, err := tpl.NewRegistry().New("SPARSE")
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 63, Name: "last", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum(), tpl.Max()}}))
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "first", DType: voi.IntU32, Stats: []tpl.StatSpec{tpl.Min()}}))
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 5, Name: "mid", DType: voi.IntS64, Flags: voi.FlagRelUpdate, Stats: []tpl.StatSpec{tpl.Sum()}}))
	require.Equal(t, uint32(2623252635), tp.Hash())
	b := tp.Bytes()
	require.Len(t, b, 652)
	require.Equal(t, unhex(t, "01 01 00 00 8c 02 8c 02 00 00 00 00 20 02 68 02"), b[:16])
	// voi[0]: id 0, INT_U32, voistatmaxid 3, stats_off 560; voi[5]: state
	// flag set, stats_off 544; voi[63]: stats_off 592.
	require.Equal(t, unhex(t, "00 00 02 03 30 02 00 00"), b[32:40])
	require.Equal(t, unhex(t, "05 00 03 01 20 02 01 00"), b[72:80])
	require.Equal(t, unhex(t, "3f 00 04 02 50 02 00 00"), b[536:544])
	name, ok := tp.VOIName(5)
	require.True(t, ok)
	require.Equal(t, "mid", name)
	_, ok = tp.VOIName(4)
	require.False(t, ok)
	d, ok := tp.VOI("mid")
	require.True(t, ok)
	require.Equal(t, tpl.VOIDef{ID: 5, Name: "mid", DType: voi.IntS64, Flags: voi.FlagRelUpdate, Stats: []tpl.StatSpec{tpl.Sum()}}, d)
	_, ok = tp.VOI("nope")
	require.False(t, ok)
}

func TestAddVOIErrors(t *testing.T) {
	tp, err := tpl.NewRegistry().New("INV")
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "a", DType: voi.IntU32, Stats: []tpl.StatSpec{tpl.Sum()}}))
	before, hash := tp.Bytes(), tp.Hash()
	for _, c := range []struct {
		name string
		def  tpl.VOIDef
		want error
		msg  string
	}{
		{"existing id", tpl.VOIDef{ID: 0, Name: "again", DType: voi.IntU32, Stats: []tpl.StatSpec{tpl.Min()}}, voi.ErrExists,
			`tpl: INV: add VOI 0 ("again"): VOI 0 is already defined: already exists`},
		{"unknown flag", tpl.VOIDef{ID: 4, DType: voi.IntU32, Flags: voi.FlagReqState, Stats: []tpl.StatSpec{tpl.Sum()}}, voi.ErrInvalid,
			`tpl: INV: add VOI 4 (""): flags 0x1: the only VOI flag is voi.FlagRelUpdate (0x100): invalid argument`},
		{"negative id", tpl.VOIDef{ID: -1, Name: "neg", DType: voi.IntU32, Stats: []tpl.StatSpec{tpl.Sum()}}, voi.ErrInvalid,
			`tpl: INV: add VOI -1 ("neg"): negative id: invalid argument`},
		{"dtype 0", tpl.VOIDef{ID: 2, DType: 0, Stats: []tpl.StatSpec{tpl.Sum()}}, voi.ErrInvalid,
			`tpl: INV: add VOI 2 (""): data type VOISTATE is not a VOI data type: invalid argument`},
		{"histogram dtype", tpl.VOIDef{ID: 2, DType: voi.CRHist32, Stats: []tpl.StatSpec{tpl.Sum()}}, voi.ErrInvalid,
			`tpl: INV: add VOI 2 (""): data type CRHIST32 is not a VOI data type: invalid argument`},
		{"no stats", tpl.VOIDef{ID: 4, Name: "x", DType: voi.IntU32}, voi.ErrInvalid,
			`tpl: INV: add VOI 4 ("x"): no statistics: invalid argument`},
		{"bad stat type", tpl.VOIDef{ID: 4, DType: voi.IntU32, Stats: []tpl.StatSpec{{Type: voi.StatVoiState}}}, voi.ErrInvalid,
			`tpl: INV: add VOI 4 (""): stat type VOISTATE: invalid argument`},
		{"Q without precision", tpl.VOIDef{ID: 4, DType: voi.QS32, Stats: []tpl.StatSpec{tpl.Sum()}}, voi.ErrInvalid,
			`tpl: INV: add VOI 4 (""): precision 0 of a Q value outside 1..64: invalid argument`},
		{"id too big", tpl.VOIDef{ID: 8191, DType: voi.IntU32, Stats: []tpl.StatSpec{tpl.Sum()}}, voi.ErrTooBig,
			`tpl: INV: add VOI 8191 (""): id 8191 above 8184, the largest a blob of 65535 bytes can hold: too big for a blob`},
		// The C checks the statistics first: an id past MaxVOIID without
		// any is EINVAL, as the C's tpl_add_voistats answers it.
		{"id too big, no stats", tpl.VOIDef{ID: 17695, Name: "x", DType: voi.IntS64}, voi.ErrInvalid,
			`tpl: INV: add VOI 17695 ("x"): no statistics: invalid argument`},
		{"too big", tpl.VOIDef{ID: 8184, DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}, voi.ErrTooBig,
			`tpl: INV: add VOI 8184 (""): the template would take 65556 bytes, more than 65535: too big for a blob`},
	} {
		err := tp.AddVOI(c.def)
		require.ErrorIs(t, err, c.want, c.name)
		require.EqualError(t, err, c.msg, c.name)
		require.Equal(t, before, tp.Bytes(), c.name)
		require.Equal(t, hash, tp.Hash(), c.name)
	}
}

func TestParseSpec(t *testing.T) {
	cases := []struct {
		in   string
		name string
		hash uint32
		ok   bool
	}{
		{`"TCP_DEFAULT":123`, "TCP_DEFAULT", 123, true},
		{`TCP_DEFAULT:123`, "TCP_DEFAULT", 123, true},
		{`"TCP_DEFAULT"`, "TCP_DEFAULT", 0, true},
		{`TCP_DEFAULT`, "TCP_DEFAULT", 0, true},
		{`:4294967295`, "", 4294967295, true},
		{`:4294967296`, "", 0, false},
		{`:`, "", 0, false},
		{``, "", 0, false},
		{`"A`, "", 0, false},
		{`A"`, "", 0, false},
		{`"A":x`, "", 0, false},
		{`A,B`, "", 0, false},
		{`A=1`, "", 0, false},
		{`"` + strings.Repeat("n", 65) + `"`, "", 0, false},
	}
	for _, c := range cases {
		name, hash, err := tpl.ParseSpec(c.in)
		if !c.ok {
			require.ErrorIs(t, err, voi.ErrInvalid, c.in)
			continue
		}
		require.NoError(t, err, c.in)
		require.Equal(t, c.name, name, c.in)
		require.Equal(t, c.hash, hash, c.in)
	}

	r := tpl.NewRegistry()
	a, _ := r.New("A")
	got, err := r.Resolve(a.Spec())
	require.NoError(t, err)
	require.Same(t, a, got)
	_, err = r.Resolve(`"B"`)
	require.ErrorIs(t, err, voi.ErrNoTemplate)
}

func FuzzParseSpec(f *testing.F) {
	for _, s := range []string{`"A":1`, `A`, `:7`, `"x"`, `""`, `"a":`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		name, hash, err := tpl.ParseSpec(s)
		if err != nil {
			return
		}
		// A parsed spec prints back to a spec that parses to the same thing.
		again := `"` + name + `"`
		if hash != 0 {
			again += ":" + itoa(hash)
		}
		if name == "" {
			again = ":" + itoa(hash)
		}
		n2, h2, err := tpl.ParseSpec(again)
		if err != nil || n2 != name || h2 != hash {
			t.Fatalf("%q -> (%q, %d) -> %q -> (%q, %d, %v)", s, name, hash, again, n2, h2, err)
		}
	})
}

func itoa(v uint32) string {
	var b [10]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			return string(b[i:])
		}
	}
}

// The C's helpers run from the last spec to the first and only the template
// reports EFBIG, after every other check: an invalid spec anywhere in the
// line wins over a too-big one, and so does an id that already exists.
func TestTooBigComesLast(t *testing.T) {
	tp, err := tpl.NewRegistry().New("BIG")
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "a", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}))
	big := tpl.TDigest(voi.TDgstClust64, 5000, 4)
	bad := tpl.Histogram(hist.Spec{DType: voi.CRHist32, Scheme: hist.Lin, LB: 0, UB: 10, StepInc: 0})
	for _, c := range []struct {
		name string
		def  tpl.VOIDef
		want error
	}{
		{"too big alone", tpl.VOIDef{ID: 1, DType: voi.IntU64, Stats: []tpl.StatSpec{big}}, voi.ErrTooBig},
		{"invalid after too big", tpl.VOIDef{ID: 1, DType: voi.IntU64, Stats: []tpl.StatSpec{big, bad}}, voi.ErrInvalid},
		{"invalid before too big", tpl.VOIDef{ID: 1, DType: voi.IntU64, Stats: []tpl.StatSpec{bad, big}}, voi.ErrInvalid},
		{"negative id", tpl.VOIDef{ID: -1, DType: voi.IntU64, Stats: []tpl.StatSpec{big}}, voi.ErrInvalid},
		{"existing id", tpl.VOIDef{ID: 0, DType: voi.IntU64, Stats: []tpl.StatSpec{big}}, voi.ErrVOIExists},
	} {
		require.ErrorIs(t, tp.AddVOI(c.def), c.want, c.name)
	}
}

// A t-digest no update can use is refused at AddVOI with a message naming
// the defect, and the template stays unchanged; the limits themselves are
// accepted.
func TestAddVOIRefusesUnusableTDigests(t *testing.T) {
	for _, c := range []struct {
		name    string
		spec    tpl.StatSpec
		wantMsg string // "" when accepted
	}{
		{"0 slots 64", tpl.TDigest(voi.TDgstClust64, 0, 8), "0 centroid slots"},
		{"0 slots 32", tpl.TDigest(voi.TDgstClust32, 0, 4), "0 centroid slots"},
		{"precision 0", tpl.TDigest(voi.TDgstClust64, 20, 0), "precision 0 outside 1..64"},
		{"precision 65", tpl.TDigest(voi.TDgstClust64, 20, 65), "precision 65 outside 1..64"},
		{"32-bit precision 17", tpl.TDigest(voi.TDgstClust32, 20, 17), "TDGSTCLUST32 precision 17 above 16"},
		{"1 slot precision 1", tpl.TDigest(voi.TDgstClust64, 1, 1), ""},
		{"precision 64", tpl.TDigest(voi.TDgstClust64, 4, 64), ""},
		{"32-bit precision 16", tpl.TDigest(voi.TDgstClust32, 4, 16), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			tp, err := tpl.NewRegistry().New("TD")
			require.NoError(t, err)
			before := tp.Hash()
			err = tp.AddVOI(tpl.VOIDef{ID: 0, Name: "td", DType: voi.IntU32, Stats: []tpl.StatSpec{tpl.Max(), c.spec}})
			if c.wantMsg == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, voi.ErrInvalid)
			require.ErrorContains(t, err, c.wantMsg)
			require.Equal(t, before, tp.Hash())
			require.Empty(t, tp.VOIs())
		})
	}
}
