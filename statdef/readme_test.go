package statdef_test

import (
	"net/http"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/internal/readmetest"

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
	require.Equal(t, readmetest.FuncBody(t, "readme_test.go", "readmeStatdef"), readmetest.Snippet(t, "../README.md", "var ctl blob.Control"))
}
