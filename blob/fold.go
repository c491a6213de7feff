package blob

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"

	"github.com/statsblob/statsblob/hist"
	"github.com/statsblob/statsblob/internal/abi"
	"github.com/statsblob/statsblob/internal/trusted"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// Fold adds the statistics of srcs into dst in place, as a collector adds
// up what senders post: dst is a blob of the srcs' template or of its wide
// form (tpl.Widen), into which every src, of either, adds exactly. SUMs
// add, MAX and MIN keep the extreme, histograms add their counters, error
// counts add and the updated flags join, as Merge does; each t-digest
// merges the digests of all srcs and its own in one step
// (tdigest.MergeAllFrom), so folding N blobs in batches is as accurate as
// one MergeAll of them when dst's digests are wider than the srcs'.
//
// Fold never refuses a src for overflow and never wraps (see OVERFLOW in
// the package documentation): a statistic whose result would not fit dst's
// field saturates at the field's limit (a Q SUM keeps its value; a
// t-digest whose sample count would overflow leaves that src's samples
// out) and counts one error in its voistat; saturated is the number of
// such statistics, summed over the srcs. The only error is a src that is
// nil or neither of dst's template nor of the template dst is the wide
// form of (wrapping voi.ErrInvalid, naming the src), or a nil dst: every
// src is checked before dst changes, so dst is then unchanged.
func Fold(dst *Blob, srcs ...*Blob) (saturated int, err error) {
	if dst == nil {
		return 0, fmt.Errorf("blob: fold into a %w", errNilBlob)
	}
	var okPlan *plan // a src plan found foldable into dst's
	for i, s := range srcs {
		switch {
		case s == nil:
			err = errNilBlob
		case s.plan == dst.plan || s.plan == okPlan:
			err = foldPrecisions(dst, s)
		default:
			if err = foldable(dst.plan, s.plan, dst.b, s.b); err == nil {
				okPlan = s.plan
				err = foldPrecisions(dst, s)
			}
		}
		if err != nil {
			return 0, fmt.Errorf("blob: fold: source %d: %w", i, err)
		}
	}
	// Samples accurate-mode digests buffer are written in first: every
	// view does so, and the digests' caches are dropped below.
	dst.settle()
	for _, s := range srcs {
		s.settle()
	}
	for i, s := range srcs {
		if i+1 < len(srcs) {
			touchLines(srcs[i+1].b) // (the next src's cache misses overlap this one's work)
		}
		saturated += dst.foldStats(s)
	}
	saturated += dst.foldDigests(srcs)
	dst.dropDigestCaches()
	return saturated, nil
}

// Widen returns b converted to w, the wide form of b's template
// (tpl.Widen): every statistic exactly (sums, extremes, counters, error
// counts, flags and every t-digest centroid), the header (times) b's, with
// env as its Env. Errors wrap voi.ErrInvalid: b's layout is not the one w
// widens, or w or b is nil.
func Widen(w *tpl.Template, b *Blob, env *Env) (*Blob, error) {
	if w == nil || b == nil {
		return nil, fmt.Errorf("blob: widen: nil template or blob: %w", voi.ErrInvalid)
	}
	out := New(w, env)
	copy(out.b[abi.OffCreated:abi.HeaderSize], b.b[abi.OffCreated:abi.HeaderSize])
	if _, err := Fold(out, b); err != nil {
		return nil, fmt.Errorf("blob: widen: %w", err)
	}
	return out, nil
}

// foldable checks that blobs of plan sp (bytes s) fold into blobs of plan
// dp (bytes d): the same VOIs with the same statistics, each VOI of the
// same data type or of its wide type (tpl.WideDType), histograms of the
// same buckets (bounds extended to the wide type) with counters of the
// same or a greater width, t-digests of either layout.
func foldable(dp, sp *plan, d, s []byte) error {
	if len(dp.vois) != len(sp.vois) {
		return fmt.Errorf("%d and %d VOI slots: %w", len(dp.vois), len(sp.vois), voi.ErrInvalid)
	}
	for id := range dp.vois {
		dv, sv := &dp.vois[id], &sp.vois[id]
		if dv.dtype != sv.dtype && dv.dtype != tpl.WideDType(sv.dtype) || dv.n != sv.n {
			return fmt.Errorf("VOI %d: %v with %d statistics cannot take %v with %d: %w", id, dv.dtype, dv.n, sv.dtype, sv.n, voi.ErrInvalid)
		}
		for k := range int(dv.n) {
			ds, ss := &dp.stats[int(dv.first)+k], &sp.stats[int(sv.first)+k]
			if ds.stype != ss.stype {
				return fmt.Errorf("VOI %d: statistics %v and %v: %w", id, ds.stype, ss.stype, voi.ErrInvalid)
			}
			var err error
			switch ds.stype {
			case voi.Hist:
				err = foldableHist(d[ds.dataOff:int(ds.dataOff)+int(ds.dsz)], s[ss.dataOff:int(ss.dataOff)+int(ss.dsz)], ds.dtype, ss.dtype, sv.dtype)
			case voi.TDgst:
				if !ds.dtype.IsTDigest() || !ss.dtype.IsTDigest() {
					err = fmt.Errorf("t-digest types %v and %v: %w", ds.dtype, ss.dtype, voi.ErrInvalid)
				}
			default:
				if ds.dtype != dv.dtype || ss.dtype != sv.dtype {
					err = fmt.Errorf("%v of %v in a VOI of %v: %w", ds.stype, ds.dtype, dv.dtype, voi.ErrInvalid)
				}
			}
			if err != nil {
				return fmt.Errorf("VOI %d %v: %w", id, ds.stype, err)
			}
		}
	}
	return nil
}

// foldableHist checks that histogram data s (type sdt, of a VOI of type
// svt) adds into d (type ddt): the same kind and buckets, bounds equal
// once extended to 64 bits, counters at least as wide.
func foldableHist(d, s []byte, ddt, sdt, svt voi.DType) error {
	dg, ok1 := hist.GeometryOf(ddt)
	sg, ok2 := hist.GeometryOf(sdt)
	if !ok1 || !ok2 || dg.Size != sg.Size || dg.Bounds != sg.Bounds || dg.Count32 && !sg.Count32 || ddt%3 != sdt%3 {
		return fmt.Errorf("histogram types %v and %v: %w", ddt, sdt, voi.ErrInvalid)
	}
	n := hist.NumBuckets(ddt, len(d))
	if n != hist.NumBuckets(sdt, len(s)) {
		return fmt.Errorf("%d and %d buckets: %w", n, hist.NumBuckets(sdt, len(s)), voi.ErrInvalid)
	}
	for i := range n {
		for w := range dg.Bounds {
			off := dg.Header + i*dg.Size + 8*w
			if binary.LittleEndian.Uint64(d[off:]) != extend(binary.LittleEndian.Uint64(s[off:]), svt) {
				return fmt.Errorf("bucket %d: bounds differ: %w", i, voi.ErrInvalid)
			}
		}
	}
	return nil
}

// extend returns a value of a VOI of type dt as its wide type holds it:
// 32-bit integers sign- or zero-extended, others unchanged.
func extend(v uint64, dt voi.DType) uint64 {
	switch dt {
	case voi.IntS32:
		return uint64(int64(int32(uint32(v))))
	case voi.IntU32:
		return uint64(uint32(v))
	}
	return v
}

// foldPrecisions checks that the Q statistics of s have dst's precision
// (Q VOIs do not widen).
func foldPrecisions(dst, s *Blob) error {
	if s.plan == dst.plan {
		return compatibleBlobs(dst, s)
	}
	dp, sp := dst.plan, s.plan
	for i := range dp.stats {
		ds, ss := &dp.stats[i], &sp.stats[i]
		if ds.stype == voi.Hist || ds.stype == voi.TDgst || !ds.dtype.IsQ() {
			continue
		}
		if dst.b[ds.dataOff]&qCtrlMask != s.b[ss.dataOff]&qCtrlMask {
			return fmt.Errorf("precisions of the Q values differ (control bits %d and %d): %w", dst.b[ds.dataOff]&qCtrlMask, s.b[ss.dataOff]&qCtrlMask, voi.ErrInvalid)
		}
	}
	return nil
}

// foldStats adds the statistics of s but t-digests (their error counts and
// flags included) into dst in place and returns how many saturated.
func (dst *Blob) foldStats(s *Blob) (saturated int) {
	d, sb := dst.b, s.b
	dp, sp := dst.plan, s.plan
	for i := range dp.stats {
		ds, ss := &dp.stats[i], &sp.stats[i]
		dd := d[ds.dataOff : int(ds.dataOff)+int(ds.dsz)]
		sd := sb[ss.dataOff : int(ss.dataOff)+int(ss.dsz)]
		se := d[ds.statOff : int(ds.statOff)+abi.StatSize]
		sse := sb[ss.statOff : int(ss.statOff)+abi.StatSize]
		sat := false
		switch ds.stype {
		case voi.Sum, voi.Max, voi.Min:
			sat = foldNumeric(dd, sd, ds.stype, ds.dtype, ss.dtype, sse[abi.StatOffFlags]&voi.StatValid != 0)
		case voi.Hist:
			sat = foldHist(dd, sd, ds.dtype, ss.dtype)
		}
		errs := int(se[abi.StatOffErrs]) + int(sse[abi.StatOffErrs])
		if sat {
			saturated++
			errs++
		}
		se[abi.StatOffErrs] = uint8(min(errs, abi.MaxErrs))
		se[abi.StatOffFlags] |= sse[abi.StatOffFlags] & voi.StatValid
	}
	return saturated
}

// foldNumeric adds a SUM, MAX or MIN of type sdt into one of type ddt (the
// same, or its wide type) and reports whether it saturated. A MAX or MIN
// never updated (valid false) is skipped where the types differ: its
// initial value is not the wide type's.
func foldNumeric(d, s []byte, st voi.SType, ddt, sdt voi.DType, valid bool) bool {
	if ddt.IsQ() {
		return mergeNumeric(d, s, st, ddt) != nil // a Q SUM that would overflow keeps its value
	}
	if ddt != sdt && st != voi.Sum && !valid {
		return false
	}
	var sv uint64
	if sdt.Is32() {
		sv = extend(uint64(binary.LittleEndian.Uint32(s)), sdt)
	} else {
		sv = binary.LittleEndian.Uint64(s)
	}
	w32 := ddt.Is32()
	var dv uint64
	if w32 {
		dv = extend(uint64(binary.LittleEndian.Uint32(d)), ddt)
	} else {
		dv = binary.LittleEndian.Uint64(d)
	}
	r, sat := foldInt(dv, sv, st, ddt.Signed(), w32)
	if w32 {
		binary.LittleEndian.PutUint32(d, uint32(r))
	} else {
		binary.LittleEndian.PutUint64(d, r)
	}
	return sat
}

// foldInt merges two integers held extended to 64 bits (sign-extended if
// signed) into a field of 32 or 64 bits: a SUM saturates at the field's
// limits and reports it.
func foldInt(a, b uint64, st voi.SType, signed, w32 bool) (uint64, bool) {
	switch st {
	case voi.Sum:
		if signed {
			lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
			if w32 {
				lo, hi = math.MinInt32, math.MaxInt32
			}
			sa, sb := int64(a), int64(b)
			r := sa + sb
			if (sa >= 0) == (sb >= 0) && (r >= 0) != (sa >= 0) { // 64-bit overflow
				if sa >= 0 {
					return uint64(hi), true
				}
				return uint64(lo), true
			}
			switch {
			case r > hi:
				return uint64(hi), true
			case r < lo:
				return uint64(lo), true
			}
			return uint64(r), false
		}
		limit := uint64(math.MaxUint64)
		if w32 {
			limit = math.MaxUint32
		}
		r, carry := bits.Add64(a, b, 0)
		if carry != 0 || r > limit {
			return limit, true
		}
		return r, false
	case voi.Max:
		if signed && int64(b) > int64(a) || !signed && b > a {
			return b, false
		}
	case voi.Min:
		if signed && int64(b) < int64(a) || !signed && b < a {
			return b, false
		}
	}
	return a, false
}

// foldHist adds the counters of histogram s (type sdt) into d (type ddt,
// counters as wide or wider), saturating each at its width's maximum.
func foldHist(d, s []byte, ddt, sdt voi.DType) (saturated bool) {
	dg, _ := hist.GeometryOf(ddt)
	sg, _ := hist.GeometryOf(sdt)
	add := func(doff, soff int) {
		var sv uint64
		if sg.Count32 {
			sv = uint64(binary.LittleEndian.Uint32(s[soff:]))
		} else {
			sv = binary.LittleEndian.Uint64(s[soff:])
		}
		if sv == 0 {
			return
		}
		if dg.Count32 {
			r := uint64(binary.LittleEndian.Uint32(d[doff:])) + sv
			if r > math.MaxUint32 {
				r, saturated = math.MaxUint32, true
			}
			binary.LittleEndian.PutUint32(d[doff:], uint32(r))
			return
		}
		r, carry := bits.Add64(binary.LittleEndian.Uint64(d[doff:]), sv, 0)
		if carry != 0 {
			r, saturated = math.MaxUint64, true
		}
		binary.LittleEndian.PutUint64(d[doff:], r)
	}
	add(0, 0) // the out-of-band counter
	n := hist.NumBuckets(ddt, len(d))
	for i := range n {
		add(dg.Header+i*dg.Size+dg.CountOff, sg.Header+i*sg.Size+sg.CountOff)
	}
	return saturated
}

// foldDigests merges each t-digest of srcs into dst's in one step
// (tdigest.MergeAllFrom; srcs of dst's own layout and srcs of the other
// in one step each) and returns how many sources' digests it left out for
// overflow, each counted in its voistat.
func (dst *Blob) foldDigests(srcs []*Blob) (saturated int) {
	if len(srcs) == 0 || dst.plan.ndigests == 0 {
		return 0
	}
	var groups [2][][]byte // dst's layout, the other
	for i := range dst.plan.stats {
		dsp := &dst.plan.stats[i]
		if dsp.stype != voi.TDgst {
			continue
		}
		dd := dst.b[dsp.dataOff : int(dsp.dataOff)+int(dsp.dsz)]
		groups[0], groups[1] = groups[0][:0], groups[1][:0]
		odt := dsp.dtype
		for _, s := range srcs {
			ssp := &s.plan.stats[i] // a foldable plan lists the same statistics in the same order
			sd := s.b[ssp.dataOff : int(ssp.dataOff)+int(ssp.dsz)]
			if ssp.dtype == dsp.dtype {
				groups[0] = append(groups[0], sd)
			} else {
				groups[1], odt = append(groups[1], sd), ssp.dtype
			}
		}
		se := dst.b[dsp.statOff : int(dsp.statOff)+abi.StatSize]
		for g, group := range groups {
			if len(group) == 0 {
				continue
			}
			sdt := dsp.dtype
			if g == 1 {
				sdt = odt
			}
			if trusted.TDigestMergeAllFrom(dd, dsp.dtype, sdt, group...) == nil {
				continue
			}
			for _, sd := range group { // one at a time: leave out what does not fit
				if trusted.TDigestMergeAllFrom(dd, dsp.dtype, sdt, sd) != nil {
					saturated++
					se[abi.StatOffErrs] = uint8(min(int(se[abi.StatOffErrs])+1, abi.MaxErrs))
				}
			}
		}
	}
	return saturated
}

// touchLines reads a byte of every cache line of b, so that b is in the
// cache when it is read next (a collector folds blobs decoded a while
// before, whose lines are no longer in the cache; these independent loads
// overlap their misses). It is not inlined, so that its loads are kept.
//
//go:noinline
func touchLines(b []byte) (t byte) {
	for off := 0; off < len(b); off += 64 {
		t += b[off]
	}
	return t
}
