package devstat_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/internal/readmetest"

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
	require.Equal(t, readmetest.FuncBody(t, "readme_test.go", "readmeDevstat"), readmetest.Snippet(t, "../README.md", "tp, _ := devstat.Template(reg)"))
}
