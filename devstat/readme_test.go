package devstat_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/devstat"
	"github.com/statsblob/statsblob/tpl"
)

var _ = readmeDevstat // compiled, not run

// readmeDevstat's body is the README's devstat snippet (TestREADMEDevstat).
func readmeDevstat(reg *tpl.Registry, prev *blob.Blob) {
	tp, _ := devstat.Template(reg) // the stock I/O template
	d, _ := devstat.New(tp, devstat.Options{})
	tx := d.Start()
	// ... the I/O ...
	_ = d.End(tx, 128<<10, devstat.Write, devstat.TagSimple)
	st, _ := devstat.Compute(prev, d.Snapshot(false)) // two cumulative readings
	fmt.Println(st.TPS, st.KBPerTransfer, st.MBPerSec, st.BusyPercent, st.LatencyP99)
}

// TestREADMEDevstat: the README's devstat snippet is readmeDevstat's body,
// so it compiles.
func TestREADMEDevstat(t *testing.T) {
	require.Equal(t, funcBody(t, "readme_test.go", "readmeDevstat"), readmeSnippet(t, "tp, _ := devstat.Template(reg)"))
}

// funcBody returns the body of function name in file, one tab less.
func funcBody(t *testing.T, file, name string) string {
	src, err := os.ReadFile(file)
	require.NoError(t, err)
	_, body, ok := strings.Cut(string(src), "\nfunc "+name+"(")
	require.True(t, ok)
	_, body, _ = strings.Cut(body, "{\n")
	body, _, _ = strings.Cut(body, "\n}\n")
	var out strings.Builder
	for _, line := range strings.SplitAfter(body+"\n", "\n") {
		out.WriteString(strings.TrimPrefix(line, "\t"))
	}
	return out.String()
}

// readmeSnippet returns the README's Go snippet that starts with first.
func readmeSnippet(t *testing.T, first string) string {
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	_, after, ok := strings.Cut(string(readme), "```go\n"+first)
	require.True(t, ok, "README has no snippet starting %q", first)
	snippet, _, _ := strings.Cut(after, "```\n")
	return first + snippet
}
