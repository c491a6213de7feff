package aggregate

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/statsblob/statsblob/voi"
)

// sender is what a Set remembers of one sender: per aggregate, the
// highest sequence number added.
type sender struct {
	mu      sync.Mutex // guards seqs (not the marks, which have their own locks)
	seqs    map[string]*mark
	heard   atomic.Uint64 // the generation (windows rotated) of the sender's latest post
	heardAt atomic.Int64  // the time of that post, Unix nanoseconds (Config.Now, or OnceAllAt's)
	users   atomic.Int32  // OnceAlls holding the sender: counted up under Set.sendMu
}

// mark is the highest sequence number of one sender added to one
// aggregate; its lock is held for the whole of an add, so that copies of
// one message arriving at once are added once.
type mark struct {
	mu    sync.Mutex
	users atomic.Int32 // OnceAlls holding the mark: counted up under sender.mu
	has   bool         // in users' padding: a mark is 48 bytes, a 48-byte allocation
	hw    uint64

	used atomic.Uint64 // the generation of the sender's latest post to the aggregate
	at   atomic.Int64  // the time of that post, Unix nanoseconds (Config.Now, or OnceAllAt's)

	key *markKey // its key's one copy (set before the mark is in a sender's seqs, never changed): a State writes each key once
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
// printable ASCII (the shipper's ids, [A-Za-z0-9._-]{1,64}, are). Errors
// wrap voi.ErrInvalid.
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

// Once runs add, which adds one message's blob to the aggregate of key,
// unless the message (sender id, sequence number seq) was already added
// there: then it returns dup true and does not call add. This is the
// shipper's protocol (package ship, "Wire protocol"): a sender numbers
// its messages across all its label sets and sends the messages of one
// label set one at a time, in increasing order, so the highest number
// added per sender and aggregate tells a retry (or a proxy's replay) from
// a new message, whatever the order of messages of different label sets
// and whatever window they land in. A message is recorded as added only
// when add returns nil, so a refused message may be retried with its
// number, and leaves nothing behind. Copies of one message arriving at
// once are added once (the adds of one sender and aggregate take turns;
// other aggregates do not wait). A sender is remembered until it has not
// posted for two window rotations and for MarkAge, and its number for an
// aggregate until it has not posted to that aggregate for two window
// rotations and for MarkAge, or the aggregate expires (Expire): a retry
// after that is added again (but for
// a number whose message was still being added, under way across the
// expiry, which stays). Beyond
// MaxSenders, a new sender's messages are added without the check
// (counted in Stats.Untracked), and so are a message's blobs whose
// aggregates would take a sender's number past MaxMarks numbers of all
// senders and aggregates (counted in Stats.Untracked and Stats.MarksFull):
// no message is refused for want of a place to keep its number. id must
// have passed CheckSender.
func (s *Set) Once(id, key string, seq uint64, add func() error) (dup bool, err error) {
	dups, err := s.OnceAll(id, []string{key}, seq, func(skip []bool) error { return add() })
	return len(dups) > 0 && dups[0], err
}

// OnceAll is Once for a message whose blobs go to several aggregates (a
// batch): add is called with, for each key, whether its blobs are
// duplicates to leave out (all true: add is not called), and the keys
// whose blobs were not duplicates are recorded only if add returns nil.
// It returns the duplicates. Keys may repeat. A message without keys has
// nothing that was added before: add is called (with no keys), and the
// message is not counted as a duplicate. The keys without a mark for want
// of MaxMarks are added unchecked (never reported duplicates) and not
// recorded.
func (s *Set) OnceAll(id string, keys []string, seq uint64, add func(skip []bool) error) (dups []bool, err error) {
	return s.OnceAllAt(id, keys, seq, s.cfg.Now(), add)
}

// OnceAllAt is OnceAll for a message posted at time at, in place of
// Config.Now: the time its sender's marks take, which MarkAge counts
// from and which orders the marks evicted for want of MaxMarks. A log
// replayed at a restart (package collector's -data-dir) gives each post
// the time it was added at when it arrived, so that the rotations
// replayed after it age its marks out as they did then: with the
// restart's time they outlived them, and took places of MaxMarks that
// later posts then did without.
func (s *Set) OnceAllAt(id string, keys []string, seq uint64, at time.Time, add func(skip []bool) error) (dups []bool, err error) {
	if len(keys) == 0 {
		return []bool{}, add([]bool{})
	}
	p := s.sender(id)
	if p == nil {
		return s.addUntracked(keys, false, add)
	}
	gen, now := s.gen.Load(), at.UnixNano()
	p.heard.Store(gen)
	p.heardAt.Store(now)
	// The marks of the distinct keys, locked in key order (deadlock-free);
	// nil for a key without a mark for want of MaxMarks.
	order := make([]int, len(keys))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(keys[a], keys[b]) })
	marks := make([]*mark, len(keys))
	held := make([]*mark, 0, len(keys)) // the distinct marks, in key order
	heldKeys := make([]string, 0, len(keys))
	full := false // a key left without a mark
	p.mu.Lock()
	for j, i := range order {
		if j > 0 && keys[order[j-1]] == keys[i] {
			marks[i] = marks[order[j-1]]
			continue
		}
		m := p.seqs[keys[i]]
		if m == nil {
			mk, ok := s.marks.take(keys[i])
			if !ok {
				full = true
				continue
			}
			m = &mark{key: mk}
			p.seqs[mk.key] = m
		}
		m.users.Add(1) // under p.mu: a mark in use is never dropped
		m.used.Store(gen)
		m.at.Store(now)
		marks[i] = m
		held, heldKeys = append(held, m), append(heldKeys, keys[i])
	}
	p.mu.Unlock()
	if full && len(held) == 0 { // nothing tracked: p is let go, as if beyond MaxSenders
		s.letGo(id, p, nil, nil, true)
		return s.addUntracked(keys, true, add)
	}
	for _, m := range held {
		m.mu.Lock()
	}
	refused := true // until add succeeds (a panic in add too)
	defer func() { s.letGo(id, p, held, heldKeys, refused) }()
	dups = make([]bool, len(keys))
	all := true
	for i, m := range marks {
		dups[i] = m != nil && m.has && seq <= m.hw
		all = all && dups[i]
	}
	if all {
		refused = false
		s.duplicates.Add(1)
		return dups, nil
	}
	if err := add(dups); err != nil {
		return dups, err
	}
	refused = false
	for i, m := range marks {
		if m != nil && !dups[i] {
			m.has, m.hw = true, max(m.hw, seq)
		}
	}
	if full {
		s.countUntracked(true)
	}
	if slices.Contains(dups, true) {
		s.duplicates.Add(1)
	}
	return dups, nil
}

// addUntracked adds a message whose blobs have no mark (none kept for
// its sender, or for want of MaxMarks if full): all of them, counted.
func (s *Set) addUntracked(keys []string, full bool, add func(skip []bool) error) ([]bool, error) {
	dups := make([]bool, len(keys))
	if err := add(dups); err != nil {
		return dups, err
	}
	s.countUntracked(full)
	return dups, nil
}

// countUntracked counts a message added with blobs unchecked, for want
// of MaxMarks if full.
func (s *Set) countUntracked(full bool) {
	s.untracked.Add(1)
	if full {
		s.marksFull.Add(1)
		if s.cfg.OnMarksFull != nil {
			s.cfg.OnMarksFull()
		}
	}
}

// letGo unlocks the marks OnceAll held (keys: theirs) and lets go of
// them and of their sender p (id). After a refused (or failed) add,
// the marks that hold no number and that no other OnceAll holds are
// dropped, and so is p if it is left without marks: a refused message
// leaves nothing behind (nor takes one of MaxSenders' places).
func (s *Set) letGo(id string, p *sender, marks []*mark, keys []string, refused bool) {
	for _, m := range marks {
		m.mu.Unlock()
	}
	if !refused {
		for _, m := range marks {
			m.users.Add(-1)
		}
		p.users.Add(-1)
		return
	}
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, m := range marks {
		// No other holder (they are counted up under p.mu, which is held):
		// whoever set has let go of m after it, so has is read safely.
		if m.users.Add(-1) == 0 && !m.has && p.seqs[keys[i]] == m {
			delete(p.seqs, keys[i])
			s.marks.drop(keys[i])
		}
	}
	if p.users.Add(-1) == 0 && len(p.seqs) == 0 && s.senders[id] == p {
		delete(s.senders, id)
	}
}

// sender returns the state of sender id, made on first use; nil beyond
// MaxSenders.
func (s *Set) sender(id string) *sender {
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	p := s.senders[id]
	if p == nil {
		if len(s.senders) >= s.cfg.MaxSenders {
			return nil
		}
		p = &sender{seqs: map[string]*mark{}}
		s.senders[id] = p
	}
	p.users.Add(1) // under sendMu: a sender in use is never dropped for want of marks
	return p
}

// pruneSenders forgets the senders that have not posted in the last two
// windows nor since MarkAge before now, and the marks of aggregates a
// sender has not posted to in the last two windows nor since MarkAge
// before now; Rotate calls it.
func (s *Set) pruneSenders(now time.Time) {
	cutoff := now.Add(-s.cfg.MarkAge).UnixNano()
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	g := s.gen.Add(1) // under sendMu: a State (Set.State) reads it with the marks it prunes
	for id, p := range s.senders {
		if g-p.heard.Load() > 2 && p.heardAt.Load() < cutoff && p.users.Load() == 0 { // (counted up under sendMu, held)
			p.dropMarks(&s.marks, func(string, *mark) bool { return true })
			delete(s.senders, id)
			continue
		}
		p.dropMarks(&s.marks, func(_ string, m *mark) bool { return g-m.used.Load() > 2 && m.at.Load() < cutoff })
	}
	s.evictMarkKeys(g, 2*s.cfg.MaxAggregates)
}

// evictMarkKeys drops, when the marks are of more than budget label sets
// (keys), all the marks of the keys posted to longest ago until they are
// of budget, sparing the keys posted to in the window just closed (the
// generation before g) and marks an OnceAll holds. s.sendMu is held.
func (s *Set) evictMarkKeys(g uint64, budget int) {
	s.marks.mu.Lock()
	over := len(s.marks.keys) - budget
	s.marks.mu.Unlock()
	if over <= 0 {
		return
	}
	latest := map[*markKey]int64{} // the keys that may go: their latest post
	spared := map[*markKey]bool{}
	for _, p := range s.senders {
		p.mu.Lock()
		for _, m := range p.seqs {
			if g-m.used.Load() <= 1 || m.users.Load() > 0 {
				spared[m.key] = true
			} else if at, ok := latest[m.key]; !ok || m.at.Load() > at {
				latest[m.key] = m.at.Load()
			}
		}
		p.mu.Unlock()
	}
	var old []*markKey
	for k := range latest {
		if !spared[k] {
			old = append(old, k)
		}
	}
	slices.SortFunc(old, func(a, b *markKey) int { return cmp.Compare(latest[a], latest[b]) })
	gone := make(map[*markKey]bool, min(over, len(old)))
	for _, k := range old[:min(over, len(old))] {
		gone[k] = true
	}
	for _, p := range s.senders {
		n := p.dropMarks(&s.marks, func(_ string, m *mark) bool { return gone[m.key] })
		s.marksEvicted.Add(uint64(n))
	}
}

// forgetMarks drops every sender's marks of the aggregates gone (their
// keys), which Expire dropped.
func (s *Set) forgetMarks(gone map[string]bool) {
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	for _, p := range s.senders {
		p.dropMarks(&s.marks, func(k string, _ *mark) bool { return gone[k] })
	}
}

// dropMarks drops the marks of p for which drop returns true, except
// those an OnceAll holds, gives their places back to ms and returns how
// many it dropped.
func (p *sender) dropMarks(ms *markKeys, drop func(key string, m *mark) bool) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for k, m := range p.seqs {
		if m.users.Load() == 0 && drop(k, m) {
			delete(p.seqs, k)
			ms.drop(k)
			n++
		}
	}
	return n
}

// markKeys counts the marks of all senders, which Config.MaxMarks bounds,
// and holds one copy of each key they are marks of: a mark's key is a
// string the caller made for one message, which each mark would otherwise
// keep, a copy per sender (up to the labels' bytes each), beyond the
// bound's reach.
type markKeys struct {
	mu   sync.Mutex
	max  int
	n    int
	keys map[string]*markKey
}

// markKey is a key's one copy and how many marks are kept of it.
type markKey struct {
	key   string
	marks int
}

// take counts a new mark of key k and returns the copy of k to keep it
// under (its key); false if MaxMarks marks are kept.
func (ms *markKeys) take(k string) (*markKey, bool) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if ms.n >= ms.max {
		return nil, false
	}
	return ms.keepLocked(k), true
}

// keep counts a mark of key k, whatever MaxMarks (LoadState: a mark
// loaded is the number of posts added, whose retries must stay
// duplicates), and returns the copy of k to keep it under.
func (ms *markKeys) keep(k string) *markKey {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	return ms.keepLocked(k)
}

// keepAgain counts one more mark of mk, a key keep returned (LoadState:
// without hashing the key again).
func (ms *markKeys) keepAgain(mk *markKey) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	ms.n++
	mk.marks++
}

func (ms *markKeys) keepLocked(k string) *markKey {
	ms.n++
	if ms.keys == nil {
		ms.keys = map[string]*markKey{}
	}
	mk := ms.keys[k]
	if mk == nil {
		mk = &markKey{key: k}
		ms.keys[k] = mk
	}
	mk.marks++
	return mk
}

// drop counts a mark of key k gone.
func (ms *markKeys) drop(k string) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	ms.n--
	if mk := ms.keys[k]; mk != nil {
		if mk.marks--; mk.marks == 0 {
			delete(ms.keys, k)
		}
	}
}

// count returns the marks kept.
func (ms *markKeys) count() int {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	return ms.n
}
