package blob

import (
	"time"

	"github.com/statsblob/statsblob/internal/abi"
)

// Header is a blob's header (struct statsblobv1) as Go values. The two
// times are read as the default clock writes them, as time since the Unix
// epoch; the raw fields keep the stored sbintime_t values (signed 32.32
// fixed-point seconds) for blobs whose clock meant something else, such as
// FreeBSD's uptime clock (see Duration).
type Header struct {
	ABI     uint8  // format version: 1 (STATS_ABI_V1)
	Endian  uint8  // byte order: 1, little-endian
	Flags   uint16 // 0
	MaxSz   int    // size of the buffer the blob was made for, in bytes
	CurSz   int    // size of the blob, in bytes
	TplHash uint32 // hash of the template the blob was made from
	NumVOIs int    // VOI slots: one more than the template's highest VOI id

	Created   time.Time // when the blob was made
	LastReset time.Time // when it was last reset (Created if never)

	CreatedRaw   int64 // Created as stored (sbintime_t)
	LastResetRaw int64 // LastReset as stored (sbintime_t)
}

// Header returns the blob's header.
func (bl *Blob) Header() Header {
	b := bl.b
	created := int64(abi.U64(b, abi.OffCreated))
	lastrst := int64(abi.U64(b, abi.OffLastRst))
	return Header{
		ABI:          b[abi.OffABI],
		Endian:       b[abi.OffEndian],
		Flags:        abi.U16(b, abi.OffFlags),
		MaxSz:        abi.MaxSz(b),
		CurSz:        abi.CurSz(b),
		TplHash:      abi.U32(b, abi.OffTplHash),
		NumVOIs:      abi.NVOIs(b),
		Created:      Time(created),
		LastReset:    Time(lastrst),
		CreatedRaw:   created,
		LastResetRaw: lastrst,
	}
}

// Duration converts an sbintime_t (signed 32.32 fixed-point seconds) to a
// time.Duration, truncating to the nanosecond as FreeBSD's sbttons does;
// it inverts SBinTime exactly. Values beyond about ±292 years wrap.
func Duration(sbt int64) time.Duration {
	return time.Duration((sbt>>32)*1e9 + int64((uint64(uint32(sbt))*1e9)>>32))
}

// Time converts an sbintime_t counted from the Unix epoch, as WallClock
// writes it, to a time.Time. It inverts SBinTime exactly.
func Time(sbt int64) time.Time {
	return time.Unix(sbt>>32, int64((uint64(uint32(sbt))*1e9)>>32))
}

// SBinTimeOf converts t to an sbintime_t counted from the Unix epoch, as
// WallClock does (SBinTime of t's seconds and nanoseconds).
func SBinTimeOf(t time.Time) int64 { return SBinTime(t.Unix(), int64(t.Nanosecond())) }
