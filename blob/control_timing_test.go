//go:build go1.24

package blob_test

import (
	"testing"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/tpl"
)

// BenchmarkUpdateControl is BenchmarkUpdate/SUM with a Control attached:
// every VOI on (the atomic load and a nil test), the VOI off (the load and
// the mask test, no statistic written), and another VOI off (the mask test
// says on).
func BenchmarkUpdateControl(b *testing.B) {
	ring := uniformRing()
	for _, c := range []struct {
		name string
		set  func(*blob.Control)
	}{
		{"on", func(*blob.Control) {}},
		{"off", func(c *blob.Control) { _ = c.Set(0, false) }},
		{"other-off", func(c *blob.Control) { _ = c.Set(1, false) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			bl := benchBlob(b, tpl.Sum())
			var ctl blob.Control
			c.set(&ctl)
			bl.SetControl(&ctl)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if err := bl.UpdateU64(0, ring[i&0xFFFF]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
