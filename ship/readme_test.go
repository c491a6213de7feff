package ship_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestREADMEService: the README's service snippet is the service function
// of example_test.go as written, so it compiles, runs (Example_shipper)
// and cannot rot.
func TestREADMEService(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	src, err := os.ReadFile("example_test.go")
	require.NoError(t, err)

	_, after, ok := strings.Cut(string(readme), "\n## Shipping from a service\n")
	require.True(t, ok, "README has no section Shipping from a service")
	_, after, ok = strings.Cut(after, "```go\n")
	require.True(t, ok)
	snippet, _, ok := strings.Cut(after, "```\n")
	require.True(t, ok)

	i := strings.Index(string(src), "func service(")
	require.GreaterOrEqual(t, i, 0)
	fn, _, ok := strings.Cut(string(src[i:]), "\n}\n")
	require.True(t, ok)
	require.Equal(t, fn+"\n}\n", snippet)
}
