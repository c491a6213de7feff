package tostr

import (
	"encoding/binary"
	"sync/atomic"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/internal/abi"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// A rendering without Objdump is text fixed by the blob's layout (and, with
// Meta, its template's names) with the blob's values in between: error
// counts, valid flags, the statistics' data and, in the freeform header,
// the buffer's address. A skeleton is that text with the places of the
// values, recorded once per layout by the renderer itself (render with a
// skeleton to record into), so a rendering is a few copies of its text and
// the values' own formatting, without walking the blob's tables.
//
// Skeletons live in a small fixed table (skelSets sets of two, found by a
// hash of the template hash, the table offsets and the format) and are
// taken only by a blob whose header words and voi[] and voistat[] entries
// (but for error counts and flags) equal the ones recorded, and with the
// same template (Meta) and format. TestSkeletonsMatchTheWalk holds them to
// the walk's text.
type skeleton struct {
	t     *tpl.Template // nil without Meta
	f     Format
	head  uint64   // header bytes 0..7 but maxsz (cursz, abi...)
	head1 uint64   // header bytes 8..15: tplhash, stats_off, statsdata_off
	words []uint64 // voi[] and voistat[], error counts and flags cleared in voistat entries
	text  []byte   // the fixed text, values left out
	ops   []skelOp
}

// skelOp is a value of the blob rendered at byte at of the fixed text.
type skelOp struct {
	at      int
	kind    uint8
	statOff uint16 // voistat entry
	dataOff uint16
	dsz     uint16
	voiDT   voi.DType
	dt      voi.DType
}

const (
	opAddr      = iota // the freeform header's buffer address
	opErrs             // a statistic's error count
	opData             // a statistic's data (freeform)
	opJSONValue        // a statistic's JSON value (appendJSONValue)
)

// noSkeletons turns skeletons off (tests compare both paths).
var noSkeletons bool

const (
	skelSets  = 16
	head0Mask = 0xffff_0000_ffff_ffff // maxsz aside
	// statMask clears a voistat word's error count and flags.
	statMask = 0x0000_ffff_ffff_ffff
	voiOff   = 32 // voi[]
)

var skeletons [skelSets][2]atomic.Pointer[skeleton]

func skelSet(b []byte, f Format) *[2]atomic.Pointer[skeleton] {
	h := binary.LittleEndian.Uint64(b[8:]) ^ uint64(f)<<61
	return &skeletons[(h*0x9E3779B97F4A7C15)>>(64-4)]
}

// op records a value of kind at the end of the text written so far.
func (k *skeleton) op(text []byte, kind uint8, s *abi.Slot) {
	o := skelOp{at: len(text), kind: kind}
	if s != nil {
		o.statOff = uint16(s.VOI.StatsOff) + uint16(8*s.StatSlot)
		o.dataOff, o.dsz = s.Stat.DataOff, s.Stat.DSz
		o.voiDT, o.dt = s.VOI.DType, s.Stat.DType
	}
	k.ops = append(k.ops, o)
}

// skelMaxSz bounds the blobs that get skeletons: a skeleton's text is
// about ten times its blob's size, and the table keeps 32 of them (at most
// about 3 MB).
const skelMaxSz = 8 << 10

// skeletonFor returns the skeleton of bl's layout rendered in format f
// with template t (nil without Meta), recording it if none matches; nil
// for a blob larger than skelMaxSz.
func skeletonFor(bl *blob.Blob, t *tpl.Template, f Format) *skeleton {
	b := bl.Bytes()
	if len(b) > skelMaxSz {
		return nil
	}
	set := skelSet(b, f)
	for w := range set {
		if k := set[w].Load(); k != nil && k.matches(b, t, f) {
			return k
		}
	}
	k := &skeleton{t: t, f: f, head: binary.LittleEndian.Uint64(b) & head0Mask, head1: binary.LittleEndian.Uint64(b[8:])}
	statsOff, dataOff := abi.StatsOff(bl.Buffer()), abi.StatsDataOff(bl.Buffer())
	for off := voiOff; off < dataOff; off += 8 {
		w := binary.LittleEndian.Uint64(b[off:])
		if off >= statsOff {
			w &= statMask
		}
		k.words = append(k.words, w)
	}
	k.text = render(nil, bl, t, Options{Format: f}, k)
	set[1].Store(set[0].Load())
	set[0].Store(k)
	return k
}

func (k *skeleton) matches(b []byte, t *tpl.Template, f Format) bool {
	if k.t != t || k.f != f || binary.LittleEndian.Uint64(b)&head0Mask != k.head ||
		binary.LittleEndian.Uint64(b[8:]) != k.head1 {
		return false
	}
	// The header matched, so voi[] and voistat[] are where k's were,
	// inside b (a blob's data lies within cursz, which matched too).
	w := b[voiOff : voiOff+8*len(k.words)]
	nv := (int(binary.LittleEndian.Uint16(b[12:])) - voiOff) / 8
	var diff uint64
	for i, want := range k.words {
		x := binary.LittleEndian.Uint64(w[8*i:])
		if i >= nv {
			x &= statMask
		}
		diff |= x ^ want
	}
	return diff == 0
}

// render appends the rendering of bl, a blob k matches.
func (k *skeleton) render(dst []byte, bl *blob.Blob) []byte {
	b := bl.Bytes()
	at := 0
	for _, o := range k.ops {
		dst = append(dst, k.text[at:o.at]...)
		at = o.at
		switch o.kind {
		case opAddr:
			dst = appendAddr(dst, bl)
		case opErrs:
			dst = appendUint8(dst, b[o.statOff+6])
		case opData:
			dst = AppendData(dst, b[o.dataOff:int(o.dataOff)+int(o.dsz)], o.voiDT, o.dt, FreeForm, false)
		case opJSONValue:
			dst = appendJSONValue(dst, b[o.dataOff:int(o.dataOff)+int(o.dsz)], b[o.statOff+6], b[o.statOff+7], o.voiDT, o.dt)
		}
	}
	return append(dst, k.text[at:]...)
}

func appendUint8(dst []byte, v uint8) []byte {
	switch {
	case v < 10:
		return append(dst, '0'+v)
	case v < 100:
		return append(dst, '0'+v/10, '0'+v%10)
	}
	return append(dst, '0'+v/100, '0'+v/10%10, '0'+v%10)
}
