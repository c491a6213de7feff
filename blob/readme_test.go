package blob_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestREADMETour: the README's tour is Example_tour's body as written
// (without its Output comment), so it compiles, runs and cannot rot.
func TestREADMETour(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	src, err := os.ReadFile("tour_example_test.go")
	require.NoError(t, err)

	_, after, ok := strings.Cut(string(readme), "## A tour of the API\n\n```go\n")
	require.True(t, ok, "README has no tour")
	snippet, _, ok := strings.Cut(after, "```\n")
	require.True(t, ok)

	_, body, ok := strings.Cut(string(src), "func Example_tour() {\n")
	require.True(t, ok)
	body, _, ok = strings.Cut(body, "\t// Output:")
	require.True(t, ok)
	var want strings.Builder
	for _, line := range strings.SplitAfter(body, "\n") {
		want.WriteString(strings.TrimPrefix(line, "\t"))
	}
	require.Equal(t, want.String(), snippet)
}

// TestREADMEGoSnippets: every Go snippet of the README is compiled by a
// test: the tour by TestREADMETour, the shipper's by TestREADMEService
// (ship/readme_test.go), the export snippet by
// TestREADMEExport in the export module (export/readme_test.go).
func TestREADMEGoSnippets(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	var firsts []string
	rest := string(readme)
	for {
		_, after, ok := strings.Cut(rest, "```go\n")
		if !ok {
			break
		}
		first, _, _ := strings.Cut(after, "\n")
		firsts = append(firsts, first)
		rest = after
	}
	require.Equal(t, []string{
		"reg := tpl.NewRegistry()  // or tpl.Default",                                              // TestREADMETour
		"func service(ctx context.Context, collector string, requests <-chan request) error {",     // ship: TestREADMEService
		"src := export.SourceFunc(func() []export.Named { // called at every scrape or collection", // export: TestREADMEExport
		"tp, _ := devstat.Template(reg) // the stock I/O template",                                 // devstat: TestREADMEDevstat
		"var ctl blob.Control",              // statdef: TestREADMEStatdef
		"t.SetDescription(\"HTTP server\")", // derive: TestREADMEMeta
	}, firsts, "a new Go snippet needs a test that compiles it")
}

// exampleOutput returns the lines of the // Output: comment of Example
// function name in file.
func exampleOutput(t *testing.T, file, name string) []string {
	t.Helper()
	src, err := os.ReadFile(file)
	require.NoError(t, err)
	_, body, ok := strings.Cut(string(src), "func "+name+"() {\n")
	require.True(t, ok, name)
	body, _, ok = strings.Cut(body, "\n}\n")
	require.True(t, ok, name)
	_, out, ok := strings.Cut(body, "\t// Output:\n")
	require.True(t, ok, name)
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		lines = append(lines, strings.TrimPrefix(l, "\t// "))
	}
	return lines
}

// TestREADMEExampleOutputs: the figures the README quotes from the
// Examples are their // Output:, which go test checks. Before, nothing
// tied the README's "p50 296 µs and p99 493 µs" (Example_latency) or
// the tour's "It prints ..." to the Examples: a change of either's
// output left the README stale.
func TestREADMEExampleOutputs(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	readme := strings.Join(strings.Fields(string(b)), " ")

	tour := exampleOutput(t, "tour_example_test.go", "Example_tour")
	require.Contains(t, readme, "It prints `"+strings.Join(tour, "` and `")+"`;")

	lat := exampleOutput(t, "latency_example_test.go", "Example_latency")
	m := regexp.MustCompile(`^p50 (\d+) µs, p99 (\d+) µs$`).FindStringSubmatch(lat[0])
	require.NotNil(t, m, "Example_latency's first output line: %q", lat[0])
	require.Contains(t, readme, "`Example_latency`")
	require.Contains(t, readme, "prints p50 "+m[1]+" µs and p99 "+m[2]+" µs where")
}
