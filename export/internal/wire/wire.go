// Package wire reads the little-endian fields of the bytes the export
// module keeps or is handed (the collector's log records and closed
// windows, a Set's state, the NATS partitions' ledgers): bytes that may
// be damaged or forged, read by one bounds-checked Reader whose errors
// are each caller's own.
package wire

import (
	"encoding/binary"
	"errors"
	"math/bits"
)

// ErrShort is the error of a read past the end of a Reader made without
// a short function (or whose function returned nil).
var ErrShort = errors.New("wire: bytes cut short")

// ErrVarint is the error of a varint Uvarint refuses (one past 64 bits,
// or longer than its value's shortest form) of a Reader made without a
// short function (or whose function returned nil).
var ErrVarint = errors.New("wire: bad varint")

// Reader reads little-endian fields from the front of a byte slice and
// remembers the first error. Its zero value has nothing to read.
//
// Invariant: a read takes bytes only from what is left and never panics;
// once Err is non-nil it never changes, nothing is left (Len is 0), and
// every read returns the zero value (nil for Bytes). A read that succeeds
// allocates nothing: Bytes returns the input itself, its capacity cut to
// its length so that an append to it cannot write over what follows.
type Reader struct {
	p     []byte
	err   error
	short func(what string, left int) error
}

// New returns a Reader of p whose failed reads fail with the error short
// returns: what names the read, left is how many bytes were left when it
// began. A read past the end is named for what it reads: "uint8",
// "uint16", "uint32", "uint64", "bytes", or "uvarint" (a varint cut
// before its last byte); a varint Uvarint refuses, for why: "uvarint past
// 64 bits", "uvarint longer than its value". (A short function that
// ignores what answers every failure as a read past the end: right for a
// Reader that reads no varint.) If short is nil or returns nil, the error
// is ErrShort for a read past the end, ErrVarint for a varint refused.
// short is called once at most, on the first error.
func New(p []byte, short func(what string, left int) error) Reader {
	return Reader{p: p, short: short}
}

// failed fails the Reader as a read of what, unless it failed before
// (its error then stays the first), and leaves nothing to read. dflt is
// the error if there is no short function, or it returns nil.
func (r *Reader) failed(what string, dflt error) {
	if r.err == nil {
		var err error
		if r.short != nil {
			err = r.short(what, len(r.p))
		}
		if err == nil {
			err = dflt
		}
		r.err = err
	}
	r.p = nil
}

// take returns the next n bytes, or fails as a read of what.
func (r *Reader) take(n int, what string) []byte {
	if n < 0 || n > len(r.p) {
		r.failed(what, ErrShort)
		return nil
	}
	b := r.p[:n:n]
	r.p = r.p[n:]
	return b
}

// U8 reads a byte.
func (r *Reader) U8() uint8 {
	if b := r.take(1, "uint8"); b != nil {
		return b[0]
	}
	return 0
}

// U16 reads a little-endian uint16.
func (r *Reader) U16() uint16 {
	if b := r.take(2, "uint16"); b != nil {
		return binary.LittleEndian.Uint16(b)
	}
	return 0
}

// U32 reads a little-endian uint32.
func (r *Reader) U32() uint32 {
	if b := r.take(4, "uint32"); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}

// U64 reads a little-endian uint64.
func (r *Reader) U64() uint64 {
	if b := r.take(8, "uint64"); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

// Uvarint reads an unsigned varint (encoding/binary's, 1 to
// binary.MaxVarintLen64 bytes) of the shortest form, the one
// binary.AppendUvarint writes: a longer one (0x80 0x00 for 0) is refused,
// as one past 64 bits is, so that a value read has one encoding and the
// bytes are written again as they were read.
func (r *Reader) Uvarint() uint64 {
	v, k := binary.Uvarint(r.p)
	switch {
	case k == 0:
		r.failed("uvarint", ErrShort)
	case k < 0:
		r.failed("uvarint past 64 bits", ErrVarint)
	case k != UvarintLen(v):
		r.failed("uvarint longer than its value", ErrVarint)
	default:
		r.p = r.p[k:]
		return v
	}
	return 0
}

// UvarintLen returns the length of v's shortest varint, the one
// binary.AppendUvarint writes (1 to binary.MaxVarintLen64 bytes): how a
// writer measures a varint field without writing it.
func UvarintLen(v uint64) int { return (bits.Len64(v|1) + 6) / 7 }

// Bytes reads n bytes: the input itself, with capacity n; nil if they
// are not all there (n negative or beyond Len), and after an error.
func (r *Reader) Bytes(n int) []byte { return r.take(n, "bytes") }

// Fits reports whether n items of size bytes each fit in the bytes left
// (n × size ≤ Len, without overflow; any n of no size fit): the check of
// a count read from the bytes before anything is made of it, so that
// damaged bytes cannot make a caller allocate much.
func (r *Reader) Fits(n uint64, size int) bool {
	return size <= 0 || n <= uint64(len(r.p))/uint64(size)
}

// Fail makes err the Reader's error, if it has none yet (a nil err does
// nothing), and leaves nothing to read: the caller's own checks of what
// it read (an order, a count) fail the Reader as a short read does.
func (r *Reader) Fail(err error) {
	if err == nil {
		return
	}
	if r.err == nil {
		r.err = err
	}
	r.p = nil
}

// Err returns the first error: a short read's, a refused varint's, or
// Fail's.
func (r *Reader) Err() error { return r.err }

// Len returns how many bytes are left to read.
func (r *Reader) Len() int { return len(r.p) }

// Rest returns the bytes left to read, without taking them.
func (r *Reader) Rest() []byte { return r.p }
