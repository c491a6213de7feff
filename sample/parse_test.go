package sample_test

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/sample"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// Slot ids of the fixture registry.
const (
	tcp   = 0 // "tcp", with one VOI
	udp   = 1 // "udp"
	comma = 2 // "x,y": a name with a comma
	space = 3 // " sp ": a name with spaces at both ends
	empty = 4 // "": a name that can only be found by hash
	long  = 5 // 64 bytes
)

// long64 is a 64-byte name whose hash has 9 digits, so its printed spec
// is 76 bytes: the longest the parser reads back.
var long64 = strings.Repeat("L", 63) + "M"

// fixture returns a fresh registry with the templates above.
func fixture(t testing.TB) *tpl.Registry {
	t.Helper()
	reg := tpl.NewRegistry()
	for _, name := range []string{"tcp", "udp", "x,y", " sp ", "", long64} {
		_, err := reg.New(name)
		require.NoError(t, err)
	}
	lt, err := reg.ByID(long)
	require.NoError(t, err)
	require.Less(t, lt.Hash(), uint32(1e9))
	tt, err := reg.ByID(tcp)
	require.NoError(t, err)
	require.NoError(t, tt.AddVOI(tpl.VOIDef{ID: 0, Name: "rtt", DType: voi.IntU32, Stats: []tpl.StatSpec{tpl.Max()}}))
	return reg
}

// newTable returns a table over a registry with enough templates for
// every slot id in rates.
func newTable(t testing.TB, rates []sample.Rate) *sample.Table {
	t.Helper()
	reg := tpl.NewRegistry()
	n := int32(0)
	for _, r := range rates {
		n = max(n, r.TplID+1)
	}
	for i := range n {
		_, err := reg.New(fmt.Sprint("t", i))
		require.NoError(t, err)
	}
	tab := sample.NewTable(reg)
	_, err := tab.Swap(rates)
	require.NoError(t, err)
	return tab
}

// expand replaces {ID} in s by the decimal hash of template ID.
func expand(t testing.TB, reg *tpl.Registry, s string) string {
	t.Helper()
	for id := range reg.Len() {
		tt, err := reg.ByID(id)
		require.NoError(t, err)
		s = strings.ReplaceAll(s, "{"+strconv.Itoa(id)+"}", strconv.FormatUint(uint64(tt.Hash()), 10))
	}
	return s
}

type parseCase struct {
	name    string
	text    string // {ID} stands for the hash of template ID
	want    []sample.Rate
	wantErr error
}

var parseCases = []parseCase{
	// The five spec forms.
	{"name", "tcp=10", []sample.Rate{{tcp, 10}}, nil},
	{"quoted name", `"tcp"=10`, []sample.Rate{{tcp, 10}}, nil},
	{"hash only", ":{1}=20", []sample.Rate{{udp, 20}}, nil},
	{"quoted name and hash", `"tcp":{0}=10`, []sample.Rate{{tcp, 10}}, nil},
	{"name and hash", "tcp:{0}=10", []sample.Rate{{tcp, 10}}, nil},
	{"hash 0 is any", "tcp:0=10", []sample.Rate{{tcp, 10}}, nil},
	{"list", `tcp=10,"udp":{1}=20,:{2}=30`, []sample.Rate{{tcp, 10}, {udp, 20}, {comma, 30}}, nil},

	// Whitespace and commas.
	{"empty", "", nil, nil},
	{"only whitespace", " \t\n\v\f\r", nil, nil},
	{"whitespace around pairs", " \ttcp=10 ,\n udp= 20\t", []sample.Rate{{tcp, 10}, {udp, 20}}, nil},
	{"whitespace after colon", "tcp: {0}=10", []sample.Rate{{tcp, 10}}, nil},
	{"trailing comma", "tcp=10,", []sample.Rate{{tcp, 10}}, nil},
	{"comma then whitespace", "tcp=10, ", nil, voi.ErrInvalid},
	{"whitespace before = is part of the name", "tcp = 10", nil, voi.ErrNoTemplate},
	{"leading comma joins the name", ",tcp=10", nil, voi.ErrNoTemplate},
	{"empty item joins the name", "tcp=10,,udp=5", nil, voi.ErrNoTemplate},
	{"missing comma", "tcp=10 udp=20", nil, voi.ErrInvalid},
	{"other separator", "tcp=10;udp=5", nil, voi.ErrInvalid},

	// Names: quotes, odd characters, widths.
	{"leading quote only", `"tcp=10`, []sample.Rate{{tcp, 10}}, nil},
	{"trailing quote only", `tcp"=10`, []sample.Rate{{tcp, 10}}, nil},
	{"only one quote stripped", `""tcp""=10`, nil, voi.ErrNoTemplate},
	{"empty quoted name means by hash", `"":{4}=5`, []sample.Rate{{empty, 5}}, nil},
	{"lone quote means by hash", `":{1}=5`, []sample.Rate{{udp, 5}}, nil},
	{"comma in a name", `"x,y"=5,x,y=6`, []sample.Rate{{comma, 5}, {comma, 6}}, nil},
	{"spaces in a quoted name", `" sp "=5`, []sample.Rate{{space, 5}}, nil},
	{"64-byte name", long64 + ":{5}=1", []sample.Rate{{long, 1}}, nil},
	{"quoted 64-byte name: hash cut off and ignored", `"` + long64 + `":1=1`, []sample.Rate{{long, 1}}, nil},
	{"quoted 64-byte name: rest of spec ignored", `"` + long64 + `xyz=1`, []sample.Rate{{long, 1}}, nil},
	{"65-byte name", long64 + "L=1", nil, voi.ErrNoTemplate},
	{"76-byte spec", strings.Repeat("a", 76) + "=1", nil, voi.ErrNoTemplate},
	{"77-byte spec", strings.Repeat("a", 77) + "=1", nil, voi.ErrInvalid},
	{"unknown name", "nosuch=10", nil, voi.ErrNoTemplate},
	{"wrong hash", "tcp:{1}=10", nil, voi.ErrNoTemplate},
	{"unknown hash", ":12345=10", nil, voi.ErrNoTemplate},
	{"hash 0 alone", ":0=10", nil, voi.ErrNoTemplate},

	// What the C ignores inside a spec.
	{"no hash after colon", "tcp:=10", []sample.Rate{{tcp, 10}}, nil},
	{"junk hash", "tcp:junk=10", []sample.Rate{{tcp, 10}}, nil},
	{"junk after hash", "tcp:{0}junk=10", []sample.Rate{{tcp, 10}}, nil},
	{"colon alone", ":=10", nil, voi.ErrInvalid},
	{"junk hash alone", ":x=10", nil, voi.ErrInvalid},

	// Percentages.
	{"sum exactly 100", "tcp=50,udp=50", []sample.Rate{{tcp, 50}, {udp, 50}}, nil},
	{"zero and duplicates kept", "tcp=0,tcp=0,udp=100", []sample.Rate{{tcp, 0}, {tcp, 0}, {udp, 100}}, nil},
	{"plus sign", "tcp=+7", []sample.Rate{{tcp, 7}}, nil},
	{"minus zero", "tcp=-0", []sample.Rate{{tcp, 0}}, nil},
	{"cut to 32 bits", "tcp=4294967306", []sample.Rate{{tcp, 10}}, nil},
	{"31 characters", "tcp=" + strings.Repeat("0", 29) + "10", []sample.Rate{{tcp, 10}}, nil},
	{"32 characters", "tcp=" + strings.Repeat("0", 30) + "10", nil, voi.ErrInvalid},
	{"over 100", "tcp=101", nil, voi.ErrInvalid},
	{"sum over 100", "tcp=60,udp=41", nil, voi.ErrInvalid},
	{"sum checked before lookup", "nosuch=200", nil, voi.ErrInvalid},
	{"negative", "tcp=-5", nil, voi.ErrInvalid},
	{"negative wrapping the sum (C accepts)", "tcp=1,udp=-1", nil, voi.ErrInvalid},
	{"over 2^64", "tcp=99999999999999999999999", nil, voi.ErrInvalid},
	{"sign only", "tcp=+", nil, voi.ErrInvalid},
	{"two signs", "tcp=+-1", nil, voi.ErrInvalid},
	{"no percentage", "tcp=", nil, voi.ErrInvalid},
	{"not a number", "tcp=x", nil, voi.ErrInvalid},
	{"hex", "tcp=0x10", nil, voi.ErrInvalid},
	{"digits after a space", "tcp=1 0", nil, voi.ErrInvalid},

	// Shape.
	{"no =", "tcp", nil, voi.ErrInvalid},
	{"no spec", "=10", nil, voi.ErrInvalid},
	{"NUL at the end", "tcp=10\x00", nil, voi.ErrInvalid},
	{"NUL inside", "tcp=10,\x00udp=5", nil, voi.ErrInvalid},
	{"first error wins", "nosuch=10,tcp=x", nil, voi.ErrNoTemplate},
}

func TestParse(t *testing.T) {
	reg := fixture(t)
	for _, c := range parseCases {
		t.Run(c.name, func(t *testing.T) {
			text := expand(t, reg, c.text)
			got, err := sample.Parse(reg, text)
			if c.wantErr != nil {
				require.ErrorIs(t, err, c.wantErr)
				require.True(t, strings.HasPrefix(err.Error(), "sample: "), err.Error())
				require.Nil(t, got)
				for _, other := range []error{voi.ErrInvalid, voi.ErrNoTemplate} {
					if other != c.wantErr {
						require.NotErrorIs(t, err, other)
					}
				}
				return
			}
			require.NoError(t, err)
			require.Equal(t, c.want, got)
		})
	}
}

func TestSetChangesNothingOnError(t *testing.T) {
	reg := fixture(t)
	tab := sample.NewTable(reg)
	require.NoError(t, tab.Set("tcp=10,udp=20"))
	before := tab.Rates()
	for _, c := range parseCases {
		if c.wantErr == nil {
			continue
		}
		require.Error(t, tab.Set(expand(t, reg, c.text)), c.name)
		require.Equal(t, before, tab.Rates(), c.name)
	}
	require.NoError(t, tab.Set(""))
	require.Nil(t, tab.Rates())
	require.Equal(t, "", tab.String())
}

func TestPrintRoundTrip(t *testing.T) {
	reg := fixture(t)
	tab := sample.NewTable(reg)
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"tcp=10", `"tcp":{0}=10`},
		{`:{1}=5 , "x,y"=0,tcp:0=95`, `"udp":{1}=5,"x,y":{2}=0,"tcp":{0}=95`},
		{`" sp "=1,"":{4}=2,` + long64 + `=3`, `" sp ":{3}=1,"":{4}=2,"` + long64 + `":{5}=3`},
	} {
		in, want := expand(t, reg, c.in), expand(t, reg, c.want)
		require.NoError(t, tab.Set(in))
		require.Equal(t, want, tab.String(), "after Set(%q)", in)

		b, err := tab.MarshalText()
		require.NoError(t, err)
		require.Equal(t, want, string(b))

		again := sample.NewTable(reg)
		require.NoError(t, again.UnmarshalText(b))
		require.Equal(t, tab.Rates(), again.Rates(), "re-parse of %q", b)
	}
}

func TestPrintUsesCurrentHash(t *testing.T) {
	reg := fixture(t)
	tab := sample.NewTable(reg)
	require.NoError(t, tab.Set("udp=10"))
	old := tab.String()
	u, err := reg.ByID(udp)
	require.NoError(t, err)
	require.NoError(t, u.AddVOI(tpl.VOIDef{ID: 0, Name: "v", DType: voi.IntS64, Stats: []tpl.StatSpec{tpl.Sum()}}))
	require.NotEqual(t, old, tab.String())
	require.Equal(t, fmt.Sprintf(`"udp":%d=10`, u.Hash()), tab.String())
	require.ErrorIs(t, tab.Set(old), voi.ErrNoTemplate) // the old hash no longer matches
}

// TestLongestSpecDoesNotReadBack pins a limit the C has too: a template
// with a 64-byte name and a 10-digit hash prints a 77-byte spec, one more
// than the parser reads.
func TestLongestSpecDoesNotReadBack(t *testing.T) {
	reg := tpl.NewRegistry()
	var name string
	for i := 0; ; i++ {
		name = fmt.Sprintf("%064d", i)
		tt, err := reg.New(name)
		require.NoError(t, err)
		if tt.Hash() >= 1e9 {
			break
		}
	}
	tab := sample.NewTable(reg)
	require.NoError(t, tab.Set(name+"=1"))
	printed := tab.String()
	spec, _, _ := strings.Cut(printed, "=")
	require.Len(t, spec, 77)
	require.ErrorIs(t, tab.Set(printed), voi.ErrInvalid)
}

func TestSwap(t *testing.T) {
	reg := fixture(t)
	tab := sample.NewTable(reg)
	in := []sample.Rate{{tcp, 40}, {udp, 60}}
	old, err := tab.Swap(in)
	require.NoError(t, err)
	require.Nil(t, old)
	in[0].Pct = 99 // the table holds a copy
	require.Equal(t, []sample.Rate{{tcp, 40}, {udp, 60}}, tab.Rates())

	_, err = tab.Swap([]sample.Rate{{tcp, 50}, {udp, 51}})
	require.ErrorIs(t, err, voi.ErrInvalid)
	_, err = tab.Swap([]sample.Rate{{tcp, 1}, {6, 0}}) // the fixture has slots 0..5
	require.ErrorIs(t, err, voi.ErrNotFound)
	_, err = tab.Swap([]sample.Rate{{-1, 0}})
	require.ErrorIs(t, err, voi.ErrNotFound)
	_, err = tab.Swap([]sample.Rate{{tcp, 1}, {udp, 0xFFFFFFFF}}) // would wrap a uint32 sum
	require.ErrorIs(t, err, voi.ErrInvalid)
	require.Equal(t, []sample.Rate{{tcp, 40}, {udp, 60}}, tab.Rates())

	old, err = tab.Swap(nil)
	require.NoError(t, err)
	require.Equal(t, []sample.Rate{{tcp, 40}, {udp, 60}}, old)
	require.Nil(t, tab.Rates())
	require.Equal(t, int32(-1), tab.Roll([]byte("x")))
}

// TestZeroTableHasNoRegistry: the zero Table is bound to no registry (no
// implicit tpl.Default): it holds no template, so only the empty list is
// accepted, and the process-wide registry is one NewTable away.
func TestZeroTableHasNoRegistry(t *testing.T) {
	var tab sample.Table
	require.Nil(t, tab.Registry())
	require.Nil(t, tab.Rates())
	require.Equal(t, "", tab.String())
	require.Equal(t, int32(-1), tab.Roll(nil))
	require.Equal(t, int32(-1), tab.Roll([]byte{}))
	require.Equal(t, int32(-1), tab.RollRandom())
	require.NoError(t, tab.Set("  "))
	err := tab.Set("a=1")
	require.ErrorIs(t, err, voi.ErrNoTemplate)
	require.EqualError(t, err, `sample: rates, byte 0: tpl: no template "a" with hash 0: no such template`)
	_, err = tab.Swap([]sample.Rate{{TplID: 0, Pct: 1}})
	require.ErrorIs(t, err, voi.ErrNotFound)
	_, err = sample.AppendRates(nil, nil, []sample.Rate{{TplID: 0, Pct: 1}})
	require.ErrorIs(t, err, voi.ErrNotFound)

	// A name no other test registers in the process-wide registry.
	require.Same(t, tpl.Default, sample.NewTable(tpl.Default).Registry())
	require.ErrorIs(t, sample.NewTable(tpl.Default).Set("sample_test_no_such_template=1"), voi.ErrNoTemplate)
}

// FuzzParse checks that whatever Parse accepts is a valid list that prints
// and parses back to itself, and that whatever it rejects is rejected
// with exactly one of the two sentinels and leaves a table unchanged.
func FuzzParse(f *testing.F) {
	reg := fixture(f)
	for _, c := range parseCases {
		f.Add(expand(f, reg, c.text))
	}
	f.Fuzz(func(t *testing.T, text string) {
		rates, err := sample.Parse(reg, text)
		tab := sample.NewTable(reg)
		require.NoError(t, tab.Set("udp=1"))
		setErr := tab.Set(text)
		require.Equal(t, err == nil, setErr == nil)

		if err != nil {
			inv, nt := errors.Is(err, voi.ErrInvalid), errors.Is(err, voi.ErrNoTemplate)
			require.True(t, inv != nt, "error %v wraps neither or both sentinels", err)
			require.True(t, strings.HasPrefix(err.Error(), "sample: "), err.Error())
			require.Equal(t, []sample.Rate{{udp, 1}}, tab.Rates(), "a failed Set changed the table")
			return
		}
		require.Equal(t, rates, tab.Rates())
		var cum uint64
		for _, r := range rates {
			require.True(t, r.TplID >= 0 && int(r.TplID) < reg.Len(), "slot %d", r.TplID)
			require.LessOrEqual(t, r.Pct, uint32(100))
			cum += uint64(r.Pct)
		}
		require.LessOrEqual(t, cum, uint64(100))

		printed, err := sample.AppendRates(nil, reg, rates)
		require.NoError(t, err)
		require.Equal(t, string(printed), tab.String())
		again, err := sample.Parse(reg, string(printed))
		require.NoError(t, err, "printed %q", printed)
		require.Equal(t, rates, again, "printed %q", printed)
	})
}
