package collector

import (
	"math"
	"time"
)

// expiring reports whether idle label sets expire within a window: with a
// LabelTTL, unless a delta push needs every window whole.
func (s *Server) expiring() bool { return s.cfg.LabelTTL > 0 && !s.keepWindows.Load() }

// Expire drops the current window's aggregates that have had no post for
// LabelTTL, so that their label sets stop counting against the limits, and
// returns how many it dropped. With a delta pusher it drops nothing: a
// window ships whole when it closes (label sets not posted in a window
// leave with it).
func (s *Server) Expire() int {
	if !s.expiring() {
		return 0
	}
	ttl := s.cfg.LabelTTL
	s.rot.RLock()
	defer s.rot.RUnlock()
	win := s.cur
	cutoff := s.cfg.Now().Add(-ttl).UnixNano()
	oldest := int64(math.MaxInt64)
	n := 0
	win.mu.Lock()
	for k, a := range win.aggs {
		last := a.last.Load()
		if last <= cutoff {
			delete(win.aggs, k)
			a.gone = true
			win.perTpl[a.t.Hash()]--
			n++
			continue
		}
		oldest = min(oldest, last)
	}
	win.nextExpiry = time.Time{}
	if oldest != math.MaxInt64 {
		win.nextExpiry = time.Unix(0, oldest).Add(ttl)
	}
	win.mu.Unlock()
	s.expired.Add(float64(n))
	return n
}

// sweepEvery is how often RunWindows calls Expire: a tenth of the TTL,
// between a second and a minute.
func (s *Server) sweepEvery() time.Duration {
	return min(max(s.cfg.LabelTTL/10, time.Second), time.Minute)
}
