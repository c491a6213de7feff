package blob

import (
	"fmt"

	"github.com/statsblob/statsblob/hist"
	"github.com/statsblob/statsblob/qmath"
	"github.com/statsblob/statsblob/tdigest"
	"github.com/statsblob/statsblob/voi"
)

// UpdateFloat updates a Q VOI (voi.QS32 .. voi.QU64) with x, converted to
// the VOI's Q type at the VOI's precision (the fractional bits its
// template declared, tpl.VOIDef.Prec) and rounded to the nearest value
// that precision holds; then as UpdateQ.
//
// A VOI without SUM, MAX or MIN takes the precision of its histogram's
// bounds or, failing that, of its t-digest's means.
//
// Errors, before anything changes: voi.ErrInvalid for an id that names no
// Q VOI (integer VOIs take the typed methods), a NaN or infinite x, or a
// negative x for an unsigned Q type; voi.ErrOverflow for an x beyond the
// type's range at that precision. They are *VOIError (Op "float update"),
// naming the VOI and the value.
// Otherwise the errors of UpdateQ.
func (bl *Blob) UpdateFloat(id int32, x float64) error {
	p := bl.plan
	if p == nil || uint(id) >= uint(len(p.vois)) || !p.vois[id].dtype.IsQ() {
		e := &VOIError{Op: "float update", ID: id, Stat: -1, Err: voi.ErrInvalid}
		if p != nil && uint(id) < uint(len(p.vois)) {
			e.Have = p.vois[id].dtype
		}
		if e.Have == 0 {
			e.Reason = "no such VOI"
		} else {
			e.Reason = fmt.Sprintf("the VOI is %v, not a Q type", e.Have)
		}
		return e
	}
	vp := &p.vois[id]
	k := voi.QKind(vp.dtype)
	q, err := qmath.FromFloat64(k, bl.qctrl(vp), x)
	if err != nil {
		return &VOIError{Op: "float update", ID: id, Stat: -1, Have: vp.dtype, Err: err,
			Reason: fmt.Sprintf("%g does not fit %v with %d fractional bits", x, vp.dtype, q.NFBits())}
	}
	return updateQ(bl, id, vp.dtype, q, false)
}

// qctrl returns the control bits (the precision) of Q VOI vp's values: of
// its SUM, MAX or MIN (which the template gives one precision), else of
// its histogram's first bound, else of its t-digest's first mean.
func (bl *Blob) qctrl(vp *voiPlan) uint64 {
	b := bl.b
	for _, off := range [...]uint16{vp.sumOff, vp.maxOff, vp.minOff} {
		if off != 0 {
			return uint64(b[off] & 7)
		}
	}
	p := bl.plan
	for _, sp := range p.stats[vp.first : int(vp.first)+int(vp.n)] {
		switch {
		case sp.stype == voi.Hist:
			if g, _ := hist.GeometryOf(sp.dtype); int(sp.dsz) > g.Header {
				return uint64(b[int(sp.dataOff)+g.Header] & 7) // the first bound
			}
		case sp.stype == voi.TDgst:
			if c, ok := firstMean(b[sp.dataOff:int(sp.dataOff)+int(sp.dsz)], sp.dtype); ok {
				return c
			}
		}
	}
	return 0
}

// firstMean returns the control bits of digest data's first centroid slot,
// if it has one (every slot carries the digest's precision).
func firstMean(data []byte, dt voi.DType) (uint64, bool) {
	off, ok := tdigest.MeanOffset(dt)
	if !ok || len(data) <= off {
		return 0, false
	}
	return uint64(data[off] & 7), true
}
