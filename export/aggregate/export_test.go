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
