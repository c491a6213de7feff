// Package voi is the vocabulary shared by every statsblob package: the data
// types of VOIs and statistics (VSD_DTYPE_*), the statistic types
// (VS_STYPE_*), their C names and sizes, the numeric limits the C uses as
// initial values and bucket bounds, the VOI and stat flags, the text form of
// numeric values, and the sentinel errors, each mirroring an errno of the C.
package voi

import (
	"math"
	"strconv"
)

// DType is a data type of a VOI or of a statistic's data (enum vsd_dtype).
// Values 1..10 are the numeric types a VOI can have; 11..18 are the compound
// types of histogram and t-digest statistics; 0 is the VOI state record.
type DType uint8

// The data types, numbered as in the C.
const (
	VoiState     DType = iota // VSD_DTYPE_VOISTATE: a VOI's previous value (relative updates)
	IntS32                    // int32_t
	IntU32                    // uint32_t
	IntS64                    // int64_t
	IntU64                    // uint64_t
	IntSLong                  // long (64 bits: LP64)
	IntULong                  // unsigned long (64 bits: LP64)
	QS32                      // s32q_t
	QU32                      // u32q_t
	QS64                      // s64q_t
	QU64                      // u64q_t
	CRHist32                  // continuous range histogram, 32-bit counters
	DRHist32                  // discrete range histogram, 32-bit counters
	DVHist32                  // discrete value histogram, 32-bit counters
	CRHist64                  // continuous range histogram, 64-bit counters
	DRHist64                  // discrete range histogram, 64-bit counters
	DVHist64                  // discrete value histogram, 64-bit counters
	TDgstClust32              // clustering t-digest, 32-bit means and counts
	TDgstClust64              // clustering t-digest, 64-bit means and counts
	NumDTypes                 // one past the highest data type
)

var dtypeNames = [NumDTypes]string{
	"VOISTATE", "INT_S32", "INT_U32", "INT_S64", "INT_U64", "INT_SLONG",
	"INT_ULONG", "Q_S32", "Q_U32", "Q_S64", "Q_U64", "CRHIST32", "DRHIST32",
	"DVHIST32", "CRHIST64", "DRHIST64", "DVHIST64", "TDGSTCLUST32",
	"TDGSTCLUST64",
}

// String returns the C name without its VSD_DTYPE_ prefix ("INT_U64"), or
// "dtype(N)" for a number that names no data type.
func (d DType) String() string {
	if d < NumDTypes {
		return dtypeNames[d]
	}
	return "dtype(" + strconv.Itoa(int(d)) + ")"
}

// ParseDType returns the data type whose C name (without prefix) is name,
// compared case-insensitively.
func ParseDType(name string) (DType, bool) {
	for i, n := range dtypeNames {
		if equalFold(n, name) {
			return DType(i), true
		}
	}
	return 0, false
}

// Valid reports whether d names a data type (0..18).
func (d DType) Valid() bool { return d < NumDTypes }

// IsNumeric reports whether d is one of the ten numeric types a VOI can have.
func (d DType) IsNumeric() bool { return d >= IntS32 && d <= QU64 }

// IsInt reports whether d is one of the six integer types.
func (d DType) IsInt() bool { return d >= IntS32 && d <= IntULong }

// Round returns an estimate x of a VOI of type d's samples as a value
// the type holds: the nearest integer (halves away from zero) for an
// integer type, whose samples are all integers (so on them the rounded
// estimate is never further from a quantile q in rank), else x.
func (d DType) Round(x float64) float64 {
	if d.IsInt() {
		return math.Round(x)
	}
	return x
}

// IsQ reports whether d is one of the four Q (fixed-point) types.
func (d DType) IsQ() bool { return d >= QS32 && d <= QU64 }

// IsHist reports whether d is one of the six histogram types.
func (d DType) IsHist() bool { return d >= CRHist32 && d <= DVHist64 }

// IsTDigest reports whether d is one of the two t-digest types.
func (d DType) IsTDigest() bool { return d == TDgstClust32 || d == TDgstClust64 }

// IsCompound reports whether data of type d is a structure rather than a
// single number (the VOI state, histograms and t-digests).
func (d DType) IsCompound() bool { return d == VoiState || d >= CRHist32 && d < NumDTypes }

// Signed reports whether the numeric type d is signed.
func (d DType) Signed() bool {
	switch d {
	case IntS32, IntS64, IntSLong, QS32, QS64:
		return true
	}
	return false
}

// Is32 reports whether the numeric type d is 32 bits wide.
func (d DType) Is32() bool {
	switch d {
	case IntS32, IntU32, QS32, QU32:
		return true
	}
	return false
}

var dtypeSizes = [NumDTypes]uint16{
	8, 4, 4, 8, 8, 8, 8, 4, 4, 8, 8, 8, 8, 8, 8, 8, 8, 20, 32,
}

// Size is the C's vsd_dtype2size[d] in bytes: the size of a value of a
// numeric type, or of the fixed header of a compound one. It is 0 for a
// number that names no data type.
func (d DType) Size() int {
	if d < NumDTypes {
		return int(dtypeSizes[d])
	}
	return 0
}

// SType is a statistic type (enum voi_stype). A voistat slot of a VOI holds
// the statistic whose type equals the slot index; -1 marks an empty slot.
type SType int8

// The statistic types, numbered as in the C.
const (
	StatVoiState SType = iota // VS_STYPE_VOISTATE: the VOI's state (slot 0)
	Sum                       // VS_STYPE_SUM
	Max                       // VS_STYPE_MAX
	Min                       // VS_STYPE_MIN
	Hist                      // VS_STYPE_HIST
	TDgst                     // VS_STYPE_TDGST
	NumSTypes                 // one past the highest statistic type
)

var stypeNames = [NumSTypes]string{"VOISTATE", "SUM", "MAX", "MIN", "HIST", "TDGST"}

// String returns the C name without its VS_STYPE_ prefix ("SUM"), or the
// decimal number for a value that names no statistic type.
func (s SType) String() string { return STypeName(int(s)) }

// STypeName is SType.String for any int (the C compares stat types as ints).
func STypeName(s int) string {
	if s >= 0 && s < int(NumSTypes) {
		return stypeNames[s]
	}
	return strconv.Itoa(s)
}

// ParseSType returns the statistic type whose C name (without prefix) is
// name, compared case-insensitively.
func ParseSType(name string) (SType, bool) {
	for i, n := range stypeNames {
		if equalFold(n, name) {
			return SType(i), true
		}
	}
	return 0, false
}

// Flags of a VOI. The C uses 0x0001 for two flags of different fields:
// SB_VOI_RELUPDATE, passed to template construction, and VOI_REQSTATE,
// stored in a blob's voi[] entry. Here they have distinct values, so one
// cannot stand for the other: FlagRelUpdate goes in tpl.VOIDef.Flags (no
// byte of a blob holds it), FlagReqState is the bit of the blob's voi[]
// entry, written exactly as the C writes it.
const (
	// FlagRelUpdate (SB_VOI_RELUPDATE) is the tpl.VOIDef flag of a VOI that
	// accepts relative updates; such a VOI keeps its previous value in a
	// VOI state record, and its blob voi[] entry gets FlagReqState.
	FlagRelUpdate = 0x0100
	// FlagReqState (VOI_REQSTATE, 0x0001) is stored in a blob VOI entry
	// whose VOI keeps a state record (slot 0).
	FlagReqState = 0x0001
	// StatValid (VS_VSDVALID) is set in a voistat's flags once its data was
	// updated at least once.
	StatValid = 0x01
)

func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'a' <= x && x <= 'z' {
			x -= 'a' - 'A'
		}
		if 'a' <= y && y <= 'z' {
			y -= 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
