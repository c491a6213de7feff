// Package abi is the owner of the blob format: STATS_ABI_V1 as FreeBSD's
// subr_stats.c lays it out on a 64-bit little-endian host. It reads and
// writes the header, voi[] and voistat[] entries and walks them with the
// C's iteration flags; package tpl writes template bytes through it,
// package blob reads, validates and updates blobs through it, and the
// conformance runner dumps them through it. Nothing else computes an
// offset or a size of these parts. The statistics' data belong to their
// packages: numeric values are voi.DType.Size bytes, histograms are laid
// out as hist.GeometryOf says, t-digests as tdigest.Size says.
//
// # Layout
//
// All multi-byte fields are little-endian. Offsets are from the start of
// the blob.
//
//	header (32 bytes, struct statsblobv1)
//	  0  u8   abi            1 (STATS_ABI_V1)
//	  1  u8   endian         1 (little-endian)
//	  2  u16  flags          0
//	  4  u16  maxsz          size of the buffer that holds the blob
//	  6  u16  cursz          bytes in use (the blob is b[:cursz])
//	  8  u32  tplhash        hash of the template it was made from
//	 12  u16  stats_off      start of voistat[]
//	 14  u16  statsdata_off  start of the statistics' data
//	 16  i64  created        sbintime_t (seconds<<32 + fraction)
//	 24  i64  lastrst        sbintime_t of the last reset
//	voi[] (8 bytes each, index = VOI id; (stats_off-32)/8 entries)
//	  0  i16  id             the VOI id, -1 for a vacant slot
//	  2  u8   dtype          the VOI's data type (voi.DType)
//	  3  i8   voistatmaxid   highest statistic slot, -1 when vacant
//	  4  u16  stats_off      offset of this VOI's voistat[0]
//	  6  u16  flags          0x0001: the VOI keeps state (relative updates)
//	voistat[] (8 bytes each; a VOI's slot j holds statistic type j)
//	  0  i8   stype          voi.SType, -1 for a vacant slot
//	  1  u8   dtype          data type of the statistic's data
//	  2  u16  data_off       offset of the data
//	  4  u16  dsz            size of the data
//	  6  u8   errs           errors counted by updates, saturating at 255
//	  7  u8   flags          0x01: updated since the last reset
//	data (statsdata_off .. cursz)
//	  numeric statistics: 4 or 8 bytes of the VOI's type;
//	  the VOI state (slot 0): the previous value, 8 bytes;
//	  histograms: see package hist; t-digests: see package tdigest.
//
// Adding a VOI to a template puts its voistats at the start of voistat[] and
// its data at the start of the data region, shifting what was there, so the
// regions are in reverse order of addition (package tpl).
package abi

import (
	"encoding/binary"

	"github.com/statsblob/statsblob/voi"
)

// Header fields (struct statsblobv1) and their byte offsets.
const (
	OffABI          = 0  // uint8: ABI version, 1
	OffEndian       = 1  // uint8: 1 little, 2 big, 0 unknown
	OffFlags        = 2  // uint16: unused, 0
	OffMaxSz        = 4  // uint16: size of the buffer holding the blob
	OffCurSz        = 6  // uint16: bytes in use
	OffTplHash      = 8  // uint32: hash of the template the blob was made from
	OffStatsOff     = 12 // uint16: offset of voistat[]
	OffStatsDataOff = 14 // uint16: offset of the statistics' data
	OffCreated      = 16 // int64 sbintime: creation time
	OffLastRst      = 24 // int64 sbintime: time of the last reset
	HeaderSize      = 32 // offset of voi[]
)

// Sizes and limits.
const (
	V1         = 1     // STATS_ABI_V1
	LittleEnd  = 1     // SB_LE
	VOISize    = 8     // sizeof(struct voi)
	StatSize   = 8     // sizeof(struct voistat)
	MaxBlobSz  = 65535 // SB_V1_MAXSZ
	MinBlobSz  = 8     // sizeof(struct statsblob): abi..cursz
	StateSize  = 8     // sizeof(struct voistatdata_voistate)
	MaxErrs    = 255   // voistat errs saturate here (8 bits)
	MaxNameLen = 64    // TPL_MAX_NAME_LEN
)

// VOI entry fields (struct voi), relative to the entry.
const (
	VOIOffID       = 0 // int16: VOI id, -1 for a vacant slot
	VOIOffDType    = 2 // uint8: the VOI's data type
	VOIOffMaxID    = 3 // int8: highest stat slot in use, -1 for none
	VOIOffStatsOff = 4 // uint16: offset of the VOI's voistat[0]
	VOIOffFlags    = 6 // uint16: VOI_REQSTATE
)

// Voistat entry fields (struct voistat), relative to the entry.
const (
	StatOffSType   = 0 // int8: stat type, -1 for a vacant slot
	StatOffDType   = 1 // uint8: data type of the stat's data
	StatOffDataOff = 2 // uint16: offset of the data
	StatOffDSz     = 4 // uint16: data size
	StatOffErrs    = 6 // uint8: saturating error count
	StatOffFlags   = 7 // uint8: VS_VSDVALID
)

// U16 reads a little-endian uint16 at off.
func U16(b []byte, off int) uint16 { return binary.LittleEndian.Uint16(b[off:]) }

// U32 reads a little-endian uint32 at off.
func U32(b []byte, off int) uint32 { return binary.LittleEndian.Uint32(b[off:]) }

// U64 reads a little-endian uint64 at off.
func U64(b []byte, off int) uint64 { return binary.LittleEndian.Uint64(b[off:]) }

// PutU16 writes a little-endian uint16 at off.
func PutU16(b []byte, off int, v uint16) { binary.LittleEndian.PutUint16(b[off:], v) }

// PutU32 writes a little-endian uint32 at off.
func PutU32(b []byte, off int, v uint32) { binary.LittleEndian.PutUint32(b[off:], v) }

// PutU64 writes a little-endian uint64 at off.
func PutU64(b []byte, off int, v uint64) { binary.LittleEndian.PutUint64(b[off:], v) }

// CurSz returns the header's cursz.
func CurSz(b []byte) int { return int(U16(b, OffCurSz)) }

// MaxSz returns the header's maxsz.
func MaxSz(b []byte) int { return int(U16(b, OffMaxSz)) }

// StatsOff returns the header's stats_off.
func StatsOff(b []byte) int { return int(U16(b, OffStatsOff)) }

// StatsDataOff returns the header's statsdata_off.
func StatsDataOff(b []byte) int { return int(U16(b, OffStatsDataOff)) }

// NVOIs returns the number of voi[] slots: (stats_off - 32) / 8, as the C's
// NVOIS computes it (a shift of a non-negative int32).
func NVOIs(b []byte) int { return (StatsOff(b) - HeaderSize) >> 3 }

// VOIAt returns the offset of voi[i].
func VOIAt(i int) int { return HeaderSize + VOISize*i }

// VOI is a decoded voi[] entry.
type VOI struct {
	ID       int16     // the VOI id, -1 for a vacant slot
	DType    voi.DType // the VOI's data type
	MaxID    int8      // highest stat slot, -1 for a vacant VOI
	StatsOff uint16    // offset of the VOI's voistat[0]
	Flags    uint16    // voi.FlagReqState
}

// ReadVOI decodes the voi[] entry at off.
func ReadVOI(b []byte, off int) VOI {
	e := b[off : off+VOISize]
	return VOI{
		ID:       int16(binary.LittleEndian.Uint16(e[0:])),
		DType:    voi.DType(e[2]),
		MaxID:    int8(e[3]),
		StatsOff: binary.LittleEndian.Uint16(e[4:]),
		Flags:    binary.LittleEndian.Uint16(e[6:]),
	}
}

// WriteVOI encodes v at off.
func WriteVOI(b []byte, off int, v VOI) {
	e := b[off : off+VOISize]
	binary.LittleEndian.PutUint16(e[0:], uint16(v.ID))
	e[2] = uint8(v.DType)
	e[3] = uint8(v.MaxID)
	binary.LittleEndian.PutUint16(e[4:], v.StatsOff)
	binary.LittleEndian.PutUint16(e[6:], v.Flags)
}

// Stat is a decoded voistat entry.
type Stat struct {
	SType   voi.SType // statistic type, -1 for a vacant slot
	DType   voi.DType // data type of the data
	DataOff uint16    // offset of the data
	DSz     uint16    // size of the data
	Errs    uint8     // errors counted by updates, saturating at MaxErrs
	Flags   uint8     // voi.StatValid
}

// ReadStat decodes the voistat entry at off.
func ReadStat(b []byte, off int) Stat {
	e := b[off : off+StatSize]
	return Stat{
		SType:   voi.SType(int8(e[0])),
		DType:   voi.DType(e[1]),
		DataOff: binary.LittleEndian.Uint16(e[2:]),
		DSz:     binary.LittleEndian.Uint16(e[4:]),
		Errs:    e[6],
		Flags:   e[7],
	}
}

// WriteStat encodes s at off.
func WriteStat(b []byte, off int, s Stat) {
	e := b[off : off+StatSize]
	e[0] = uint8(s.SType)
	e[1] = uint8(s.DType)
	binary.LittleEndian.PutUint16(e[2:], s.DataOff)
	binary.LittleEndian.PutUint16(e[4:], s.DSz)
	e[6] = s.Errs
	e[7] = s.Flags
}

// Hash32 is FreeBSD's hash32_buf/hash32_str step function (djb2 with
// multiplier 33) continued from h over p.
func Hash32(h uint32, p []byte) uint32 {
	for _, c := range p {
		h = h*33 + uint32(c)
	}
	return h
}

// Hash32Str is Hash32 over the bytes of s.
func Hash32Str(h uint32, s string) uint32 {
	for i := 0; i < len(s); i++ {
		h = h*33 + uint32(s[i])
	}
	return h
}
