package sample

import (
	"fmt"
	"sync/atomic"

	"github.com/statsblob/statsblob/bsdrand"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// Table is a subsystem's current list of template sample rates, the Go
// counterpart of the list a FreeBSD subsystem keeps behind its
// sample-rates sysctl and rolls against for every new flow.
//
// Readers (Rates, the Roll methods, String) load an immutable snapshot
// with one atomic load: they never block and never see a half-built list.
// Writers (Set, Swap, UnmarshalText) build a complete new list and publish
// it with one atomic store; concurrent writers do not interfere, the last
// store wins. All methods are safe for concurrent use.
//
// The zero value is an empty table bound to no registry (it resolves no
// template, so it stays empty); NewTable binds one (tpl.Default for the
// process-wide registry). A Table must not be copied after first
// use. *Table implements flag.Value (String, Set) and
// encoding.TextMarshaler / TextUnmarshaler / TextAppender.
type Table struct {
	reg   *tpl.Registry          // nil: none
	rates atomic.Pointer[[]Rate] // never modified once stored; nil: empty
}

// NewTable returns an empty table that resolves templates in reg.
func NewTable(reg *tpl.Registry) *Table { return &Table{reg: reg} }

// Registry returns the registry the table's slot ids refer to (nil for
// the zero Table).
func (t *Table) Registry() *tpl.Registry { return t.reg }

// Rates returns the current list, nil when empty. The slice is shared with
// every other reader and stays unchanged however long it is held (a later
// Set installs a new slice): the caller must not modify its elements.
func (t *Table) Rates() []Rate {
	if p := t.rates.Load(); p != nil {
		return *p
	}
	return nil
}

// Set replaces the list with the one text describes, as writing the
// sysctl does; see Parse for the syntax and the errors. On error the table
// is unchanged. Empty text empties the table.
func (t *Table) Set(text string) error {
	rates, err := Parse(t.Registry(), text)
	if err != nil {
		return err
	}
	t.store(rates)
	return nil
}

// Swap replaces the list with a copy of rates and returns the previous
// list (TPL_SR_PUT). Every TplID must be a template of the table's
// registry (else an error wrapping voi.ErrNotFound) and the percentages
// must add up to at most 100 (else voi.ErrInvalid); on error the table is
// unchanged.
func (t *Table) Swap(rates []Rate) ([]Rate, error) {
	n := t.Registry().Len() // templates are never removed: ids below n stay valid
	var cum uint64
	for i, r := range rates {
		if r.TplID < 0 || int(r.TplID) >= n {
			return nil, fmt.Errorf("sample: rate %d: no template with id %d: %w", i, r.TplID, voi.ErrNotFound)
		}
		if cum += uint64(r.Pct); cum > maxPct {
			return nil, fmt.Errorf("sample: rate %d: cumulative percentage %d exceeds %d: %w", i, cum, maxPct, voi.ErrInvalid)
		}
	}
	var cp []Rate
	if len(rates) > 0 {
		cp = append([]Rate(nil), rates...)
	}
	return t.store(cp), nil
}

// store publishes rates, which nobody else holds, and returns the old list.
func (t *Table) store(rates []Rate) []Rate {
	rates = rates[:len(rates):len(rates)] // a reader's append must copy
	if old := t.rates.Swap(&rates); old != nil {
		return *old
	}
	return nil
}

// AppendText appends the list to dst as reading the sysctl prints it:
// `"NAME":HASH=PCT` joined by commas, with each template's current name
// and hash; nothing for an empty table. It does not allocate when dst has
// room.
func (t *Table) AppendText(dst []byte) ([]byte, error) {
	return AppendRates(dst, t.Registry(), t.Rates())
}

// MarshalText returns the list as AppendText prints it.
func (t *Table) MarshalText() ([]byte, error) { return t.AppendText(nil) }

// UnmarshalText replaces the list with the one text describes (see Set).
func (t *Table) UnmarshalText(text []byte) error { return t.Set(string(text)) }

// String returns the list as AppendText prints it ("" for an empty table).
func (t *Table) String() string {
	// Cannot fail: stored ids were checked against the registry, and
	// templates are never removed from it.
	b, _ := t.AppendText(nil)
	return string(b)
}

// Roll chooses a template for a flow identified by seed (for example its
// address/port 4-tuple): the same seed always gives the same choice for a
// given list. It returns the slot id or -1 (do not sample), exactly as
// Roll(t.Rates(), seed, nil) would, without locking or allocating. A nil
// seed means no seed, as in the C: Roll(nil) is RollRandom().
//
// Like tcp_stats_sample_rollthedice, an empty table returns -1 without
// rolling.
func (t *Table) Roll(seed []byte) int32 {
	if seed == nil {
		return t.RollRandom()
	}
	p := t.rates.Load()
	if p == nil || len(*p) == 0 {
		return -1
	}
	return Pick(*p, Percent(seed))
}

// RollRandom is the unseeded roll for the hot path: it picks from the
// current list with FastPercent (math/rand/v2's generator, safe for
// concurrent use; the C's distribution but not random(3)'s sequence). It
// never blocks and does not allocate; an empty table returns -1.
func (t *Table) RollRandom() int32 {
	p := t.rates.Load()
	if p == nil || len(*p) == 0 {
		return -1
	}
	return Pick(*p, FastPercent())
}

// RollFrom is the unseeded roll with the C's generator: one draw from src
// (RollPercent), as Roll(t.Rates(), nil, src) does, except that an empty
// table returns -1 without drawing, as tcp_stats_sample_rollthedice does.
// A bsdrand.Source is not safe for concurrent use: the caller serialises
// access to src, not to the table.
func (t *Table) RollFrom(src *bsdrand.Source) int32 {
	p := t.rates.Load()
	if p == nil || len(*p) == 0 {
		return -1
	}
	return Pick(*p, RollPercent(src))
}
