package blob

import (
	"encoding/binary"

	"github.com/statsblob/statsblob/hist"
	"github.com/statsblob/statsblob/internal/abi"
	"github.com/statsblob/statsblob/tdigest"
	"github.com/statsblob/statsblob/voi"
)

// Clone returns an independent copy of the blob in a buffer of exactly its
// size (stats_blob_clone with SB_CLONE_ALLOCDST: the copy's maxsz is the
// source's cursz). The copy has an Env of its own: bl's clock, and a copy
// of bl's random source at its current position (or, if bl has no Env
// yet, the defaults). So the copy can be merged into or updated on one
// goroutine while bl is updated on another; a caller that wants the two to
// share one source (as the C's global random() is shared) sets it with
// SetEnv.
func (bl *Blob) Clone() *Blob {
	bl.settle()
	n := abi.CurSz(bl.b)
	c := newBlob(bl.b[:n], bl.plan, bl.env)
	binary.LittleEndian.PutUint16(c.b[abi.OffMaxSz:], uint16(n))
	c.copyModes(bl)
	return c
}

// cloneEnv returns a copy of env with a copy of its random source (nil for
// nil). The clock function is shared: clocks must be safe for concurrent
// use, as WallClock is.
func cloneEnv(env *Env) *Env {
	if env == nil {
		return nil
	}
	c := *env
	if env.Rand != nil {
		r := *env.Rand
		c.Rand = &r
	}
	return &c
}

// copyInto copies src[:n] to dst except the maxsz field (one copy, then
// the destination's maxsz put back: cheaper than two copies around it).
func copyInto(dst, src []byte, n int) {
	maxsz := binary.LittleEndian.Uint16(dst[abi.OffMaxSz:])
	copy(dst[:n], src[:n])
	binary.LittleEndian.PutUint16(dst[abi.OffMaxSz:], maxsz)
}

// Snapshot returns a clone of the blob (see Clone: it has an Env of its
// own) and, if reset is true, then resets the blob (stats_blob_snapshot with SB_CLONE_ALLOCDST and
// optionally SB_CLONE_RSTSRC).
func (bl *Blob) Snapshot(reset bool) *Blob {
	c := bl.Clone()
	if reset {
		bl.Reset()
	}
	return c
}

// Reset returns every statistic to its initial state and sets lastrst to
// now, as the C's reset does: SUM to 0, MAX/MIN to the data type's
// extremes (Q values keep their control bits), histogram counts and oob to
// 0, t-digests emptied; errs and the updated flag cleared. VOI state
// (previous values for relative updates) is kept.
func (bl *Blob) Reset() {
	bl.dropDigestCaches()
	b := bl.b
	for i := range bl.plan.stats { // every statistic but the VOI states
		sp := &bl.plan.stats[i]
		d := b[sp.dataOff : int(sp.dataOff)+int(sp.dsz)]
		switch sp.stype {
		case voi.Sum, voi.Max, voi.Min:
			resetNumeric(d, sp.stype, sp.dtype)
		case voi.Hist:
			hist.Reset(d, sp.dtype)
		case voi.TDgst:
			tdigest.Reset(d, sp.dtype)
		}
		off := int(sp.statOff)
		b[off+abi.StatOffErrs] = 0
		b[off+abi.StatOffFlags] &^= voi.StatValid
	}
	binary.LittleEndian.PutUint64(b[abi.OffLastRst:], uint64(bl.now()))
}

// resetNumeric writes a numeric statistic's initial value (voi.Initial);
// Q values keep their control bits.
func resetNumeric(d []byte, st voi.SType, dt voi.DType) {
	if len(d) == 4 {
		binary.LittleEndian.PutUint32(d, uint32(voi.Initial(st, dt, uint64(d[0]))))
		return
	}
	binary.LittleEndian.PutUint64(d, voi.Initial(st, dt, uint64(d[0])))
}
