package history

import (
	"fmt"
	"iter"
	"sync"
	"time"
)

// Sample is one timestamped value of a Raw.
type Sample struct {
	Time  time.Time
	Value float64
}

// Raw keeps the last N samples of one variable with their times (Linux's
// raw type), beside the blob that aggregates them: when it is full a new
// sample replaces the oldest, and Dropped counts the samples so lost.
// It is safe for concurrent use; Add allocates nothing.
type Raw struct {
	mu      sync.Mutex
	buf     []Sample
	next, n int
	dropped uint64
}

// NewRaw returns a Raw of the last n samples; n < 1 gives an error
// wrapping ErrInvalid.
func NewRaw(n int) (*Raw, error) {
	if n < 1 {
		return nil, fmt.Errorf("history: a raw ring of %d samples: %w", n, ErrInvalid)
	}
	return &Raw{buf: make([]Sample, n)}, nil
}

// Add records a sample taken at t.
func (r *Raw) Add(t time.Time, v float64) {
	r.mu.Lock()
	if r.n == len(r.buf) {
		r.dropped++
	} else {
		r.n++
	}
	r.buf[r.next] = Sample{Time: t, Value: v}
	r.next = (r.next + 1) % len(r.buf)
	r.mu.Unlock()
}

// Dropped returns the number of samples replaced by newer ones.
func (r *Raw) Dropped() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.dropped
}

// Samples yields the samples held, oldest first (a copy taken when the
// iteration starts).
func (r *Raw) Samples() iter.Seq[Sample] {
	return func(yield func(Sample) bool) {
		r.mu.Lock()
		out := make([]Sample, 0, r.n)
		for i := r.n; i >= 1; i-- {
			out = append(out, r.buf[(r.next-i+len(r.buf))%len(r.buf)])
		}
		r.mu.Unlock()
		for _, s := range out {
			if !yield(s) {
				return
			}
		}
	}
}
