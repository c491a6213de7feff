package derive_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/internal/readmetest"

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
	require.Equal(t, readmetest.FuncBody(t, "readme_test.go", "readmeMeta"), readmetest.Snippet(t, "../README.md", "t.SetDescription(\"HTTP server\")"))
}
