package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/devstat"
	"github.com/statsblob/statsblob/tpl"
)

func TestIostat(t *testing.T) {
	tp, err := devstat.Template(tpl.NewRegistry())
	require.NoError(t, err)
	dir := t.TempDir()
	for _, d := range []string{"old", "new", "win", "after"} {
		require.NoError(t, os.Mkdir(filepath.Join(dir, d), 0o755))
	}
	// ada0: 100 writes of 64 KiB taking 1 ms each with 1 ms idle between;
	// da1: 10 reads of 4 KiB taking 10 ms, 90 ms idle.
	type dev struct {
		name       string
		op         devstat.Op
		n          int
		bytes      uint64
		busy, idle int64
	}
	for _, dv := range []dev{{"ada0", devstat.Write, 100, 64 << 10, 1e6, 1e6}, {"da1", devstat.Read, 10, 4 << 10, 10e6, 90e6}} {
		var now int64
		d, err := devstat.New(tp, devstat.Options{Clock: func() int64 { return now }})
		require.NoError(t, err)
		run := func() {
			for range dv.n {
				tx := d.Start()
				now += dv.busy
				require.NoError(t, d.End(tx, dv.bytes, dv.op, devstat.TagSimple))
				now += dv.idle
			}
		}
		run()
		write := func(sub string, reset bool) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, sub, dv.name+".blob"), d.Snapshot(reset).Bytes(), 0o644))
		}
		write("old", false)
		run()
		write("new", false)
		write("win", true)
		run()
		write("after", false)
	}
	run := func(args ...string) (string, string, int) {
		var out, errb bytes.Buffer
		code := mainArgs(append([]string{"iostat"}, args...), &out, &errb)
		return out.String(), errb.String(), code
	}
	out, stderr, code := run(filepath.Join(dir, "old"), filepath.Join(dir, "new"))
	require.Equal(t, 0, code, stderr)
	require.Equal(t, ""+
		"  device     tps   KB/t   MB/s  %busy    r/s     w/s    ms/r   ms/w  qmax   p50ms   p99ms\n"+
		"    ada0  500.00  64.00  31.25   50.0   0.00  500.00   0.000  1.000     1   0.785   1.042\n"+
		"     da1   10.00   4.00   0.04   10.0  10.00    0.00  10.000  0.000     1  12.582  16.692\n", out)
	// 1 ms lies in the latency histogram's bucket [523264, 1047552) ns, 10 ms
	// in [8388608-1024, 16777216-1024): their counts spread uniformly over them

	// the whole run as one window (since New): the digest's quantiles
	out, stderr, code = run(filepath.Join(dir, "win"))
	require.Equal(t, 0, code, stderr)
	require.Equal(t, ""+
		"  device     tps   KB/t   MB/s  %busy    r/s     w/s    ms/r   ms/w  qmax   p50ms   p99ms\n"+
		"    ada0  500.00  64.00  31.25   50.0   0.00  500.00   0.000  1.000     1   1.000   1.000\n"+
		"     da1   10.00   4.00   0.04   10.0  10.00    0.00  10.000  0.000     1  10.000  10.000\n", out)

	// a device reset between the readings (here by "win"'s snapshot with
	// reset), or missing from OLD, shows its figures since its reset; the
	// counters would otherwise fall (before: an error, exit status 1)
	out, stderr, code = run(filepath.Join(dir, "old"), filepath.Join(dir, "after"))
	require.Equal(t, 0, code, stderr)
	require.Equal(t, "statsblob iostat: device ada0: reset between the readings: figures since its reset\n"+
		"statsblob iostat: device da1: reset between the readings: figures since its reset\n", stderr)
	require.Equal(t, ""+
		"  device     tps   KB/t   MB/s  %busy    r/s     w/s    ms/r   ms/w  qmax   p50ms   p99ms\n"+
		"    ada0  500.00  64.00  31.25   50.0   0.00  500.00   0.000  1.000     1   1.000   1.000\n"+
		"     da1   10.00   4.00   0.04   10.0  10.00    0.00  10.000  0.000     1  10.000  10.000\n", out)
	require.NoError(t, os.Remove(filepath.Join(dir, "old", "da1.blob")))
	out, stderr, code = run(filepath.Join(dir, "old"), filepath.Join(dir, "new"))
	require.Equal(t, 0, code, stderr)
	require.Equal(t, "statsblob iostat: device da1: not in "+filepath.Join(dir, "old")+": figures since its last reset\n", stderr)
	require.Contains(t, out, "     da1   10.00   4.00   0.04   10.0  10.00    0.00  10.000  0.000     1")

	// readings out of order are refused per device
	out, stderr, code = run(filepath.Join(dir, "new"), filepath.Join(dir, "old", "ada0.blob"))
	require.Equal(t, 1, code)
	require.Contains(t, stderr, "device ada0: devstat: VOI ")
	require.Contains(t, stderr, "invalid argument")
	require.Equal(t, "  device  tps  KB/t  MB/s  %busy  r/s  w/s  ms/r  ms/w  qmax  p50ms  p99ms\n", out)
}

// A directory of readings is used file by file: a file that is no blob
// of a device is reported on its own line and the others are still shown
// (exit status 1); hidden files (a writer's temporary files) are not
// readings; symbolic links are followed; two files of one device are
// reported and the device is left out; "-" reads one device from stdin.
func TestIostatDirectories(t *testing.T) {
	tp, err := devstat.Template(tpl.NewRegistry())
	require.NoError(t, err)
	var now int64
	d, err := devstat.New(tp, devstat.Options{Clock: func() int64 { return now }})
	require.NoError(t, err)
	for range 10 {
		tx := d.Start()
		now += 1e6
		require.NoError(t, d.End(tx, 4096, devstat.Read, devstat.TagSimple))
		now += 1e6
	}
	good := d.Snapshot(false).Bytes()
	dir := t.TempDir()
	write := func(name string, p []byte) string {
		t.Helper()
		f := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(f), 0o755))
		require.NoError(t, os.WriteFile(f, p, 0o644))
		return f
	}
	write("mixed/ada0.blob", good)
	write("mixed/junk.blob", []byte("not a blob"))
	write("mixed/.ada1.blob.tmp123", []byte("half a blob"))
	require.NoError(t, os.Symlink(write("elsewhere/da1.blob", good), filepath.Join(dir, "mixed", "da1.blob")))
	write("dup/ada0.blob", good)
	write("dup/ada0.bak", good)
	write("dup/da1.blob", good)

	run := func(args ...string) (string, string, int) {
		var out, errb bytes.Buffer
		code := mainArgs(append([]string{"iostat"}, args...), &out, &errb)
		return out.String(), errb.String(), code
	}
	const head = "  device     tps  KB/t  MB/s  %busy     r/s   w/s   ms/r   ms/w  qmax  p50ms  p99ms\n"
	const row = "  500.00  4.00  1.95   50.0  500.00  0.00  1.000  0.000     1  1.000  1.000\n"
	out, stderr, code := run(filepath.Join(dir, "mixed"))
	require.Equal(t, 1, code)
	require.Equal(t, "statsblob iostat: "+filepath.Join(dir, "mixed", "junk.blob")+": blob: need at least 32 bytes of header, have 10: invalid argument\n", stderr)
	require.Equal(t, head+"    ada0"+row+"     da1"+row, out)

	out, stderr, code = run(filepath.Join(dir, "dup"))
	require.Equal(t, 1, code)
	require.Equal(t, "statsblob iostat: device ada0: two readings, "+filepath.Join(dir, "dup", "ada0.bak")+" and "+filepath.Join(dir, "dup", "ada0.blob")+"\n", stderr)
	require.Equal(t, head+"     da1"+row, out)

	stdin := os.Stdin
	defer func() { os.Stdin = stdin }()
	os.Stdin, err = os.Open(filepath.Join(dir, "dup", "da1.blob"))
	require.NoError(t, err)
	defer os.Stdin.Close()
	out, stderr, code = run("-")
	require.Equal(t, 0, code, stderr)
	require.Equal(t, head+"       -"+row, out)
}
