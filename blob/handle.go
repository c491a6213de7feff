package blob

import (
	"fmt"

	"github.com/statsblob/statsblob/qmath"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// Typed VOI handles carry a VOI's data type in their Go type, so that an
// update with a value of another type does not compile: where
// b.UpdateU64(rttID, v) on an INT_U32 VOI fails at run time,
// rtt.Update(b, v) with rtt a U32 takes only a uint32. Get a handle from
// the template with its type checked once (U32Of(t, id)); its methods are
// the typed update methods, inlined: they cost nothing on the hot path
// (BenchmarkHandleUpdate).

// Updater is what a typed handle's Update updates: a *Blob or a *Sharded
// (no other type implements it). Update is inlined at the call site, where
// the compiler sees the concrete type and calls its method directly (no
// interface call: BenchmarkHandleUpdate measures it against the method).
type Updater interface {
	UpdateS32(id int32, v int32) error
	UpdateU32(id int32, v uint32) error
	UpdateS64(id int32, v int64) error
	UpdateU64(id int32, v uint64) error
	UpdateSLong(id int32, v int64) error
	UpdateULong(id int32, v uint64) error
	UpdateFloat(id int32, x float64) error
	UpdateQ(id int32, q qmath.Q) error
	updater()
}

func (*Blob) updater() {}

// voiOf returns VOI id of t if its data type is dt.
func voiOf(t *tpl.Template, id int32, dt voi.DType) error {
	if t == nil {
		return fmt.Errorf("blob: handle of VOI %d of a nil template: %w", id, voi.ErrInvalid)
	}
	for _, d := range t.VOIs() {
		if d.ID == id {
			if d.DType != dt {
				return fmt.Errorf("blob: handle of VOI %d of %s: the VOI is %v, the handle %v: %w", id, t.Spec(), d.DType, dt, voi.ErrTypeMismatch)
			}
			return nil
		}
	}
	return fmt.Errorf("blob: handle of VOI %d of %s: no such VOI: %w", id, t.Spec(), voi.ErrNotFound)
}

// S32 is a handle of an INT_S32 VOI.
type S32 struct{ id int32 }

// S32Of returns the handle of VOI id of t; an error wrapping
// voi.ErrNotFound if t has no such VOI, voi.ErrTypeMismatch if it is not
// INT_S32.
func S32Of(t *tpl.Template, id int32) (S32, error) { return S32{id}, voiOf(t, id, voi.IntS32) }

// ID returns the VOI's id.
func (h S32) ID() int32 { return h.id }

// Update is b.UpdateS32(h.ID(), v), b a *Blob or a *Sharded.
func (h S32) Update(b Updater, v int32) error { return b.UpdateS32(h.id, v) }

// UpdateRel is b.UpdateRelS32(h.ID(), v).
func (h S32) UpdateRel(b *Blob, v int32) error { return b.UpdateRelS32(h.id, v) }

// U32 is a handle of an INT_U32 VOI.
type U32 struct{ id int32 }

// U32Of returns the handle of VOI id of t; an error wrapping
// voi.ErrNotFound if t has no such VOI, voi.ErrTypeMismatch if it is not
// INT_U32.
func U32Of(t *tpl.Template, id int32) (U32, error) { return U32{id}, voiOf(t, id, voi.IntU32) }

// ID returns the VOI's id.
func (h U32) ID() int32 { return h.id }

// Update is b.UpdateU32(h.ID(), v), b a *Blob or a *Sharded.
func (h U32) Update(b Updater, v uint32) error { return b.UpdateU32(h.id, v) }

// UpdateRel is b.UpdateRelU32(h.ID(), v).
func (h U32) UpdateRel(b *Blob, v uint32) error { return b.UpdateRelU32(h.id, v) }

// S64 is a handle of an INT_S64 VOI.
type S64 struct{ id int32 }

// S64Of returns the handle of VOI id of t; an error wrapping
// voi.ErrNotFound if t has no such VOI, voi.ErrTypeMismatch if it is not
// INT_S64.
func S64Of(t *tpl.Template, id int32) (S64, error) { return S64{id}, voiOf(t, id, voi.IntS64) }

// ID returns the VOI's id.
func (h S64) ID() int32 { return h.id }

// Update is b.UpdateS64(h.ID(), v), b a *Blob or a *Sharded.
func (h S64) Update(b Updater, v int64) error { return b.UpdateS64(h.id, v) }

// UpdateRel is b.UpdateRelS64(h.ID(), v).
func (h S64) UpdateRel(b *Blob, v int64) error { return b.UpdateRelS64(h.id, v) }

// U64 is a handle of an INT_U64 VOI.
type U64 struct{ id int32 }

// U64Of returns the handle of VOI id of t; an error wrapping
// voi.ErrNotFound if t has no such VOI, voi.ErrTypeMismatch if it is not
// INT_U64.
func U64Of(t *tpl.Template, id int32) (U64, error) { return U64{id}, voiOf(t, id, voi.IntU64) }

// ID returns the VOI's id.
func (h U64) ID() int32 { return h.id }

// Update is b.UpdateU64(h.ID(), v), b a *Blob or a *Sharded.
func (h U64) Update(b Updater, v uint64) error { return b.UpdateU64(h.id, v) }

// UpdateRel is b.UpdateRelU64(h.ID(), v).
func (h U64) UpdateRel(b *Blob, v uint64) error { return b.UpdateRelU64(h.id, v) }

// SLong is a handle of an INT_SLONG VOI.
type SLong struct{ id int32 }

// SLongOf returns the handle of VOI id of t; an error wrapping
// voi.ErrNotFound if t has no such VOI, voi.ErrTypeMismatch if it is not
// INT_SLONG.
func SLongOf(t *tpl.Template, id int32) (SLong, error) { return SLong{id}, voiOf(t, id, voi.IntSLong) }

// ID returns the VOI's id.
func (h SLong) ID() int32 { return h.id }

// Update is b.UpdateSLong(h.ID(), v), b a *Blob or a *Sharded.
func (h SLong) Update(b Updater, v int64) error { return b.UpdateSLong(h.id, v) }

// UpdateRel is b.UpdateRelSLong(h.ID(), v).
func (h SLong) UpdateRel(b *Blob, v int64) error { return b.UpdateRelSLong(h.id, v) }

// ULong is a handle of an INT_ULONG VOI.
type ULong struct{ id int32 }

// ULongOf returns the handle of VOI id of t; an error wrapping
// voi.ErrNotFound if t has no such VOI, voi.ErrTypeMismatch if it is not
// INT_ULONG.
func ULongOf(t *tpl.Template, id int32) (ULong, error) { return ULong{id}, voiOf(t, id, voi.IntULong) }

// ID returns the VOI's id.
func (h ULong) ID() int32 { return h.id }

// Update is b.UpdateULong(h.ID(), v), b a *Blob or a *Sharded.
func (h ULong) Update(b Updater, v uint64) error { return b.UpdateULong(h.id, v) }

// UpdateRel is b.UpdateRelULong(h.ID(), v).
func (h ULong) UpdateRel(b *Blob, v uint64) error { return b.UpdateRelULong(h.id, v) }

// Q is a handle of a Q VOI (voi.QS32 .. voi.QU64).
type Q struct {
	id int32
	dt voi.DType
}

// QOf returns the handle of Q VOI id of t; an error wrapping
// voi.ErrNotFound if t has no such VOI, voi.ErrTypeMismatch if it is not
// of a Q type.
func QOf(t *tpl.Template, id int32) (Q, error) {
	for _, d := range t.VOIs() {
		if d.ID == id {
			if !d.DType.IsQ() {
				return Q{}, fmt.Errorf("blob: handle of VOI %d of %s: the VOI is %v, not a Q type: %w", id, t.Spec(), d.DType, voi.ErrTypeMismatch)
			}
			return Q{id, d.DType}, nil
		}
	}
	return Q{}, fmt.Errorf("blob: handle of VOI %d of %s: no such VOI: %w", id, t.Spec(), voi.ErrNotFound)
}

// ID returns the VOI's id.
func (h Q) ID() int32 { return h.id }

// Update is b.UpdateFloat(h.ID(), x), b a *Blob or a *Sharded.
func (h Q) Update(b Updater, x float64) error { return b.UpdateFloat(h.id, x) }

// UpdateQ is b.UpdateQ(h.ID(), q), b a *Blob or a *Sharded.
func (h Q) UpdateQ(b Updater, q qmath.Q) error { return b.UpdateQ(h.id, q) }
