package gen_test

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/cmd/statsblob/internal/scenario/gen"
)

var updatePending = flag.Bool("update-pending", false,
	"rewrite testdata/conformance/generated/PENDING with the seeds whose Go output differs from the C digests")

var generatedDir = filepath.Join("..", "..", "..", "..", "..", "testdata", "conformance", "generated")

// readPending reads PENDING: seeds, one per line, each followed by the
// reason after a '#'.
func readPending(t *testing.T) map[uint64]string {
	t.Helper()
	m := map[uint64]string{}
	f, err := os.Open(filepath.Join(generatedDir, "PENDING"))
	if os.IsNotExist(err) {
		return m
	}
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		s, reason, _ := strings.Cut(line, "#")
		seed, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
		require.NoError(t, err, "PENDING: %q", line)
		m[seed] = strings.TrimSpace(reason)
	}
	require.NoError(t, sc.Err())
	return m
}

const pendingHeader = `# Generated seeds whose Go output does not match the C digests yet, one per line:
# SEED  # the first command whose output differs. TestGeneratedGoldens skips them and
# fails if one of them passes: after a fix lands, run
#   go test ./cmd/statsblob/internal/scenario/gen -run TestGeneratedGoldens -update-pending
`

// TestGeneratedGoldens runs the generated scenarios whose C outputs are
// recorded in testdata/conformance/generated/digests.txt (make gen-goldens
// CREF=path) through the Go runner and compares the digests of the outputs:
// conformance on scenarios nobody wrote, kept without the C. Seeds listed
// in PENDING must still differ (the list only shrinks).
func TestGeneratedGoldens(t *testing.T) {
	f, err := os.Open(filepath.Join(generatedDir, "digests.txt"))
	require.NoError(t, err)
	version, want, err := gen.ParseDigests(f)
	f.Close()
	require.NoError(t, err)
	require.Equal(t, gen.Version, version,
		"the digests are of another generator version: regenerate them (make gen-goldens CREF=path/to/cref)")
	require.NotEmpty(t, want)
	pend := readPending(t)
	seeds := make([]uint64, 0, len(want))
	for s := range want {
		seeds = append(seeds, s)
	}
	slices.Sort(seeds)
	if reduced() {
		require.False(t, *updatePending, "-update-pending needs every seed: drop -short and -race")
		seeds = seeds[:min(len(seeds), reducedSeeds())]
	}
	for s := range pend {
		_, ok := want[s]
		require.True(t, ok, "PENDING seed %d has no digest", s)
	}

	failing := make([]string, len(seeds)) // by index: the reason, or ""
	t.Run("seeds", func(t *testing.T) {
		for i, seed := range seeds {
			t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) {
				t.Parallel()
				sc := gen.Generate(seed, gen.Options{})
				out, runErr := runGo(sc.Text())
				got := gen.DigestOf(seed, sc.Lines, out)
				if runErr == nil && got.Full == want[seed].Full {
					if reason, ok := pend[seed]; ok && !*updatePending {
						t.Fatalf("seed %d matches its digest but is listed in PENDING (%s): remove it", seed, reason)
					}
					return
				}
				reason := "output after the last command differs"
				if k := gen.FirstDiff(want[seed], got); k >= 0 {
					cmds := gen.Commands(sc.Lines)
					if k < len(cmds) {
						toks := gen.Tokens(sc.Lines[cmds[k]])
						reason = fmt.Sprintf("line %d: %s", cmds[k]+1, strings.Join(toks, " "))
						if len(reason) > 120 {
							reason = reason[:120] + "..."
						}
					}
				}
				if runErr != nil {
					reason += fmt.Sprintf(" (runner: %v)", runErr)
				}
				failing[i] = reason
				if *updatePending {
					return
				}
				if p, ok := pend[seed]; ok {
					t.Skipf("pending: %s", p)
				}
				t.Fatalf("seed %d: output differs from the C's first at %s (statsblob gen %d | statsblob run -)", seed, reason, seed)
			})
		}
	})
	if !*updatePending {
		return
	}
	var b strings.Builder
	b.WriteString(pendingHeader)
	n := 0
	for i, r := range failing {
		if r != "" {
			fmt.Fprintf(&b, "%d  # %s\n", seeds[i], r)
			n++
		}
	}
	require.NoError(t, os.WriteFile(filepath.Join(generatedDir, "PENDING"), []byte(b.String()), 0o644))
	t.Logf("PENDING: %d of %d seeds", n, len(seeds))
}
