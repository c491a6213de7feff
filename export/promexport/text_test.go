package promexport_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/export"
	"github.com/statsblob/statsblob/export/internal/fixture"
	"github.com/statsblob/statsblob/export/promexport"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// TestTextRendersInParallel: a Text renders the blobs it has not seen on
// up to GOMAXPROCS goroutines (from 128 of them); the text is the one a
// single goroutine writes, every blob's series once (a blob handed out
// twice under two label sets twice), and a blob the mapping rejects
// (exported with another template) left out either way.
func TestTextRendersInParallel(t *testing.T) {
	tp := fixture.Kitchen()
	other, err := tpl.NewRegistry().New("OTHER")
	require.NoError(t, err)
	require.NoError(t, other.AddVOI(tpl.VOIDef{ID: 0, Name: "x", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}))
	const n = 300
	var named []export.Named
	for i := range n {
		named = append(named, export.Named{Blob: fixture.KitchenBlob(tp), Template: tp,
			Labels: []export.Label{{Name: "host", Value: fmt.Sprintf("h%03d", i)}}})
		if i == n/2 {
			named = append(named, export.Named{Blob: fixture.KitchenBlob(tp), Template: other})
			// The same blob under another label set: its own series.
			dup := named[len(named)-2]
			dup.Labels = []export.Label{{Name: "host", Value: "dup"}}
			named = append(named, dup)
		}
	}
	c, err := promexport.New(export.Static(named...), export.Options{})
	require.NoError(t, err)
	render := func(procs int) string {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		var b strings.Builder
		require.NoError(t, c.NewText().Write(&b, nil))
		return b.String()
	}
	serial := render(1)
	require.Equal(t, n+1, strings.Count(serial, "kitchen_bytes_total{host="))
	require.Contains(t, serial, `kitchen_bytes_total{host="dup"}`)
	require.Contains(t, serial, fmt.Sprintf(`kitchen_bytes_total{host="h%03d"}`, n/2))
	require.NotContains(t, serial, "other_")
	require.Equal(t, serial, render(4))

	// A Text keeps what it rendered: a second write renders nothing new
	// and writes the same text.
	text := c.NewText()
	var first, second strings.Builder
	require.NoError(t, text.Write(&first, nil))
	require.NoError(t, text.Write(&second, nil))
	require.Equal(t, serial, first.String())
	require.Equal(t, serial, second.String())
}
