package tpl

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/statsblob/statsblob/hist"
	"github.com/statsblob/statsblob/internal/abi"
	"github.com/statsblob/statsblob/qmath"
	"github.com/statsblob/statsblob/tdigest"
	"github.com/statsblob/statsblob/voi"
)

// WideSlots is how many times a t-digest's centroid slots the wide form of
// a template gives it (fewer where the wide template would not fit a
// blob). Four: a collector's aggregate of 10^5 blobs, folded in batches,
// is then 1.7 to 10 times more accurate than one MergeAll of them in every
// case measured (bench/README.md); with two or three times the slots its
// merges cost a third less, but a bimodal fleet came within 1.11 times
// (two) or 2.4 times (three, batches of 16) of MergeAll's error.
const WideSlots = 4

// Widen returns the wide form of t: a template of the same name and VOIs,
// in a registry of its own, whose fixed-width fields hold what adding up
// many of t's blobs holds (see blob.Fold and Overflow in the blob
// package's documentation):
//
//   - a VOI of type INT_S32 or INT_U32 becomes INT_S64 or INT_U64, so its
//     SUM, MAX and MIN are 64-bit; the other types stay (Q_S32 and Q_U32
//     too: a Q value's control bits depend on its width);
//   - every histogram counts in 64 bits (CRHIST32 becomes CRHIST64, ...)
//     over the same buckets, given as explicit USR buckets whose bounds
//     are t's, sign- or zero-extended where the VOI widens;
//   - every t-digest becomes TDGSTCLUST64 with the same precision and
//     WideSlots times the slots (fewer, as many times for every digest,
//     where that would pass 65,535 bytes).
//
// The wide template keeps t's metadata (SetMetadata). A blob of t
// converts into the wide template exactly (blob.Widen): every
// count, sum, extreme and bucket, and every centroid. Errors wrap
// voi.ErrInvalid (a nil template or one without VOIs) or voi.ErrTooBig.
func Widen(t *Template) (*Template, error) {
	if t == nil {
		return nil, fmt.Errorf("tpl: widen a nil template: %w", voi.ErrInvalid)
	}
	t.mu.RLock()
	sb, name := t.sb, t.name
	t.mu.RUnlock()
	w, err := widenNamed(name, sb, func(id int) string { n, _ := t.VOIName(int32(id)); return n })
	if err != nil {
		return nil, err
	}
	// The metadata (units, help, kinds, counts, derived metrics) is the
	// template's: exporters read it from the wide form the collector
	// aggregates in.
	if err := w.SetMetadata(t.Metadata()); err != nil {
		return nil, within("widen "+name+": metadata", err)
	}
	return w, nil
}

// WidenLayout is Widen for the layout of b, a template's bytes or a
// blob's that blob.FromBytes accepted, where no template is at hand (the
// CLI merging blob files): the wide template is named name and its VOIs
// have no names. Bytes that are not such a layout give an error wrapping
// voi.ErrInvalid (or a template of no use), never a panic.
func WidenLayout(name string, b []byte) (*Template, error) {
	return widenNamed(name, b, nil)
}

func widenNamed(name string, sb []byte, voiName func(int) string) (*Template, error) {
	defs, err := layoutDefs(sb, voiName)
	if err != nil {
		return nil, within("widen "+name, err)
	}
	if len(defs) == 0 {
		return nil, fmt.Errorf("tpl: widen %s: no VOIs: %w", name, voi.ErrInvalid)
	}
	for mult := uint32(WideSlots); mult >= 1; mult-- {
		var w *Template
		if w, err = widen(name, defs, mult); err == nil {
			return w, nil
		}
	}
	return nil, within("widen "+name, err)
}

// layoutDefs returns the wide VOI definitions of the layout sb, in id
// order, t-digests with their narrow slot counts.
func layoutDefs(sb []byte, voiName func(int) string) ([]VOIDef, error) {
	if len(sb) < abi.HeaderSize || abi.StatsOff(sb) > len(sb) || abi.StatsDataOff(sb) > len(sb) || abi.StatsOff(sb) < abi.HeaderSize {
		return nil, fmt.Errorf("not a layout: %w", voi.ErrInvalid)
	}
	var defs []VOIDef
	for id := range abi.NVOIs(sb) {
		v := abi.ReadVOI(sb, abi.VOIAt(id))
		if v.ID < 0 {
			continue
		}
		d := VOIDef{ID: int32(id), DType: WideDType(v.DType)}
		if voiName != nil {
			d.Name = voiName(id)
		}
		if v.Flags&voi.FlagReqState != 0 {
			d.Flags = voi.FlagRelUpdate
		}
		for j := int(v.MaxID); j > 0; j-- {
			off := int(v.StatsOff) + abi.StatSize*j
			if off+abi.StatSize > abi.StatsDataOff(sb) {
				return nil, fmt.Errorf("VOI %d: voistat out of range: %w", id, voi.ErrInvalid)
			}
			st := abi.ReadStat(sb, off)
			if st.SType < 0 || st.SType == voi.StatVoiState {
				continue
			}
			if int(st.DataOff)+int(st.DSz) > len(sb) {
				return nil, fmt.Errorf("VOI %d: data out of range: %w", id, voi.ErrInvalid)
			}
			data := sb[st.DataOff : int(st.DataOff)+int(st.DSz)]
			switch st.SType {
			case voi.Sum, voi.Max, voi.Min:
				d.Stats = append(d.Stats, StatSpec{Type: st.SType})
				if v.DType.IsQ() && len(data) >= 4 {
					q := qmath.Q{Raw: uint64(binary.LittleEndian.Uint32(data)), Kind: voi.QKind(v.DType)}
					if len(data) == 8 {
						q.Raw = binary.LittleEndian.Uint64(data)
					}
					d.Prec = int(q.NFBits())
				}
			case voi.Hist:
				d.Stats = append(d.Stats, Histogram(wideHistSpec(data, st.DType, v.DType)))
			case voi.TDgst:
				info, err := tdigest.ReadInfo(data, st.DType)
				if err != nil || info.MaxNodes <= 0 {
					return nil, fmt.Errorf("VOI %d: t-digest: %w", id, voi.ErrInvalid)
				}
				prec := tdigest.ReadCentroid(data, st.DType, 0).Mu.NFBits()
				d.Stats = append(d.Stats, TDigest(voi.TDgstClust64, uint32(info.MaxNodes), uint32(prec)))
			default:
				return nil, fmt.Errorf("VOI %d: statistic type %v: %w", id, st.SType, voi.ErrInvalid)
			}
		}
		slices.Reverse(d.Stats) // in slot order, as a template declares them
		defs = append(defs, d)
	}
	return defs, nil
}

// widen builds the wide template of defs with mult times the digests'
// slots.
func widen(name string, defs []VOIDef, mult uint32) (*Template, error) {
	w, err := NewRegistry().New(name)
	if err != nil {
		return nil, err
	}
	wdefs := make([]VOIDef, len(defs))
	for i, d := range defs {
		d.Stats = slices.Clone(d.Stats)
		for k := range d.Stats {
			if d.Stats[k].Type == voi.TDgst {
				d.Stats[k].TDigest.NCtds *= mult
			}
		}
		wdefs[i] = d
	}
	if err := w.addVOIs(wdefs); err != nil {
		return nil, err
	}
	return w, nil
}

// WideDType is the data type a VOI of type dt has in a wide template:
// INT_S64 for INT_S32, INT_U64 for INT_U32, dt itself otherwise.
func WideDType(dt voi.DType) voi.DType {
	switch dt {
	case voi.IntS32:
		return voi.IntS64
	case voi.IntU32:
		return voi.IntU64
	}
	return dt
}

// wideHist maps a histogram type to its 64-bit-counter twin.
func wideHist(hdt voi.DType) voi.DType {
	if hdt >= voi.CRHist32 && hdt <= voi.DVHist32 {
		return hdt + (voi.CRHist64 - voi.CRHist32)
	}
	return hdt
}

// wideHistSpec returns the spec of the wide form of histogram data of
// type hdt of a VOI of type vdt: 64-bit counters over the same buckets,
// given as USR buckets, bounds extended where the VOI widens.
func wideHistSpec(data []byte, hdt, vdt voi.DType) hist.Spec {
	g, _ := hist.GeometryOf(hdt)
	n := hist.NumBuckets(hdt, len(data))
	ext := func(u uint64) uint64 {
		switch vdt {
		case voi.IntS32:
			return uint64(int64(int32(uint32(u))))
		case voi.IntU32:
			return uint64(uint32(u))
		}
		return u
	}
	s := hist.Spec{DType: wideHist(hdt), Scheme: hist.Usr, Buckets: make([]hist.Bound, n)}
	for i := range n {
		off := g.Header + i*g.Size
		lb := ext(binary.LittleEndian.Uint64(data[off:]))
		ub := lb
		if g.Bounds == 2 {
			ub = ext(binary.LittleEndian.Uint64(data[off+8:]))
		}
		s.Buckets[i] = hist.Bound{LB: lb, UB: ub}
	}
	return s
}
