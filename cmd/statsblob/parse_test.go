package main

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// testFlags returns a flag set with a string flag -s and a bool flag -b.
func testFlags(stdout, stderr io.Writer) (*flagSet, *string, *bool) {
	fs := newFlags("t", "t [-s S] [-b] FILE...", "About t.\n", stdout, stderr)
	return fs, fs.String("s", "", "a `S`"), fs.Bool("b", false, "a bool")
}

func TestParseInterleaved(t *testing.T) {
	f := func(args []string, wantPos []string, wantS string, wantB bool) {
		t.Helper()
		fs, s, b := testFlags(io.Discard, io.Discard)
		pos, code, ok := fs.parse(args, 0)
		require.True(t, ok, "%q: code %d", args, code)
		require.Equal(t, wantPos, pos, args)
		require.Equal(t, wantS, *s, args)
		require.Equal(t, wantB, *b, args)
	}
	f(nil, nil, "", false)
	f([]string{"a", "-s", "x", "b"}, []string{"a", "b"}, "x", false)
	f([]string{"a", "b", "--s=x", "-b"}, []string{"a", "b"}, "x", true)
	f([]string{"-", "-b", "a"}, []string{"-", "a"}, "", true)
	f([]string{"a", "--", "-b", "-s"}, []string{"a", "-b", "-s"}, "", false)
	f([]string{"-s", "-", "a"}, []string{"a"}, "-", false)
	f([]string{"-s", "--", "a", "-b"}, []string{"a"}, "--", true)
}

func TestParseHelpAndErrors(t *testing.T) {
	var o, e bytes.Buffer
	fs, _, _ := testFlags(&o, &e)
	_, code, ok := fs.parse([]string{"a", "--help", "-x"}, 1)
	require.False(t, ok)
	require.Equal(t, 0, code)
	require.Equal(t, "usage: statsblob t [-s S] [-b] FILE...\n\nAbout t.\n\nflags:\n  -b\ta bool\n  -s S\n    \ta S\n"+commonHelp+fileHelp, o.String())
	require.Empty(t, e.String())

	o.Reset()
	fs, _, _ = testFlags(&o, &e)
	_, code, ok = fs.parse([]string{"-b"}, 1)
	require.False(t, ok)
	require.Equal(t, 2, code)
	require.Empty(t, o.String())
	require.Equal(t, "statsblob t: missing file arguments\nusage: statsblob t [-s S] [-b] FILE...\nRun 'statsblob t -h' for help.\n", e.String())
}

// FuzzParseArgs: parsing is stable. Whatever the arguments, parse does not
// panic, and when it succeeds, the flags it read followed by "--" and the
// positional arguments it returned parse to the same result.
func FuzzParseArgs(f *testing.F) {
	for _, s := range []string{"a\x00-s\x00x\x00b", "-\x00--\x00-b", "-s\x00--\x00a", "a\x00-b=false\x00--s=\x00c", "-h", "-x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		args := strings.Split(in, "\x00")
		fs, s, b := testFlags(io.Discard, io.Discard)
		pos, code, ok := fs.parse(args, 0)
		if !ok {
			if code != 0 && code != 2 {
				t.Fatalf("%q: exit code %d", args, code)
			}
			return
		}
		again := append([]string{"-s", *s, "-b=" + map[bool]string{true: "true", false: "false"}[*b], "--"}, pos...)
		fs2, s2, b2 := testFlags(io.Discard, io.Discard)
		pos2, _, ok2 := fs2.parse(again, 0)
		if !ok2 || *s2 != *s || *b2 != *b || strings.Join(pos2, "\x00") != strings.Join(pos, "\x00") {
			t.Fatalf("%q gave %q -s %q -b %v; %q gave %q -s %q -b %v (ok %v)", args, pos, *s, *b, again, pos2, *s2, *b2, ok2)
		}
	})
}

// FuzzParseQuantiles: an accepted list holds one quantile in [0, 1] per
// comma-separated field.
func FuzzParseQuantiles(f *testing.F) {
	for _, s := range []string{"0.5,0.99", "0", "1", "1.5", "NaN", "-0", "0x1p-2", " 0.5 , 1", "", "p50,p99,p99.9", "99.9%", "p100", "p0.001"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		qs, err := parseQuantiles(s)
		if err != nil {
			return
		}
		fields := strings.Split(s, ",")
		if len(qs) != len(fields) {
			t.Fatalf("%q: %d quantiles", s, len(qs))
		}
		for i, q := range qs {
			if math.IsNaN(q) || q < 0 || q > 1 {
				t.Fatalf("%q: quantile %v", s, q)
			}
			// A percentile is its number over 100, to the float64 nearest.
			f := strings.TrimSpace(fields[i])
			pct, ok := strings.CutPrefix(f, "p")
			if !ok {
				pct, ok = strings.CutSuffix(f, "%")
			}
			if ok {
				p, err := strconv.ParseFloat(pct, 64)
				if err != nil || math.Abs(p/100-q) > 1e-15 {
					t.Fatalf("%q: percentile %q gave %v", s, f, q)
				}
			}
		}
	})
}

// FuzzParseTemplates: an accepted templates file registers each of its
// templates under its hash, and a template's own JSON form reads back as
// the same template.
func FuzzParseTemplates(f *testing.F) {
	tp, err := tpl.NewRegistry().New("CONN")
	require.NoError(f, err)
	require.NoError(f, tp.AddVOI(tpl.VOIDef{ID: 1, Name: "rtt", DType: voi.IntU32, Stats: []tpl.StatSpec{tpl.Max(), tpl.TDigest(voi.TDgstClust32, 20, 4)}}))
	one, err := json.Marshal(tp)
	require.NoError(f, err)
	f.Add(one)
	f.Add([]byte("[" + string(one) + "]"))
	f.Add([]byte(" \n[]"))
	f.Add([]byte("{}"))
	f.Fuzz(func(t *testing.T, p []byte) {
		ts, err := parseTemplates("f", p)
		if err != nil {
			return
		}
		for _, tp := range ts.list {
			got, err := ts.byHash(tp.Hash())
			if err != nil || got != tp {
				t.Fatalf("template %s: byHash gave %v, %v", tp.Spec(), got, err)
			}
			again, err := json.Marshal(tp)
			require.NoError(t, err)
			ts2, err := parseTemplates("g", again)
			if err != nil || len(ts2.list) != 1 || ts2.list[0].Hash() != tp.Hash() || ts2.list[0].Name() != tp.Name() {
				t.Fatalf("template %s does not read back: %v", tp.Spec(), err)
			}
		}
	})
}
