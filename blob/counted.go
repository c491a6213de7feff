package blob

import (
	"errors"
	"fmt"

	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// Counted is a handle of a VOI whose updates are counted in a companion
// VOI: an INT_U64 VOI keeping a SUM, which each update adds one to, named
// by the VOI's metadata (tpl.VOIMeta.Count). So a VOI with a SUM reports
// a count and a mean, as a Linux statistic of type range does, with
// nothing the C cannot build: the count is an ordinary SUM in the blob.
// The update of a VOI without a companion pays nothing for it.
//
// An update the VOI refuses (a *VOIError) is not counted; one that a
// statistic counts as an error (a t-digest that cannot place the value)
// is, as the VOI's SUM took it. While the VOI is off (Control) neither
// changes.
type Counted struct{ id, count int32 }

// CountedOf returns the handle of VOI id of t. Errors: voi.ErrNotFound
// for no such VOI or one without a declared count; voi.ErrTypeMismatch
// for a count VOI that is not INT_U64.
func CountedOf(t *tpl.Template, id int32) (Counted, error) {
	m, _ := t.VOIMeta(id)
	if m.Count == "" {
		return Counted{}, fmt.Errorf("blob: counted handle of VOI %d of %s: no count declared: %w", id, t.Spec(), voi.ErrNotFound)
	}
	for _, d := range t.VOIs() {
		if d.Name == m.Count {
			if d.DType != voi.IntU64 {
				return Counted{}, fmt.Errorf("blob: counted handle of VOI %d of %s: count VOI %q is %v, not INT_U64: %w", id, t.Spec(), d.Name, d.DType, voi.ErrTypeMismatch)
			}
			return Counted{id: id, count: d.ID}, nil
		}
	}
	return Counted{}, fmt.Errorf("blob: counted handle of VOI %d of %s: no count VOI %q: %w", id, t.Spec(), m.Count, voi.ErrNotFound)
}

// ID returns the VOI's id; CountID its companion's.
func (h Counted) ID() int32 { return h.id }

// CountID returns the id of the VOI that counts the updates.
func (h Counted) CountID() int32 { return h.count }

// counted adds one to the companion after the update's outcome err.
func (h Counted) counted(b *Blob, err error) error {
	if err != nil {
		if ve := (*VOIError)(nil); errors.As(err, &ve) {
			return err
		}
	}
	if c := b.ctl; c != nil && c.skip(uint(h.id)) {
		return err
	}
	if cerr := b.UpdateU64(h.count, 1); cerr != nil {
		return cerr
	}
	return err
}

// UpdateU32 updates an INT_U32 VOI with v and counts it.
func (h Counted) UpdateU32(b *Blob, v uint32) error { return h.counted(b, b.UpdateU32(h.id, v)) }

// UpdateU64 updates an INT_U64 VOI with v and counts it.
func (h Counted) UpdateU64(b *Blob, v uint64) error { return h.counted(b, b.UpdateU64(h.id, v)) }

// UpdateS32 updates an INT_S32 VOI with v and counts it.
func (h Counted) UpdateS32(b *Blob, v int32) error { return h.counted(b, b.UpdateS32(h.id, v)) }

// UpdateS64 updates an INT_S64 VOI with v and counts it.
func (h Counted) UpdateS64(b *Blob, v int64) error { return h.counted(b, b.UpdateS64(h.id, v)) }

// Update updates the VOI with a value of its data type dt given as its bit
// pattern, as Blob.Update does (absolutely), and counts it.
func (h Counted) Update(b *Blob, dt voi.DType, bits uint64) error {
	return h.counted(b, b.Update(h.id, dt, bits, false))
}

// UpdateFloat updates a Q VOI with x, as Blob.UpdateFloat does, and counts
// it.
func (h Counted) UpdateFloat(b *Blob, x float64) error { return h.counted(b, b.UpdateFloat(h.id, x)) }
