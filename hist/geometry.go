package hist

import "github.com/statsblob/statsblob/voi"

// Geometry is how histogram data of one type is laid out (the C's struct
// voistatdata_{cr,dr,dv}hist{32,64}): a Header-byte header holding the
// out-of-band counter, then buckets of Size bytes each, each starting with
// its Bounds bound words (8 bytes each: one for CRHIST and DVHIST, two for
// DRHIST), with its counter at CountOff (4 bytes for the 32-bit types,
// else 8; the 32-bit types' header and counters are padded to 8 bytes).
// Counts change with updates; bounds never do.
type Geometry struct {
	Header   int
	Size     int
	Bounds   int
	CountOff int
	Count32  bool
}

// GeometryOf returns the layout of histogram data of type hdt; false for a
// type that is not a histogram.
func GeometryOf(hdt voi.DType) (Geometry, bool) {
	g, ok := geomOf(hdt)
	if !ok {
		return Geometry{}, false
	}
	return Geometry{Header: hdrSize, Size: g.bsz, Bounds: g.coff / 8, CountOff: g.coff, Count32: g.is32}, true
}
