package collector

import "time"

// expiring reports whether idle label sets expire within a window: with a
// LabelTTL, unless closed windows ship (OnClose: a delta push, a remote
// writer), each of which must hold every post of its window.
func (s *Server) expiring() bool { return s.cfg.LabelTTL > 0 && !s.wholeWindows.Load() }

// Expire drops the current window's aggregates that have had no post for
// LabelTTL, so that their label sets stop counting against the limits, and
// returns how many it dropped. When closed windows ship (OnClose: a delta
// pusher, a remote writer) it drops nothing: a window ships whole when it
// closes (label sets not posted in a window leave with it). With DataDir, it expires at a checkpoint, which it
// writes (see Checkpoint).
func (s *Server) Expire() int {
	if s.log == nil {
		return s.expire()
	}
	n := 0
	_, _ = s.checkpoint(func() { n = s.expire() })
	return n
}

func (s *Server) expire() int {
	if !s.expiring() {
		return 0
	}
	cutoff := s.cfg.Now().Add(-s.cfg.LabelTTL)
	n, oldest := s.set.Expire(cutoff)
	s.levels.expire(cutoff)
	var next int64
	if !oldest.IsZero() {
		next = oldest.Add(s.cfg.LabelTTL).UnixNano()
	}
	s.nextExpiry.Store(next)
	s.expired.Add(float64(n))
	return n
}

// sweepEvery is how often RunWindows calls Expire: a tenth of the TTL,
// between a second and a minute.
func (s *Server) sweepEvery() time.Duration {
	return min(max(s.cfg.LabelTTL/10, time.Second), time.Minute)
}
