package aggregate

import (
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/statsblob/statsblob/voi"
)

// seqWindow is how far below a sender's highest sequence number a post
// may arrive and still be merged (once): a late post further below is
// taken for a duplicate.
const seqWindow = 64

// sender is what a Set remembers of one sender: the highest sequence
// number merged and which of the seqWindow below it were.
type sender struct {
	mu    sync.Mutex // held for the whole of a post of the sender
	has   bool
	max   uint64
	below uint64      // bit i: max-1-i merged
	heard atomic.Bool // posted in the current window
}

// seen reports whether seq was merged (or is too old to tell).
func (p *sender) seen(seq uint64) bool {
	switch {
	case !p.has || seq > p.max:
		return false
	case seq == p.max:
		return true
	case p.max-seq > seqWindow:
		return true
	}
	return p.below&(1<<(p.max-seq-1)) != 0
}

// mark records seq as merged.
func (p *sender) mark(seq uint64) {
	switch {
	case !p.has:
		p.has, p.max, p.below = true, seq, 0
	case seq > p.max:
		d := seq - p.max
		if d > seqWindow {
			p.below = 0
		} else {
			p.below = p.below<<d | 1<<(d-1)
		}
		p.max = seq
	default:
		p.below |= 1 << (p.max - seq - 1)
	}
}

// ParseSeq parses a HeaderSeq value: a uint64 in decimal. Errors wrap
// voi.ErrInvalid.
func ParseSeq(v string) (uint64, error) {
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil || v == "" || v[0] == '+' {
		return 0, fmt.Errorf("aggregate: %s %.24q is not a decimal uint64: %w", HeaderSeq, v, voi.ErrInvalid)
	}
	return n, nil
}

// CheckSender checks a HeaderSender value: 1 to MaxSenderLen bytes of
// printable ASCII. Errors wrap voi.ErrInvalid.
func CheckSender(id string) error {
	if id == "" || len(id) > MaxSenderLen {
		return fmt.Errorf("aggregate: %s of %d bytes, want 1 to %d: %w", HeaderSender, len(id), MaxSenderLen, voi.ErrInvalid)
	}
	for i := 0; i < len(id); i++ {
		if id[i] < 0x20 || id[i] > 0x7e {
			return fmt.Errorf("aggregate: %s holds byte %#x at %d: %w", HeaderSender, id[i], i, voi.ErrInvalid)
		}
	}
	return nil
}

// Once runs add, which adds a post's blobs, unless the post with sequence
// number seq of sender id was already added: then it returns dup true
// and does not call add. A post is recorded as added only when add
// returns nil, so a refused post may be retried with its number. Posts of
// one sender are serialised; the numbers must increase from post to post
// (a post arriving more than 64 below the highest number seen is taken
// for a duplicate). Senders are remembered across windows while they post
// in every window (Rotate forgets the others); beyond MaxSenders, a new
// sender's posts are added without the check (counted in Stats.Untracked).
// id must have passed CheckSender.
func (s *Set) Once(id string, seq uint64, add func() error) (dup bool, err error) {
	s.sendMu.Lock()
	p := s.senders[id]
	if p == nil {
		if len(s.senders) >= s.cfg.MaxSenders {
			s.sendMu.Unlock()
			s.untracked.Add(1)
			return false, add()
		}
		p = &sender{}
		s.senders[id] = p
	}
	s.sendMu.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.heard.Store(true)
	if p.seen(seq) {
		s.duplicates.Add(1)
		return true, nil
	}
	if err := add(); err != nil {
		return false, err
	}
	p.mark(seq)
	return false, nil
}

// pruneSenders forgets the senders not heard from since the last
// rotation.
func (s *Set) pruneSenders() {
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	for id, p := range s.senders {
		if !p.heard.Swap(false) {
			delete(s.senders, id)
		}
	}
}
