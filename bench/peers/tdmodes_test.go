package peers

import (
	"testing"

	"github.com/statsblob/statsblob/voi"
)

// The modes table has a cell per stream, every estimator measured; the
// accurate mode keeps sorted and discrete streams where the C's clustering
// does not.
func TestTDigestModes(t *testing.T) {
	cells := TDigestModes(voi.TDgstClust32, []uint32{20}, []int{5000}, 1, nil)
	if len(cells) != 6 {
		t.Fatalf("%d cells, want 6", len(cells))
	}
	by := map[string]ModeCell{}
	for _, c := range cells {
		if c.Bytes != 340 || !(c.Ratio() > 0) || !(c.RatioRounded() > 0) {
			t.Fatalf("cell %+v: bytes or ratio", c)
		}
		// Rounding an answer on integer samples never moves it away in
		// rank.
		if c.CaioRounded > c.Caio || c.InfluxRounded > c.Influx {
			t.Errorf("cell %+v: a rounded answer further off", c)
		}
		by[c.Stream] = c
	}
	if s := by["sorted"]; s.Accurate >= 0.01 || s.C <= 0.1 {
		t.Errorf("sorted: accurate %g, C %g", s.Accurate, s.C)
	}
	// (20 slots split 7 of the 8 values' runs: p90 falls in the eighth.)
	if z := by["zipf"]; z.Accurate >= 0.005 || z.C <= 0.01 {
		t.Errorf("zipf: accurate %g, C %g", z.Accurate, z.C)
	}
}
