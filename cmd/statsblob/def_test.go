package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/statdef"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// TestDefRemote: def reads and changes the definition a statdef.Handler
// serves over a real Control and blob, and reports refusals.
func TestDefRemote(t *testing.T) {
	f := newFixture(t, 1, spread)
	b := f.blobs[0].Clone()
	ctl := &blob.Control{Clock: func() time.Time { return time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC) }}
	b.SetControl(ctl)
	h := statdef.Handler(statdef.Def{Template: f.tp, Control: ctl, Reset: b})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer s3cret" {
			http.Error(w, "a token is required\nsecond line", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	url := srv.URL + "/definition"

	require.Equal(t, result{0, "on=1\nname=txbytes on=1\nname=rtt on=1\nname=idle on=1\n", ""}, sb(t, "def", "-token", "s3cret", url))

	want := f.blobs[0].Clone()
	require.NoError(t, want.ResetVOI(voiTx))
	r := sb(t, "def", url, "-token", "s3cret", "name=rtt on=0", "name=txbytes data=reset")
	require.Equal(t, result{0, "on=1\nname=txbytes on=1\nname=rtt on=0 stopped=2026-11-27T12:00:00Z\nname=idle on=1\n", ""}, r)
	require.Equal(t, want.Bytes(), b.Bytes(), "txbytes reset as blob.ResetVOI does, rtt kept")
	require.NoError(t, b.UpdateU32(voiRTT, 999)) // off: not counted
	require.Equal(t, want.Bytes(), b.Bytes())

	// Lines from a file and from standard input.
	lines := f.write(t, "def.txt", []byte("on=0\n\nname=rtt on=1\n"))
	wantAll := "on=0 stopped=2026-11-27T12:00:00Z\nname=txbytes on=1\nname=rtt on=1 started=2026-11-27T12:00:00Z stopped=2026-11-27T12:00:00Z\nname=idle on=1\n"
	require.Equal(t, result{0, wantAll, ""}, sb(t, "def", "-token", "s3cret", "-f", lines, url))
	require.Equal(t, result{0, "on=1 started=2026-11-27T12:00:00Z stopped=2026-11-27T12:00:00Z\n" + wantAll[len("on=0 stopped=2026-11-27T12:00:00Z\n"):], ""},
		sbIn(t, f.dir, []byte("on=1\n"), "def", "-token", "s3cret", "-f", "-", url))
	require.True(t, ctl.On(voiRTT))

	// Refusals change nothing and exit 1 with the server's reason.
	before := append([]byte(nil), b.Bytes()...)
	for _, c := range []struct {
		args []string
		res  result
	}{
		{[]string{"-token", "s3cret", url, "name=rtt on=0", "name=nope data=reset"},
			result{1, "", "statsblob def: " + url + ": 400 Bad Request: statdef: line 2: no VOI named \"nope\" in \"CONN\":" + hashOf(f) + ": invalid argument\n"}},
		{[]string{url}, result{1, "", "statsblob def: " + url + ": 401 Unauthorized: a token is required\n"}},
		{[]string{"-token", "s3cret", "-f", lines, url, "on=0"},
			result{2, "", "statsblob def: LINE arguments and -f: give the lines one way\n" + defUsage}},
		{[]string{"-token", "s3cret", "-o", "x", url},
			result{2, "", "statsblob def: -templates and -o are for a BLOB file, not a URL\n" + defUsage}},
		{[]string{url, "on=0\nname=rtt on=1"},
			result{2, "", "statsblob def: LINE \"on=0\\nname=rtt on=1\" holds a line break: give each line as its own argument\n" + defUsage}},
		// A timeout of 0 or less gave up before asking ("context deadline exceeded", exit 1).
		{[]string{"-token", "s3cret", "-timeout", "0", url},
			result{2, "", "statsblob def: -timeout 0s: want a positive duration\n" + defUsage}},
	} {
		require.Equal(t, c.res, sb(t, append([]string{"def"}, c.args...)...), c.args)
	}
	require.Equal(t, before, b.Bytes())
	require.True(t, ctl.On(voiRTT))
}

const defUsage = "usage: statsblob def [-token T] [-timeout D] [-f FILE] [-templates TFILE -o OUT] URL|BLOB [LINE...]\nRun 'statsblob def -h' for help.\n"

func hashOf(f *fixture) string { return strconv.FormatUint(uint64(f.tp.Hash()), 10) }

// TestDefFile: on a blob file, data=reset lines give the bytes
// blob.ResetVOI gives; on= and missing flags are usage errors.
func TestDefFile(t *testing.T) {
	f := newFixture(t, 1, spread)
	out := filepath.Join(f.dir, "out.blob")
	for _, c := range []struct {
		lines  []string
		ids    []int32
		stderr string
	}{
		{[]string{"name=rtt data=reset"}, []int32{voiRTT}, "statsblob def: reset rtt of CONN\n"},
		{[]string{"data=reset"}, []int32{voiTx, voiRTT, voiIdle}, "statsblob def: reset txbytes, rtt, idle of CONN\n"},
		{[]string{"name=idle data=reset started=2026-11-27T12:00:00Z", "", "name=txbytes data=reset"}, []int32{voiIdle, voiTx}, "statsblob def: reset idle, txbytes of CONN\n"},
	} {
		r := sb(t, append([]string{"def", "-templates", f.tplFile, "-o", out, f.files[0]}, c.lines...)...)
		require.Equal(t, result{0, "", c.stderr}, r, c.lines)
		want := f.blobs[0].Clone()
		for _, id := range c.ids {
			require.NoError(t, want.ResetVOI(id))
		}
		got, err := os.ReadFile(out)
		require.NoError(t, err)
		require.Equal(t, want.Bytes(), got, c.lines)
		require.NotEqual(t, f.blobs[0].Bytes(), got)
	}
	// The reset VOI's statistics are those of a fresh blob.
	got, err := os.ReadFile(out)
	require.NoError(t, err)
	gb, err := blob.FromBytes(got, nil)
	require.NoError(t, err)
	s, err := gb.Fetch(voiTx, voi.Sum)
	require.NoError(t, err)
	v, _ := s.Value()
	require.Equal(t, 0.0, v)

	// Standard output, and lines from a file.
	lines := f.write(t, "reset.txt", []byte("name=rtt data=reset\n"))
	r := sb(t, "def", "-templates", f.tplFile, "-o", "-", "-f", lines, f.files[0])
	require.Equal(t, 0, r.code, r.stderr)
	want := f.blobs[0].Clone()
	require.NoError(t, want.ResetVOI(voiRTT))
	require.Equal(t, string(want.Bytes()), r.stdout)

	require.NoError(t, os.Remove(out))
	for _, c := range []struct {
		args []string
		res  result
	}{
		{[]string{"-templates", f.tplFile, "-o", out, f.files[0], "name=rtt on=0"},
			result{2, "", "statsblob def: line 1: \"on=0\": on/off has no meaning for a blob file (only data=reset)\n" + defUsage}},
		{[]string{"-templates", f.tplFile, "-o", out, f.files[0]},
			result{2, "", "statsblob def: a BLOB file needs data=reset lines: a file keeps no on/off settings to print\n" + defUsage}},
		{[]string{"-o", out, f.files[0], "data=reset"},
			result{2, "", "statsblob def: a BLOB file needs -templates TFILE and -o OUT (or give an http:// or https:// URL)\n" + defUsage}},
		{[]string{"-token", "x", "-templates", f.tplFile, "-o", out, f.files[0], "data=reset"},
			result{2, "", "statsblob def: -token is for a URL, not a BLOB file\n" + defUsage}},
		{[]string{"-templates", f.tplFile, "-o", out, f.files[0], "name=nope data=reset"},
			result{1, "", "statsblob def: " + f.files[0] + ": statdef: line 1: no VOI named \"nope\" in \"CONN\":" + hashOf(f) + ": invalid argument\n"}},
		{[]string{"-templates", f.tplFile, "-o", out, f.files[0], "name=rtt data=clear"},
			result{1, "", "statsblob def: " + f.files[0] + ": statdef: line 1: \"data=clear\": unknown key or value (name= first, on=0|1, data=reset): invalid argument\n"}},
	} {
		require.Equal(t, c.res, sb(t, append([]string{"def"}, c.args...)...), c.args)
	}
	_, err = os.Stat(out)
	require.True(t, os.IsNotExist(err), "a refused definition writes no OUT")
}

// A blob file's definition is read as Apply reads it: a quoted VOI name
// holding " on=" is a name, not an on/off setting (the check split the
// line on spaces and refused name="a on=1" data=reset as a usage error).
func TestDefFileQuotedName(t *testing.T) {
	tp, err := tpl.NewRegistry().New("Q")
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "a on=1", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}))
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 1, Name: "b", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}))
	dir := t.TempDir()
	tfile, in, out := filepath.Join(dir, "t.json"), filepath.Join(dir, "in.blob"), filepath.Join(dir, "out.blob")
	require.NoError(t, writeTemplates(tfile, tp))
	b := blob.New(tp, nil)
	require.NoError(t, b.UpdateU64(0, 5))
	require.NoError(t, b.UpdateU64(1, 7))
	require.NoError(t, os.WriteFile(in, b.Bytes(), 0o644))

	run := func(lines ...string) result {
		var o, e bytes.Buffer
		code := mainArgs(append([]string{"def", "-templates", tfile, "-o", out, in}, lines...), &o, &e)
		return result{code, o.String(), e.String()}
	}
	require.Equal(t, result{0, "", "statsblob def: reset \"a on=1\" of Q\n"}, run(`name="a on=1" data=reset`))
	got, err := readBlob(out)
	require.NoError(t, err)
	want := b.Clone()
	require.NoError(t, want.ResetVOI(0))
	require.Equal(t, want.Bytes(), got.Bytes())

	require.NoError(t, os.Remove(out))
	r := run("data=reset", `name="a on=1" on=0`)
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, "statsblob def: line 2: \"on=0\": on/off has no meaning for a blob file (only data=reset)\n")
	_, err = os.Stat(out)
	require.True(t, os.IsNotExist(err), "a refused definition writes no OUT")
}
