package blob

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"slices"

	"github.com/statsblob/statsblob/hist"
	"github.com/statsblob/statsblob/internal/abi"
	"github.com/statsblob/statsblob/qmath"
	"github.com/statsblob/statsblob/tdigest"
	"github.com/statsblob/statsblob/voi"
)

// Merge adds the statistics of src into dst, two blobs made from the same
// template (same template hash and layout): SUM adds, MAX and MIN keep the
// extreme, histograms add their bucket and out-of-band counts, t-digests
// re-add src's centroids with their weights through the same add path as
// updates (drawing from dst's Env), error counts add (saturating at 255),
// and a statistic is marked updated if it was in either blob. VOI state
// (the previous values of relative updates) and the header of dst are
// kept.
//
// Like an update, a statistic whose merge overflows (an integer SUM that
// wraps, a saturating histogram counter, a t-digest that cannot place a
// centroid) counts an error in dst's voistat, the other statistics still
// merge, and Merge returns the error (wrapping voi.ErrOverflow or the
// t-digest's error). Blobs of different templates give an error wrapping
// voi.ErrInvalid and leave dst unchanged.
//
// Merge is deterministic: the same blobs merged in the same order give the
// same bytes. Only t-digests depend on the order (and on dst's random
// source); MergeAll offers a canonical order for aggregators.
func Merge(dst, src *Blob) error {
	d, s := dst.b, src.b
	if err := sameLayout(d, s); err != nil {
		return fmt.Errorf("blob: merge: %w", err)
	}
	dst.dropDigestCaches()
	var first error
	for sl := range dst.Walk(0) {
		st := sl.Stat
		if st.Type == voi.StatVoiState {
			continue
		}
		dd := d[st.DataOff : int(st.DataOff)+int(st.DSz)]
		sd := s[st.DataOff : int(st.DataOff)+int(st.DSz)]
		var err error
		switch st.Type {
		case voi.Sum, voi.Max, voi.Min:
			err = mergeNumeric(dd, sd, st.Type, st.DType)
		case voi.Hist:
			var saturated bool
			if saturated, err = hist.Merge(dd, sd, st.DType); err == nil && saturated {
				err = voi.ErrOverflow
			}
		case voi.TDgst:
			err = tdigest.Merge(dd, sd, st.DType, dst.Env())
		}
		se := d[sl.statOff : sl.statOff+abi.StatSize]
		ss := s[sl.statOff : sl.statOff+abi.StatSize]
		se[abi.StatOffFlags] |= ss[abi.StatOffFlags] & voi.StatValid
		errs := int(se[abi.StatOffErrs]) + int(ss[abi.StatOffErrs])
		if err != nil {
			errs++
			if first == nil {
				first = fmt.Errorf("blob: merge: VOI %d %v: %w", sl.VOI.ID, st.Type, err)
			}
		}
		se[abi.StatOffErrs] = uint8(min(errs, abi.MaxErrs))
	}
	return first
}

// sameLayout checks that two blobs share a template: the same hash, sizes,
// offsets and voi/voistat entries (error counts and flags aside).
func sameLayout(d, s []byte) error {
	if h1, h2 := abi.U32(d, abi.OffTplHash), abi.U32(s, abi.OffTplHash); h1 != h2 {
		return fmt.Errorf("template hashes %d and %d differ: %w", h1, h2, voi.ErrInvalid)
	}
	cur := abi.CurSz(d)
	if cur != abi.CurSz(s) || abi.StatsOff(d) != abi.StatsOff(s) || abi.StatsDataOff(d) != abi.StatsDataOff(s) {
		return fmt.Errorf("layouts differ: %w", voi.ErrInvalid)
	}
	if !bytes.Equal(d[abi.HeaderSize:abi.StatsOff(d)], s[abi.HeaderSize:abi.StatsOff(s)]) {
		return fmt.Errorf("VOI tables differ: %w", voi.ErrInvalid)
	}
	for off := abi.StatsOff(d); off < abi.StatsDataOff(d); off += abi.StatSize {
		if !bytes.Equal(d[off:off+abi.StatOffErrs], s[off:off+abi.StatOffErrs]) {
			return fmt.Errorf("voistat tables differ at %d: %w", off, voi.ErrInvalid)
		}
	}
	return nil
}

// mergeNumeric merges a SUM, MAX or MIN of data type dt.
func mergeNumeric(d, s []byte, st voi.SType, dt voi.DType) error {
	if dt.IsQ() {
		k := voi.QKind(dt)
		a, b := loadQ(k, d), loadQ(k, s)
		var r qmath.Q
		var err error
		switch {
		case st == voi.Sum:
			r, err = a.AddQ(b)
		case st == voi.Max && a.LT(b), st == voi.Min && a.GT(b):
			r, err = a.CpyValQ(b)
		default:
			return nil
		}
		if err == nil {
			storeQ(d, r)
		}
		return err
	}
	if dt.Is32() {
		a, b := binary.LittleEndian.Uint32(d), binary.LittleEndian.Uint32(s)
		r, err := mergeInt(uint64(a), uint64(b), st, dt.Signed(), 32)
		binary.LittleEndian.PutUint32(d, uint32(r))
		return err
	}
	a, b := binary.LittleEndian.Uint64(d), binary.LittleEndian.Uint64(s)
	r, err := mergeInt(a, b, st, dt.Signed(), 64)
	binary.LittleEndian.PutUint64(d, r)
	return err
}

// mergeInt merges two integers of the given width held in uint64s. A SUM
// that overflows wraps, as updates do, and reports ErrOverflow.
func mergeInt(a, b uint64, st voi.SType, signed bool, width uint) (uint64, error) {
	shift := 64 - width
	sa, sb := int64(a<<shift)>>shift, int64(b<<shift)>>shift // sign-extended
	switch st {
	case voi.Sum:
		if signed {
			r := sa + sb
			if int64(r<<shift)>>shift != r || (sa >= 0) == (sb >= 0) && (r >= 0) != (sa >= 0) {
				return uint64(r), voi.ErrOverflow
			}
			return uint64(r), nil
		}
		r, carry := bits.Add64(a<<shift, b<<shift, 0)
		if carry != 0 {
			return (r >> shift), voi.ErrOverflow
		}
		return r >> shift, nil
	case voi.Max:
		if signed && sb > sa || !signed && b > a {
			return b, nil
		}
	case voi.Min:
		if signed && sb < sa || !signed && b < a {
			return b, nil
		}
	}
	return a, nil
}

// MergeAll merges blobs made from one template into a new blob, in a
// canonical order that does not depend on the order of the arguments: by
// creation time, then by bytes. The result is a clone of the first blob in
// that order (its header included) with env as its Env, into which the
// others are merged; the inputs are not modified. Errors are those of
// Merge; with no blobs, voi.ErrInvalid.
func MergeAll(env *Env, blobs ...*Blob) (*Blob, error) {
	if len(blobs) == 0 {
		return nil, fmt.Errorf("blob: merge of no blobs: %w", voi.ErrInvalid)
	}
	order := append([]*Blob(nil), blobs...)
	slices.SortStableFunc(order, func(a, b *Blob) int {
		if c := cmp.Compare(a.Created(), b.Created()); c != 0 {
			return c
		}
		return bytes.Compare(a.Bytes(), b.Bytes())
	})
	out := order[0].Clone()
	out.env = env
	var first error
	for _, b := range order[1:] {
		if err := Merge(out, b); err != nil && first == nil {
			first = err
			if errors.Is(err, voi.ErrInvalid) {
				return nil, err
			}
		}
	}
	return out, first
}
