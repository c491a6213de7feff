// Package tostr renders blobs and statistics as text, exactly as FreeBSD's
// stats_blob_tostr and stats_voistatdata_tostr do: a freeform, indented
// form for people and a JSON form for programs, each optionally with the
// blob's internals (Objdump) and with template and VOI names looked up by
// the blob's template hash (Meta).
package tostr

import (
	"fmt"
	"io"
	"strconv"
	"unsafe"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/internal/abi"
	"github.com/statsblob/statsblob/internal/decimal"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// Flags select optional parts of a rendering.
type Flags uint32

// The SB_TOSTR_* flags.
const (
	// Objdump adds the header, every VOI and stat slot (vacant ones too)
	// and the layout fields of each (SB_TOSTR_OBJDUMP).
	Objdump Flags = 0x1
	// Meta renders template and VOI names, found in the registry by the
	// blob's template hash (SB_TOSTR_META).
	Meta Flags = 0x2
	// NoAddr renders the freeform header's buffer address (the C's %p of
	// the blob) as 0x0, so that two renderings of the same bytes are the
	// same text (statsblob render does this). Not a C flag.
	NoAddr Flags = 0x100
)

// Options configure a rendering.
type Options struct {
	Format Format
	Flags  Flags
	// Template is the blob's template, for Meta; its hash must be the
	// blob's. Without it, Meta looks the template up in Registry by the
	// blob's hash (nothing is found in a nil Registry).
	Template *tpl.Template
	Registry *tpl.Registry
}

// metaTemplate returns the template whose names Meta renders: o.Template
// or the one o.Registry holds for bl's hash.
func (o Options) metaTemplate(bl *blob.Blob) (*tpl.Template, error) {
	if o.Template != nil {
		if h := o.Template.Hash(); h != bl.TplHash() {
			return nil, fmt.Errorf("tostr: template %s for META, the blob's hash is %d: %w", o.Template.Spec(), bl.TplHash(), voi.ErrInvalid)
		}
		return o.Template, nil
	}
	t, err := o.Registry.ByHash(bl.TplHash())
	if err != nil {
		return nil, fmt.Errorf("tostr: no template with hash %d for META: %w", bl.TplHash(), voi.ErrInvalid)
	}
	return t, nil
}

// Append appends the rendering of bl to dst. With Meta, a blob whose
// template hash matches no registered template gives an error wrapping
// voi.ErrInvalid and appends nothing, as the C does. A blob without VOIs
// renders as the empty string in both formats (the C's behaviour; see
// MarshalJSON for always-valid JSON). A nil bl is an error wrapping
// voi.ErrInvalid.
func Append(dst []byte, bl *blob.Blob, o Options) ([]byte, error) {
	if bl == nil {
		return dst, fmt.Errorf("tostr: render a nil blob: %w", voi.ErrInvalid)
	}
	var t *tpl.Template
	if o.Flags&Meta != 0 {
		var err error
		if t, err = o.metaTemplate(bl); err != nil {
			return dst, err
		}
	}
	if o.Flags&Objdump == 0 && !noSkeletons {
		if k := skeletonFor(bl, t, o.Format); k != nil {
			return k.render(dst, bl, o.Flags&NoAddr != 0), nil
		}
	}
	return render(dst, bl, t, o, nil), nil
}

// render is Append's walk over the blob; with rec set it records the
// skeleton of the rendering instead (see skeleton.go).
func render(dst []byte, bl *blob.Blob, t *tpl.Template, o Options, rec *skeleton) []byte {
	r := renderer{dst: dst, bl: bl, tpl: t, fmt: o.Format, dump: o.Flags&Objdump != 0, noAddr: o.Flags&NoAddr != 0, rec: rec}
	include := abi.IterFlags(0)
	if r.dump {
		include = abi.NullVOI | abi.NullStat
	}
	for s := range abi.Walk(bl.Buffer(), include) {
		if r.fmt == JSON {
			r.json(&s)
		} else {
			r.freeform(&s)
		}
	}
	return r.dst
}

// Write renders bl to w (see Append).
func Write(w io.Writer, bl *blob.Blob, o Options) error {
	b, err := Append(nil, bl, o)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// String returns the rendering of bl (see Append).
func String(bl *blob.Blob, o Options) (string, error) {
	b, err := Append(nil, bl, o)
	return string(b), err
}

type renderer struct {
	dst    []byte
	bl     *blob.Blob
	tpl    *tpl.Template
	fmt    Format
	dump   bool
	noAddr bool      // NoAddr
	rec    *skeleton // recording a skeleton: the blob's own values are left out
}

func (r *renderer) str(s string) { r.dst = append(r.dst, s...) }

// quoted appends "s" and then tail.
func (r *renderer) quoted(s, tail string) {
	r.dst = append(r.dst, '"')
	r.dst = append(r.dst, s...)
	r.dst = append(r.dst, '"')
	r.dst = append(r.dst, tail...)
}
func (r *renderer) uint(v uint64) { r.dst = decimal.AppendUint(r.dst, v) }
func (r *renderer) int(v int64)   { r.dst = decimal.AppendInt(r.dst, v) }
func (r *renderer) hex4(v uint64) { r.dst = appendHex(r.dst, v, 4) }
func (r *renderer) voiName(id int16) string {
	n, _ := r.tpl.VOIName(int32(id))
	return n
}

func appendHex(dst []byte, v uint64, width int) []byte {
	var buf [16]byte
	s := strconv.AppendUint(buf[:0], v, 16)
	for i := len(s); i < width; i++ {
		dst = append(dst, '0')
	}
	return append(dst, s...)
}

// header renders the blob-level fields of the first callback.
func (r *renderer) freeformHeader() {
	bl := r.bl
	b := bl.Buffer()
	r.str("struct statsblobv1@")
	if r.rec != nil {
		r.rec.op(r.dst, opAddr, nil)
	} else {
		r.dst = appendAddr(r.dst, bl, r.noAddr)
	}
	if r.dump {
		r.str(", abi=")
		r.uint(uint64(b[abi.OffABI]))
		r.str(", endian=")
		r.uint(uint64(b[abi.OffEndian]))
		r.str(", maxsz=")
		r.uint(uint64(bl.MaxSz()))
		r.str(", cursz=")
		r.uint(uint64(bl.CurSz()))
		r.str(", created=")
		r.int(int64(abi.U64(b, abi.OffCreated)))
		r.str(", lastrst=")
		r.int(int64(abi.U64(b, abi.OffLastRst)))
		r.str(", flags=0x")
		r.hex4(uint64(abi.U16(b, abi.OffFlags)))
		r.str(", stats_off=")
		r.uint(uint64(abi.StatsOff(b)))
		r.str(", statsdata_off=")
		r.uint(uint64(abi.StatsDataOff(b)))
	}
	r.str(", tplhash=")
	r.uint(uint64(bl.TplHash()))
}

// freeform is stats_v1_itercb_tostr_freeform.
func (r *renderer) freeform(s *abi.Slot) {
	if s.Flags&abi.FirstCB != 0 {
		r.freeformHeader()
	}
	v := &s.VOI
	if s.Flags&abi.FirstStat != 0 {
		r.str("\n\tvois[")
		r.int(int64(int16(s.VOISlot)))
		r.str("]: id=")
		r.int(int64(v.ID))
		if v.ID < 0 {
			return
		}
		r.str(`, name="`)
		if r.tpl != nil {
			r.str(r.voiName(v.ID))
		}
		r.str(`"`)
		if r.dump {
			r.str(", flags=0x")
			r.hex4(uint64(v.Flags))
			r.str(", dtype=")
			r.str(v.DType.String())
			r.str(", voistatmaxid=")
			r.int(int64(v.MaxID))
			r.str(", stats_off=")
			r.uint(uint64(v.StatsOff))
		}
	}
	st := &s.Stat
	if !r.dump && st.SType <= 0 {
		return
	}
	r.str("\n\t\tvois[")
	r.int(int64(v.ID))
	r.str("]stat[")
	r.int(int64(int8(s.StatSlot)))
	r.str("]: stype=")
	if st.SType < 0 {
		r.int(int64(st.SType))
		return
	}
	r.str(st.SType.String())
	r.str(", errs=")
	if r.rec != nil {
		r.rec.op(r.dst, opErrs, s)
	} else {
		r.uint(uint64(st.Errs))
	}
	if r.dump {
		r.str(", flags=0x")
		r.hex4(uint64(st.Flags))
		r.str(", dtype=")
		r.str(st.DType.String())
		r.str(", dsz=")
		r.uint(uint64(st.DSz))
		r.str(", data_off=")
		r.uint(uint64(st.DataOff))
	}
	r.str("\n\t\t\tvoistatdata: ")
	if r.rec != nil {
		r.rec.op(r.dst, opData, s)
	} else {
		r.dst = AppendData(r.dst, s.Data, v.DType, st.DType, FreeForm, r.dump)
	}
}

// json is stats_v1_itercb_tostr_json.
func (r *renderer) json(s *abi.Slot) {
	bl := r.bl
	b := bl.Buffer()
	if s.Flags&abi.FirstCB != 0 {
		r.str("{")
		if r.dump {
			r.str(`"abi":`)
			r.uint(uint64(b[abi.OffABI]))
			r.str(`,"endian":`)
			r.uint(uint64(b[abi.OffEndian]))
			r.str(`,"maxsz":`)
			r.uint(uint64(bl.MaxSz()))
			r.str(`,"cursz":`)
			r.uint(uint64(bl.CurSz()))
			r.str(`,"created":`)
			r.int(int64(abi.U64(b, abi.OffCreated)))
			r.str(`,"lastrst":`)
			r.int(int64(abi.U64(b, abi.OffLastRst)))
			r.str(`,"flags":`)
			r.uint(uint64(abi.U16(b, abi.OffFlags)))
			r.str(`,"stats_off":`)
			r.uint(uint64(abi.StatsOff(b)))
			r.str(`,"statsdata_off":`)
			r.uint(uint64(abi.StatsDataOff(b)))
			r.str(",")
		}
		r.str(`"tplname":`)
		if r.tpl == nil {
			r.str("null")
		} else {
			r.quoted(r.tpl.Name(), "")
		}
		r.str(`,"tplhash":`)
		r.uint(uint64(bl.TplHash()))
		r.str(`,"vois":{`)
	}
	v := &s.VOI
	if s.Flags&abi.FirstStat != 0 {
		if r.dump {
			r.str(`"[`)
			r.int(int64(s.VOISlot))
			r.str(`]":{"id":`)
			r.int(int64(v.ID))
			if v.ID < 0 {
				r.str("},")
				return
			}
			r.str(`,"name":`)
			if r.tpl == nil {
				r.str("null")
			} else {
				r.quoted(r.voiName(v.ID), "")
			}
			r.str(`,"flags":`)
			r.uint(uint64(v.Flags))
			r.str(`,"dtype":"`)
			r.str(v.DType.String())
			r.str(`","voistatmaxid":`)
			r.int(int64(v.MaxID))
			r.str(`,"stats_off":`)
			r.uint(uint64(v.StatsOff))
			r.str(",")
		} else if r.tpl == nil {
			r.str(`"[`)
			r.int(int64(v.ID))
			r.str(`]":{`)
		} else {
			r.quoted(r.voiName(v.ID), ":{")
		}
		r.str(`"stats":{`)
	}
	st := &s.Stat
	if r.dump {
		r.str(`"[`)
		r.int(int64(int8(s.StatSlot)))
		r.str(`]":`)
		if st.SType < 0 {
			r.str(`{"stype":-1},`)
			return
		}
		r.str(`{"stype":"`)
		r.str(st.SType.String())
		r.str(`","errs":`)
		r.uint(uint64(st.Errs))
		r.str(`,"flags":`)
		r.uint(uint64(st.Flags))
		r.str(`,"dtype":"`)
		r.str(st.DType.String())
		r.str(`","data_off":`)
		r.uint(uint64(st.DataOff))
		r.str(`,"voistatdata":{`)
	} else if st.SType > 0 {
		if r.tpl == nil {
			r.str(`"[`)
			r.int(int64(st.SType))
			r.str(`]":`)
		} else {
			r.quoted(st.SType.String(), ":")
		}
	} else {
		return
	}
	if r.dump {
		// Every statistic's data, updated or not.
		if !st.DType.IsCompound() {
			r.str(`"val":`)
		}
		r.dst = AppendData(r.dst, s.Data, v.DType, st.DType, JSON, r.dump)
		r.str("}}")
	} else if r.rec != nil {
		r.rec.op(r.dst, opJSONValue, s)
	} else {
		r.dst = appendJSONValue(r.dst, s.Data, st.Errs, st.Flags, v.DType, st.DType)
	}
	if s.Flags&abi.LastStat != 0 {
		r.str("}}")
	}
	if s.Flags&abi.LastCB != 0 {
		r.str("}}")
	} else {
		r.str(",")
	}
}

// appendJSONValue appends a statistic's JSON value without Objdump: null
// until the statistic is updated, then its error count and data.
func appendJSONValue(dst, data []byte, errs, flags uint8, voiDT, dt voi.DType) []byte {
	if flags&voi.StatValid == 0 {
		return append(dst, "null"...)
	}
	dst = append(dst, `{"errs":`...)
	dst = decimal.AppendUint(dst, uint64(errs))
	dst = append(dst, ',')
	if !dt.IsCompound() {
		dst = append(dst, `"val":`...)
	}
	dst = AppendData(dst, data, voiDT, dt, JSON, false)
	return append(dst, '}')
}

// appendAddr appends the address of bl's buffer as fmt's %p does, or 0x0
// with noAddr.
func appendAddr(dst []byte, bl *blob.Blob, noAddr bool) []byte {
	dst = append(dst, "0x"...)
	if noAddr {
		return append(dst, '0')
	}
	return strconv.AppendUint(dst, uint64(uintptr(unsafe.Pointer(&bl.Buffer()[0]))), 16)
}

// AppendData appends the text of one statistic's data
// (stats_voistatdata_tostr): data of type dt belonging to a VOI of type
// voiDT. Numeric values render as numbers, the VOI state as `prev=` (JSON
// `"prev":`) and the VOI's value, histograms and t-digests as their
// bucket and centroid lists; objdump adds array indices to those lists.
// Data too short for its type renders as nothing.
func AppendData(dst, data []byte, voiDT, dt voi.DType, f Format, objdump bool) []byte {
	switch {
	case dt == voi.VoiState:
		if f == JSON {
			dst = append(dst, `"prev":`...)
		} else {
			dst = append(dst, "prev="...)
		}
		return appendNumericData(dst, data, voiDT)
	case dt.IsNumeric():
		return appendNumericData(dst, data, dt)
	case dt.IsHist():
		return appendHist(dst, data, voiDT, dt, f, objdump)
	case dt.IsTDigest():
		return appendTDigest(dst, data, voiDT, dt, f, objdump)
	}
	return dst
}

func appendNumericData(dst, data []byte, dt voi.DType) []byte {
	if !dt.IsNumeric() || len(data) < dt.Size() {
		return dst
	}
	var v uint64
	if dt.Size() == 4 {
		v = uint64(uint32(data[0]) | uint32(data[1])<<8 | uint32(data[2])<<16 | uint32(data[3])<<24)
	} else {
		for i := 7; i >= 0; i-- {
			v = v<<8 | uint64(data[i])
		}
	}
	return voi.AppendNumeric(dst, dt, v)
}
