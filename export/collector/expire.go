package collector

import (
	"time"

	"github.com/statsblob/statsblob/export/aggregate"
	"github.com/statsblob/statsblob/export/internal/wal"
)

// expiring reports whether idle label sets expire within a window: with a
// LabelTTL, unless closed windows ship (OnClose: a delta push, a remote
// writer), each of which must hold every post of its window.
func (s *Server) expiring() bool { return s.cfg.LabelTTL > 0 && !s.wholeWindows.Load() }

// Expire drops the current window's aggregates that have had no post for
// LabelTTL, so that their label sets stop counting against the limits, and
// returns how many it dropped. When closed windows ship (OnClose: a delta
// pusher, a remote writer) it drops nothing: a window ships whole when it
// closes (label sets not posted in a window leave with it). With DataDir,
// the expiry is a record of the log, at its point among the posts, which
// a restart replays, and a checkpoint follows it (see Checkpoint); a
// checkpoint that fails undoes nothing.
func (s *Server) Expire() int {
	if s.log == nil {
		return len(s.expire())
	}
	n, _ := s.expireLogged()
	return n
}

// expireLogged expires as a record of the log, then writes a checkpoint;
// it returns how many label sets expired, and the error of the log or of
// the checkpoint.
func (s *Server) expireLogged() (int, error) {
	n := 0
	if _, err := s.logEvent(func() [][]byte {
		gone := s.expire()
		n = len(gone)
		return expireRecords(gone, wal.MaxRecord)
	}); err != nil {
		return n, err
	}
	return n, s.checkpoint()
}

// expire drops the label sets idle for LabelTTL and returns them.
func (s *Server) expire() []aggregate.Expired {
	if !s.expiring() {
		return nil
	}
	cutoff := s.cfg.Now().Add(-s.cfg.LabelTTL)
	gone, oldest := s.set.ExpireList(cutoff)
	s.levels.expire(cutoff)
	var next int64
	if !oldest.IsZero() {
		next = oldest.Add(s.cfg.LabelTTL).UnixNano()
	}
	s.nextExpiry.Store(next)
	s.expired.Add(float64(len(gone)))
	return gone
}

// sweepEvery is how often RunWindows calls Expire: a tenth of the TTL,
// between a second and a minute.
func (s *Server) sweepEvery() time.Duration {
	return min(max(s.cfg.LabelTTL/10, time.Second), time.Minute)
}
