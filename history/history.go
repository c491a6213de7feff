// Package history keeps the recent past of a statistic in process, as the
// history and raw types of Linux's statistics infrastructure do: a Ring holds
// the last N per-period snapshots of a blob (each period's own results, as a
// collector's closed windows hold them), queryable per period for count,
// minimum, average, maximum and quantiles; a Raw holds the last N timestamped
// samples of one VOI, counting those it had to drop.
package history

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
	"math"
	"sync"
	"time"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/hist"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// ErrInvalid is wrapped by the errors of NewRing and NewRaw for bad
// settings, and of Ring.Rotate for a time before the open period.
var ErrInvalid = voi.ErrInvalid

// SnapshotFunc returns the statistics of the period that ends now and
// starts the next one: a snapshot taken with reset, such as
// blob.Blob.Snapshot(true) (called under the caller's own lock if the blob
// is shared), blob.Sharded.Snapshot(true) or devstat.Device.Snapshot(true).
type SnapshotFunc func() (*blob.Blob, error)

// Period is one closed period of a Ring: the snapshot of its statistics
// and when it started and ended.
type Period struct {
	Start, End time.Time
	Blob       *blob.Blob
}

// Ring keeps the last Entries closed periods of a blob (Linux's history
// type with its entries_max and period). It is safe for concurrent use.
type Ring struct {
	snap   SnapshotFunc
	period time.Duration

	mu      sync.Mutex
	ring    []Period // entries in order of closing, ring[next-1] the newest
	next    int
	n       int
	started time.Time // when the open period started
	failed  uint64
}

// NewRing returns a ring of the last entries periods of the statistics
// that snap returns, the first period starting at start. period is how
// often Run closes one (it may be 0 for a ring closed only by Rotate).
// entries < 1 or a nil snap give an error wrapping ErrInvalid.
func NewRing(snap SnapshotFunc, period time.Duration, entries int, start time.Time) (*Ring, error) {
	if snap == nil || entries < 1 || period < 0 {
		return nil, fmt.Errorf("history: need a snapshot function, entries >= 1 and period >= 0 (have %d, %v): %w", entries, period, ErrInvalid)
	}
	return &Ring{snap: snap, period: period, ring: make([]Period, entries), started: start}, nil
}

// Rotate closes the open period at now: the snapshot becomes the newest
// entry (the oldest leaves when the ring is full) and the next period
// starts at now. A failed snapshot, or a now before the open period's
// start (an error wrapping ErrInvalid), closes no period (its samples stay
// in the blob for the next one); the error is returned and counted in
// Failed.
func (r *Ring) Rotate(now time.Time) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if now.Before(r.started) {
		r.failed++
		return fmt.Errorf("history: rotation at %v, before the open period's start %v: %w", now, r.started, ErrInvalid)
	}
	b, err := r.snap()
	if err != nil {
		r.failed++
		return fmt.Errorf("history: snapshot: %w", err)
	}
	r.ring[r.next] = Period{Start: r.started, End: now, Blob: b}
	r.next = (r.next + 1) % len(r.ring)
	r.n = min(r.n+1, len(r.ring))
	r.started = now
	return nil
}

// Run closes a period every period until ctx is done; clock returns the
// time to stamp it with (nil: time.Now).
func (r *Ring) Run(ctx context.Context, clock func() time.Time) {
	if r.period <= 0 {
		return
	}
	if clock == nil {
		clock = time.Now
	}
	tk := time.NewTicker(r.period)
	defer tk.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tk.C:
			_ = r.Rotate(clock()) // counted in Failed
		}
	}
}

// Len returns the number of closed periods held.
func (r *Ring) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

// Failed returns how many rotations failed (see Rotate).
func (r *Ring) Failed() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failed
}

// At returns a closed period by age: -1 is the newest, -2 the one before,
// down to -Len() (a collector's &window=-1, -2, ...). ok is false past them.
// The period's blob is shared: read it, do not update it.
func (r *Ring) At(age int) (p Period, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if age >= 0 || age < -r.n { // not -age > r.n: -math.MinInt is math.MinInt
		return Period{}, false
	}
	return r.ring[(r.next+age+len(r.ring))%len(r.ring)], true
}

// All yields the closed periods from the oldest to the newest.
func (r *Ring) All() iter.Seq[Period] {
	return func(yield func(Period) bool) {
		r.mu.Lock()
		ps := make([]Period, 0, r.n)
		for i := r.n; i >= 1; i-- {
			ps = append(ps, r.ring[(r.next-i+len(r.ring))%len(r.ring)])
		}
		r.mu.Unlock()
		for _, p := range ps {
			if !yield(p) {
				return
			}
		}
	}
}

// Summary is one VOI's results over a period, as Linux's range type reports
// them (number, minimum, average, maximum), with quantiles beside them,
// in the VOI's own units. A field the VOI's statistics cannot give is NaN:
// Min and Max without a MIN or MAX statistic, Avg without a SUM or a
// count, quantiles without a t-digest or histogram. Count comes from the
// VOI's declared count (SummarizeWith), or else the t-digest, or else the
// histogram (its buckets and its out-of-band counter: every sample, as the
// SUM has them); 0 without any.
type Summary struct {
	Count         uint64
	Min, Avg, Max float64
	P50, P90, P99 float64
}

// Summarize returns the VOI's summary in blob b (a period's snapshot).
// A VOI the blob does not have gives an error wrapping voi.ErrNotFound.
// Without the template it cannot know a count the metadata declares: a
// VOI that keeps only SUM, MIN and MAX, its updates counted in another
// VOI (blob.CountedOf), has Count 0 and Avg NaN here; use SummarizeWith.
func Summarize(b *blob.Blob, id int32) (Summary, error) {
	return summarize(b, id, nil)
}

// SummarizeWith is Summarize with blob b's template t, whose metadata may
// declare a count for the VOI (tpl.VOIMeta.Count, the companion VOI
// blob.Counted adds one to with each update): then Count is that VOI's
// SUM in b, which counts every update the VOI's SUM took, and Avg is the
// SUM over it. Without a declared count it is Summarize. Errors: a nil
// template or a blob of another template wrap voi.ErrInvalid, a VOI or
// count VOI the blob does not have voi.ErrNotFound, a count VOI whose SUM
// is not of an unsigned integer type voi.ErrTypeMismatch.
func SummarizeWith(t *tpl.Template, b *blob.Blob, id int32) (Summary, error) {
	if t == nil || b == nil {
		return Summary{}, fmt.Errorf("history: no template or no blob: %w", voi.ErrInvalid)
	}
	if b.TplHash() != t.Hash() {
		return Summary{}, fmt.Errorf("history: blob of template hash %d summarized with %s: %w", b.TplHash(), t.Spec(), voi.ErrInvalid)
	}
	m, _ := t.VOIMeta(id)
	if m.Count == "" {
		return summarize(b, id, nil)
	}
	c, ok := t.VOI(m.Count) // the first VOI of that name, as blob.CountedOf counts in
	if !ok {
		return Summary{}, fmt.Errorf("history: count VOI %q of VOI %d: %w", m.Count, id, voi.ErrNotFound)
	}
	s, err := b.Fetch(c.ID, voi.Sum)
	if err != nil {
		return Summary{}, fmt.Errorf("history: count VOI %q of VOI %d: %w", m.Count, id, err)
	}
	var n uint64
	switch {
	case len(s.Data) < s.DType.Size() || s.DType.Signed() || !s.DType.IsInt():
		return Summary{}, fmt.Errorf("history: count VOI %q of VOI %d: a SUM of %v, not of an unsigned integer: %w", m.Count, id, s.DType, voi.ErrTypeMismatch)
	case s.DType.Is32():
		n = uint64(binary.LittleEndian.Uint32(s.Data))
	default:
		n = binary.LittleEndian.Uint64(s.Data)
	}
	return summarize(b, id, &n)
}

// summarize returns the VOI's summary in b, with count its number of
// updates where a count VOI keeps it.
func summarize(b *blob.Blob, id int32, count *uint64) (Summary, error) {
	nan := math.NaN()
	s := Summary{Min: nan, Avg: nan, Max: nan, P50: nan, P90: nan, P99: nan}
	var sum float64
	haveSum, haveCount, found := false, false, false
	for _, st := range b.Stats() {
		if st.VOI != id {
			continue
		}
		found = true
		switch st.Type {
		case voi.Sum, voi.Min, voi.Max:
			v, err := st.Value()
			if err != nil {
				return Summary{}, err
			}
			switch st.Type {
			case voi.Sum:
				sum, haveSum = v, true
			case voi.Min:
				if st.Valid {
					s.Min = v
				}
			case voi.Max:
				if st.Valid {
					s.Max = v
				}
			}
		case voi.TDgst, voi.Hist:
			if haveCount && st.Type == voi.Hist {
				continue // the t-digest's count stands
			}
			c, err := st.Count()
			if err != nil {
				return Summary{}, err
			}
			if st.Type == voi.Hist { // the samples outside the buckets count too
				if oob := hist.OOB(st.Data, st.DType); c+oob >= c {
					c += oob
				} else {
					c = math.MaxUint64
				}
			}
			s.Count, haveCount = c, true
		}
	}
	if !found {
		return Summary{}, fmt.Errorf("history: VOI %d: %w", id, voi.ErrNotFound)
	}
	if count != nil { // it counts what the SUM took
		s.Count, haveCount = *count, true
	}
	if haveSum && haveCount && s.Count > 0 {
		s.Avg = sum / float64(s.Count)
	}
	for _, q := range []struct {
		q   float64
		dst *float64
	}{{0.5, &s.P50}, {0.9, &s.P90}, {0.99, &s.P99}} {
		v, err := b.Quantile(id, q.q)
		switch {
		case err == nil:
			*q.dst = v
		case errors.Is(err, voi.ErrNotFound): // no digest or histogram, or empty
		default:
			return Summary{}, err
		}
	}
	return s, nil
}
