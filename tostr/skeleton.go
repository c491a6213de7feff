package tostr

import (
	"encoding/binary"
	"sync/atomic"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/hist"
	"github.com/statsblob/statsblob/internal/abi"
	"github.com/statsblob/statsblob/internal/decimal"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// A rendering without Objdump is text fixed by the blob's layout (and, with
// Meta, its template's names) with the blob's values in between: error
// counts, valid flags, the statistics' data and, in the freeform header,
// the buffer's address. A skeleton is that text with the places of the
// values, recorded once per layout by the renderer itself (render with a
// skeleton to record into), so a rendering is a few copies of its text and
// the values' own formatting, without walking the blob's tables. A
// histogram's text is recorded with its bucket bounds (which never change),
// its counts left out.
//
// Skeletons live in a small fixed table (skelSets sets of two, found by a
// hash of the template hash, the table offsets and the format) and are
// taken only by a blob whose header words, voi[] and voistat[] entries
// (but for error counts and flags) and histogram bounds equal the ones
// recorded, and with the same template (Meta) and format. TestSkeletonsMatchTheWalk holds them to
// the walk's text.
type skeleton struct {
	t     *tpl.Template // nil without Meta
	f     Format
	head  uint64   // header bytes 0..7 but maxsz (cursz, abi...)
	head1 uint64   // header bytes 8..15: tplhash, stats_off, statsdata_off
	words []uint64 // voi[] and voistat[], error counts and flags cleared in voistat entries
	text  []byte   // the fixed text, values left out
	ops   []skelOp

	// The histograms' bound words and their offsets: a histogram's text
	// (its buckets' bounds) is recorded too, its counts left out.
	bounds []uint64
	boffs  []uint16
}

// histSkel is the text of a histogram's data without its counts, which go
// at at[0] (the out-of-band count) and at[1+i] (bucket i's).
type histSkel struct {
	text []byte
	at   []int32
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
	hist    *histSkel // a histogram's data (opData, opJSONValue)
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
		if (kind == opData || kind == opJSONValue) && o.dt.IsHist() {
			h := &histSkel{}
			h.text = appendHistRec(nil, s.Data, o.voiDT, o.dt, k.f, false, &h.at)
			o.hist = h
			// Each bucket starts with its bound (CR, DV) or bounds (DR).
			bsz, words := 16, 1
			if o.dt == voi.DRHist32 || o.dt == voi.DRHist64 {
				bsz, words = 24, 2
			}
			for at := 8; at+bsz <= len(s.Data); at += bsz {
				for j := range words {
					k.bounds = append(k.bounds, binary.LittleEndian.Uint64(s.Data[at+8*j:]))
					k.boffs = append(k.boffs, o.dataOff+uint16(at+8*j))
				}
			}
		}
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
	for i, want := range k.bounds {
		diff |= binary.LittleEndian.Uint64(b[k.boffs[i]:]) ^ want
	}
	return diff == 0
}

// render appends the rendering of bl, a blob k matches.
func (k *skeleton) render(dst []byte, bl *blob.Blob, noAddr bool) []byte {
	b := bl.Bytes()
	at := 0
	for _, o := range k.ops {
		dst = append(dst, k.text[at:o.at]...)
		at = o.at
		switch o.kind {
		case opAddr:
			dst = appendAddr(dst, bl, noAddr)
		case opErrs:
			dst = appendUint8(dst, b[o.statOff+6])
		case opData:
			data := b[o.dataOff : int(o.dataOff)+int(o.dsz)]
			if o.hist != nil {
				dst = o.hist.render(dst, data, o.dt)
			} else {
				dst = AppendData(dst, data, o.voiDT, o.dt, FreeForm, false)
			}
		case opJSONValue:
			data := b[o.dataOff : int(o.dataOff)+int(o.dsz)]
			switch {
			case o.hist == nil:
				dst = appendJSONValue(dst, data, b[o.statOff+6], b[o.statOff+7], o.voiDT, o.dt)
			case b[o.statOff+7]&voi.StatValid == 0:
				dst = append(dst, "null"...)
			default: // appendJSONValue's frame around the histogram's text
				dst = append(dst, `{"errs":`...)
				dst = appendUint8(dst, b[o.statOff+6])
				dst = o.hist.render(append(dst, ','), data, o.dt)
				dst = append(dst, '}')
			}
		}
	}
	return append(dst, k.text[at:]...)
}

// render appends the histogram's text with the counts of data (of type
// hdt) in their places.
func (h *histSkel) render(dst, data []byte, hdt voi.DType) []byte {
	at := int32(0)
	for i, p := range h.at {
		dst = append(dst, h.text[at:p]...)
		dst = decimal.AppendUint(dst, hist.BucketCount(data, hdt, i-1))
		at = p
	}
	return append(dst, h.text[at:]...)
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
