package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

func run(args ...string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	code = mainArgs(args, &o, &e)
	return code, o.String(), e.String()
}

func TestUsage(t *testing.T) {
	code, _, stderr := run()
	require.Equal(t, 2, code)
	require.Contains(t, stderr, "usage: statsblob COMMAND")
	code, _, stderr = run("frobnicate")
	require.Equal(t, 2, code)
	require.Contains(t, stderr, `unknown command "frobnicate"`)
	for _, c := range []string{"run", "render", "inspect"} {
		code, _, stderr = run(c, "-h")
		require.Equal(t, 2, code, c)
		require.Contains(t, stderr, "usage: statsblob "+c, c)
	}
}

func TestRunScenario(t *testing.T) {
	scn := filepath.Join("..", "..", "testdata", "conformance", "scenarios", "01_manpage_example.scn")
	want, err := os.ReadFile(filepath.Join("..", "..", "testdata", "conformance", "golden", "01_manpage_example.out"))
	require.NoError(t, err)
	code, stdout, stderr := run("run", scn)
	require.Equal(t, 0, code, stderr)
	require.Equal(t, string(want), stdout)

	code, _, stderr = run("run", filepath.Join(t.TempDir(), "missing.scn"))
	require.Equal(t, 1, code)
	require.Contains(t, stderr, "no such file")
}

// writeFixture writes a blob file and a templates file.
func writeFixture(t *testing.T) (dir, blobFile, tplFile string) {
	t.Helper()
	dir = t.TempDir()
	reg := tpl.NewRegistry()
	tp, err := reg.New("CONN")
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "txbytes", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}))
	bl := blob.New(tp, blob.NewEnv(func() int64 { return blob.SBinTime(1000, 0) }, 1))
	require.NoError(t, bl.UpdateU64(0, 1448))
	blobFile = filepath.Join(dir, "conn.blob")
	require.NoError(t, os.WriteFile(blobFile, bl.Bytes(), 0o644))
	tplFile = filepath.Join(dir, "templates.json")
	require.NoError(t, writeTemplates(tplFile, tp))
	return dir, blobFile, tplFile
}

func TestRenderAndInspect(t *testing.T) {
	dir, bf, tf := writeFixture(t)
	code, stdout, stderr := run("render", "--format", "json", "--templates", tf, bf)
	require.Equal(t, 0, code, stderr)
	require.Equal(t, `{"tplname":"CONN","tplhash":`, stdout[:len(`{"tplname":"CONN","tplhash":`)])
	require.True(t, strings.HasSuffix(stdout, `"vois":{"txbytes":{"stats":{"SUM":{"errs":0,"val":1448}}}}}`+"\n"), stdout)

	code, stdout, _ = run("render", bf)
	require.Equal(t, 0, code)
	require.Contains(t, stdout, "\t\tvois[0]stat[1]: stype=SUM, errs=0\n\t\t\tvoistatdata: 1448\n")

	code, stdout, stderr = run("inspect", bf)
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, "conn.blob: ok: 64 bytes (maxsz 64)")
	require.Contains(t, stdout, "voi 0 INT_U64: SUM INT_U64, 8 bytes, errs=0")

	// A damaged file: a precise error, a non-zero exit, no crash.
	p, err := os.ReadFile(bf)
	require.NoError(t, err)
	p[12] = 0xff // stats_off
	bad := filepath.Join(dir, "bad.blob")
	require.NoError(t, os.WriteFile(bad, p, 0o644))
	code, _, stderr = run("inspect", bf, bad)
	require.Equal(t, 1, code)
	require.Contains(t, stderr, "bad.blob: blob: stats_off")
	code, _, stderr = run("render", bad)
	require.Equal(t, 1, code)
	require.Contains(t, stderr, "bad.blob")

	code, _, stderr = run("render", "--format", "xml", bf)
	require.Equal(t, 2, code)
	require.Contains(t, stderr, `unknown format "xml"`)
}

func TestDemoFilesInspectAndRender(t *testing.T) {
	out := filepath.Join(t.TempDir(), "demo")
	code, stdout, stderr := run("demo", "-conns", "200", "-out", out)
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, `template "TCP_DEFAULT":2301024101: 10 VOIs, 1656-byte blobs`)
	require.Contains(t, stdout, "p99.9")

	files, err := filepath.Glob(filepath.Join(out, "*.blob"))
	require.NoError(t, err)
	require.Greater(t, len(files), 10)
	code, stdout, stderr = run(append([]string{"inspect"}, files...)...)
	require.Equal(t, 0, code, stderr)
	require.Equal(t, len(files), strings.Count(stdout, ": ok: 1656 bytes"))

	code, stdout, stderr = run("render", "--templates", filepath.Join(out, "templates.json"), filepath.Join(out, "merged.blob"))
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, `name="TCP_RTT"`)

	m := filepath.Join(t.TempDir(), "m.blob")
	code, stdout, stderr = run(append([]string{"merge", "-o", m}, files[:5]...)...)
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, "merged 5 blobs")

	// The same seed gives the same files.
	out2 := filepath.Join(t.TempDir(), "demo2")
	code, _, stderr = run("demo", "-conns", "200", "-out", out2)
	require.Equal(t, 0, code, stderr)
	a, err := os.ReadFile(filepath.Join(out, "merged.blob"))
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(out2, "merged.blob"))
	require.NoError(t, err)
	require.Equal(t, a, b)
}
