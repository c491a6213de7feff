package voi

import (
	"github.com/statsblob/statsblob/internal/decimal"
	"github.com/statsblob/statsblob/qmath"
)

// A numeric value travels through statsblob as a uint64 bit pattern: the
// C's 8-byte struct voistatdata_numeric read little-endian. A 32-bit type's
// value is the low half (truncate with uint32); the high half is padding
// that the C sometimes leaves non-zero (histogram bounds built from 64-bit
// patterns), which is why the full pattern is kept.

// Limit entries of the C's numeric_limits table as they apply to the
// conformance reference: Q entries are the raw extremes with control bits 0
// (FORMAT.md section 12, defect 2).
var (
	limitMin = [QU64 + 1]uint64{
		IntS32:   0x80000000,
		IntS64:   1 << 63,
		IntSLong: 1 << 63,
		QS32:     0xFFFFFFF8,
		QS64:     0xFFFFFFFFFFFFFFF8,
	}
	limitMax = [QU64 + 1]uint64{
		IntS32:   0x7FFFFFFF,
		IntU32:   0xFFFFFFFF,
		IntS64:   1<<63 - 1,
		IntU64:   ^uint64(0),
		IntSLong: 1<<63 - 1,
		IntULong: ^uint64(0),
		QS32:     0x7FFFFFF8,
		QU32:     0xFFFFFFF8,
		QS64:     0x7FFFFFFFFFFFFFF8,
		QU64:     0xFFFFFFFFFFFFFFF8,
	}
)

// LimitMin returns numeric_limits[LIM_MIN][d] as an 8-byte pattern: the
// smallest value of the numeric type d (for Q types the most negative
// magnitude with control bits 0). It is 0 for non-numeric types.
func LimitMin(d DType) uint64 {
	if d <= QU64 {
		return limitMin[d]
	}
	return 0
}

// LimitMax returns numeric_limits[LIM_MAX][d] as an 8-byte pattern (see
// LimitMin).
func LimitMax(d DType) uint64 {
	if d <= QU64 {
		return limitMax[d]
	}
	return 0
}

// Initial returns the value a numeric statistic of type st (SUM, MAX or
// MIN) on data type d starts at, and returns to on reset: 0 for SUM, the
// type's minimum for MAX, its maximum for MIN. For Q types the control bits
// ctrl (the precision) are set; for integer types ctrl is ignored.
func Initial(st SType, d DType, ctrl uint64) uint64 {
	var v uint64
	switch st {
	case Max:
		v = LimitMin(d)
	case Min:
		v = LimitMax(d)
	}
	if d.IsQ() {
		v = v&^7 | ctrl&7
	}
	return v
}

// QKind returns the qmath storage kind of the Q type d.
func QKind(d DType) qmath.Kind {
	switch d {
	case QS32:
		return qmath.S32
	case QU32:
		return qmath.U32
	case QS64:
		return qmath.S64
	}
	return qmath.U64
}

// AsQ interprets the pattern v as a Q number of Q type d.
func AsQ(d DType, v uint64) qmath.Q {
	k := QKind(d)
	if k.Bits() == 32 {
		v = uint64(uint32(v))
	}
	return qmath.Q{Raw: v, Kind: k}
}

// AppendNumeric appends the C's text form of the value v of numeric type d
// (stats_voistatdata_tostr): decimal for integers, "[-]INT.FRAC" for Q
// numbers. Types other than the ten numeric ones append nothing.
func AppendNumeric(dst []byte, d DType, v uint64) []byte {
	switch d {
	case IntS32:
		return decimal.AppendInt(dst, int64(int32(v)))
	case IntU32:
		return decimal.AppendUint(dst, uint64(uint32(v)))
	case IntS64, IntSLong:
		return decimal.AppendInt(dst, int64(v))
	case IntU64, IntULong:
		return decimal.AppendUint(dst, v)
	case QS32, QU32, QS64, QU64:
		return AsQ(d, v).AppendText(dst)
	}
	return dst
}
