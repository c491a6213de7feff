package collector

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/statsblob/statsblob/export"
	"github.com/statsblob/statsblob/tpl"
)

// Versions of one template name live side by side (templates.go), each
// with its own aggregates. Within a window two versions can hold the same
// label set (a sender upgrading, or two fleets of one name), and their
// exports would then be the same series twice: Prometheus keeps one of the
// two samples, and a remote-write receiver may refuse the whole request.
// So where aggregates of several versions share a label set, each but the
// newest known version's carries one more label, VersionLabel, its
// template hash: the newest keeps the series it has and will keep, the
// others are told apart for as long as they post.

// VersionLabel is export.VersionLabel: the label that tells apart the
// aggregates of an older version of a template that share a label set
// with another version's: the older version's template hash (the
// senders', as tpl.Template.Hash), eight hexadecimal digits. Posts and
// tokens may not carry it.
const VersionLabel = export.VersionLabel

// versions maps the hash of a wide template to its senders' template's
// hash, for aggregates that do not say which (Posted nil: a closed window
// recovered from DataDir).
type versions struct {
	narrow sync.Map // uint32 -> uint32
}

// withVersions adds VersionLabel to the aggregates ns of versions other
// than the newest known of their name that share their label set with
// another version's.
func (s *Server) withVersions(ns []export.Named) []export.Named {
	versioned := s.tpls.idx.Load().versioned
	if len(versioned) == 0 {
		return ns // (the common case: no name has two versions)
	}
	type set struct {
		name, labels string
	}
	first := map[set]int{} // the first aggregate of each set, or -1 once shared
	shared := false
	for i := range ns {
		if ns[i].Template == nil || !versioned[ns[i].Template.Name()] {
			continue
		}
		k := set{ns[i].Template.Name(), key(0, ns[i].Labels)}
		if j, ok := first[k]; !ok {
			first[k] = i
		} else if j < 0 || s.postedHash(ns[j]) != s.postedHash(ns[i]) {
			first[k], shared = -1, true
		}
	}
	if !shared {
		return ns
	}
	for i := range ns {
		t := ns[i].Template
		if t == nil || !versioned[t.Name()] || first[set{t.Name(), key(0, ns[i].Labels)}] >= 0 {
			continue
		}
		h := s.postedHash(ns[i])
		if n := s.newest(t.Name()); n != nil && n.Hash() == h {
			continue // the newest version keeps its series
		}
		labels := append(slices.Clip(ns[i].Labels), export.Label{Name: VersionLabel, Value: fmt.Sprintf("%08x", h)})
		slices.SortFunc(labels, func(a, b export.Label) int { return strings.Compare(a.Name, b.Name) })
		ns[i].Labels = labels
	}
	return ns
}

// postedHash returns the hash of the template n's samples were posted as:
// n.Posted's, else that of the known template whose wide form is
// n.Template (the first such: two versions can share a wide form), else
// n.Template's own.
func (s *Server) postedHash(n export.Named) uint32 {
	if n.Posted != nil {
		return n.Posted.Hash()
	}
	w := n.Template
	if h, ok := s.versions.narrow.Load(w.Hash()); ok {
		return h.(uint32)
	}
	for _, t := range s.tpls.idx.Load().order {
		if t.Name() != w.Name() {
			continue
		}
		if wt, err := tpl.Widen(t); err == nil && wt.Hash() == w.Hash() {
			s.versions.narrow.Store(w.Hash(), t.Hash())
			return t.Hash()
		}
	}
	return w.Hash()
}
