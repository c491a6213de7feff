package hist

import "github.com/statsblob/statsblob/voi"

// order is how the C compares two values of one VOI data type, reduced to
// bit operations on the 8-byte patterns.
//
// Integers: key(v) = (v & mask) ^ flip maps the type's order onto uint64
// order (the mask keeps a 32-bit type's low half, the flip turns signed
// order into unsigned order).
//
// Q numbers: the C's Q_QLTQ/Q_QGEQ/Q_QEQ compare the signed integer parts
// and then the signed raw fraction values, each Q with its own precision,
// so a Q is compared as the pair (integer part, fraction) in lexicographic
// order (see qpair). Among Q values with the same control bits that order is
// the order of the signed combined integer/fraction value, which qkey maps
// onto uint64 order.
type order struct {
	q    bool   // a Q type
	mask uint64 // the type's width: 0xFFFFFFFF or all ones
	flip uint64 // integers: the sign bit of a signed type, else 0

	// Q types only.
	sign   uint64   // the sign bit (0 for the unsigned kinds)
	ifmask uint64   // Q_IFRAWMASK: the integer and fraction bits
	nf     [8]uint8 // Q_NFBITS by control bits
}

var orders [voi.QU64 + 1]order

func init() {
	for dt := voi.IntS32; dt <= voi.QU64; dt++ {
		o := order{mask: ^uint64(0)}
		w := uint(64)
		if dt.Is32() {
			o.mask, w = 0xFFFFFFFF, 32
		}
		if !dt.IsQ() {
			if dt.Signed() {
				o.flip = 1 << (w - 1)
			}
			orders[dt] = o
			continue
		}
		o.q = true
		o.ifmask = o.mask &^ 7
		maxnf := w - 3
		if dt.Signed() {
			o.sign = 1 << (w - 1)
			o.ifmask &^= o.sign
			maxnf--
		}
		for c := range uint(8) {
			nf := (c&3 + 1) << 1
			if c&4 != 0 {
				nf = (c&3 + 1) << 4
			}
			o.nf[c] = uint8(min(nf, maxnf))
		}
		orders[dt] = o
	}
}

// orderOf returns the comparison of the numeric type dt, or nil for a type
// that is not numeric.
func orderOf(dt voi.DType) *order {
	if !dt.IsNumeric() {
		return nil
	}
	return &orders[dt]
}

// key maps an integer pattern onto uint64 order.
func (o *order) key(v uint64) uint64 { return (v & o.mask) ^ o.flip }

// qpair is a Q number as the C compares it: Q_GIVAL and Q_GFVAL, the
// integer part and the raw fraction value, both carrying the sign. Both fit
// an int64 for every kind (at most 61 bits of magnitude).
type qpair struct{ i, f int64 }

// pair returns the comparison pair of the Q pattern v.
func (o *order) pair(v uint64) qpair {
	raw := v & o.mask
	nf := o.nf[raw&7]
	mag := (raw & o.ifmask) >> 3
	p := qpair{int64(mag >> nf), int64(mag & (1<<nf - 1))}
	if raw&o.sign != 0 {
		p.i, p.f = -p.i, -p.f
	}
	return p
}

// ge is Q_QGEQ(a, b).
func (a qpair) ge(b qpair) bool { return a.i > b.i || a.i == b.i && a.f >= b.f }

// lt is Q_QLTQ(a, b).
func (a qpair) lt(b qpair) bool { return a.i < b.i || a.i == b.i && a.f < b.f }

// ifv returns the signed combined integer/fraction value of the Q pattern v
// (Q_GIFVAL).
func (o *order) ifv(v uint64) int64 {
	raw := v & o.mask
	mag := int64((raw & o.ifmask) >> 3)
	if raw&o.sign != 0 {
		return -mag
	}
	return mag
}

// qkey maps the Q pattern v onto uint64 order; valid for comparing Q values
// with the same control bits.
func (o *order) qkey(v uint64) uint64 { return uint64(o.ifv(v)) ^ 1<<63 }

// qkeyInt returns Q_GIVAL of a Q value with nf fractional bits given by its
// qkey.
func qkeyInt(k uint64, nf uint8) int64 {
	ifv := int64(k ^ 1<<63)
	if ifv < 0 {
		return -(-ifv >> nf)
	}
	return ifv >> nf
}

// accepts reports whether the C's backward scan counts v (a pattern of the
// order's type) in bucket b of kind k; b holds the bucket's first bound
// (lb or value) and, for DR, its upper bound ub. This is the reference
// semantics every faster lookup must agree with.
func (o *order) accepts(k kind, v, b, ub uint64) bool {
	if o.q {
		pv, pb := o.pair(v), o.pair(b)
		if !pv.ge(pb) {
			return false
		}
		switch k {
		case kindDR:
			return pv.lt(o.pair(ub))
		case kindDV:
			return pv.i == pb.i // Q_QEQ compares integer parts only
		}
		return true
	}
	x, lb := o.key(v), o.key(b)
	switch k {
	case kindDR:
		return lb <= x && x < o.key(ub)
	case kindDV:
		return x == lb
	}
	return lb <= x
}
