package natsjs

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/statsblob/statsblob/export/internal/hashfmt"
	"github.com/statsblob/statsblob/export/internal/versions"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// TemplateSet is the templates a collector knows: a Templates that only
// grows (a template once known stays known), with versions of one name
// side by side, ranked. A SetStore over a TemplateSet tells apart the
// aggregates of versions that share a label set (see the package
// documentation, Versions). A SetStore over it also teaches it the
// templates partition states carry that it does not know, ranked below
// the others (see the package documentation, Templates in the state).
// The zero value knows no template; a
// TemplateSet is safe for concurrent use and must not be copied.
type TemplateSet struct {
	mu  sync.Mutex // serialises Add
	idx atomic.Pointer[templateIndex]
}

// templateIndex is a TemplateSet's templates, replaced whole by Add.
type templateIndex struct {
	byHash   map[uint32]*tpl.Template
	versions *versions.Index // ranked, the last of a name its newest
}

// Add makes the templates of ts known and returns how many were new
// (nil entries are skipped). ts is a templates file's templates
// (tpl.ReadJSONList with no registry): their order ranks the versions of
// a name, the last of a name in ts its newest version, whatever the set
// knew before; the known templates ts does not hold rank below ts's, in
// the order they had. So every collector that reads one templates file
// takes the same version of each of its names for the newest, however
// often and from which older files each read templates before.
func (s *TemplateSet) Add(ts []*tpl.Template) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.index()
	in := make(map[uint32]bool, len(ts))
	var file []*tpl.Template // ts's, each hash once, at its last place
	for i := len(ts) - 1; i >= 0; i-- {
		if t := ts[i]; t != nil && !in[t.Hash()] {
			in[t.Hash()] = true
			file = append(file, t)
		}
	}
	slices.Reverse(file)
	idx := &templateIndex{byHash: make(map[uint32]*tpl.Template, len(old.byHash)+len(file))}
	var order []*tpl.Template
	for _, t := range old.versions.Templates() {
		if !in[t.Hash()] {
			order = append(order, t)
		}
		idx.byHash[t.Hash()] = t
	}
	n := 0
	for i, t := range file {
		if k := idx.byHash[t.Hash()]; k != nil {
			file[i] = k // the known one: one template per hash
			continue
		}
		idx.byHash[t.Hash()] = t
		n++
	}
	idx.versions = versions.New(append(order, file...))
	s.idx.Store(idx)
	return n
}

// learn makes known the templates of ts the set does not know (nil
// entries skipped): templates found beside a partition's aggregates (its
// state carries them, SetStore), not in the templates file. They rank
// below every known template, in ts's order among them, so that one
// never becomes the newest version of a name the set knows (the file's
// ranking stands). It returns the set's template of each of ts's hashes
// (the one known already, or ts's) and how many were new.
func (s *TemplateSet) learn(ts []*tpl.Template) ([]*tpl.Template, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.index()
	idx := &templateIndex{byHash: make(map[uint32]*tpl.Template, len(old.byHash)+len(ts))}
	maps.Copy(idx.byHash, old.byHash)
	out := make([]*tpl.Template, len(ts))
	var fresh []*tpl.Template
	for i, t := range ts {
		if t == nil {
			continue
		}
		if k := idx.byHash[t.Hash()]; k != nil {
			out[i] = k
			continue
		}
		idx.byHash[t.Hash()] = t
		fresh = append(fresh, t)
		out[i] = t
	}
	if len(fresh) == 0 {
		return out, 0
	}
	idx.versions = versions.New(append(fresh, old.versions.Templates()...))
	s.idx.Store(idx)
	return out, len(fresh)
}

// index returns the current index (an empty one for the zero value).
func (s *TemplateSet) index() *templateIndex {
	if idx := s.idx.Load(); idx != nil {
		return idx
	}
	return &templateIndex{versions: versions.New(nil)}
}

// ByHash returns the template of hash (Templates); its error for a hash
// not known wraps voi.ErrNoTemplate.
func (s *TemplateSet) ByHash(hash uint32) (*tpl.Template, error) {
	if t := s.index().byHash[hash]; t != nil {
		return t, nil
	}
	return nil, fmt.Errorf("natsjs: no template with hash %s: %w", hashfmt.String(hash), voi.ErrNoTemplate)
}

// Templates returns the known templates, ranked: the last of a name is
// its newest version. The slice must not be changed.
func (s *TemplateSet) Templates() []*tpl.Template { return s.index().versions.Templates() }

// versionIndex makes a TemplateSet a ranked Templates (SetStore.Blobs).
func (s *TemplateSet) versionIndex() *versions.Index { return s.index().versions }
