package statdef_test

import (
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/statdef"
	"github.com/statsblob/statsblob/tpl"
)

var _ = readmeStatdef // compiled, not run

// readmeStatdef's body is the README's on/off snippet (TestREADMEStatdef).
func readmeStatdef(t *tpl.Template, shards *blob.Sharded) {
	var ctl blob.Control
	shards.SetControl(&ctl) // a Sharded, or b.SetControl(&ctl)
	def := statdef.Def{Template: t, Control: &ctl, Reset: shards}
	_ = def.Apply("name=rtt on=0\nname=bytes data=reset")            // as `echo ... > definition`
	_ = def.Write(os.Stdout)                                         // on=1 / name=bytes on=1 / name=rtt on=0 stopped=...
	http.Handle("/debug/statsblob/definition", statdef.Handler(def)) // GET reads, POST applies
}

// TestREADMEStatdef: the README's on/off snippet is readmeStatdef's body,
// so it compiles.
func TestREADMEStatdef(t *testing.T) {
	require.Equal(t, funcBody(t, "readme_test.go", "readmeStatdef"), readmeSnippet(t, "var ctl blob.Control"))
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
