// Package readmetest keeps the README's Go snippets compiling: a test
// holds a snippet as the body of a function it compiles, and checks that
// the README shows exactly that body.
package readmetest

import (
	"os"
	"strings"
	"testing"
)

// FuncBody returns the body of the function name in file, one tab of
// indentation less, as the README shows it.
func FuncBody(t testing.TB, file, name string) string {
	t.Helper()
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	_, body, ok := strings.Cut(string(src), "\nfunc "+name+"(")
	if !ok {
		t.Fatalf("%s has no func %s", file, name)
	}
	_, body, _ = strings.Cut(body, "{\n")
	body, _, _ = strings.Cut(body, "\n}\n")
	var out strings.Builder
	for _, line := range strings.SplitAfter(body+"\n", "\n") {
		out.WriteString(strings.TrimPrefix(line, "\t"))
	}
	return out.String()
}

// Snippet returns the Go snippet of the README at path that starts with
// the line first.
func Snippet(t testing.TB, path, first string) string {
	t.Helper()
	readme, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(readme), "```go\n"+first)
	if !ok {
		t.Fatalf("%s has no Go snippet starting %q", path, first)
	}
	snippet, _, _ := strings.Cut(after, "```\n")
	return first + snippet
}
