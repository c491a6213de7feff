// Package versions is the rule both collectors (export/collector's HTTP
// one and export/natsjs's) follow for versions of one template name.
//
// Versions of a name live side by side, each with its own aggregates.
// Two versions can hold the same label set (a sender upgrading, or two
// fleets of one name), and their exports would then be the same series
// twice: Prometheus keeps one of the two samples, and an exporter reports
// the other as a clash (export.ErrNameClash) and leaves it out. So where
// aggregates of several versions share a label set, each but the newest
// known version's carries one more label, export.VersionLabel, its
// senders' template hash: the newest keeps the series it has and will
// keep, the others are told apart for as long as they post.
//
// The newest version of a name is the last of it in the order the
// collector ranks its templates (Index), never the one whose posts came
// last: an aggregate's labels do not depend on the order of its posts.
package versions

import (
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/statsblob/statsblob/export"
	"github.com/statsblob/statsblob/export/internal/hashfmt"
	"github.com/statsblob/statsblob/tpl"
)

// Index is a collector's known templates in the order that ranks the
// versions of a name: the last of a name is its newest. It does not change
// once made (a collector makes another when it learns templates) and is
// safe for concurrent use.
type Index struct {
	order     []*tpl.Template
	newest    map[string]*tpl.Template // by name
	versioned map[string]bool          // the names of which several versions are known
	// narrow maps the hash of a wide template to its senders' template's
	// hash, for aggregates that do not say which (PostedHash).
	narrow sync.Map // uint32 -> uint32
}

// New indexes the templates of order (none nil, each hash once), the
// last of a name its newest version. It keeps order: the caller must not
// change it.
func New(order []*tpl.Template) *Index {
	x := &Index{order: order, newest: make(map[string]*tpl.Template, len(order))}
	for _, t := range order {
		if o := x.newest[t.Name()]; o != nil && o.Hash() != t.Hash() {
			if x.versioned == nil {
				x.versioned = map[string]bool{}
			}
			x.versioned[t.Name()] = true
		}
		x.newest[t.Name()] = t
	}
	return x
}

// Templates returns the templates of the index, in its order. The slice
// must not be changed.
func (x *Index) Templates() []*tpl.Template { return x.order }

// Newest returns the newest known version of template name, or nil.
func (x *Index) Newest(name string) *tpl.Template { return x.newest[name] }

// Versioned reports whether several versions of template name are known.
func (x *Index) Versioned(name string) bool { return x.versioned[name] }

// PostedHash returns the hash of the template n's samples were posted as:
// n.Posted's, else that of the first known template whose wide form
// (tpl.Widen) is n.Template (two versions can share a wide form), else
// n.Template's own.
func (x *Index) PostedHash(n export.Named) uint32 {
	if n.Posted != nil {
		return n.Posted.Hash()
	}
	w := n.Template
	if h, ok := x.narrow.Load(w.Hash()); ok {
		return h.(uint32)
	}
	for _, t := range x.order {
		if t.Name() != w.Name() {
			continue
		}
		if wt, err := tpl.Widen(t); err == nil && wt.Hash() == w.Hash() {
			x.narrow.Store(w.Hash(), t.Hash())
			return t.Hash()
		}
	}
	return w.Hash()
}

// Label adds export.VersionLabel to the aggregates of ns of versions
// other than the newest known of their name that share their label set
// with another version's aggregate in ns, and returns ns. It changes
// ns's elements (their Labels), never the label slices they held.
func (x *Index) Label(ns []export.Named) []export.Named {
	if len(x.versioned) == 0 {
		return ns // (the common case: no name has two versions)
	}
	type set struct {
		name, labels string
	}
	first := map[set]int{} // the first aggregate of each set, or -1 once shared
	shared := false
	for i := range ns {
		if ns[i].Template == nil || !x.versioned[ns[i].Template.Name()] {
			continue
		}
		k := set{ns[i].Template.Name(), labelsKey(ns[i].Labels)}
		if j, ok := first[k]; !ok {
			first[k] = i
		} else if j < 0 || x.PostedHash(ns[j]) != x.PostedHash(ns[i]) {
			first[k], shared = -1, true
		}
	}
	if !shared {
		return ns
	}
	for i := range ns {
		t := ns[i].Template
		if t == nil || !x.versioned[t.Name()] || first[set{t.Name(), labelsKey(ns[i].Labels)}] >= 0 {
			continue
		}
		h := x.PostedHash(ns[i])
		if n := x.newest[t.Name()]; n != nil && n.Hash() == h {
			continue // the newest version keeps its series
		}
		labels := append(slices.Clip(ns[i].Labels), export.Label{Name: export.VersionLabel, Value: hashfmt.Hex(h)})
		slices.SortFunc(labels, func(a, b export.Label) int { return strings.Compare(a.Name, b.Name) })
		ns[i].Labels = labels
	}
	return ns
}

// labelsKey names a label set (names sorted): each name and value with
// its length, so that no value can mimic another label set.
func labelsKey(labels []export.Label) string {
	var b []byte
	for _, l := range labels {
		b = strconv.AppendInt(b, int64(len(l.Name)), 10)
		b = append(b, ':')
		b = append(b, l.Name...)
		b = strconv.AppendInt(b, int64(len(l.Value)), 10)
		b = append(b, ':')
		b = append(b, l.Value...)
	}
	return string(b)
}
