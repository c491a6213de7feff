package main

// Tests of the commands for templates, recording, plots and the version:
// exact stdout, stderr and exit status of the built binary.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/voi"
)

// sbEnv runs the binary in dir with extra environment variables.
func sbEnv(t *testing.T, dir string, env []string, args ...string) result {
	t.Helper()
	return sbRun(t, dir, nil, env, args...)
}

func TestVersion(t *testing.T) {
	out, err := exec.Command("go", "version", "-m", sbBinary(t)).Output()
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^\tmod\tgithub.com/statsblob/statsblob\t(\S+)`).FindSubmatch(out)
	require.NotNil(t, m, string(out))
	want := result{0, "statsblob " + string(m[1]) + " " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + "\n", ""}
	require.Equal(t, want, sb(t, "version"))
	require.Equal(t, want, sb(t, "--version"))
	require.Equal(t, want, sb(t, "-version"))
}

// TestHelpExamples: 'statsblob help' lists every command with an example
// of its use.
func TestHelpExamples(t *testing.T) {
	r := sb(t, "help")
	require.Equal(t, 0, r.code)
	for _, c := range commands {
		require.True(t, strings.HasPrefix(c.example, "statsblob "+c.name+" ") || c.example == "statsblob "+c.name ||
			strings.Contains(c.example, "| statsblob "+c.name+" "), c.example)
		require.Contains(t, r.stdout, "\n  "+c.name+strings.Repeat(" ", 10-len(c.name))+c.summary+"\n              e.g. "+c.example+"\n")
	}
	require.Contains(t, r.stdout, "\n  template  check a templates file, print its templates' hashes and layouts\n"+
		"              e.g. statsblob template check demo-out/templates.json\n")
}

const handTemplate = `{"format":"statsblob-template","version":2,"name":"WEB","vois":[
 {"id":0,"name":"lat","dtype":"INT_U64","stats":[{"type":"MAX"},{"type":"HIST","hist":{"dtype":"CRHIST64","scheme":"LIN","lb":0,"ub":100,"stepinc":25}}]},
 {"id":2,"name":"skew","dtype":"INT_S32","relupdate":true,"stats":[{"type":"MIN"},{"type":"TDGST","tdigest":{"dtype":"TDGSTCLUST32","nctds":8,"prec":4}}]}]}
`

const handLayout = `  400-byte blobs, 3 VOI slots
  voi 0 "lat" INT_U64
    MAX   INT_U64      at   304,     8 bytes
    HIST  CRHIST64     at   312,    88 bytes
  voi 2 "skew" INT_S32, relative updates
    MIN   INT_S32      at   152,     4 bytes
    TDGST TDGSTCLUST32 at   156,   148 bytes, mode c
`

// template check prints a t-digest's clustering mode, so that a user can
// see "mode": "accurate" took effect; before, nothing told the two apart.
func TestTemplateCheckDigestMode(t *testing.T) {
	dir := t.TempDir()
	doc := strings.Replace(handTemplate, `"prec":4}`, `"prec":4,"mode":"accurate"}`, 1)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "acc.json"), []byte(doc), 0o644))
	require.Equal(t, result{0, "acc.json: WEB: ok, hash 1734256991; no \"hash\" (add \"hash\": 1734256991)\n" +
		strings.Replace(handLayout, "mode c", "mode accurate", 1), ""}, sbIn(t, dir, nil, "template", "check", "acc.json"))
}

func TestTemplateCommand(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644))
		return name
	}
	hand := write("hand.json", handTemplate)
	require.Equal(t, result{0, "hand.json: WEB: ok, hash 1734256991; no \"hash\" (add \"hash\": 1734256991)\n" + handLayout, ""},
		sbIn(t, dir, nil, "template", "check", hand))
	require.Equal(t, result{0, "\"WEB\":1734256991\n", ""}, sbIn(t, dir, nil, "template", "hash", hand))

	// record and derive refuse it, saying what to add (ReadJSON's
	// tpl.HashError, whose words template check prints too): before,
	// "rebuilds with hash 1734256991, no hash".
	noHash := "statsblob %s: templates file hand.json: tpl: template JSON: template \"WEB\": no \"hash\" (add \"hash\": 1734256991): invalid argument\n"
	require.Equal(t, result{1, "", fmt.Sprintf(noHash, "record")},
		sbIn(t, dir, []byte("5\n"), "record", "-templates", hand, "-tpl", "WEB", "-voi", "lat", "-o", "r.blob"))
	require.Equal(t, result{1, "", fmt.Sprintf(noHash, "derive")}, sbIn(t, dir, nil, "derive", "-templates", hand, "new.blob"))

	hashed := write("hashed.json", strings.Replace(handTemplate, `"name":"WEB",`, `"name":"WEB","hash":1734256991,`, 1))
	require.Equal(t, result{0, "hashed.json: WEB: ok, hash 1734256991\n" + handLayout, ""}, sbIn(t, dir, nil, "template", "check", hashed))
	wrong := write("wrong.json", strings.Replace(handTemplate, `"name":"WEB",`, `"name":"WEB","hash":7,`, 1))
	require.Equal(t, result{1, "", "statsblob template: wrong.json: WEB: \"hash\" is 7, the template rebuilds with hash 1734256991 (its VOIs or statistics differ from the ones the hash was made of)\n"},
		sbIn(t, dir, nil, "template", "check", wrong))

	badType := write("type.json", strings.Replace(handTemplate, "CRHIST64", "CRHIST16", 1))
	require.Equal(t, result{1, "", "statsblob template: type.json: tpl: template JSON: VOI 0: histogram dtype \"CRHIST16\" (valid: CRHIST32, DRHIST32, DVHIST32, CRHIST64, DRHIST64, DVHIST64): invalid argument\n"},
		sbIn(t, dir, nil, "template", "check", badType))
	badStat := write("stat.json", strings.Replace(handTemplate, `"MIN"`, `"MEAN"`, 1))
	require.Equal(t, result{1, "", "statsblob template: stat.json: tpl: template JSON: VOI 2: statistic type \"MEAN\" (valid: SUM, MAX, MIN, HIST, TDGST): invalid argument\n"},
		sbIn(t, dir, nil, "template", "check", badStat))

	// An array: each template on its own, the bad one reported.
	arr := write("arr.json", "["+handTemplate+","+strings.Replace(handTemplate, `"WEB"`, `"W2"`, 1)+","+strings.Replace(handTemplate, "INT_S32", "INT32", 1)+"]")
	r := sbIn(t, dir, nil, "template", "hash", arr)
	require.Equal(t, 1, r.code)
	require.Regexp(t, `^"WEB":1734256991\n"W2":\d+\n$`, r.stdout)
	require.Equal(t, "statsblob template: arr.json: template 2: tpl: template JSON: VOI 2: dtype \"INT32\" (valid: INT_S32, INT_U32, INT_S64, INT_U64, INT_SLONG, INT_ULONG, Q_S32, Q_U32, Q_S64, Q_U64): invalid argument\n", r.stderr)

	usage := "usage: statsblob template check|hash FILE\nRun 'statsblob template -h' for help.\n"
	require.Equal(t, result{2, "", "statsblob template: want check or hash and one FILE\n" + usage}, sbIn(t, dir, nil, "template", "lint", hand))
	require.Equal(t, result{2, "", "statsblob template: want check or hash and one FILE\n" + usage}, sbIn(t, dir, nil, "template", "check"))
}

// template check prints a template's metadata (RISC OS DCI4's type,
// presentation and description): the description, per VOI its unit,
// scale, kind, count and help, and the derived metrics; a template
// without metadata prints as before (TestTemplateCommand).
func TestTemplateCheckMetadata(t *testing.T) {
	dir := t.TempDir()
	doc := `{"format":"statsblob-template","version":2,"name":"HTTP","description":"HTTP server requests","vois":[
 {"id":0,"name":"latency_us","dtype":"INT_U32","stats":[{"type":"SUM"},{"type":"MAX"}],"unit":"us","help":"Request latency.","count":"requests"},
 {"id":1,"name":"requests","dtype":"INT_U64","stats":[{"type":"SUM"}],"kind":"counter"},
 {"id":2,"name":"latency_sq","dtype":"INT_U64","stats":[{"type":"SUM"}]}],
 "derived":[{"name":"latency_avg","op":"average","of":"latency_us","by":"requests","unit":"ms","help":"Mean latency."},
 {"name":"latency_var","op":"variance","of":"latency_us","by":"requests","sumsq":"latency_sq"}]}`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "m.json"), []byte(doc), 0o644))
	require.Equal(t, result{0, "" +
		"m.json: HTTP: ok, hash 842064347; no \"hash\" (add \"hash\": 842064347)\n" +
		"  description \"HTTP server requests\"\n" +
		"  136-byte blobs, 3 VOI slots\n" +
		"  voi 0 \"latency_us\" INT_U32\n" +
		"    metadata: unit seconds, scale 1e-06, count \"requests\", help \"Request latency.\"\n" +
		"    SUM   INT_U32      at   128,     4 bytes\n" +
		"    MAX   INT_U32      at   132,     4 bytes\n" +
		"  voi 1 \"requests\" INT_U64\n" +
		"    metadata: kind counter\n" +
		"    SUM   INT_U64      at   120,     8 bytes\n" +
		"  voi 2 \"latency_sq\" INT_U64\n" +
		"    SUM   INT_U64      at   112,     8 bytes\n" +
		"  derived \"latency_avg\": average of \"latency_us\" by \"requests\", unit ms, help \"Mean latency.\"\n" +
		"  derived \"latency_var\": variance of \"latency_us\" by \"requests\", sum of squares \"latency_sq\"\n", ""},
		sbIn(t, dir, nil, "template", "check", "m.json"))
}

func TestRecord(t *testing.T) {
	f := newFixture(t, 1, spread)
	out := filepath.Join(f.dir, "rec.blob")
	r := sbIn(t, f.dir, []byte("5\n60\n  60 \n# a comment\n\nx\n-1\n4294967296\n"), "record", "-templates", f.tplFile, "-tpl", "CONN", "-voi", "rtt", "-o", out)
	require.Equal(t, result{1, "", "statsblob record: <stdin>:6: \"x\": not an integer of INT_U32\n" +
		"statsblob record: <stdin>:7: \"-1\": not an integer of INT_U32\n" +
		"statsblob record: <stdin>:8: \"4294967296\": out of the range of INT_U32\n" +
		"recorded 3 values of VOI 1 (rtt) of " + f.tp.Spec() + " into " + out + " (1552 bytes)\n"}, r)
	want := out + ": ok: 1552 bytes (maxsz 1552), template hash " + strconv.FormatUint(uint64(f.tp.Hash()), 10) + " (" + f.tp.Spec() + "), 3 VOI slots, 7 statistics, 0 errors counted\n" +
		"  voi 0 \"txbytes\" INT_U64\n" +
		"    SUM   INT_U64          8 bytes, errs=0: not updated\n" +
		"  voi 1 \"rtt\" INT_U32\n" +
		"    MAX   INT_U32          4 bytes, errs=0: 60\n" +
		"    MIN   INT_U32          4 bytes, errs=0: 5\n" +
		"    HIST  CRHIST32       344 bytes, errs=0: 3 samples\n" +
		"    TDGST TDGSTCLUST32   340 bytes, errs=0: 3 samples\n" +
		"  voi 2 \"idle\" INT_U32\n" +
		"    HIST  CRHIST32       344 bytes, errs=0: 0 samples\n" +
		"    TDGST TDGSTCLUST32   340 bytes, errs=0: 0 samples\n"
	require.Equal(t, result{0, want, ""}, sb(t, "inspect", "-templates", f.tplFile, out))

	// A CSV column, by header name and by number, from a file.
	csvFile := f.write(t, "v.csv", []byte("host,rtt\na,5\nb,60\nc,60\n"))
	out2 := filepath.Join(f.dir, "rec2.blob")
	r = sb(t, "record", "-templates", f.tplFile, "-tpl", "CONN", "-voi", "1", "-col", "rtt", "-o", out2, csvFile)
	require.Equal(t, result{0, "", "recorded 3 values of VOI 1 (rtt) of " + f.tp.Spec() + " into " + out2 + " (1552 bytes)\n"}, r)
	require.Equal(t, result{0, strings.ReplaceAll(want, out, out2), ""}, sb(t, "inspect", "-templates", f.tplFile, out2))
	noHeader := f.write(t, "n.csv", []byte("a,5\nb,60\nc,60\n"))
	r = sb(t, "record", "-templates", f.tplFile, "-tpl", "CONN", "-voi", "rtt", "-col", "2", "-o", out2, noHeader)
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, result{0, strings.ReplaceAll(want, out, out2), ""}, sb(t, "inspect", "-templates", f.tplFile, out2))

	r = sb(t, "record", "-templates", f.tplFile, "-tpl", "CONN", "-voi", "1", "-col", "ms", "-o", out2, csvFile)
	require.Equal(t, result{1, "", "statsblob record: " + csvFile + ": the header line has no column \"ms\" (it has host, rtt)\n"}, r)
	r = sb(t, "record", "-templates", f.tplFile, "-tpl", "TCP", "-voi", "1", "-o", out2, csvFile)
	require.Equal(t, result{1, "", "statsblob record: templates file " + f.tplFile + " has no template \"TCP\" (it holds CONN)\n"}, r)
	usage := "usage: statsblob record -templates FILE -tpl NAME -voi NAME|ID [-col N|NAME] [-append] -o OUT [FILE]\nRun 'statsblob record -h' for help.\n"
	require.Equal(t, result{2, "", "statsblob record: -templates, -tpl, -voi and -o are required\n" + usage}, sb(t, "record", "-tpl", "CONN"))
	require.Equal(t, result{2, "", "statsblob record: -append needs a file OUT, not -\n" + usage},
		sb(t, "record", "-templates", f.tplFile, "-tpl", "CONN", "-voi", "1", "-append", "-o", "-"))

	// -append: a second VOI into the same blob.
	r = sbIn(t, f.dir, []byte("1000\n448\n"), "record", "-templates", f.tplFile, "-tpl", "CONN", "-voi", "txbytes", "-append", "-o", out)
	require.Equal(t, result{0, "", "recorded 2 values of VOI 0 (txbytes) of " + f.tp.Spec() + " into " + out + " (1552 bytes)\n"}, r)
	require.Equal(t, result{0, strings.Replace(want, "errs=0: not updated", "errs=0: 1448", 1), ""}, sb(t, "inspect", "-templates", f.tplFile, out))
	r = sb(t, "record", "-templates", f.tplFile, "-tpl", "CONN", "-voi", "txbytes", "-append", "-o", f.write(t, "other.blob", otherTemplate(t)), csvFile)
	require.Equal(t, 1, r.code)
	require.Regexp(t, `^statsblob record: .*other.blob: blob: .*: invalid argument\n$`, r.stderr)
}

// TestRenderTwice: a freeform rendering shows no address, so two renders
// of a file are the same text.
func TestRenderTwice(t *testing.T) {
	f := newFixture(t, 1, spread)
	a, b := sb(t, "render", f.files[0]), sb(t, "render", f.files[0])
	require.Equal(t, a, b)
	require.True(t, strings.HasPrefix(a.stdout, "struct statsblobv1@0x0, tplhash="+strconv.FormatUint(uint64(f.tp.Hash()), 10)+"\n"), a.stdout)
	require.Equal(t, sb(t, "render", "-objdump", f.files[0]), sb(t, "render", "-objdump", f.files[0]))
}

func TestPlot(t *testing.T) {
	f := newFixture(t, 1, func(i, j int) uint32 { return uint32(100 + 10*(j%5)) }) // 100..140, 10 of each
	svg := filepath.Join(f.dir, "rtt.svg")
	r := sb(t, "plot", "-voi", "rtt", "-stat", "hist", "-width", "20", "-svg", svg, "-templates", f.tplFile, f.files[0])
	// The table holds the library's estimates (blob.Stat.Quantile), here
	// a linear interpolation in the one bucket: p1 is 100 + 0.01*50.
	h, err := f.blobs[0].Fetch(voiRTT, voi.Hist)
	require.NoError(t, err)
	table := ""
	for _, q := range plotPercentiles {
		x, err := h.Quantile(q)
		require.NoError(t, err)
		table += p(percentileName(q), x)
	}
	require.Equal(t, p("p1", 100.5), strings.Split(table, "\n")[1]+"\n")
	require.Equal(t, result{0, "VOI 1 (rtt) CRHIST32 of 1 files: 50 samples\n\n" +
		"percentile value\n" + table + "\n" +
		"[100, 150) 50 ████████████████████\n", ""}, r)
	data, err := os.ReadFile(svg)
	require.NoError(t, err)
	lines := strings.Split(string(data), "\n")
	require.Equal(t, `<svg xmlns="http://www.w3.org/2000/svg" width="640" height="320" viewBox="0 0 640 320" font-family="sans-serif" font-size="11">`, lines[0])
	require.Equal(t, `<text x="50" y="18" font-size="13">VOI 1 (rtt) CRHIST32 of 1 files: 50 samples</text>`, lines[2])
	require.Equal(t, `<rect x="108.0" y="30.0" width="464.0" height="250.0" fill="steelblue"><title>[100, 150): 50</title></rect>`, lines[6])
	require.Equal(t, "</svg>", lines[len(lines)-2])

	// A digest: a bar per centroid (the C's clustering keeps the first
	// sample apart).
	r = sb(t, "plot", "-voi", "1", "-width", "10", f.files[0])
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "VOI 1 TDGSTCLUST32 of 1 files: 50 samples\n\npercentile value\np0         100\n")
	require.True(t, strings.HasSuffix(r.stdout, "\n100  1 █\n100  9 █████████\n110 10 ██████████\n120 10 ██████████\n130 10 ██████████\n140 10 ██████████\n"), r.stdout)

	r = sb(t, "plot", "-voi", "2", f.files[0])
	require.Equal(t, result{1, "", "statsblob plot: VOI 2: its TDGSTCLUST32 holds no samples in the 1 merged files\n"}, r)
}

func p(name string, v float64) string {
	return name + strings.Repeat(" ", 11-len(name)) + strconv.FormatFloat(v, 'g', 7, 64) + "\n"
}

// TestMergeProgress: on a terminal (forced here with STATSBLOB_PROGRESS=1)
// a merge reports how many files it has read, on one rewritten line.
func TestMergeProgress(t *testing.T) {
	f := newFixture(t, 3, spread)
	out := filepath.Join(f.dir, "m.blob")
	r := sbEnv(t, f.dir, []string{"STATSBLOB_PROGRESS=1"}, append([]string{"merge", "-o", out}, f.files...)...)
	require.Equal(t, result{0, "merged 3 blobs into " + out + " (1552 bytes)\n",
		"\rstatsblob merge: read 1 of 3 files (33%)\rstatsblob merge: read 2 of 3 files (66%)\rstatsblob merge: read 3 of 3 files (100%), merging\n"}, r)
	r = sb(t, append([]string{"merge", "-o", out}, f.files...)...)
	require.Equal(t, result{0, "merged 3 blobs into " + out + " (1552 bytes)\n", ""}, r, "not a terminal: no progress")
}

// TestInspectExactValues: inspect prints integers exactly, also beyond
// 2^53, and Q values as numbers.
func TestInspectExactValues(t *testing.T) {
	dir := t.TempDir()
	tfile := filepath.Join(dir, "t.json")
	require.NoError(t, os.WriteFile(tfile, []byte(`{"format":"statsblob-template","version":2,"name":"X","hash":0,"vois":[
 {"id":0,"name":"big","dtype":"INT_U64","stats":[{"type":"SUM"}]},
 {"id":1,"name":"neg","dtype":"INT_S32","stats":[{"type":"MIN"}]},
 {"id":2,"name":"q","dtype":"Q_S64","prec":16,"stats":[{"type":"MAX"}]}]}`), 0o644))
	r := sbIn(t, dir, nil, "template", "check", "t.json")
	require.Equal(t, 1, r.code, "the recorded hash 0 is wrong")
	hash := regexp.MustCompile(`rebuilds with hash (\d+)`).FindStringSubmatch(r.stderr)
	require.NotNil(t, hash, r.stderr)
	require.Equal(t, result{0, `"X":` + hash[1] + "\n", ""}, sbIn(t, dir, nil, "template", "hash", "t.json"), "hash tells the hash whatever is recorded")
	fixed := strings.Replace(string(must(os.ReadFile(tfile))), `"hash":0`, `"hash":`+hash[1], 1)
	require.NoError(t, os.WriteFile(tfile, []byte(fixed), 0o644))
	rec := func(voiName, in string) {
		r := sbIn(t, dir, []byte(in), "record", "-templates", "t.json", "-tpl", "X", "-voi", voiName, "-o", voiName+".blob")
		require.Equal(t, 0, r.code, r.stderr)
	}
	rec("big", "9007199254740993\n")
	rec("neg", "-7\n3\n")
	rec("q", "-1.25\n-2\n")
	r = sbIn(t, dir, nil, "inspect", "-templates", "t.json", "big.blob", "neg.blob", "q.blob")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "  voi 0 \"big\" INT_U64\n    SUM   INT_U64          8 bytes, errs=0: 9007199254740993\n")
	require.Contains(t, r.stdout, "  voi 1 \"neg\" INT_S32\n    MIN   INT_S32          4 bytes, errs=0: -7\n")
	require.Contains(t, r.stdout, "  voi 2 \"q\" Q_S64\n    MAX   Q_S64            8 bytes, errs=0: -1.25\n")
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
