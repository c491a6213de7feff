package gen_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/cmd/statsblob/internal/scenario"
	"github.com/statsblob/statsblob/cmd/statsblob/internal/scenario/gen"
)

// reduced reports whether the tests run a reduced number of seeds: with
// -short, and under the race detector.
func reduced() bool { return testing.Short() || raceEnabled }

// reducedSeeds is how many seeds a reduced run takes: 60, or 16 under the
// race detector, which finds the same races in fewer seeds (make test runs
// this package both with -short and with -short -race).
func reducedSeeds() int {
	if raceEnabled {
		return 16
	}
	return 60
}

// runGo runs a scenario through the Go runner, turning a panic into an
// error.
func runGo(text string) (out []byte, err error) {
	var b bytes.Buffer
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
		out = b.Bytes()
	}()
	err = scenario.Run(strings.NewReader(text), &b)
	return
}

// firstResult returns the first result line of a command's output block.
func firstResult(block []byte) string {
	_, rest, _ := strings.Cut(string(block), "\n")
	first, _, _ := strings.Cut(rest, "\n")
	return first
}

// expectMismatches returns the commands whose first result line in a
// runner's output differs from the generator's expectation, and the index
// in sc.Lines of the first one (len(sc.Lines) if none).
func expectMismatches(sc *gen.Scenario, out []byte) (res []string, first int) {
	first = len(sc.Lines)
	blocks := gen.Blocks(sc.Lines, out)
	for i, l := range sc.Lines {
		want, ok := sc.Expect[i]
		if !ok {
			continue
		}
		b, ok := blocks[i]
		if !ok {
			break
		}
		got := firstResult(b)
		var good bool
		switch want {
		case "OK":
			good = strings.HasSuffix(got, "= OK")
		case "FAIL":
			good = !strings.HasSuffix(got, "= OK")
		default:
			good = strings.Contains(got, want)
		}
		if !good {
			first = min(first, i)
			res = append(res, fmt.Sprintf("line %d: expected %s, got %q: %s", i+1, want, got, l))
		}
	}
	return res, first
}

// TestGeneratedValid: the Go runner accepts generated scenarios (it
// refuses malformed lines, unknown names, updates of unrecorded VOIs and
// operations without a current blob, which the generator must never
// write). The generator's model of the C decides which VOIs the runner
// records and which blobs exist; where the engine disagrees with it (an
// engine difference, which the C judges: TestGeneratedGoldens, statsblob
// diff) the scenario is only checked up to that command.
func TestGeneratedValid(t *testing.T) {
	n := uint64(300)
	if reduced() {
		n = uint64(reducedSeeds())
	}
	cut := 0
	for seed := uint64(1); seed <= n; seed++ {
		sc := gen.Generate(seed, gen.Options{})
		out, err := runGo(sc.Text())
		mism, first := expectMismatches(sc, out)
		if len(mism) > 0 {
			cut++
		}
		if err == nil {
			continue
		}
		var line int
		if _, scanErr := fmt.Sscanf(err.Error(), "line %d:", &line); scanErr != nil || line-1 <= first {
			t.Errorf("seed %d: the runner refused the scenario before any engine difference: %v", seed, err)
		}
	}
	t.Logf("%d of %d seeds checked only up to an engine difference", cut, n)
}

// TestGenerateDeterministic: a seed gives the same scenario every time;
// different seeds give different scenarios; Options.Commands sets the
// length.
func TestGenerateDeterministic(t *testing.T) {
	a, b := gen.Generate(42, gen.Options{}), gen.Generate(42, gen.Options{})
	require.Equal(t, a.Text(), b.Text())
	require.Equal(t, a.Cover, b.Cover)
	require.NotEqual(t, a.Text(), gen.Generate(43, gen.Options{}).Text())
	for _, n := range []int{1, 50, 500} {
		sc := gen.Generate(7, gen.Options{Commands: n})
		got := len(gen.Commands(sc.Lines))
		require.GreaterOrEqual(t, got, n)
		require.LessOrEqual(t, got, n+45, "a step writes at most a template of 40 VOIs and a blob") // tpl + 40 voi + blob + a few
	}
	// The first lines of seed 1 pin the generator's stream: a change here
	// changes every scenario and needs a new Version and new digests.
	require.Equal(t, firstLinesOfSeed1, strings.Join(gen.Generate(1, gen.Options{}).Lines[:3], "\n"))
}

// firstLinesOfSeed1 are the first lines of the scenario of seed 1 of this
// Version.
const firstLinesOfSeed1 = "seed 2219549778475\ntpl netflow97\nvoi 0 cwnd0 Q_U32/7 : TDGSTCLUST64(0x8AD,6)"

// TestCoverageCells: every cell a scenario hits is an allowed cell, and
// the seeds 1..2000 hit every allowed cell (the 10,000-seed run of the
// differential test hits each many times: statsblob gen -coverage).
func TestCoverageCells(t *testing.T) {
	to := uint64(2000)
	if reduced() {
		to = 200
	}
	if raceEnabled {
		to = 50
	}
	hits, _ := gen.Coverage(1, to, gen.Options{})
	var sb strings.Builder
	missing, unknown := gen.WriteCoverage(&sb, hits)
	require.Empty(t, unknown)
	if !reduced() {
		require.Empty(t, missing)
	}
	require.Contains(t, sb.String(), fmt.Sprintf("%d allowed cells", len(gen.Cells())))
}

// TestBlocksAndDigests: Blocks splits an output by the scenario's echo
// lines; digests round-trip through their text form and locate the first
// differing command.
func TestBlocksAndDigests(t *testing.T) {
	lines := []string{"tpl T # c", "", "  voi 0 v INT_U32 : SUM", "# only a comment", "echo a  b"}
	out := []byte("> tpl T\ntpl_alloc(\"T\") = 0\n> voi 0 v INT_U32 : SUM\nx\n> voi y\n> echo a b\n")
	b := gen.Blocks(lines, out)
	require.Equal(t, map[int][]byte{
		0: []byte("> tpl T\ntpl_alloc(\"T\") = 0\n"),
		2: []byte("> voi 0 v INT_U32 : SUM\nx\n> voi y\n"),
		4: []byte("> echo a b\n"),
	}, b)
	require.Equal(t, map[int][]byte{0: []byte("> tpl T\nzzz\n")}, gen.Blocks(lines, []byte("> tpl T\nzzz\n")))

	d := gen.DigestOf(9, lines, out)
	require.Len(t, d.Blocks, 3)
	text := gen.DigestHeader() + "\n# a comment\n" + d.String() + "\n"
	v, ds, err := gen.ParseDigests(strings.NewReader(text))
	require.NoError(t, err)
	require.Equal(t, gen.Version, v)
	require.Equal(t, map[uint64]gen.Digest{9: d}, ds)
	require.Equal(t, -1, gen.FirstDiff(d, d))
	other := gen.DigestOf(9, lines, bytes.Replace(out, []byte("x\n"), []byte("y\n"), 1))
	require.Equal(t, 1, gen.FirstDiff(d, other))
	require.NotEqual(t, d.Full, other.Full)

	_, _, err = gen.ParseDigests(strings.NewReader("1 2 3\n"))
	require.Error(t, err)
	_, _, err = gen.ParseDigests(strings.NewReader(gen.DigestHeader() + "\n1 0123456789abcdef 2 abc\n"))
	require.Error(t, err)
}

// TestModelAgainstC checks the generator's expectations (VOI adds, blob
// sizes, init and clone_into results) against a C reference build named by
// GEN_CREF, on seeds 1..GEN_SEEDS (default 200): the model must be the C's.
func TestModelAgainstC(t *testing.T) {
	cref := os.Getenv("GEN_CREF")
	if cref == "" {
		t.Skip("set GEN_CREF to a C reference build")
	}
	n := uint64(200)
	if s := os.Getenv("GEN_SEEDS"); s != "" {
		n, _ = strconv.ParseUint(s, 10, 64)
	}
	dir := t.TempDir()
	for seed := uint64(1); seed <= n; seed++ {
		sc := gen.Generate(seed, gen.Options{})
		name := filepath.Join(dir, "s.scn")
		require.NoError(t, os.WriteFile(name, []byte(sc.Text()), 0o644))
		out, err := exec.Command(cref, name).Output()
		if err != nil {
			t.Errorf("seed %d: C: %v", seed, err)
			continue
		}
		mism, _ := expectMismatches(sc, out)
		for _, m := range mism {
			t.Errorf("seed %d: %s", seed, m)
		}
	}
}
