package hist

import (
	"encoding/binary"
	"fmt"

	"github.com/statsblob/statsblob/voi"
)

// Errors of the update path, allocated once (the hot path does not format).
var (
	errNotHist    = fmt.Errorf("hist: not a histogram data type: %w", voi.ErrInvalid)
	errNotNumeric = fmt.Errorf("hist: VOI data type is not numeric: %w", voi.ErrInvalid)
	errShort      = fmt.Errorf("hist: data shorter than the histogram header: %w", voi.ErrInvalid)
)

// check validates the arguments shared by the lookups.
func check(data []byte, hdt, voiDT voi.DType) (geom, *order, error) {
	g, ok := geomOf(hdt)
	if !ok {
		return g, nil, errNotHist
	}
	o := orderOf(voiDT)
	if o == nil {
		return g, nil, errNotNumeric
	}
	if len(data) < hdrSize {
		return g, nil, errShort
	}
	return g, o, nil
}

// Update counts the VOI value v (a pattern of voiDT; a 32-bit type uses the
// low half) into data, dsz bytes of histogram data of type hdt: the count of
// the bucket the C's backward scan picks goes up by one, or the oob counter
// when no bucket accepts v (see the package documentation). 32-bit counters
// wrap as in the C. It reads every bucket it must to be exact, so it costs
// what the C's scan costs; see Layout for the fast path.
//
// Errors (wrapping voi.ErrInvalid, data unchanged): hdt is not a histogram
// type, voiDT is not numeric, or data is shorter than the 8-byte header.
func Update(data []byte, hdt, voiDT voi.DType, v uint64) error {
	g, o, err := check(data, hdt, voiDT)
	if err != nil {
		return err
	}
	g.add(data, g.scan(data, o, v))
	return nil
}

// Find returns the bucket Update would count v in, or -1 for oob. Errors as
// for Update.
func Find(data []byte, hdt, voiDT voi.DType, v uint64) (int, error) {
	g, o, err := check(data, hdt, voiDT)
	if err != nil {
		return -1, err
	}
	return g.scan(data, o, v), nil
}

// add adds one to the counter of bucket i, or to oob for i < 0.
func (g geom) add(data []byte, i int) {
	off := 0
	if i >= 0 {
		off = hdrSize + i*g.bsz + g.coff
	}
	if g.is32 {
		c := data[off : off+4]
		binary.LittleEndian.PutUint32(c, binary.LittleEndian.Uint32(c)+1)
		return
	}
	c := data[off : off+8]
	binary.LittleEndian.PutUint64(c, binary.LittleEndian.Uint64(c)+1)
}

// scan is the C's backward scan: the highest bucket that accepts v, or -1.
// Each kind and order has its own loop, so the per-bucket work is a load and
// one or two comparisons.
func (g geom) scan(data []byte, o *order, v uint64) int {
	n := g.numBuckets(data)
	b := data[hdrSize : hdrSize+n*g.bsz]
	if o.q {
		return scanQ(b, g, o, v)
	}
	x := o.key(v)
	mask, flip := o.mask, o.flip
	switch g.kind {
	case kindCR:
		for i := n - 1; len(b) >= 16; i-- {
			e := b[len(b)-16:]
			if binary.LittleEndian.Uint64(e)&mask^flip <= x {
				return i
			}
			b = b[:len(b)-16]
		}
	case kindDV:
		for i := n - 1; len(b) >= 16; i-- {
			e := b[len(b)-16:]
			if binary.LittleEndian.Uint64(e)&mask^flip == x {
				return i
			}
			b = b[:len(b)-16]
		}
	default:
		for i := n - 1; len(b) >= 24; i-- {
			e := b[len(b)-24:]
			if binary.LittleEndian.Uint64(e)&mask^flip <= x && x < binary.LittleEndian.Uint64(e[8:])&mask^flip {
				return i
			}
			b = b[:len(b)-24]
		}
	}
	return -1
}

// scanQ is scan for Q types, whose bounds may each have their own precision.
func scanQ(b []byte, g geom, o *order, v uint64) int {
	pv := o.pair(v)
	for i := len(b)/g.bsz - 1; i >= 0; i-- {
		e := b[i*g.bsz : (i+1)*g.bsz]
		pb := o.pair(binary.LittleEndian.Uint64(e))
		if !pv.ge(pb) {
			continue
		}
		switch g.kind {
		case kindCR:
			return i
		case kindDR:
			if pv.lt(o.pair(binary.LittleEndian.Uint64(e[8:]))) {
				return i
			}
		default:
			if pv.i == pb.i {
				return i
			}
		}
	}
	return -1
}

// scanRef is the C's backward scan written as plainly as possible, bucket by
// bucket through order.accepts; the tests hold every faster lookup to it.
func scanRef(data []byte, g geom, o *order, v uint64) int {
	for i := g.numBuckets(data) - 1; i >= 0; i-- {
		off := hdrSize + i*g.bsz
		b := binary.LittleEndian.Uint64(data[off:])
		var ub uint64
		if g.kind == kindDR {
			ub = binary.LittleEndian.Uint64(data[off+8:])
		}
		if o.accepts(g.kind, v, b, ub) {
			return i
		}
	}
	return -1
}
