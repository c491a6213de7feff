package main

import (
	"bytes"
	"os"
	"path/filepath"
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
