package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRunScenario(t *testing.T) {
	scn := filepath.Join("..", "..", "testdata", "conformance", "scenarios", "01_manpage_example.scn")
	want, err := os.ReadFile(filepath.Join("..", "..", "testdata", "conformance", "golden", "01_manpage_example.out"))
	require.NoError(t, err)
	var o, e bytes.Buffer
	code := mainArgs([]string{"run", scn}, &o, &e)
	require.Equal(t, 0, code, e.String())
	require.Equal(t, string(want), o.String())

	// Through the binary, from standard input.
	p, err := os.ReadFile(scn)
	require.NoError(t, err)
	require.Equal(t, result{0, string(want), ""}, sbIn(t, t.TempDir(), p, "run", "-"))

	missing := filepath.Join(t.TempDir(), "missing.scn")
	require.Equal(t, result{1, "", "statsblob run: open " + missing + ": no such file or directory\n"}, sb(t, "run", missing))
}

// TestPackageMapListsCommands: the package map's line for this command
// (README.md's table and doc.go's list) names every command, in the
// order 'statsblob help' lists them. doc.go's had stopped at the seven
// commands of its first version (demo, run, gen, inspect, render, merge,
// quantile).
func TestPackageMapListsCommands(t *testing.T) {
	var names []string
	for _, c := range commands {
		names = append(names, c.name)
	}
	want := "the CLI: " + strings.Join(names, ", ")
	for _, f := range []struct{ file, prefix string }{
		{"../../README.md", "| `cmd/statsblob` | "},
		{"../../doc.go", "//\tcmd/statsblob "},
	} {
		src, err := os.ReadFile(f.file)
		require.NoError(t, err)
		_, line, ok := strings.Cut(string(src), "\n"+f.prefix)
		require.True(t, ok, "%s has no package map line for cmd/statsblob", f.file)
		line, _, _ = strings.Cut(line, "\n")
		line = strings.TrimSuffix(strings.TrimSpace(line), " |")
		require.Equal(t, want, line, f.file)
	}
}
