package blob

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"sync"

	"github.com/statsblob/statsblob/hist"
	"github.com/statsblob/statsblob/internal/abi"
	"github.com/statsblob/statsblob/internal/trusted"
	"github.com/statsblob/statsblob/qmath"
	"github.com/statsblob/statsblob/tdigest"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// Merge adds the statistics of src into dst, two blobs made from the same
// template (see Compatible): SUM adds, MAX and MIN keep the extreme,
// histograms add their bucket and out-of-band counts, t-digests merge with
// tdigest.Merge (all samples counted, the destination's geometry kept),
// error counts add (saturating at 255), and a statistic is marked updated
// if it was in either blob. VOI state (the previous values of relative
// updates) and the header of dst are kept.
//
// Merge is all or nothing. It checks that the blobs are compatible before
// it changes anything (an error wrapping voi.ErrInvalid otherwise), merges
// into a scratch copy of dst and commits it only if every statistic
// merged: a merge that overflows anywhere (an integer or Q SUM out of its
// type's range, a histogram counter past its maximum, a t-digest whose
// sample count would pass its counter's maximum) returns an error naming
// the VOI and the statistic, wrapping voi.ErrOverflow, and leaves dst
// unchanged: a merge that cannot complete leaves no trace. (Updates do
// what the C does, which for an integer SUM is to wrap; Fold and Sharded
// saturate and count; see Overflow in the package documentation. To merge
// without overflow, Fold into a blob of the wide template, tpl.Widen.)
//
// Merge is deterministic and draws no randomness, and its statistics do
// not depend on the order of the two blobs: Merge(a, b) leaves in a the
// statistics Merge(b, a) leaves in b. To merge many blobs, MergeAll merges
// all their t-digests in one step, which is more accurate than merging
// them one by one.
func Merge(dst, src *Blob) error {
	if dst == nil || src == nil {
		return fmt.Errorf("blob: merge: %w", errNilBlob)
	}
	dst.settle()
	src.settle()
	if err := compatibleBlobs(dst, src); err != nil {
		return fmt.Errorf("blob: merge: %w", err)
	}
	if err := dst.mergeAtomic(src); err != nil {
		return fmt.Errorf("blob: merge: %w", err)
	}
	return nil
}

// Compatible reports whether src can merge into dst: nil if both were made
// from one template and still have its layout, else an error wrapping
// voi.ErrInvalid that names the first difference. It compares the template
// hashes, the sizes and offsets of the header, the voi[] and voistat[]
// tables (error counts and updated flags aside), every histogram's bucket
// bounds, the precision (control bits) of every t-digest's means and of
// every Q statistic. FromBytes checks that a blob is self-consistent, not
// that it is its template's: one flipped bit in a histogram bound gives a
// valid blob under the same template hash, which Compatible (and so Merge
// and MergeAll) refuses; CheckTemplate compares a blob with the template
// itself.
func Compatible(dst, src *Blob) error {
	if err := compatibleBlobs(dst, src); err != nil {
		return fmt.Errorf("blob: %w", err)
	}
	return nil
}

// CheckTemplate reports whether the blob is one template t makes: nil if
// it has t's hash and layout (as Compatible compares two blobs: tables,
// histogram bounds, precisions), else an error wrapping voi.ErrInvalid
// that names the first difference. FromBytes does not take a template (a
// blob needs one only for names); a collector that knows the sender's
// template calls CheckTemplate after FromBytes to refuse blobs that claim
// the template's hash without its layout.
func (bl *Blob) CheckTemplate(t *tpl.Template) error {
	if t == nil {
		return fmt.Errorf("blob: check of a nil template: %w", voi.ErrInvalid)
	}
	tb, hash := t.AppendBytes(nil)
	abi.PutU32(tb, abi.OffTplHash, hash) // a template's bytes carry no hash
	if err := compatible(tb, bl.b); err != nil {
		return fmt.Errorf("blob: not of template %q: %w", t.Name(), err)
	}
	return nil
}

// compatibleBlobs is compatible for two Blobs. Blobs that share a plan
// share their layout and histogram bounds (a plan is made from those
// bytes, or is their template's), so only what the plan does not fix is
// compared: the precisions of Q statistics and t-digests; where they
// differ, compatible says how.
func compatibleBlobs(d, s *Blob) error {
	if d.plan != s.plan || !samePrecisions(d.plan, d.b, s.b) {
		return compatible(d.b, s.b)
	}
	return nil
}

// samePrecisions reports whether the Q statistics and t-digests of two
// blobs of plan p have means of the same control bits (false where a
// t-digest has no slots: compatible refuses those).
func samePrecisions(p *plan, d, s []byte) bool {
	for i := range p.stats {
		sp := &p.stats[i]
		at := int(sp.dataOff)
		switch {
		case sp.stype == voi.TDgst:
			mo, _ := tdigest.MeanOffset(sp.dtype)
			if int(sp.dsz) <= mo {
				return false
			}
			at += mo // node 0's mean
		case sp.stype == voi.Hist || !sp.dtype.IsQ():
			continue
		}
		if d[at]&qCtrlMask != s[at]&qCtrlMask {
			return false
		}
	}
	return true
}

// compatible checks that blob s can merge into blob d (see Compatible).
func compatible(d, s []byte) error {
	if err := sameLayout(d, s); err != nil {
		return err
	}
	for off := abi.StatsOff(d); off < abi.StatsDataOff(d); off += abi.StatSize {
		st := abi.ReadStat(d, off)
		if st.SType < 0 || voi.SType(st.SType) == voi.StatVoiState {
			continue
		}
		dt := voi.DType(st.DType)
		dd := d[st.DataOff : int(st.DataOff)+int(st.DSz)]
		sd := s[st.DataOff : int(st.DataOff)+int(st.DSz)]
		var err error
		switch voi.SType(st.SType) {
		case voi.Hist:
			err = hist.Compatible(dd, sd, dt)
		case voi.TDgst:
			err = samePrecision(dd, sd, dt)
		default:
			if dt.IsQ() && dd[0]&qCtrlMask != sd[0]&qCtrlMask {
				err = fmt.Errorf("precisions of the Q values differ (control bits %d and %d): %w", dd[0]&qCtrlMask, sd[0]&qCtrlMask, voi.ErrInvalid)
			}
		}
		if err != nil {
			return fmt.Errorf("%s: %w", statName(d, off), err)
		}
	}
	return nil
}

// qCtrlMask selects the control bits (the precision) of a raw Q value.
const qCtrlMask = 7

// samePrecision checks that two digests' means have the same precision.
func samePrecision(d, s []byte, dt voi.DType) error {
	di, err1 := tdigest.ReadInfo(d, dt)
	si, err2 := tdigest.ReadInfo(s, dt)
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	if di.MaxNodes != si.MaxNodes || di.MaxNodes <= 0 {
		return fmt.Errorf("t-digests of %d and %d centroid slots: %w", di.MaxNodes, si.MaxNodes, voi.ErrInvalid)
	}
	dq, sq := tdigest.ReadCentroid(d, dt, 0).Mu, tdigest.ReadCentroid(s, dt, 0).Mu
	if dq.NFBits() != sq.NFBits() {
		return fmt.Errorf("t-digest means of %d and %d fractional bits: %w", dq.NFBits(), sq.NFBits(), voi.ErrInvalid)
	}
	return nil
}

// statName names the statistic whose voistat entry is at off in b: "VOI 3
// HIST".
func statName(b []byte, off int) string {
	for i := range abi.NVOIs(b) {
		v := abi.ReadVOI(b, abi.VOIAt(i))
		if so := int(v.StatsOff); v.ID >= 0 && off >= so && off <= so+abi.StatSize*int(v.MaxID) {
			return fmt.Sprintf("VOI %d %v", v.ID, voi.SType((off-so)/abi.StatSize))
		}
	}
	return fmt.Sprintf("voistat at %d", off)
}

// scratchPool holds the buffers atomic merges compute in.
var scratchPool = sync.Pool{New: func() any { return new([]byte) }}

// mergeAtomic merges src, compatible with dst, into a scratch copy of dst
// and commits the copy only if every statistic merged; on error dst is
// unchanged.
func (dst *Blob) mergeAtomic(src *Blob) error {
	return dst.atomically(func(scratch []byte) error {
		return dst.mergeInto(scratch, src.b, false, true)
	})
}

// mergeAtomicNoDigests is mergeAtomic for the statistics but t-digests
// (their error counts and flags merge; MergeAll merges their data at the
// end).
func (dst *Blob) mergeAtomicNoDigests(src *Blob) error {
	n := abi.CurSz(dst.b)
	sp := scratchPool.Get().(*[]byte)
	defer scratchPool.Put(sp)
	scratch := append((*sp)[:0], dst.b[:n]...)
	*sp = scratch
	if err := dst.mergeInto(scratch, src.b, false, false); err != nil {
		return err
	}
	dst.dropDigestCaches()
	off := abi.StatsOff(dst.b)
	copy(dst.b[off:n], scratch[off:n])
	return nil
}

// atomically runs merge on a scratch copy of dst's bytes and commits the
// copy if merge succeeds; on error dst is unchanged.
func (dst *Blob) atomically(merge func(scratch []byte) error) error {
	n := abi.CurSz(dst.b)
	sp := scratchPool.Get().(*[]byte)
	defer scratchPool.Put(sp)
	scratch := append((*sp)[:0], dst.b[:n]...)
	*sp = scratch
	if err := merge(scratch); err != nil {
		return err
	}
	dst.dropDigestCaches()
	off := abi.StatsOff(dst.b)
	copy(dst.b[off:n], scratch[off:n])
	return nil
}

// mergeCounting merges src, compatible with dst, into dst in place as
// updates do, t-digests excepted (see mergeDigests): a statistic that
// fails counts an error in its voistat, the others still merge, and the
// first error is returned. Sharded snapshots use it: their shards are
// parts of one blob, and an overflow in the whole must count as it would
// have in a single blob, not drop a shard.
func (dst *Blob) mergeCounting(src *Blob) error {
	return dst.mergeInto(dst.b, src.b, true, false)
}

// mergeInto merges the statistics of blob s into d, a blob with dst's
// layout (dst's bytes or a copy of them); the data of t-digests only with
// digests (their error counts and flags always). With count, a statistic
// that fails counts an error and the merge goes on; without, the first
// failure ends it.
func (dst *Blob) mergeInto(d, s []byte, count, digests bool) error {
	var first error
	p := dst.plan
	for id := range p.vois {
		vp := &p.vois[id]
		// The plan lists a VOI's statistics highest slot first; a walk
		// takes them lowest first (VOI state is not listed).
		for k := int(vp.n) - 1; k >= 0; k-- {
			sp := &p.stats[int(vp.first)+k]
			var err error
			end := int(sp.dataOff) + int(sp.dsz)
			switch {
			case count && (sp.stype == voi.Sum || sp.stype == voi.Max || sp.stype == voi.Min):
				// Counting merges saturate (see Overflow in the package
				// documentation).
				if foldNumeric(d[sp.dataOff:end], s[sp.dataOff:end], sp.stype, sp.dtype, sp.dtype, true) {
					err = fmt.Errorf("saturated: %w", voi.ErrOverflow)
				}
			case sp.stype != voi.TDgst || digests:
				known := trusted.NoSamples
				if sp.stype == voi.TDgst {
					known = knownSamples(d, int32(id))
				}
				err = mergeStat(d[sp.dataOff:end], s[sp.dataOff:end], sp.stype, sp.dtype, known)
			}
			if err != nil {
				err = fmt.Errorf("VOI %d %v (%v): %w", id, sp.stype, sp.dtype, err)
				if !count {
					return err
				}
			}
			se := d[sp.statOff : int(sp.statOff)+abi.StatSize]
			ss := s[sp.statOff : int(sp.statOff)+abi.StatSize]
			se[abi.StatOffFlags] |= ss[abi.StatOffFlags] & voi.StatValid
			errs := int(se[abi.StatOffErrs]) + int(ss[abi.StatOffErrs])
			if err != nil {
				errs++
				if first == nil {
					first = err
				}
			}
			se[abi.StatOffErrs] = uint8(min(errs, abi.MaxErrs))
		}
	}
	return first
}

// mergeDigestsOnce merges the t-digests of every blob in srcs, each
// compatible with dst, into d (dst's bytes or a copy of them): each
// statistic in one tdigest.MergeAll of all of them, so the result does not
// depend on the order of srcs. Error counts and flags are mergeInto's.
// With count, a digest whose merge fails (an overflow of its sample
// count) takes the sources one at a time instead, in the order given,
// each failure counting an error; without, the first failure ends it.
func (dst *Blob) mergeDigestsOnce(d []byte, srcs []*Blob, count bool) error {
	if len(srcs) == 0 || dst.plan.ndigests == 0 {
		return nil
	}
	var first error
	sds := make([][]byte, len(srcs))
	for id, sp := range dst.plan.digestStats() {
		end := int(sp.dataOff) + int(sp.dsz)
		dd := d[sp.dataOff:end]
		for i, s := range srcs {
			sds[i] = s.b[sp.dataOff:end]
		}
		// The blobs' digests are valid (see package trusted).
		known := knownSamples(d, int32(id))
		err := trusted.TDigestMergeAllIn(dd, sp.dtype, known, sds...)
		if err == nil {
			continue
		}
		err = fmt.Errorf("VOI %d %v (%v): %w", id, sp.stype, sp.dtype, err)
		if !count {
			return err
		}
		first = cmp.Or(first, err)
		se := d[sp.statOff : int(sp.statOff)+abi.StatSize]
		for _, sd := range sds {
			if trusted.TDigestMergeAllIn(dd, sp.dtype, known, sd) != nil {
				se[abi.StatOffErrs] = uint8(min(int(se[abi.StatOffErrs])+1, abi.MaxErrs))
			}
		}
	}
	return first
}

// mergeStat merges one statistic's data: the one place each kind of
// statistic merges. Its callers merge blobs found compatible (same
// layout, histogram bounds and precisions), whose digests are valid, so
// the lower packages skip those checks (package trusted). known is what
// the blob knows of a t-digest's samples (see knownSamples).
func mergeStat(dd, sd []byte, st voi.SType, dt voi.DType, known trusted.Samples) error {
	switch st {
	case voi.Sum, voi.Max, voi.Min:
		return mergeNumeric(dd, sd, st, dt)
	case voi.Hist:
		saturated, err := trusted.HistMerge(dd, sd, dt)
		if err == nil && saturated {
			err = fmt.Errorf("a counter saturated: %w", voi.ErrOverflow)
		}
		return err
	case voi.TDgst:
		return trusted.TDigestMergeAllIn(dd, dt, known, sd)
	}
	return nil
}

// knownSamples is what blob bytes b tell of the samples of VOI id's
// t-digest: whether they are integers, and their range, MIN and MAX, when
// the VOI keeps both, both were updated and neither counted an error (an
// update that failed for MIN may have left a sample below it; NaN
// otherwise), which a merge of digests keeps its centroids in (see
// tdigest.MergeAll). Merges of blobs merge MIN and MAX before the digests,
// so b's are those of all the merged blobs.
func knownSamples(b []byte, id int32) trusted.Samples {
	v := abi.ReadVOI(b, abi.VOIAt(int(id)))
	known := trusted.NoSamples
	known.Integer = v.DType.IsInt()
	if int(v.MaxID) < int(voi.Min) || int(v.MaxID) < int(voi.Max) {
		return known
	}
	mn, mx := statAt(b, id, v, int(voi.Min)), statAt(b, id, v, int(voi.Max))
	if mn.Type != voi.Min || !mn.Valid || mn.Errs != 0 || mx.Type != voi.Max || !mx.Valid || mx.Errs != 0 {
		return known
	}
	lo, err1 := mn.Value()
	hi, err2 := mx.Value()
	if err1 != nil || err2 != nil || !(lo <= hi) {
		return known
	}
	known.Lo, known.Hi = lo, hi
	return known
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

// InputError is MergeAll's report of an input it left out.
type InputError struct {
	Index int // the input's position among MergeAll's arguments
	// Like is, for an input that does not fit the merged ones, the index
	// of the merged input it was compared with (see Compatible); -1 for an
	// input whose merge failed.
	Like int
	Err  error // why: an incompatibility (voi.ErrInvalid) or the merge's error
}

// Error describes the input and the reason it was left out.
func (e *InputError) Error() string {
	if e.Like >= 0 {
		return fmt.Sprintf("blob: input %d not merged: unlike input %d (merged): %v", e.Index, e.Like, e.Err)
	}
	return fmt.Sprintf("blob: input %d not merged: %v", e.Index, e.Err)
}

// Unwrap returns the reason.
func (e *InputError) Unwrap() error { return e.Err }

// MergeAll merges blobs made from one template into a new blob, in a
// canonical order that does not depend on the order of the arguments: by
// creation time, then by bytes. The result is a clone of the first blob in
// that order (its header included) with env as its Env, into which the
// others are merged as Merge merges them, except that every t-digest
// merges the digests of all merged inputs in one step (tdigest.MergeAll),
// which is more accurate than merging them one by one; the inputs are not
// modified.
//
// Inputs that cannot be merged are left out and reported, never the good
// ones dropped: the inputs are grouped by Compatible, the largest group is
// merged (on a tie, the group of the canonically first blob), and every
// input of another group, and every input whose Merge failed (an
// overflow; the merge is all or nothing, so nothing of it is in the
// result), gives an *InputError naming its index and the reason. The error
// returned joins them (errors.Join) in index order; the result is
// returned with it. A nil input is left out with an *InputError (Like
// -1) wrapping voi.ErrInvalid. With no blobs but nil ones, the error wraps
// voi.ErrInvalid and the result is nil.
func MergeAll(env *Env, blobs ...*Blob) (*Blob, error) {
	var nils []*InputError
	order := make([]int, 0, len(blobs))
	for i, b := range blobs {
		if b == nil {
			nils = append(nils, &InputError{Index: i, Like: -1, Err: errNilBlob})
			continue
		}
		b.settle()
		order = append(order, i)
	}
	if len(order) == 0 {
		err := fmt.Errorf("blob: merge of no blobs: %w", voi.ErrInvalid)
		for _, e := range nils {
			err = errors.Join(err, e)
		}
		return nil, err
	}
	slices.SortStableFunc(order, func(i, j int) int {
		a, b := blobs[i], blobs[j]
		if c := cmp.Compare(abi.U64(a.b, abi.OffCreated), abi.U64(b.b, abi.OffCreated)); c != 0 {
			return c
		}
		return bytes.Compare(a.Bytes(), b.Bytes())
	})
	var groups [][]int // indices, in canonical order; each compatible with its first
	for _, i := range order {
		placed := false
		for g := range groups {
			if compatibleBlobs(blobs[groups[g][0]], blobs[i]) == nil {
				groups[g] = append(groups[g], i)
				placed = true
				break
			}
		}
		if !placed {
			groups = append(groups, []int{i})
		}
	}
	best := 0
	for g := range groups {
		if len(groups[g]) > len(groups[best]) {
			best = g
		}
	}
	merged := groups[best]
	var errs []*InputError
	for g := range groups {
		if g == best {
			continue
		}
		for _, i := range groups[g] {
			errs = append(errs, &InputError{Index: i, Like: merged[0], Err: compatible(blobs[merged[0]].b, blobs[i].b)})
		}
	}
	out, failed := mergeGroup(blobs, merged)
	out.env = env
	errs = append(errs, failed...)
	errs = append(errs, nils...)
	slices.SortFunc(errs, func(a, b *InputError) int { return cmp.Compare(a.Index, b.Index) })
	joined := make([]error, len(errs))
	for i, e := range errs {
		joined[i] = e
	}
	return out, errors.Join(joined...)
}

// mergeGroup merges the compatible blobs of the indices group (in that
// order) into a clone of the first: the statistics but t-digests input by
// input, all or nothing each, an input admitted only if the t-digests'
// sample counts still fit; then the t-digests of the admitted inputs in
// one step. Should that step fail (the counts fit but a centroid of a
// crafted digest would not), the group merges input by input instead, as
// Merge does.
func mergeGroup(blobs []*Blob, group []int) (*Blob, []*InputError) {
	out := blobs[group[0]].Clone()
	var errs []*InputError
	var admitted []*Blob
	totals := out.digestCounts(nil, nil)
	next := make([]uint64, 0, len(totals))
	for _, i := range group[1:] {
		src := blobs[i]
		next = src.digestCounts(totals, next)
		err := digestsFit(out, next)
		if err == nil {
			err = out.mergeAtomicNoDigests(src)
		}
		if err != nil {
			errs = append(errs, &InputError{Index: i, Like: -1, Err: err})
			continue
		}
		admitted = append(admitted, src)
		totals, next = next, totals
	}
	err := out.atomically(func(scratch []byte) error {
		return out.mergeDigestsOnce(scratch, admitted, false)
	})
	if err == nil {
		return out, errs
	}
	out, errs = blobs[group[0]].Clone(), nil
	for _, i := range group[1:] {
		if err := out.mergeAtomic(blobs[i]); err != nil {
			errs = append(errs, &InputError{Index: i, Like: -1, Err: err})
		}
	}
	return out, errs
}

// digestCounts returns the sample counts of the blob's t-digests added to
// base (in the blob's order of t-digests; nil base counts from zero), each
// saturating at 2^64-1.
func (bl *Blob) digestCounts(base, out []uint64) []uint64 {
	out = out[:0]
	for _, sp := range bl.plan.digestStats() {
		// A blob's digests are valid (decoded ones were validated,
		// updates and merges keep them so), so their smplcnt is the
		// sum of their counts (tdigest.Count).
		info, _ := tdigest.ReadInfo(bl.b[sp.dataOff:int(sp.dataOff)+int(sp.dsz)], sp.dtype)
		n := info.SmplCnt
		if len(base) > len(out) {
			var carry uint64
			if n, carry = bits.Add64(n, base[len(out)], 0); carry != 0 {
				n = math.MaxUint64
			}
		}
		out = append(out, n)
	}
	return out
}

// digestsFit checks that the t-digests of bl can hold the sample counts
// (in the blob's order of t-digests).
func digestsFit(bl *Blob, counts []uint64) error {
	for id, sp := range bl.plan.digestStats() {
		limit := uint64(math.MaxUint32)
		if sp.dtype == voi.TDgstClust64 {
			limit = math.MaxUint64 - 1 // a saturated sum may have wrapped
		}
		if counts[sp.digest] > limit {
			return fmt.Errorf("VOI %d %v (%v): more than %d samples: %w", id, sp.stype, sp.dtype, limit, voi.ErrOverflow)
		}
	}
	return nil
}
