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

// versions maps the hash of a wide template the aggregates hold to its
// senders' template's hash.
type versions struct {
	narrow sync.Map // uint32 -> uint32
}

// withVersions adds VersionLabel to the aggregates ns of versions other
// than the newest known of their name that share their label set with
// another version's.
func (s *Server) withVersions(ns []export.Named) []export.Named {
	type set struct {
		name, labels string
	}
	var seen map[set]int // the first aggregate of each set, or -1 once shared
	shared := false
	for i := range ns {
		if ns[i].Template == nil {
			continue
		}
		if seen == nil {
			seen = make(map[set]int, len(ns))
		}
		k := set{ns[i].Template.Name(), key(0, ns[i].Labels)}
		if j, ok := seen[k]; !ok {
			seen[k] = i
		} else if j >= 0 && ns[j].Template.Hash() != ns[i].Template.Hash() || j < 0 {
			seen[k], shared = -1, true
		}
	}
	if !shared {
		return ns
	}
	for i := range ns {
		t := ns[i].Template
		if t == nil || seen[set{t.Name(), key(0, ns[i].Labels)}] >= 0 {
			continue
		}
		h, ok := s.narrowHash(t)
		if !ok {
			h = t.Hash() // (not known: told apart by the hash it has)
		} else if n := s.newest(t.Name()); n != nil && n.Hash() == h {
			continue // the newest version keeps its series
		}
		labels := append(slices.Clip(ns[i].Labels), export.Label{Name: VersionLabel, Value: fmt.Sprintf("%08x", h)})
		slices.SortFunc(labels, func(a, b export.Label) int { return strings.Compare(a.Name, b.Name) })
		ns[i].Labels = labels
	}
	return ns
}

// narrowHash returns the hash of the known template whose wide form is w.
func (s *Server) narrowHash(w *tpl.Template) (uint32, bool) {
	if h, ok := s.versions.narrow.Load(w.Hash()); ok {
		return h.(uint32), true
	}
	for _, t := range s.tpls.idx.Load().order {
		if t.Name() != w.Name() {
			continue
		}
		if wt, err := tpl.Widen(t); err == nil {
			s.versions.narrow.Store(wt.Hash(), t.Hash())
			if wt.Hash() == w.Hash() {
				return t.Hash(), true
			}
		}
	}
	return 0, false
}
