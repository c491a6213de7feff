package derive_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/derive"
	"github.com/statsblob/statsblob/tpl"
)

var _ = readmeMeta // compiled, not run

// readmeMeta's body is the README's metadata snippet (TestREADMEMeta).
func readmeMeta(t *tpl.Template, latencyID int32, prev, cur *blob.Blob) {
	t.SetDescription("HTTP server")
	_ = t.SetVOIMeta(latencyID, tpl.VOIMeta{Unit: "us", Help: "Request latency.", Count: "requests"})
	_ = t.SetDerived([]tpl.Derived{
		{Name: "hit_percent", Op: tpl.OpPercent, Of: "hits", By: "lookups"},
		{Name: "latency_var", Op: tpl.OpVariance, Of: "latency_us", By: "requests", SumSq: "latency_sq"},
		{Name: "lookup_rate", Op: tpl.OpRate, Of: "lookups"},
	})
	vs, _ := derive.Compute(t, prev, cur, 5*time.Minute) // one reading (prev nil) or the period between two
	for _, v := range vs {
		fmt.Println(v.Name, v.Op, v.Value, v.Unit)
	}
}

// TestREADMEMeta: the README's metadata snippet is readmeMeta's body, so
// it compiles.
func TestREADMEMeta(t *testing.T) {
	require.Equal(t, funcBody(t, "readme_test.go", "readmeMeta"), readmeSnippet(t, "t.SetDescription(\"HTTP server\")"))
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
