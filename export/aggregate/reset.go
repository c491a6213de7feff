package aggregate

import (
	"fmt"

	"github.com/statsblob/statsblob/tpl"
)

// ResetVOIs resets VOIs' statistics in the current window's aggregates:
// for each aggregate, ids is called with its template's wide form (the
// template of the blobs Blobs returns: the senders' template name and VOI
// names) and returns the VOIs to reset, none to leave it alone. The
// aggregate's queued blobs are reset with it, so none of them comes back:
// what Blobs returns next is exactly what blob.ResetVOI makes of what it
// returned before, until the next add. ResetVOIs waits for adds under
// way and returns how many aggregates it reset. Errors (an id the
// template does not have) wrap voi.ErrInvalid and leave that aggregate
// and the ones after it, in no particular order, unchanged.
func (s *Set) ResetVOIs(ids func(wide *tpl.Template) []int32) (int, error) {
	s.rot.Lock() // no add under way: a post's blobs land wholly before or after
	defer s.rot.Unlock()
	w := s.cur
	w.mu.RLock()
	aggs := make([]*group, 0, len(w.aggs))
	for _, a := range w.aggs {
		aggs = append(aggs, a)
	}
	w.mu.RUnlock()
	n := 0
	for _, a := range aggs {
		reset := ids(a.w.wide)
		if len(reset) == 0 {
			continue
		}
		if err := s.resetGroup(a, reset); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// resetGroup resets VOIs ids of a: its fold, reset, becomes its only
// level (setTop).
func (s *Set) resetGroup(a *group, ids []int32) error {
	pub, _ := s.snapshot(a)
	nb := pub.Clone()
	for _, id := range ids {
		if err := nb.ResetVOI(id); err != nil {
			return fmt.Errorf("aggregate: %w", err)
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	s.dropQueue(a) // in pub
	a.setTop(nb.Clone(), nb)
	a.resets++
	return nil
}
