package blob

// The C-shaped layer: the calls that take the C's buffers, sizes and untyped
// values, for the conformance runner and for readers who know FreeBSD's
// stats(3). The Go API beside them (New, FromBytes, Clone, Snapshot, the
// typed updates) does the same with Go values; prefer it.

import (
	"fmt"

	"github.com/statsblob/statsblob/internal/abi"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// Init (C-shaped layer: New is the Go form) initialises buf with template t
// (stats_blob_init) and returns a Blob using buf as its storage. As in the
// C, the buffer's size is the maxsz field already in buf's header, and the
// template's bytes are copied including the template's own maxsz. Errors:
// voi.ErrInvalid if buf is shorter than its header claims or than the header
// itself; voi.ErrOverflow if the template does not fit (buf is left
// unchanged).
func Init(buf []byte, t *tpl.Template, env *Env) (*Blob, error) {
	if len(buf) < abi.HeaderSize {
		return nil, fmt.Errorf("blob: init: buffer of %d bytes: %w", len(buf), voi.ErrInvalid)
	}
	maxsz := abi.MaxSz(buf)
	if maxsz > len(buf) {
		return nil, fmt.Errorf("blob: init: header maxsz %d exceeds buffer of %d bytes: %w", maxsz, len(buf), voi.ErrInvalid)
	}
	tb, hash, pl := templateBytes(t)
	if maxsz < len(tb) {
		return nil, fmt.Errorf("blob: init: template needs %d bytes, maxsz is %d: %w", len(tb), maxsz, voi.ErrOverflow)
	}
	copy(buf, tb)
	bl := &Blob{b: buf, plan: pl, env: env}
	bl.stamp(hash)
	bl.setModes(digestModes(t, pl))
	return bl, nil
}

// Wrap (C-shaped layer: FromBytes copies) validates the blob at the start of
// buf (len(buf) may exceed cursz) and returns a Blob that uses buf as its
// storage, without copying. The caller must not modify buf while the Blob is
// in use, nor update it through another Blob: a Blob keeps state derived
// from its bytes (the update plan, the t-digests' mean order).
func Wrap(buf []byte, env *Env) (*Blob, error) {
	if err := Validate(buf); err != nil {
		return nil, err
	}
	return &Blob{b: buf, plan: newPlan(buf), env: env}, nil
}

// CloneInto (C-shaped layer: Clone is the Go form) copies the blob into dst,
// whose size for the copy is dstMaxSz bytes (stats_blob_clone without
// ALLOCDST): everything but dst's maxsz field is copied. It returns
// voi.ErrInvalid (dst untouched) when dstMaxSz is under 8 or exceeds
// len(dst), and voi.ErrOverflow when the blob does not fit, in which case,
// as in the C, only the first 4 bytes and the cursz field are copied so the
// caller can learn the size needed.
func (bl *Blob) CloneInto(dst []byte, dstMaxSz int) error {
	if dstMaxSz < abi.MinBlobSz || dstMaxSz > len(dst) {
		return fmt.Errorf("blob: clone into %d of %d bytes: %w", dstMaxSz, len(dst), voi.ErrInvalid)
	}
	bl.settle()
	n := abi.CurSz(bl.b)
	if dstMaxSz < n {
		copy(dst[:abi.OffMaxSz], bl.b)
		copy(dst[abi.OffCurSz:abi.MinBlobSz], bl.b[abi.OffCurSz:])
		return fmt.Errorf("blob: clone of %d bytes into %d: %w", n, dstMaxSz, voi.ErrOverflow)
	}
	copyInto(dst, bl.b, n)
	return nil
}

// SnapshotInto (C-shaped layer: Snapshot is the Go form) is CloneInto
// followed, on success and if reset is true, by Reset of the source
// (stats_blob_snapshot into a caller's buffer).
func (bl *Blob) SnapshotInto(dst []byte, dstMaxSz int, reset bool) error {
	if err := bl.CloneInto(dst, dstMaxSz); err != nil {
		return err
	}
	if reset {
		bl.Reset()
	}
	return nil
}

// Update (C-shaped layer: the typed Update methods are the Go form) updates
// VOI id with a value of data type dt given as its bit pattern (the low 32
// bits for 32-bit types), absolutely or relatively. It is the untyped form
// of the typed methods; a dt other than the VOI's gives voi.ErrInvalid.
func (bl *Blob) Update(id int32, dt voi.DType, bits uint64, rel bool) error {
	switch {
	case dt == voi.IntS32 && rel:
		return bl.UpdateRelS32(id, int32(bits))
	case dt == voi.IntS32:
		return bl.UpdateS32(id, int32(bits))
	case dt == voi.IntU32 && rel:
		return bl.UpdateRelU32(id, uint32(bits))
	case dt == voi.IntU32:
		return bl.UpdateU32(id, uint32(bits))
	case dt == voi.IntS64 && rel:
		return bl.UpdateRelS64(id, int64(bits))
	case dt == voi.IntS64:
		return bl.UpdateS64(id, int64(bits))
	case dt == voi.IntU64 && rel:
		return bl.UpdateRelU64(id, bits)
	case dt == voi.IntU64:
		return bl.UpdateU64(id, bits)
	case dt == voi.IntSLong && rel:
		return bl.UpdateRelSLong(id, int64(bits))
	case dt == voi.IntSLong:
		return bl.UpdateSLong(id, int64(bits))
	case dt == voi.IntULong && rel:
		return bl.UpdateRelULong(id, bits)
	case dt == voi.IntULong:
		return bl.UpdateULong(id, bits)
	case dt.IsQ():
		return updateQ(bl, id, dt, voi.AsQ(dt, bits), rel)
	}
	return bl.voiError(id, dt, rel)
}
