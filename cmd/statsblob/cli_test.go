package main

// Tests of the built binary: exact stdout, stderr and exit status.

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/hist"
	"github.com/statsblob/statsblob/internal/abi"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
	binDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// sbBinary builds the statsblob binary once per test run.
func sbBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		if binDir, binErr = os.MkdirTemp("", "statsblob-cli-test"); binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "statsblob")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	require.NoError(t, binErr)
	return binPath
}

// result is what one run of the binary gave.
type result struct {
	code           int
	stdout, stderr string
}

// sbIn runs the binary in dir with stdin and args.
func sbIn(t *testing.T, dir string, stdin []byte, args ...string) result {
	t.Helper()
	return sbRun(t, dir, stdin, nil, args...)
}

// sbRun runs the binary in dir with stdin, extra environment variables
// and args, and returns its exit status and output.
func sbRun(t *testing.T, dir string, stdin []byte, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(sbBinary(t), args...)
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(stdin)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return result{code, o.String(), e.String()}
}

// sb runs the binary in a fresh directory without input.
func sb(t *testing.T, args ...string) result {
	t.Helper()
	return sbIn(t, t.TempDir(), nil, args...)
}

// fixture is a set of blob files of one template and its templates files.
type fixture struct {
	dir     string
	tp      *tpl.Template
	tplFile string // the array form, as the demo writes
	objFile string // json.Marshal(tp): one object
	files   []string
	blobs   []*blob.Blob
}

const (
	voiTx   = 0 // "txbytes": SUM
	voiRTT  = 1 // "rtt": MAX, MIN, CRHIST32 lin 0..1000 step 50, TDGSTCLUST32(20,4)
	voiIdle = 2 // "idle": a t-digest and a histogram, never updated
)

// newFixture writes n blob files; blob i holds rtt(i, j) for j < 50.
func newFixture(t *testing.T, n int, rtt func(i, j int) uint32) *fixture {
	t.Helper()
	f := &fixture{dir: t.TempDir()}
	reg := tpl.NewRegistry()
	tp, err := reg.New("CONN")
	require.NoError(t, err)
	lin := hist.Spec{DType: voi.CRHist32, Scheme: hist.Lin, LB: 0, UB: 1000, StepInc: 50}
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: voiTx, Name: "txbytes", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}))
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: voiRTT, Name: "rtt", DType: voi.IntU32, Stats: []tpl.StatSpec{
		tpl.Max(), tpl.Min(), tpl.Histogram(lin), tpl.TDigest(voi.TDgstClust32, 20, 4)}}))
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: voiIdle, Name: "idle", DType: voi.IntU32, Stats: []tpl.StatSpec{
		tpl.Histogram(lin), tpl.TDigest(voi.TDgstClust32, 20, 4)}}))
	f.tp = tp
	for i := 0; i < n; i++ {
		b := blob.New(tp, blob.NewEnv(func() int64 { return blob.SBinTime(int64(1000+i), 0) }, 1))
		require.NoError(t, b.UpdateU64(voiTx, uint64(1448*(i+1))))
		for j := 0; j < 50; j++ {
			require.NoError(t, b.UpdateU32(voiRTT, rtt(i, j)))
		}
		name := filepath.Join(f.dir, fmt.Sprintf("conn-%d.blob", i))
		require.NoError(t, os.WriteFile(name, b.Bytes(), 0o644))
		f.files = append(f.files, name)
		f.blobs = append(f.blobs, b)
	}
	f.tplFile = filepath.Join(f.dir, "templates.json")
	require.NoError(t, writeTemplates(f.tplFile, tp))
	p, err := json.Marshal(tp)
	require.NoError(t, err)
	f.objFile = filepath.Join(f.dir, "template.json")
	require.NoError(t, os.WriteFile(f.objFile, p, 0o644))
	return f
}

func spread(i, j int) uint32 { return uint32(100 + (i*37+j*13)%700) }

// write writes a file into the fixture's directory.
func (f *fixture) write(t *testing.T, name string, p []byte) string {
	t.Helper()
	name = filepath.Join(f.dir, name)
	require.NoError(t, os.WriteFile(name, p, 0o644))
	return name
}

// otherTemplate returns the bytes of a blob of another template.
func otherTemplate(t *testing.T) []byte {
	t.Helper()
	tp, err := tpl.NewRegistry().New("OTHER")
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "x", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}))
	return blob.New(tp, blob.NewEnv(func() int64 { return 1 }, 1)).Bytes()
}

func TestTopLevelHelp(t *testing.T) {
	want := sb(t, "-h")
	require.Equal(t, 0, want.code)
	require.Empty(t, want.stderr)
	for _, args := range [][]string{{"--help"}, {"-help"}, {"help"}} {
		require.Equal(t, want, sb(t, args...), args)
	}
	// Every subcommand, one line each, in the table's order.
	var names []string
	for _, line := range strings.Split(want.stdout, "\n") {
		if m := regexp.MustCompile(`^  ([a-z]+) +\S.*$`).FindStringSubmatch(line); m != nil {
			names = append(names, m[1])
		}
	}
	var table []string
	for _, c := range commands {
		table = append(table, c.name)
	}
	require.Equal(t, table, names)
	require.True(t, strings.HasPrefix(want.stdout, "usage: statsblob COMMAND [FLAGS] [FILE...]\n\ncommands:\n"), want.stdout)

	require.Equal(t, result{2, "", want.stdout}, sb(t))
	require.Equal(t, result{2, "", "statsblob: unknown command \"frobnicate\"\n" + want.stdout}, sb(t, "frobnicate"))
	require.Equal(t, result{2, "", "statsblob: unknown command \"frob\"\n" + want.stdout}, sb(t, "help", "frob"))
}

var (
	usageLineRE = regexp.MustCompile(`^usage: statsblob (\S+)(.*)$`)
	flagLineRE  = regexp.MustCompile(`^  -([a-z]+)(?: (\S+))?$`)
	usageFlagRE = regexp.MustCompile(`-([a-z]+)(?: ([A-Z][A-Z|]*|[a-z]+\|[a-z|]+))?`)
)

// TestCommandHelp checks every command's help: the same full text on
// stdout with -h, --help and 'help CMD', exit 0, and a synopsis that names
// exactly the flags of the flag list, with the same argument names.
func TestCommandHelp(t *testing.T) {
	for _, c := range commands {
		t.Run(c.name, func(t *testing.T) {
			r := sb(t, c.name, "-h")
			require.Equal(t, 0, r.code)
			require.Empty(t, r.stderr)
			require.Equal(t, r, sb(t, c.name, "--help"))
			require.Equal(t, r, sb(t, "help", c.name))
			lines := strings.Split(r.stdout, "\n")
			m := usageLineRE.FindStringSubmatch(lines[0])
			require.NotNil(t, m, lines[0])
			require.Equal(t, c.name, m[1])
			synopsis := map[string]string{}
			for _, f := range usageFlagRE.FindAllStringSubmatch(m[2], -1) {
				synopsis[f[1]] = f[2]
			}
			listed := map[string]string{}
			for _, line := range lines {
				if f := flagLineRE.FindStringSubmatch(line); f != nil {
					listed[f[1]] = f[2]
				}
			}
			require.Equal(t, listed, synopsis, "synopsis %q against the flag list", m[2])
			if !strings.HasSuffix(m[2], "FILE...") { // commands that read no files
				require.True(t, strings.HasSuffix(r.stdout, commonHelp) && !strings.HasSuffix(r.stdout, fileHelp), r.stdout)
			} else {
				require.True(t, strings.HasSuffix(r.stdout, commonHelp+fileHelp), r.stdout)
			}
		})
	}
}

func TestUsageErrors(t *testing.T) {
	synopsis := func(cmd, usage string) string {
		return "usage: statsblob " + usage + "\nRun 'statsblob " + cmd + " -h' for help.\n"
	}
	render := "render [-format freeform|json] [-array] [-objdump] [-templates FILE] FILE..."
	require.Equal(t, result{2, "", "statsblob render: flag provided but not defined: -x\n" + synopsis("render", render)},
		sb(t, "render", "-x", "f.blob"))
	require.Equal(t, result{2, "", "statsblob render: flag provided but not defined: -x\n" + synopsis("render", render)},
		sb(t, "render", "f.blob", "-x"))
	require.Equal(t, result{2, "", "statsblob render: missing file arguments\n" + synopsis("render", render)},
		sb(t, "render"))
	require.Equal(t, result{2, "", "statsblob render: unknown format \"xml\" (freeform or json)\n" + synopsis("render", render)},
		sb(t, "render", "--format", "xml", "f.blob"))
	require.Equal(t, result{2, "", "statsblob render: -array needs -format json\n" + synopsis("render", render)},
		sb(t, "render", "-array", "f.blob"))
	require.Equal(t, result{2, "", "statsblob inspect: \"-\" (standard input) given 2 times\n" + synopsis("inspect", "inspect [-templates FILE] FILE...")},
		sb(t, "inspect", "-", "-"))
	require.Equal(t, result{2, "", "statsblob merge: -o OUT is required\n" + synopsis("merge", "merge -o OUT [-templates FILE] FILE...")},
		sb(t, "merge", "a.blob"))
	demo := "demo [-conns N] [-seed S] [-rate PCT] [-out DIR] [-merged FILE]"
	require.Equal(t, result{2, "", "statsblob demo: unexpected argument \"x\"\n" + synopsis("demo", demo)},
		sb(t, "demo", "x"))
	require.Equal(t, result{2, "", "statsblob demo: -merged d/m.blob is inside d/: merging d/*.blob would count it twice\n" + synopsis("demo", demo)},
		sb(t, "demo", "-out", "d/", "-merged", "d/m.blob"))
	for _, c := range [][2]string{{"-conns", "0"}, {"-seed", "0"}, {"-rate", "101"}} {
		want := map[string]string{"-conns": "-conns 0: need at least 1", "-seed": "-seed 0: need a nonzero seed", "-rate": "-rate 101: need at most 100"}[c[0]]
		require.Equal(t, result{2, "", "statsblob demo: " + want + "\n" + synopsis("demo", demo)}, sb(t, "demo", c[0], c[1]), c[0])
	}
}

func TestInspectAndRender(t *testing.T) {
	f := newFixture(t, 2, spread)
	a, b := f.files[0], f.files[1]
	ra := sb(t, "inspect", a)
	require.Equal(t, 0, ra.code, ra.stderr)
	require.Empty(t, ra.stderr)
	require.True(t, strings.HasPrefix(ra.stdout, a+": ok: "+strconv.Itoa(f.blobs[0].CurSz())+" bytes"), ra.stdout)
	require.Equal(t, a+": ok: 1552 bytes (maxsz 1552), template hash "+strconv.FormatUint(uint64(f.tp.Hash()), 10)+", 3 VOI slots, 7 statistics, 0 errors counted\n"+
		"  voi 0 INT_U64\n"+
		"    SUM   INT_U64          8 bytes, errs=0: 1448\n"+
		"  voi 1 INT_U32\n"+
		"    MAX   INT_U32          4 bytes, errs=0: 737\n"+
		"    MIN   INT_U32          4 bytes, errs=0: 100\n"+
		"    HIST  CRHIST32       344 bytes, errs=0: 50 samples\n"+
		"    TDGST TDGSTCLUST32   340 bytes, errs=0: 50 samples\n"+
		"  voi 2 INT_U32\n"+
		"    HIST  CRHIST32       344 bytes, errs=0: 0 samples\n"+
		"    TDGST TDGSTCLUST32   340 bytes, errs=0: 0 samples\n", ra.stdout)
	rb := sb(t, "inspect", b)

	// Bad files: inspect and render go on and report one line per file.
	p := append([]byte(nil), f.blobs[0].Bytes()...)
	p[12] = 0xff // stats_off
	bad := f.write(t, "bad.blob", p)
	missing := filepath.Join(f.dir, "missing.blob")
	big := f.write(t, "big.blob", make([]byte, 70000))
	r := sb(t, "inspect", a, bad, missing, big, b)
	require.Equal(t, 1, r.code)
	require.Equal(t, ra.stdout+rb.stdout, r.stdout)
	lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
	require.Len(t, lines, 3, r.stderr)
	require.True(t, strings.HasPrefix(lines[0], "statsblob inspect: "+bad+": blob: stats_off"), lines[0])
	require.Equal(t, "statsblob inspect: open "+missing+": no such file or directory", lines[1])
	require.Equal(t, "statsblob inspect: "+big+": more than 65535 bytes, too large for a blob", lines[2])

	fa, fb := sb(t, "render", a), sb(t, "render", b)
	require.Equal(t, 0, fa.code, fa.stderr)
	require.Contains(t, fa.stdout, "\t\tvois[0]stat[1]: stype=SUM, errs=0\n\t\t\tvoistatdata: 1448\n")
	r = sb(t, "render", a, bad, b, missing)
	require.Equal(t, 1, r.code)
	require.Equal(t, fa.stdout+fb.stdout, r.stdout)
	lines = strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
	require.Len(t, lines, 2, r.stderr)
	require.True(t, strings.HasPrefix(lines[0], "statsblob render: "+bad+": "), lines[0])
	require.Equal(t, "statsblob render: open "+missing+": no such file or directory", lines[1])
}

func TestFlagsAfterFiles(t *testing.T) {
	f := newFixture(t, 2, spread)
	a := f.files[0]
	want := sb(t, "render", "--format", "json", "--templates", f.tplFile, a)
	require.Equal(t, 0, want.code, want.stderr)
	require.True(t, strings.HasPrefix(want.stdout, `{"tplname":"CONN","tplhash":`+strconv.Itoa(int(f.tp.Hash()))+`,"vois":{"txbytes":{"stats":{"SUM":{"errs":0,"val":1448}}}`), want.stdout)
	for _, args := range [][]string{
		{"render", a, "--format", "json", "--templates", f.tplFile},
		{"render", "-format=json", a, "-templates", f.tplFile},
		{"render", "--templates=" + f.tplFile, a, "-format", "JSON"},
	} {
		require.Equal(t, want, sb(t, args...), args)
	}
	// "--" ends the flags: a file named like a flag.
	odd := f.write(t, "-format", f.blobs[0].Bytes())
	r := sbIn(t, f.dir, nil, "render", "--format", "json", "--templates", f.tplFile, "--", "-format")
	require.Equal(t, result{0, want.stdout, ""}, r)
	require.FileExists(t, odd)

	out := filepath.Join(t.TempDir(), "m.blob")
	r = sb(t, "merge", f.files[0], f.files[1], "-o", out)
	require.Equal(t, result{0, fmt.Sprintf("merged 2 blobs into %s (%d bytes)\n", out, f.blobs[0].CurSz()), ""}, r)
}

func TestStdin(t *testing.T) {
	f := newFixture(t, 2, spread)
	a := f.files[0]
	p := f.blobs[0].Bytes()
	want := sb(t, "inspect", a)
	r := sbIn(t, f.dir, p, "inspect", "-")
	require.Equal(t, result{0, strings.ReplaceAll(want.stdout, a, "<stdin>"), ""}, r)

	want = sb(t, "render", "-format", "json", "-templates", f.tplFile, a)
	require.Equal(t, want, sbIn(t, f.dir, p, "render", "-format", "json", "-templates", f.tplFile, "-"))
	tp, err := os.ReadFile(f.tplFile)
	require.NoError(t, err)
	require.Equal(t, want, sbIn(t, f.dir, tp, "render", "-format", "json", "-templates", "-", a))

	m1, m2 := filepath.Join(t.TempDir(), "1.blob"), filepath.Join(t.TempDir(), "2.blob")
	require.Equal(t, 0, sb(t, "merge", "-o", m1, f.files[0], f.files[1]).code)
	r = sbIn(t, f.dir, p, "merge", "-o", m2, "-", f.files[1])
	require.Equal(t, result{0, fmt.Sprintf("merged 2 blobs into %s (%d bytes)\n", m2, len(p)), ""}, r)
	requireSameFile(t, m1, m2)

	// -o - writes the blob to stdout, the summary to stderr.
	r = sbIn(t, f.dir, p, "merge", "-o", "-", "-", f.files[1])
	want1, err := os.ReadFile(m1)
	require.NoError(t, err)
	require.Equal(t, result{0, string(want1), fmt.Sprintf("merged 2 blobs into <stdout> (%d bytes)\n", len(p))}, r)

	r = sbIn(t, f.dir, []byte("not a blob"), "inspect", "-")
	require.Equal(t, 1, r.code)
	require.True(t, strings.HasPrefix(r.stderr, "statsblob inspect: <stdin>: blob: "), r.stderr)
	require.Equal(t, 1, strings.Count(r.stderr, "\n"))
}

func requireSameFile(t *testing.T, a, b string) {
	t.Helper()
	pa, err := os.ReadFile(a)
	require.NoError(t, err)
	pb, err := os.ReadFile(b)
	require.NoError(t, err)
	require.Equal(t, pa, pb)
}

// TestMergeReportsWhatItLeavesOut: every file that is not merged is named
// with the reason, the others are merged (the same bytes as MergeAll of
// them), and the exit status is 1.
func TestMergeReportsWhatItLeavesOut(t *testing.T) {
	f := newFixture(t, 4, spread)
	other := f.write(t, "other.blob", otherTemplate(t))
	// One flipped bit in a histogram bound: a valid blob, but its buckets
	// are not those of the others.
	st, err := f.blobs[3].Fetch(voiRTT, voi.Hist)
	require.NoError(t, err)
	p := append([]byte(nil), f.blobs[3].Bytes()...)
	lb := st.Offset + 8 + 3*16 // bucket 3's lower bound (CRHIST32)
	require.Equal(t, uint32(150), binary.LittleEndian.Uint32(p[lb:]))
	p[lb] ^= 1
	poisoned := f.write(t, "poisoned.blob", p)
	missing := filepath.Join(f.dir, "missing.blob")

	out := filepath.Join(t.TempDir(), "m.blob")
	r := sb(t, "merge", "-o", out, f.files[0], other, f.files[1], poisoned, missing, f.files[2])
	require.Equal(t, 1, r.code)
	require.Equal(t, fmt.Sprintf("merged 3 of 6 files into %s (%d bytes)\n", out, f.blobs[0].CurSz()), r.stdout)
	lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
	require.Len(t, lines, 3, r.stderr)
	require.Equal(t, "statsblob merge: open "+missing+": no such file or directory", lines[0])
	require.Regexp(t, `^statsblob merge: `+regexp.QuoteMeta(other)+`: not merged: .*(?i:template).* \(the 3 files merged are like `+regexp.QuoteMeta(f.files[0])+`\)$`, lines[1])
	require.Regexp(t, `^statsblob merge: `+regexp.QuoteMeta(poisoned)+`: (not merged: .*VOI 1 HIST|blob: ).*`, lines[2])

	want, err := blob.MergeAll(blob.NewEnv(nil, 1), f.blobs[:3]...)
	require.NoError(t, err)
	got, err := os.ReadFile(out)
	require.NoError(t, err)
	require.Equal(t, want.Bytes(), got)

	// An overflow of a 32-bit field leaves no file out: the files are
	// added up in the template's wide form, exactly.
	var full []string
	var fullBlobs []*blob.Blob
	for i := 0; i < 2; i++ {
		p := append([]byte(nil), f.blobs[i].Bytes()...)
		st, err := f.blobs[i].Fetch(voiRTT, voi.Hist)
		require.NoError(t, err)
		binary.LittleEndian.PutUint32(p[st.Offset+8+8:], math.MaxUint32) // bucket 0's counter (CRHIST32)
		b, err := blob.FromBytes(p, nil)
		require.NoError(t, err)
		fullBlobs = append(fullBlobs, b)
		full = append(full, f.write(t, fmt.Sprintf("full%d.blob", i), p))
	}
	outW := filepath.Join(t.TempDir(), "mw.blob")
	r = sb(t, "merge", "-o", outW, "-templates", f.tplFile, full[1], full[0])
	require.Equal(t, 0, r.code, r.stderr)
	require.Empty(t, r.stderr)
	mw, err := os.ReadFile(outW)
	require.NoError(t, err)
	wb, err := blob.FromBytes(mw, nil)
	require.NoError(t, err)
	require.Equal(t, fmt.Sprintf("merged 2 of 2 files into %s (%d bytes, widened: template hash %d)\n", outW, len(mw), wb.TplHash()), r.stdout)
	w, err := tpl.Widen(f.tp)
	require.NoError(t, err)
	require.NoError(t, wb.CheckTemplate(w))
	h, err := wb.Fetch(voiRTT, voi.Hist)
	require.NoError(t, err)
	require.Equal(t, voi.CRHist64, h.DType)
	require.Equal(t, uint64(2*math.MaxUint32), hist.BucketCount(h.Data, h.DType, 0))
	want2, err := blob.Widen(w, fullBlobs[0], nil)
	require.NoError(t, err)
	_, err = blob.Fold(want2, fullBlobs[1])
	require.NoError(t, err)
	require.Equal(t, want2.Bytes()[abi.HeaderSize:], mw[abi.HeaderSize:])
	// Without the templates file, the wide template is named "wide".
	r = sb(t, "merge", "-o", outW, full[0], full[1])
	require.Equal(t, 0, r.code, r.stderr)
	mw2, err := os.ReadFile(outW)
	require.NoError(t, err)
	wl, err := tpl.WidenLayout("wide", f.blobs[0].Bytes())
	require.NoError(t, err)
	require.Equal(t, wl.Hash(), binary.LittleEndian.Uint32(mw2[abi.OffTplHash:]))
	require.Equal(t, mw[abi.OffTplHash+4:], mw2[abi.OffTplHash+4:])

	// What passes even 64 bits saturates, is counted and reported, and
	// the exit status says so.
	var big []string
	for i := 0; i < 2; i++ {
		b := blob.New(f.tp, blob.NewEnv(func() int64 { return int64(i) }, 1))
		require.NoError(t, b.UpdateU64(voiTx, 1<<63))
		big = append(big, f.write(t, fmt.Sprintf("big%d.blob", i), b.Bytes()))
	}
	out3 := filepath.Join(t.TempDir(), "m3.blob")
	r = sb(t, "merge", "-o", out3, big[1], big[0])
	require.Equal(t, 1, r.code)
	require.Equal(t, "statsblob merge: 1 statistics saturated even at 64 bits (counted in their errors): value does not fit its type\n", r.stderr)
	m3, err := os.ReadFile(out3)
	require.NoError(t, err)
	b3, err := blob.FromBytes(m3, nil)
	require.NoError(t, err)
	require.Equal(t, fmt.Sprintf("merged 2 of 2 files into %s (%d bytes, widened: template hash %d)\n", out3, len(m3), b3.TplHash()), r.stdout)
	tx, err := b3.Fetch(voiTx, voi.Sum)
	require.NoError(t, err)
	require.Equal(t, uint64(math.MaxUint64), binary.LittleEndian.Uint64(tx.Data))
	require.Equal(t, uint8(1), tx.Errs)

	// Nothing mergeable: nothing written.
	out2 := filepath.Join(t.TempDir(), "m2.blob")
	r = sb(t, "merge", "-o", out2, missing)
	require.Equal(t, result{1, "", "statsblob merge: open " + missing + ": no such file or directory\n"}, r)
	require.NoFileExists(t, out2)

	// The output may not be one of the inputs (a second run would count it twice).
	r = sb(t, "merge", "-o", out, out, f.files[0])
	require.Equal(t, 2, r.code)
	require.True(t, strings.HasPrefix(r.stderr, "statsblob merge: output "+out+" is also an input\n"), r.stderr)
}

func TestTemplatesFile(t *testing.T) {
	f := newFixture(t, 1, spread)
	a := f.files[0]
	want := sb(t, "render", "-templates", f.tplFile, a)
	require.Equal(t, 0, want.code, want.stderr)
	require.Contains(t, want.stdout, `name="rtt"`)
	require.Equal(t, want, sb(t, "render", "-templates", f.objFile, a))

	// A templates file without the blob's template: named, with what it holds.
	tp, err := tpl.NewRegistry().New("OTHER")
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "x", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}))
	p, err := json.Marshal(tp)
	require.NoError(t, err)
	of := f.write(t, "other.json", p)
	r := sb(t, "render", "-templates", of, a, a)
	line := fmt.Sprintf("statsblob render: %s: template hash %d is not in templates file %s (it holds \"OTHER\":%d)\n", a, f.tp.Hash(), of, tp.Hash())
	require.Equal(t, result{1, "", line + line}, r)

	r = sb(t, "render", "-templates", f.write(t, "bad.json", []byte("42")), a)
	require.Equal(t, 1, r.code)
	require.Equal(t, "statsblob render: templates file "+filepath.Join(f.dir, "bad.json")+": neither a template (JSON object) nor an array of templates: invalid argument\n", r.stderr)
}

func TestRenderJSON(t *testing.T) {
	f := newFixture(t, 3, spread)
	var docs []string
	for _, name := range f.files {
		r := sb(t, "render", "-format", "json", name)
		require.Equal(t, 0, r.code, r.stderr)
		require.Equal(t, 1, strings.Count(r.stdout, "\n"))
		require.True(t, json.Valid([]byte(r.stdout)), r.stdout)
		docs = append(docs, strings.TrimSuffix(r.stdout, "\n"))
	}
	r := sb(t, "render", "-format", "Json", f.files[0], f.files[1], f.files[2])
	require.Equal(t, result{0, strings.Join(docs, "\n") + "\n", ""}, r)

	r = sb(t, "render", "-format", "JSON", "-array", f.files[0], f.files[1], f.files[2])
	require.Equal(t, result{0, "[\n" + strings.Join(docs, ",\n") + "\n]\n", ""}, r)
	var arr []json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &arr))
	require.Len(t, arr, 3)

	missing := filepath.Join(f.dir, "missing.blob")
	r = sb(t, "render", "-format", "json", "-array", missing)
	require.Equal(t, result{1, "[\n\n]\n", "statsblob render: open " + missing + ": no such file or directory\n"}, r)
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &arr))
	require.Empty(t, arr)

	fr := sb(t, "render", f.files[0])
	require.Equal(t, fr, sb(t, "render", "-format", "FreeForm", f.files[0]))
}

func TestQuantile(t *testing.T) {
	f := newFixture(t, 3, spread)
	merged, err := blob.MergeAll(blob.NewEnv(nil, 1), f.blobs...)
	require.NoError(t, err)
	td, err := merged.Fetch(voiRTT, voi.TDgst)
	require.NoError(t, err)
	h, err := merged.Fetch(voiRTT, voi.Hist)
	require.NoError(t, err)
	// The library's answers: the CLI prints what Blob.Quantile and
	// Stat.Quantile give (bounded by the VOI's MIN and MAX).
	expect := func(qs ...float64) (tdLines, histLines string) {
		for _, q := range qs {
			v, err := merged.Quantile(voiRTT, q)
			require.NoError(t, err)
			sv, err := td.Quantile(q)
			require.NoError(t, err)
			require.Equal(t, v, sv)
			tdLines += strconv.FormatFloat(q, 'g', -1, 64) + "\t" + strconv.FormatFloat(v, 'f', -1, 64) + "\n"
			v, err = h.Quantile(q)
			require.NoError(t, err)
			histLines += strconv.FormatFloat(q, 'g', -1, 64) + "\t" + strconv.FormatFloat(v, 'f', -1, 64) + "\n"
		}
		return
	}
	// Q(0) and Q(1) are the VOI's MIN and MAX.
	mn, err := merged.FetchU32(voiRTT, voi.Min)
	require.NoError(t, err)
	mx, err := merged.FetchU32(voiRTT, voi.Max)
	require.NoError(t, err)
	tdWant, _ := expect(0, 1)
	require.Equal(t, fmt.Sprintf("0\t%d\n1\t%d\n", mn, mx), tdWant)
	require.Equal(t, result{0, tdWant, ""}, sb(t, "quantile", "-voi", "1", "-q", "0,1", f.files[0], f.files[1], f.files[2]))
	tdWant, histWant := expect(0.5, 0.99)
	r := sb(t, "quantile", "-voi", "rtt", "-q", "0.5,0.99", "-templates", f.tplFile, f.files[0], f.files[1], f.files[2])
	require.Equal(t, result{0, tdWant, ""}, r)
	require.Equal(t, r, sb(t, "quantile", f.files[2], f.files[0], "-voi", "1", "-q", "0.5, 0.99", f.files[1]))
	require.Equal(t, result{0, histWant, ""}, sb(t, "quantile", "-voi", "1", "-stat", "HIST", "-q", "0.5,0.99", f.files[0], f.files[1], f.files[2]))
	tdWant, _ = expect(0.5, 0.9, 0.99)
	require.Equal(t, result{0, tdWant, ""}, sb(t, "quantile", "-voi", "1", f.files[0], f.files[1], f.files[2]))
	tdWant, _ = expect(0.5, 0.99, 0.999)
	require.Equal(t, result{0, tdWant, ""}, sb(t, "quantile", "-voi", "1", "-q", "p50,p99,p99.9", f.files[0], f.files[1], f.files[2]))

	// Errors: what and where.
	files := f.files
	r = sb(t, append([]string{"quantile", "-voi", "txbytes", "-templates", f.tplFile}, files...)...)
	require.Equal(t, result{1, "", "statsblob quantile: VOI 0 (txbytes): no t-digest or histogram to query (it keeps SUM)\n"}, r)
	require.Equal(t, r, sb(t, append([]string{"quantile", "-voi", "0", "-templates", f.objFile}, files...)...))
	otp, err := tpl.NewRegistry().New("OTHER")
	require.NoError(t, err)
	require.NoError(t, otp.AddVOI(tpl.VOIDef{ID: 0, Name: "x", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}))
	otherTpl := filepath.Join(f.dir, "other.json")
	require.NoError(t, writeTemplates(otherTpl, otp))
	r = sb(t, append([]string{"quantile", "-voi", "0", "-templates", otherTpl}, files...)...)
	require.Equal(t, result{1, "", fmt.Sprintf("statsblob quantile: template hash %d is not in templates file %s (it holds \"OTHER\":%d)\n", f.tp.Hash(), otherTpl, otp.Hash())}, r)
	r = sb(t, append([]string{"quantile", "-voi", "0", "-stat", "tdigest"}, files...)...)
	require.Equal(t, result{1, "", "statsblob quantile: VOI 0: no TDGST statistic (it keeps SUM)\n"}, r)
	r = sb(t, append([]string{"quantile", "-voi", "idle", "-templates", f.tplFile}, files...)...)
	require.Equal(t, result{1, "", "statsblob quantile: VOI 2 (idle): its TDGSTCLUST32 holds no samples in the 3 merged files\n"}, r)
	r = sb(t, append([]string{"quantile", "-voi", "2", "-stat", "hist"}, files...)...)
	require.Equal(t, result{1, "", "statsblob quantile: VOI 2: its CRHIST32 holds no samples in the 3 merged files\n"}, r)
	r = sb(t, append([]string{"quantile", "-voi", "7"}, files...)...)
	require.Equal(t, result{1, "", "statsblob quantile: VOI 7: not in the blobs (their VOI ids: 0, 1, 2)\n"}, r)
	r = sb(t, append([]string{"quantile", "-voi", "nope", "-templates", f.tplFile}, files...)...)
	require.Equal(t, result{1, "", fmt.Sprintf("statsblob quantile: template %s has no VOI named \"nope\" (its VOIs: txbytes, rtt, idle)\n", f.tp.Spec())}, r)
	usage := "usage: statsblob quantile -voi NAME|ID [-q LIST] [-stat tdigest|hist] [-templates FILE] FILE...\nRun 'statsblob quantile -h' for help.\n"
	for _, q := range []string{"1.5", "-0.1", "NaN", "p101", ""} {
		r = sb(t, "quantile", "-voi", "1", "-q", "0.5,"+q, files[0])
		require.Equal(t, result{2, "", fmt.Sprintf("statsblob quantile: -q %q: %q is not a quantile (a number in [0, 1], or a percentile such as p99 or 99.9%%)\n", "0.5,"+q, q) + usage}, r, q)
	}
	r = sb(t, "quantile", "-voi", "rtt", files[0])
	require.Equal(t, result{2, "", "statsblob quantile: -voi \"rtt\": a VOI name needs -templates FILE (or give the VOI's id)\n" + usage}, r)
	r = sb(t, "quantile", files[0])
	require.Equal(t, result{2, "", "statsblob quantile: -voi NAME|ID is required\n" + usage}, r)
	r = sb(t, "quantile", "-voi", "1", "-stat", "mean", files[0])
	require.Equal(t, result{2, "", "statsblob quantile: -stat \"mean\": want tdigest or hist\n" + usage}, r)

	// A file left out: the quantiles of the others, exit status 1.
	other := f.write(t, "other.blob", otherTemplate(t))
	tdWant, _ = expect(0.5)
	r = sb(t, "quantile", "-voi", "1", "-q", "0.5", files[0], other, files[1], files[2])
	require.Equal(t, 1, r.code)
	require.Equal(t, tdWant, r.stdout)
	require.Equal(t, 1, strings.Count(r.stderr, "\n"))
	require.True(t, strings.HasPrefix(r.stderr, "statsblob quantile: "+other+": not merged: "), r.stderr)
}

// TestQuantileExact checks values known without the library: every sample
// is 180, so the digest holds one centroid at 180 and the histogram's
// count sits in the CRHIST bucket [150, 200), spread evenly (175 and 195
// at p50 and p90, hist.Quantile's answers), clamped to the VOI's MIN and
// MAX (both 180).
func TestQuantileExact(t *testing.T) {
	f := newFixture(t, 2, func(int, int) uint32 { return 180 })
	r := sb(t, "quantile", "-voi", "1", "-q", "0,0.5,1", f.files[0], f.files[1])
	require.Equal(t, result{0, "0\t180\n0.5\t180\n1\t180\n", ""}, r)
	r = sb(t, "quantile", "-voi", "1", "-stat", "hist", "-q", "0.5,0.9", f.files[0], f.files[1])
	require.Equal(t, result{0, "0.5\t180\n0.9\t180\n", ""}, r)
}

// TestDemoFiles: the demo's directory holds this run's connection blobs
// only, the merged blob lies beside it, and merging the directory's blobs
// gives the demo's merged blob exactly (nothing counted twice).
func TestDemoFiles(t *testing.T) {
	work := t.TempDir()
	r := sbIn(t, work, nil, "demo", "-conns", "200", "-out", "out")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, `template "TCP_DEFAULT":2301024101: 10 VOIs, 1656-byte blobs`)
	require.FileExists(t, filepath.Join(work, "out.merged.blob"))
	// What older versions and other people left there.
	require.NoError(t, os.WriteFile(filepath.Join(work, "out", "merged.blob"), []byte("old"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(work, "out", "notes.txt"), []byte("mine"), 0o644))

	r = sbIn(t, work, nil, "demo", "-conns", "100", "-out", "out/")
	require.Equal(t, 0, r.code, r.stderr)
	m := regexp.MustCompile(`(?m)^(\d+) of 100 connections sampled at 40%, blob files in out/$`).FindStringSubmatch(r.stdout)
	require.NotNil(t, m, r.stdout)
	require.Contains(t, r.stdout, "\nmerged blob of the "+m[1]+" sampled connections in out.merged.blob\n")
	files, err := filepath.Glob(filepath.Join(work, "out", "*.blob"))
	require.NoError(t, err)
	require.Equal(t, m[1], strconv.Itoa(len(files)))
	for _, name := range files {
		require.Regexp(t, `/conn-\d{5}\.blob$`, name)
	}
	require.FileExists(t, filepath.Join(work, "out", "notes.txt"))

	r = sbIn(t, work, nil, append([]string{"merge", "-o", "all.blob"}, files...)...)
	require.Equal(t, result{0, fmt.Sprintf("merged %d blobs into all.blob (1656 bytes)\n", len(files)), ""}, r)
	requireSameFile(t, filepath.Join(work, "all.blob"), filepath.Join(work, "out.merged.blob"))

	r = sbIn(t, work, nil, "render", "-templates", "out/templates.json", "out.merged.blob")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, `name="TCP_RTT"`)

	// A run without sampled connections leaves no merged blob of an
	// earlier run behind, and no connection blobs either.
	r = sbIn(t, work, nil, "demo", "-conns", "10", "-rate", "0", "-out", "out")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "\n0 of 10 connections sampled at 0%, blob files in out/\n")
	require.NoFileExists(t, filepath.Join(work, "out.merged.blob"))
	files, err = filepath.Glob(filepath.Join(work, "out", "*.blob"))
	require.NoError(t, err)
	require.Empty(t, files)

	// -merged names the file; the same seed gives the same bytes.
	r = sbIn(t, work, nil, "demo", "-conns", "100", "-out", "out2", "-merged", "elsewhere.blob")
	require.Equal(t, 0, r.code, r.stderr)
	require.NoFileExists(t, filepath.Join(work, "out2.merged.blob"))
	requireSameFile(t, filepath.Join(work, "elsewhere.blob"), filepath.Join(work, "all.blob"))
}
