package main

// Tests of gen and diff through the built binary. diff runs against fake
// C references: shell scripts around this binary's own runner, exact or
// with a planted difference.

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/cmd/statsblob/internal/scenario/gen"
)

func TestGen(t *testing.T) {
	require.Equal(t, result{0, gen.Generate(5, gen.Options{}).Text(), ""}, sb(t, "gen", "5"))
	require.Equal(t, result{0, gen.Generate(5, gen.Options{Commands: 30}).Text(), ""}, sb(t, "gen", "-n", "30", "5"))
	want := fmt.Sprintf("# statsblob gen 3 (generator version %d)\n%s# statsblob gen 4 (generator version %d)\n%s",
		gen.Version, gen.Generate(3, gen.Options{}).Text(), gen.Version, gen.Generate(4, gen.Options{}).Text())
	require.Equal(t, result{0, want, ""}, sb(t, "gen", "-seeds", "3:4"))

	// Few seeds leave cells unhit: the table lists them, exit status 1.
	r := sb(t, "gen", "-coverage", "-seeds", "1:20")
	require.Equal(t, 1, r.code)
	require.Empty(t, r.stderr)
	hits, cmds := gen.Coverage(1, 20, gen.Options{})
	var table strings.Builder
	missing, _ := gen.WriteCoverage(&table, hits)
	require.NotEmpty(t, missing)
	require.Equal(t, fmt.Sprintf("scenario generator coverage (version %d), seeds 1:20: 20 scenarios, %d commands\n%s",
		gen.Version, cmds, table.String()), r.stdout)

	synopsis := "usage: statsblob gen [-n N] [-coverage] [-seeds RANGE] [SEED]\nRun 'statsblob gen -h' for help.\n"
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{nil, "missing SEED"},
		{[]string{"1", "2"}, `unexpected argument "2"`},
		{[]string{"-seeds", "1:2", "3"}, "give SEED or -seeds, not both"},
		{[]string{"1:5"}, `SEED "1:5" is a range: use -seeds`},
		{[]string{"-seeds", "5:1"}, "empty seed range 5:1"},
		{[]string{"x"}, `seed "x" is not a decimal number`},
		{[]string{"-n", "-1", "1"}, "-n -1: want N >= 0"},
	} {
		require.Equal(t, result{2, "", "statsblob gen: " + c.msg + "\n" + synopsis}, sb(t, append([]string{"gen"}, c.args...)...), "%q", c.args)
	}
}

// fakeCref writes a shell script that prints the binary's own output for
// a scenario, passed through the filter (a shell pipeline stage, or "").
func fakeCref(t *testing.T, filter string) string {
	t.Helper()
	script := "#!/bin/sh\n" + sbBinary(t) + " run \"$1\""
	if filter != "" {
		script += " | " + filter
	}
	name := filepath.Join(t.TempDir(), "cref")
	require.NoError(t, os.WriteFile(name, []byte(script+"\n"), 0o755))
	return name
}

var summaryRE = regexp.MustCompile(`^diff: seeds (\S+) \(generator version \d+, C reference \S+\): (\d+) scenarios, (\d+) commands, (\d+) bytes of C output, \S+; (\d+) differ \((\d+) C failures, (\d+) of them timeouts, (\d+) refused by the Go runner\)\n$`)

// summary returns the numbers of diff's last line: seeds, scenarios,
// commands, bytes, differ, C failures, timeouts, Go refusals.
func summary(t *testing.T, out string) []string {
	t.Helper()
	i := strings.LastIndex(strings.TrimSuffix(out, "\n"), "\n")
	m := summaryRE.FindStringSubmatch(out[i+1:])
	require.NotNil(t, m, out[i+1:])
	return m[1:]
}

func TestDiffAgreeing(t *testing.T) {
	cref := fakeCref(t, "")
	dir := t.TempDir()
	goldens := filepath.Join(dir, "digests.txt")
	r := sbIn(t, dir, nil, "diff", "-cref", cref, "-seeds", "115:126", "-j", "3", "-goldens", goldens)
	require.Equal(t, 0, r.code, r.stderr)
	require.Empty(t, r.stderr)
	cmds, bytes := 0, 0
	var want strings.Builder
	want.WriteString(gen.DigestHeader() + "\n# C reference outputs of seeds 115:126 (scenarios: statsblob gen SEED)\n")
	for s := uint64(115); s <= 126; s++ {
		sc := gen.Generate(s, gen.Options{})
		out, err := runGoScenario([]byte(sc.Text()))
		require.NoError(t, err)
		cmds += len(gen.Commands(sc.Lines))
		bytes += len(out)
		fmt.Fprintln(&want, gen.DigestOf(s, sc.Lines, out))
	}
	require.Equal(t, []string{"115:126", "12", fmt.Sprint(cmds), fmt.Sprint(bytes), "0", "0", "0", "0"}, summary(t, r.stdout))
	require.Equal(t, 1, strings.Count(r.stdout, "\n"), "only the summary")
	got, err := os.ReadFile(goldens)
	require.NoError(t, err)
	require.Equal(t, want.String(), string(got))
}

func TestDiffDiffering(t *testing.T) {
	// The fake C prints the first "tpl_alloc" result of a scenario wrong.
	cref := fakeCref(t, `sed '0,/^tpl_alloc/s/^tpl_alloc/tpl_alloc /'`)
	dir := t.TempDir()
	keep := filepath.Join(dir, "kept")
	r := sbIn(t, dir, nil, "diff", "-cref", cref, "-seeds", "20:21", "-shrink", "1", "-keep", keep)
	require.Equal(t, 1, r.code, r.stderr)
	require.Empty(t, r.stderr)
	require.Equal(t, []string{"20:21", "2"}, summary(t, r.stdout)[:2])
	require.Equal(t, []string{"2", "0", "0", "0"}, summary(t, r.stdout)[4:])

	var want strings.Builder
	for _, s := range []uint64{20, 21} {
		sc := gen.Generate(s, gen.Options{})
		out, err := runGoScenario([]byte(sc.Text()))
		require.NoError(t, err)
		lines := strings.Split(string(out), "\n")
		k := 0
		for lines[k] == "" || !strings.HasPrefix(lines[k], "tpl_alloc") {
			k++
		}
		first := 0
		for i, l := range sc.Lines {
			if toks := gen.Tokens(l); len(toks) > 0 && toks[0] == "tpl" {
				first = i
				break
			}
		}
		fmt.Fprintf(&want, "seed %d: output line %d differs (scenario line %d: %s)\n  C:  %s\n  Go: %s\n",
			s, k+1, first+1, strings.Join(gen.Tokens(sc.Lines[first]), " "), strings.Replace(lines[k], "tpl_alloc", "tpl_alloc ", 1), lines[k])
		if s == 20 {
			// Shrunk to the one line that makes the difference.
			fmt.Fprintf(&want, "  shrunk to 1 of %d lines:\n    %s\n", len(sc.Lines), sc.Lines[first])
			p, err := os.ReadFile(filepath.Join(keep, "seed-20.min.scn"))
			require.NoError(t, err)
			require.Equal(t, sc.Lines[first]+"\n", string(p))
		}
		p, err := os.ReadFile(filepath.Join(keep, fmt.Sprintf("seed-%d.scn", s)))
		require.NoError(t, err)
		require.Equal(t, sc.Text(), string(p))
		p, err = os.ReadFile(filepath.Join(keep, fmt.Sprintf("seed-%d.go.out", s)))
		require.NoError(t, err)
		require.Equal(t, string(out), string(p))
	}
	i := strings.LastIndex(strings.TrimSuffix(r.stdout, "\n"), "\n")
	require.Equal(t, want.String(), r.stdout[:i+1])
}

func TestDiffCrefFailures(t *testing.T) {
	dir := t.TempDir()
	slow := filepath.Join(dir, "slow")
	require.NoError(t, os.WriteFile(slow, []byte("#!/bin/sh\nsleep 5\n"), 0o755))
	r := sbIn(t, dir, nil, "diff", "-cref", slow, "-seeds", "1", "-timeout", "200ms")
	require.Equal(t, 1, r.code)
	require.True(t, strings.HasPrefix(r.stdout, "seed 1: the C reference failed: timed out after 200ms: context deadline exceeded\n"), r.stdout)
	require.Equal(t, []string{"0", "1", "1", "1", "0"}, summary(t, r.stdout)[3:])

	bad := filepath.Join(dir, "bad")
	require.NoError(t, os.WriteFile(bad, []byte("#!/bin/sh\necho broken >&2\nexit 3\n"), 0o755))
	goldens := filepath.Join(dir, "d.txt")
	r = sbIn(t, dir, nil, "diff", "-cref", bad, "-seeds", "2", "-goldens", goldens)
	require.Equal(t, 1, r.code)
	require.True(t, strings.HasPrefix(r.stdout, "seed 2: the C reference failed: exit status 3: broken\n"), r.stdout)
	require.Equal(t, "statsblob diff: "+goldens+" not written: 1 C runs failed\n", r.stderr)
	_, err := os.Stat(goldens)
	require.True(t, os.IsNotExist(err))

	synopsis := "usage: statsblob diff -cref PATH [-seeds RANGE] [-n N] [-j N] [-timeout DURATION] [-shrink N] [-keep DIR] [-goldens FILE]\nRun 'statsblob diff -h' for help.\n"
	require.Equal(t, result{2, "", "statsblob diff: -cref PATH is required\n" + synopsis}, sb(t, "diff"))
	require.Equal(t, result{2, "", "statsblob diff: -seeds: empty seed range 3:2\n" + synopsis}, sb(t, "diff", "-cref", bad, "-seeds", "3:2"))
	// -n 0 and -shrink 0 are valid (the seed chooses; shrink none): the
	// message said all four must be positive.
	for _, args := range [][]string{{"-j", "0"}, {"-timeout", "0s"}, {"-n", "-1"}, {"-shrink", "-1"}} {
		require.Equal(t, result{2, "", "statsblob diff: -j and -timeout must be positive, -n and -shrink 0 or more\n" + synopsis}, sb(t, append([]string{"diff", "-cref", bad}, args...)...))
	}
	missing := filepath.Join(dir, "missing")
	require.Equal(t, result{1, "", "statsblob diff: stat " + missing + ": no such file or directory\n"}, sb(t, "diff", "-cref", missing))
}
