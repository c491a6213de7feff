package hist

import (
	"encoding/binary"
	"math/bits"

	"github.com/statsblob/statsblob/internal/lut"
	"github.com/statsblob/statsblob/internal/trusted"
	"github.com/statsblob/statsblob/voi"
)

// Layout is the bucket structure of one histogram statistic, analysed once
// from its bytes so that each update finds its bucket without the C's
// bucket-by-bucket scan. The answer is always the scan's:
//
//   - linear: the buckets' lower bounds (after an optional first bucket
//     below them, such as an lbinf bucket) are spaced by one constant step,
//     as Lin generation makes them: the bucket is computed with one
//     multiplication (constant time);
//   - sorted: the lower bounds never decrease (and, for DRHIST, no bucket
//     ends after the next one starts): binary search, since in such a layout
//     the highest bucket whose lower bound is at most v is the only
//     candidate;
//   - otherwise (user buckets in no order, overlapping DRHIST buckets, Q
//     bounds of different precisions): the scan.
//
// For Q types the faster lookups need every bound to have the same control
// bits; a value with other control bits is looked up by the scan.
//
// On top of that, a linear or sorted layout of an integer VOI whose bounds
// span at most 4096 keys, and fewer than its data has bytes (a CRHIST's
// first bound at the bottom of the range, such as an lbinf bucket's, not
// counted), gets a counter table: the counter of every key in that window,
// and one for the keys on either side of it, so that Update and Counter
// find the counter with one load. A table never takes more than twice the
// bytes of its histogram.
//
// A Layout depends on the bounds only: it stays valid while the bounds in
// the data are those it was made from. Counts may change freely (Update,
// Reset, Merge keep the bounds), so one Layout serves the template's
// histogram and every blob made from that template. Using it with data of
// another length falls back to the scan; using it with data of the same
// length but other bounds gives wrong answers. The zero Layout is not
// usable. A Layout holds no references to the data and may be copied.
type Layout struct {
	g          geom
	o          *order
	dsz        int
	n          int
	mode       layoutMode
	mask, flip uint64 // integer key transform (see order.key)
	qctrl      uint64 // Q: the control bits of every bound
	qnf        uint8  // Q: their fractional bits

	// linear: bounds a..n-1 have keys ka + (i-a)*step; bucket 0 has key k0
	// when a is 1.
	a                         int
	k0, ka, step, recip, span uint64

	fast bool // sorted or linear, integer VOI: Update's inlined path
	cnt0 int  // offset of bucket 0's counter

	// ct: for fast layouts whose bounds' keys span at most maxTableKeys
	// keys, the counter table (package internal/lut). Shared by copies;
	// never written after NewLayout.
	ct lut.Counters
}

// maxTableKeys bounds the window of a counter table: 4096 keys cost 8 KiB,
// once per template layout.
const maxTableKeys = 4096

type layoutMode uint8

const (
	modeScan layoutMode = iota
	modeSorted
	modeLinear
)

// NewLayout analyses dsz = len(data) bytes of histogram data of type hdt for
// a VOI of type voiDT. Errors (wrapping voi.ErrInvalid) as for Update.
func NewLayout(data []byte, hdt, voiDT voi.DType) (Layout, error) {
	return newLayoutLimit(data, hdt, voiDT, maxDataSize)
}

func init() { trusted.HistLayout = layoutTrusted }

// layoutTrusted is trusted.HistLayout: newLayoutLimit into *dst, a
// *Layout, returning the counter table it built.
func layoutTrusted(dst any, data []byte, hdt, voiDT voi.DType, maxTable int) (lut.Counters, error) {
	l := dst.(*Layout)
	var err error
	*l, err = newLayoutLimit(data, hdt, voiDT, maxTable)
	return l.ct, err
}

// newLayoutLimit is NewLayout with at most maxTable bytes for the counter
// table (it allocates nothing else but the table). Callers that analyse
// many histograms from untrusted bytes (package blob) bound what they
// allocate with it.
func newLayoutLimit(data []byte, hdt, voiDT voi.DType, maxTable int) (Layout, error) {
	g, o, err := check(data, hdt, voiDT)
	if err != nil {
		return Layout{}, err
	}
	l := Layout{g: g, o: o, dsz: len(data), n: g.numBuckets(data), mask: o.mask, flip: o.flip}
	n := l.n
	bound := func(i, at int) uint64 { return binary.LittleEndian.Uint64(data[hdrSize+i*g.bsz+at:]) }
	// The bounds' keys are read from the data each time they are needed:
	// a copy would cost 8 bytes per bucket for every histogram decoded.
	key := func(i int) uint64 { return l.key(bound(i, 0)) }
	if o.q && n > 0 {
		l.qctrl = bound(0, 0) & 7
		l.qnf = o.nf[l.qctrl]
	}
	ctrlOK := func(b uint64) bool { return !o.q || b&7 == l.qctrl }
	for i := range n {
		if !ctrlOK(bound(i, 0)) {
			return l, nil // the scan
		}
	}
	for i := 1; i < n; i++ {
		if key(i) < key(i-1) {
			return l, nil
		}
	}
	if g.kind == kindDR {
		for i := range n {
			ub := bound(i, 8)
			if !ctrlOK(ub) || i+1 < n && l.key(ub) > key(i+1) {
				return l, nil
			}
		}
	}
	l.mode = modeSorted
	l.fast, l.cnt0 = !o.q, hdrSize+g.coff
	for a := 0; a <= 1 && n-a >= 2; a++ {
		step := key(a+1) - key(a)
		if step == 0 {
			continue
		}
		lin := true
		for i := a + 2; i < n && lin; i++ {
			lin = key(i)-key(i-1) == step
		}
		if lin {
			l.mode, l.a, l.k0, l.ka, l.step = modeLinear, a, key(0), key(a), step
			l.recip = ^uint64(0) / step
			l.span = uint64(n-1-a) * step
			break
		}
	}
	if l.fast && n > 0 {
		l.buildCounters(data, key(0), key(n-1), key(min(1, n-1)), maxTable)
	}
	return l, nil
}

// buildCounters makes the counter table of a fast layout whose bounds' keys
// (lower bounds from first to last, the second one second; DRHIST upper
// bounds in the data) fit in a window of maxTableKeys keys, not counting a
// CRHIST first bound at key 0, and of at most as many keys as the data has
// bytes (so a table never costs more than twice its histogram). Each entry
// is the answer of the lookup it replaces.
func (l *Layout) buildCounters(data []byte, first, last, second uint64, maxTable int) {
	lo, hi := first, last
	if l.g.kind == kindCR && lo == 0 && l.n > 1 {
		// A first bucket from the bottom of the key space (an lbinf
		// bucket, or one from 0 on an unsigned VOI) takes every key below
		// the second bound: the window can start there.
		lo = second
	}
	if l.g.kind == kindDR {
		for i := range l.n {
			hi = max(hi, l.key(binary.LittleEndian.Uint64(data[hdrSize+i*l.g.bsz+8:])))
		}
	}
	if hi-lo >= maxTableKeys || int(hi-lo)+3 > len(data) || 2*(int(hi-lo)+3) > maxTable {
		return
	}
	w := int(hi-lo) + 1
	t := make([]uint16, w+2)
	for i := range w {
		t[i] = uint16(l.counterOf(data, lo+uint64(i)))
	}
	// Beyond the window every comparison with a bound comes out the same
	// way as at its edge; where no key lies beyond (hi or lo at the end of
	// the key space) the entry is never read.
	t[w] = uint16(l.counterOf(data, hi+1))
	t[w+1] = uint16(l.counterOf(data, lo-1))
	l.ct = lut.Counters{T: t, Mask: l.mask, Flip: l.flip, Lo: lo}
}

// counterOf is the offset of the counter that the fast path's lookup picks
// for key x (the oob counter at offset 0 when no bucket takes it).
func (l *Layout) counterOf(data []byte, x uint64) int {
	var j int
	if l.mode == modeLinear {
		j = l.linear(x)
	} else {
		j = l.searchInt(data, x)
	}
	if j >= 0 && l.g.kind != kindCR {
		j = l.member(data, j, x)
	}
	if j < 0 {
		return 0
	}
	return l.cnt0 + j*l.g.bsz
}

// key is the order key of a bound or value (Q: of the layout's control
// bits).
func (l *Layout) key(v uint64) uint64 {
	if l.o.q {
		return l.o.qkey(v)
	}
	return (v & l.mask) ^ l.flip
}

// NumBuckets returns the number of buckets of the analysed data.
func (l *Layout) NumBuckets() int { return l.n }

// Update is the package's Update (with the histogram and VOI types of the
// analysed data) for data with the analysed bounds. It does not allocate.
// The zero Layout returns an error wrapping voi.ErrInvalid.
func (l *Layout) Update(data []byte, v uint64) error {
	if l.fast && len(data) == l.dsz {
		// Integer VOIs, all in one function: the bucket, then the counter.
		off, ok := l.ct.Counter(v)
		if !ok {
			off = l.counterOf(data, v&l.mask^l.flip)
		}
		if l.g.is32 {
			c := data[off : off+4]
			binary.LittleEndian.PutUint32(c, binary.LittleEndian.Uint32(c)+1)
		} else {
			c := data[off : off+8]
			binary.LittleEndian.PutUint64(c, binary.LittleEndian.Uint64(c)+1)
		}
		return nil
	}
	if l.o == nil {
		return errNotHist
	}
	if len(data) < hdrSize {
		return errShort
	}
	l.g.add(data, l.Find(data, v))
	return nil
}

// Find returns the bucket Update counts v in, or -1 for oob (also for the
// zero Layout and for data shorter than a histogram header).
func (l *Layout) Find(data []byte, v uint64) int {
	if l.o == nil || len(data) < hdrSize {
		return -1
	}
	if l.mode == modeScan || len(data) != l.dsz {
		return l.g.scan(data, l.o, v)
	}
	var x uint64
	if l.o.q {
		if v&7 != l.qctrl {
			return l.g.scan(data, l.o, v)
		}
		x = l.o.qkey(v)
	} else {
		x = (v & l.mask) ^ l.flip
	}
	var j int
	if l.mode == modeLinear {
		j = l.linear(x)
	} else {
		j = l.search(data, x)
	}
	if j < 0 || l.g.kind == kindCR {
		return j
	}
	return l.member(data, j, x)
}

// member returns j if the DR or DV bucket j, the highest whose lower bound
// is at most v (key x), accepts v, else -1: in a sorted layout no other
// bucket can.
func (l *Layout) member(data []byte, j int, x uint64) int {
	b := data[hdrSize+j*l.g.bsz:]
	if l.g.kind == kindDR {
		if x < l.key(binary.LittleEndian.Uint64(b[8:])) {
			return j
		}
		return -1
	}
	// DV: integers must be equal; Q values (v >= val already) need equal
	// integer parts.
	k := l.key(binary.LittleEndian.Uint64(b))
	if k == x || l.o.q && qkeyInt(k, l.qnf) == qkeyInt(x, l.qnf) {
		return j
	}
	return -1
}

// linear returns the highest bucket whose lower bound's key is at most x,
// or -1, in a linear layout.
func (l *Layout) linear(x uint64) int {
	if x < l.ka {
		if l.a == 1 && l.k0 <= x {
			return 0
		}
		return -1
	}
	off := x - l.ka
	if off >= l.span {
		return l.n - 1
	}
	// off/step through the reciprocal: hi(off*recip) is the quotient or
	// one less.
	q, _ := bits.Mul64(off, l.recip)
	if off-q*l.step >= l.step {
		q++
	}
	return l.a + int(q)
}

// search returns the highest bucket whose lower bound's key is at most x,
// or -1, in a sorted layout. The loop narrows a window that holds the
// answer without a data-dependent branch (the comparison becomes a
// conditional move).
func (l *Layout) search(data []byte, x uint64) int {
	b := data[hdrSize:]
	bsz := l.g.bsz
	base, n := 0, l.n
	for n > 1 {
		half := n >> 1
		if l.key(binary.LittleEndian.Uint64(b[(base+half)*bsz:])) <= x {
			base += half
		}
		n -= half
	}
	if l.key(binary.LittleEndian.Uint64(b[base*bsz:])) > x {
		return -1 // only bucket 0 can be above x here
	}
	return base
}

// searchInt is search for integer VOIs, with the comparison turned into
// arithmetic (the borrow of x - key) so that the loop has no
// data-dependent branch.
func (l *Layout) searchInt(data []byte, x uint64) int {
	b := data[hdrSize:]
	bsz, mask, flip := l.g.bsz, l.mask, l.flip
	base, n := 0, l.n
	for n > 1 {
		half := n >> 1
		k := binary.LittleEndian.Uint64(b[(base+half)*bsz:])&mask ^ flip
		_, above := bits.Sub64(x, k, 0) // 1 when k > x
		base += half &^ -int(above)
		n -= half
	}
	if binary.LittleEndian.Uint64(b[base*bsz:])&mask^flip > x {
		return -1
	}
	return base
}
