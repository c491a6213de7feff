package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

func TestDerive(t *testing.T) {
	tp, err := tpl.NewRegistry().New("CACHE")
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "hits", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}))
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 1, Name: "lookups", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}))
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 2, Name: "wait_ms", DType: voi.IntU32, Stats: []tpl.StatSpec{tpl.Sum()}}))
	require.NoError(t, tp.SetVOIMeta(2, tpl.VOIMeta{Unit: "ms", Count: "lookups"}))
	require.NoError(t, tp.SetDerived([]tpl.Derived{
		{Name: "hit_percent", Op: tpl.OpPercent, Of: "hits", By: "lookups"},
		{Name: "lookup_rate", Op: tpl.OpRate, Of: "lookups", Unit: "per_second"},
		{Name: "wait", Op: tpl.OpDifference, Of: "wait_ms", Unit: "ms"},
	}))
	dir := t.TempDir()
	tj, err := json.Marshal([]*tpl.Template{tp})
	require.NoError(t, err)
	tfile := filepath.Join(dir, "templates.json")
	require.NoError(t, os.WriteFile(tfile, tj, 0o644))
	b := blob.New(tp, nil)
	w, err := blob.CountedOf(tp, 2)
	require.NoError(t, err)
	for _, hit := range []bool{true, false, true, true} {
		require.NoError(t, w.UpdateU32(b, 20))
		if hit {
			require.NoError(t, b.UpdateU64(0, 1))
		}
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "old.blob"), b.Bytes(), 0o644))
	require.NoError(t, w.UpdateU32(b, 120))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "new.blob"), b.Bytes(), 0o644))

	run := func(args ...string) (string, string, int) {
		var out, errb bytes.Buffer
		code := mainArgs(append([]string{"derive"}, args...), &out, &errb)
		return out.String(), errb.String(), code
	}
	out, stderr, code := run("-templates", tfile, "-elapsed", "2s", filepath.Join(dir, "new.blob"))
	require.Equal(t, 0, code, stderr)
	require.Equal(t, ""+
		"metric        op          value  unit\n"+
		"hit_percent   percent     60     \n"+
		"lookup_rate   rate        2.5    per_second\n"+
		"wait          difference  200    ms\n"+
		"wait_ms_mean  average     0.04   seconds\n", out)
	out, stderr, code = run("-templates", tfile, filepath.Join(dir, "old.blob"), filepath.Join(dir, "new.blob"))
	require.Equal(t, 0, code, stderr)
	require.Equal(t, ""+
		"metric        op          value  unit\n"+
		"hit_percent   percent     0      \n"+
		"lookup_rate   rate        NaN    per_second\n"+
		"wait          difference  120    ms\n"+
		"wait_ms_mean  average     0.12   seconds\n", out)
	_, _, code = run(filepath.Join(dir, "new.blob"))
	require.Equal(t, 2, code)
	_, stderr, code = run("-templates", tfile, filepath.Join(dir, "new.blob"), filepath.Join(dir, "old.blob"))
	require.Equal(t, 1, code)
	require.Contains(t, stderr, "invalid argument")
}

// A negative -elapsed is a usage error, not a NaN rate.
func TestDeriveNegativeElapsed(t *testing.T) {
	var out, errb bytes.Buffer
	code := mainArgs([]string{"derive", "-templates", "t.json", "-elapsed", "-5m", "new.blob"}, &out, &errb)
	require.Equal(t, 2, code)
	require.Equal(t, "", out.String())
	require.Contains(t, errb.String(), "statsblob derive: -elapsed -5m0s is negative\n")
}

// record updates a VOI whose metadata declares a count as blob.CountedOf
// does: each recorded value adds one to the count VOI (a refused one
// does not), so derive gives its mean.
func TestRecordCountsDeclaredCount(t *testing.T) {
	tp, err := tpl.NewRegistry().New("WAIT")
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "wait_ms", DType: voi.IntU32, Stats: []tpl.StatSpec{tpl.Sum(), tpl.Max()}}))
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 1, Name: "waits", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}))
	require.NoError(t, tp.SetVOIMeta(0, tpl.VOIMeta{Unit: "ms", Count: "waits"}))
	dir := t.TempDir()
	tj, err := json.Marshal([]*tpl.Template{tp})
	require.NoError(t, err)
	tfile := filepath.Join(dir, "templates.json")
	require.NoError(t, os.WriteFile(tfile, tj, 0o644))
	in := filepath.Join(dir, "in.txt")
	require.NoError(t, os.WriteFile(in, []byte("20\n30\nx\n"), 0o644))
	out := filepath.Join(dir, "w.blob")

	var o, e bytes.Buffer
	require.Equal(t, 1, mainArgs([]string{"record", "-templates", tfile, "-tpl", "WAIT", "-voi", "wait_ms", "-o", out, in}, &o, &e))
	b, err := readBlob(out)
	require.NoError(t, err)
	n, err := b.FetchU64(1, voi.Sum)
	require.NoError(t, err)
	require.Equal(t, uint64(2), n)

	o.Reset()
	e.Reset()
	require.Equal(t, 0, mainArgs([]string{"derive", "-templates", tfile, out}, &o, &e), e.String())
	require.Equal(t, ""+
		"metric        op       value  unit\n"+
		"wait_ms_mean  average  0.025  seconds\n", o.String())
}

// A templates file holding an empty array says so, where the message lists
// what a file holds ("(it holds )" before).
func TestEmptyTemplatesFile(t *testing.T) {
	tp, err := tpl.NewRegistry().New("E")
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "a", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}))
	dir := t.TempDir()
	tfile, bfile := filepath.Join(dir, "t.json"), filepath.Join(dir, "b.blob")
	require.NoError(t, os.WriteFile(tfile, []byte("[]\n"), 0o644))
	require.NoError(t, os.WriteFile(bfile, blob.New(tp, nil).Bytes(), 0o644))
	for _, args := range [][]string{
		{"derive", "-templates", tfile, bfile},
		{"render", "-templates", tfile, bfile},
	} {
		var o, e bytes.Buffer
		require.Equal(t, 1, mainArgs(args, &o, &e), args)
		require.Contains(t, e.String(), "is not in templates file "+tfile+" (it holds no template)\n", args)
	}
	var o, e bytes.Buffer
	require.Equal(t, 1, mainArgs([]string{"record", "-templates", tfile, "-tpl", "E", "-voi", "a", "-o", filepath.Join(dir, "r.blob"), "-"}, &o, &e))
	require.Equal(t, "statsblob record: templates file "+tfile+" has no template \"E\" (it holds no template)\n", e.String())
}

// A blob reset between OLD and NEW (NEW's last reset is after OLD's) made
// derive fail ("a counter that fell"); NEW now stands alone, its rates over
// the time from the reset to -at (or -elapsed without it), and stderr says
// so as iostat does. A counter reset alone counts from its reset, named on
// stderr; readings in the wrong order are still an error.
func TestDeriveReset(t *testing.T) {
	tp, err := tpl.NewRegistry().New("CACHE")
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "hits", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}))
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 1, Name: "lookups", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}))
	require.NoError(t, tp.SetDerived([]tpl.Derived{
		{Name: "hit_percent", Op: tpl.OpPercent, Of: "hits", By: "lookups"},
		{Name: "lookup_rate", Op: tpl.OpRate, Of: "lookups"},
	}))
	dir := t.TempDir()
	tj, err := json.Marshal([]*tpl.Template{tp})
	require.NoError(t, err)
	tfile := filepath.Join(dir, "templates.json")
	require.NoError(t, os.WriteFile(tfile, tj, 0o644))
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	b := blob.New(tp, blob.NewEnv(func() int64 { return blob.SBinTimeOf(now) }, 1))
	write := func(name string, b *blob.Blob) string {
		f := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(f, b.Bytes(), 0o644))
		return f
	}
	require.NoError(t, b.UpdateU64(0, 900))
	require.NoError(t, b.UpdateU64(1, 1000))
	old := write("old.blob", b)
	now = now.Add(time.Minute)
	b.Reset() // 12:01
	require.NoError(t, b.UpdateU64(0, 30))
	require.NoError(t, b.UpdateU64(1, 40))
	reset := write("reset.blob", b)

	run := func(args ...string) (string, string, int) {
		var out, errb bytes.Buffer
		code := mainArgs(append([]string{"derive", "-templates", tfile}, args...), &out, &errb)
		return out.String(), errb.String(), code
	}
	out, stderr, code := run("-elapsed", "80s", "-at", "2026-11-27T12:01:20Z", old, reset)
	require.Equal(t, 0, code, stderr)
	require.Equal(t, ""+
		"metric       op       value  unit\n"+
		"hit_percent  percent  75     \n"+
		"lookup_rate  rate     2      \n", out)
	require.Equal(t, "statsblob derive: "+reset+" was reset at 2026-11-27T12:01:00Z, after "+old+": figures since its reset, rates over -at minus the reset\n", stderr)
	out, stderr, code = run("-elapsed", "80s", old, reset)
	require.Equal(t, 0, code, stderr)
	require.Contains(t, out, "lookup_rate  rate     0.5    \n")
	require.Contains(t, stderr, "rates over -elapsed (-at gives the time since the reset)\n")

	// Readings in the wrong order.
	_, stderr, code = run("-elapsed", "80s", reset, old)
	require.Equal(t, 1, code)
	require.Equal(t, "statsblob derive: derive: the earlier reading was reset at 2026-11-27T12:01:00Z, after the later one (2026-11-27T12:00:00Z): readings in the wrong order: invalid argument\n", stderr)

	// hits reset alone (its VOI), lookups growing.
	require.NoError(t, b.ResetVOI(0))
	require.NoError(t, b.UpdateU64(0, 8))
	require.NoError(t, b.UpdateU64(1, 10))
	alone := write("alone.blob", b)
	out, stderr, code = run("-elapsed", "5s", reset, alone)
	require.Equal(t, 0, code, stderr)
	require.Equal(t, ""+
		"metric       op       value  unit\n"+
		"hit_percent  percent  80     \n"+
		"lookup_rate  rate     2      \n", out)
	require.Equal(t, "statsblob derive: a counter fell from "+reset+" to "+alone+", reset on its own: figures of hit_percent since that reset\n", stderr)

	_, stderr, code = run("-at", "noon", reset)
	require.Equal(t, 2, code)
	require.Contains(t, stderr, `statsblob derive: -at "noon" is not an RFC 3339 time`)
}
