package aggregate

import (
	"fmt"
	"slices"

	"github.com/statsblob/statsblob/blob"
)

// Marks returns how many senders the Set remembers and how many sequence
// marks (sender and aggregate) they hold in all.
func Marks(s *Set) (senders, marks int) {
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	for _, p := range s.senders {
		p.mu.Lock()
		marks += len(p.seqs)
		p.mu.Unlock()
	}
	return len(s.senders), marks
}

// MarkKeys returns how many keys the Set's marks keep a copy of.
func MarkKeys(s *Set) int {
	s.marks.mu.Lock()
	defer s.marks.mu.Unlock()
	return len(s.marks.keys)
}

// StateBlobs returns the blobs a State writes, by key, folding them as
// WriteTo does (publishing those it may).
func StateBlobs(st *State) map[string]*blob.Blob {
	st.make()
	out := map[string]*blob.Blob{}
	st.folds(func(sa *stateAgg, b *blob.Blob) bool {
		out[sa.key] = b
		return true
	})
	return out
}

// MarkSeqs returns the senders' sequence marks that hold a number, as
// "id key number" lines, sorted.
func MarkSeqs(s *Set) []string {
	return markLines(s, func(m *mark) (any, bool) {
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.hw, m.has
	})
}

// MarkTimes returns the senders' sequence marks with the time of their
// latest post, as "id key Unix-nanoseconds" lines, sorted.
func MarkTimes(s *Set) []string {
	return markLines(s, func(m *mark) (any, bool) { return m.at.Load(), true })
}

// markLines returns "id key value" for each mark that of gives a value,
// sorted.
func markLines(s *Set, of func(*mark) (any, bool)) []string {
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	var out []string
	for id, p := range s.senders {
		p.mu.Lock()
		for k, m := range p.seqs {
			if v, ok := of(m); ok {
				out = append(out, fmt.Sprintf("%s %q %d", id, k, v))
			}
		}
		p.mu.Unlock()
	}
	slices.Sort(out)
	return out
}

// MarkAges returns the senders' sequence marks with the windows rotated
// since their latest post (0, 1, or 2 for two or more: all that pruning
// and eviction tell apart), as "id key age" lines, sorted.
func MarkAges(s *Set) []string {
	g := s.gen.Load()
	return markLines(s, func(m *mark) (any, bool) { return min(g-m.used.Load(), 2), true })
}

// Senders returns the senders with the time of their latest post and the
// windows rotated since it (as MarkAges), as "id Unix-nanoseconds age"
// lines, sorted.
func Senders(s *Set) []string {
	g := s.gen.Load()
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	var out []string
	for id, p := range s.senders {
		out = append(out, fmt.Sprintf("%s %d %d", id, p.heardAt.Load(), min(g-p.heard.Load(), 2)))
	}
	slices.Sort(out)
	return out
}

// AddTimes returns the current window's aggregates with their last-add
// times (what Expire compares with its cutoff), as "key Unix-nanoseconds"
// lines, sorted.
func AddTimes(s *Set) []string {
	s.rot.RLock()
	defer s.rot.RUnlock()
	s.cur.mu.RLock()
	defer s.cur.mu.RUnlock()
	var out []string
	for k, a := range s.cur.aggs {
		out = append(out, fmt.Sprintf("%q %d", k, a.lastAdd.Load()))
	}
	slices.Sort(out)
	return out
}
