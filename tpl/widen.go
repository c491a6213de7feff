package tpl

import (
	"encoding/binary"
	"fmt"

	"github.com/statsblob/statsblob/hist"
	"github.com/statsblob/statsblob/internal/abi"
	"github.com/statsblob/statsblob/voi"
)

// WideSlots is how many times a t-digest's centroid slots the wide form of
// a template gives it (fewer where the wide template would not fit a blob).
const WideSlots = 4

// Widen returns the wide form of t: a template of the same name and VOIs,
// in a registry of its own, whose fixed-width fields hold what adding up
// many of t's blobs holds (see blob.Fold and the overflow policy in the
// blob package's documentation):
//
//   - a VOI of type INT_S32 or INT_U32 becomes INT_S64 or INT_U64, so its
//     SUM, MAX and MIN are 64-bit; the other types stay (Q_S32 and Q_U32
//     too: a Q value's control bits depend on its width);
//   - every histogram counts in 64 bits (CRHIST32 becomes CRHIST64, ...)
//     with the same buckets: the bounds of a widened VOI's histogram are
//     t's bounds sign- or zero-extended (as explicit USR buckets);
//   - every t-digest becomes TDGSTCLUST64 with the same precision and
//     WideSlots times the slots (fewer, as many times for every digest,
//     where that would pass 65,535 bytes).
//
// A blob of t converts into the wide template exactly (blob.Widen): every
// count, sum, extreme and bucket, and every centroid. Errors
// wrap voi.ErrInvalid (a template without VOIs) or voi.ErrTooBig.
func Widen(t *Template) (*Template, error) {
	t.mu.RLock()
	defs := append([]VOIDef(nil), t.defs...)
	sb := t.sb
	name := t.name
	t.mu.RUnlock()
	if len(defs) == 0 {
		return nil, fmt.Errorf("tpl: widen %s: no VOIs: %w", name, voi.ErrInvalid)
	}
	var err error
	for mult := uint32(WideSlots); mult >= 1; mult-- {
		var w *Template
		if w, err = widen(name, sb, defs, mult); err == nil {
			return w, nil
		}
	}
	return nil, fmt.Errorf("tpl: widen %s: %w", name, err)
}

// widen builds the wide form with mult times the digests' slots.
func widen(name string, sb []byte, defs []VOIDef, mult uint32) (*Template, error) {
	w, err := NewRegistry().New(name)
	if err != nil {
		return nil, err
	}
	wdefs := make([]VOIDef, len(defs))
	for i, d := range defs {
		wd := d
		wd.DType = WideDType(d.DType)
		wd.Stats = make([]StatSpec, len(d.Stats))
		for k, s := range d.Stats {
			switch s.Type {
			case voi.Hist:
				s.Hist = widenHist(s.Hist, sb, d, wd.DType)
			case voi.TDgst:
				s.TDigest.DType = voi.TDgstClust64
				s.TDigest.NCtds *= mult
			}
			wd.Stats[k] = s
		}
		wdefs[i] = wd
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

// widenHist returns the spec of the wide form of histogram s of VOI d:
// 64-bit counters, and, for a VOI whose type widens, the buckets t built
// (read from t's bytes sb) as explicit USR buckets of the wide type.
func widenHist(s hist.Spec, sb []byte, d VOIDef, wdt voi.DType) hist.Spec {
	narrow := s.DType
	s.DType = wideHist(s.DType)
	if wdt == d.DType {
		return s
	}
	g, _ := hist.GeometryOf(narrow)
	v := abi.ReadVOI(sb, abi.VOIAt(int(d.ID)))
	st := abi.ReadStat(sb, int(v.StatsOff)+int(voi.Hist)*abi.StatSize)
	data := sb[st.DataOff : int(st.DataOff)+int(st.DSz)]
	n := hist.NumBuckets(narrow, len(data))
	ext := func(u uint64) uint64 {
		if d.DType == voi.IntS32 {
			return uint64(int64(int32(uint32(u))))
		}
		return uint64(uint32(u))
	}
	s.Scheme, s.Flags = hist.Usr, 0
	s.Buckets = make([]hist.Bound, n)
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
