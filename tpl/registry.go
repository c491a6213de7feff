// Package tpl holds templates and the registry that names them.
//
// A template declares the Variables Of Interest (VOIs) of a blob and the
// statistics kept for each; it compiles into a template blob, the exact
// bytes every blob made from it starts as. The registry gives templates slot
// ids (0, 1, 2, ... in order of creation, as FreeBSD's stats_tpl_alloc does)
// and finds them by name and/or hash; the spec strings `"NAME":HASH` name a
// template across hosts.
//
// A Registry is safe for concurrent use. Templates are never removed.
package tpl

import (
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/statsblob/statsblob/internal/abi"
	"github.com/statsblob/statsblob/voi"
)

// MaxNameLen is the longest template name, in bytes (TPL_MAX_NAME_LEN).
const MaxNameLen = abi.MaxNameLen

// Registry is a set of templates with slot ids. The zero value is an empty
// registry ready to use; Default is the process-wide one. A nil *Registry
// is an empty registry that cannot grow: lookups find nothing and New
// fails. No function of this module falls back to Default: code that
// wants it passes it.
type Registry struct {
	mu   sync.RWMutex
	tpls []*Template
}

// Default is the process-wide registry, the counterpart of the C's global
// template list. Libraries that need isolation (tests, multi-tenant
// collectors) use NewRegistry.
var Default = NewRegistry()

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{} }

// New allocates a template named name (stats_tpl_alloc) and gives it the
// next slot id. Names longer than MaxNameLen bytes are invalid
// (voi.ErrInvalid); a name already registered gives voi.ErrExists. An
// empty name is valid, as in the C: lookups find such a template only by
// its hash (see package sample).
func (r *Registry) New(name string) (*Template, error) {
	if len(name) > MaxNameLen {
		return nil, fmt.Errorf("tpl: name of %d bytes exceeds %d: %w", len(name), MaxNameLen, voi.ErrInvalid)
	}
	if r == nil {
		return nil, fmt.Errorf("tpl: template %q: nil registry: %w", name, voi.ErrInvalid)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.lookupLocked(name, true, 0) >= 0 {
		return nil, fmt.Errorf("tpl: template %q: %w", name, voi.ErrExists)
	}
	t := newTemplate(r, len(r.tpls), name)
	r.tpls = append(r.tpls, t)
	return t, nil
}

// Len returns the number of registered templates.
func (r *Registry) Len() int {
	if r == nil {
		return 0
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.tpls)
}

// ByID returns the template with slot id id, or an error wrapping
// voi.ErrNotFound.
func (r *Registry) ByID(id int) (*Template, error) {
	if r == nil || id < 0 {
		return nil, fmt.Errorf("tpl: no template with id %d: %w", id, voi.ErrNotFound)
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	if id >= len(r.tpls) {
		return nil, fmt.Errorf("tpl: no template with id %d: %w", id, voi.ErrNotFound)
	}
	return r.tpls[id], nil
}

// LookupName returns the slot id of the newest template named name whose
// hash is hash (any hash when hash is 0), as stats_tpl_fetch_allocid(name,
// hash) does, or an error wrapping voi.ErrNoTemplate.
func (r *Registry) LookupName(name string, hash uint32) (int, error) {
	if id := r.lookup(name, true, hash); id >= 0 {
		return id, nil
	}
	return -1, fmt.Errorf("tpl: no template %q with hash %d: %w", name, hash, voi.ErrNoTemplate)
}

// LookupHash returns the slot id of the newest template whose hash is hash
// (stats_tpl_fetch_allocid(NULL, hash)), or an error wrapping
// voi.ErrNoTemplate.
func (r *Registry) LookupHash(hash uint32) (int, error) {
	if id := r.lookup("", false, hash); id >= 0 {
		return id, nil
	}
	return -1, fmt.Errorf("tpl: no template with hash %d: %w", hash, voi.ErrNoTemplate)
}

// lookup is lookupLocked under the read lock; -1 for a nil r.
func (r *Registry) lookup(name string, byName bool, hash uint32) int {
	if r == nil {
		return -1
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.lookupLocked(name, byName, hash)
}

// ByHash returns the newest template whose hash is hash (see LookupHash).
func (r *Registry) ByHash(hash uint32) (*Template, error) {
	id, err := r.LookupHash(hash)
	if err != nil {
		return nil, err
	}
	return r.ByID(id)
}

func (r *Registry) lookupLocked(name string, byName bool, hash uint32) int {
	for i := len(r.tpls) - 1; i >= 0; i-- {
		t := r.tpls[i]
		t.mu.RLock()
		h := t.hash
		t.mu.RUnlock()
		if byName {
			if t.name == name && (hash == 0 || hash == h) {
				return i
			}
		} else if hash == h {
			return i
		}
	}
	return -1
}

// List returns the spec strings of all templates in slot order joined by
// commas, as the kern.stats.templates sysctl prints them.
func (r *Registry) List() string {
	if r == nil {
		return ""
	}
	r.mu.RLock()
	tpls := r.tpls
	r.mu.RUnlock()
	var sb strings.Builder
	for i, t := range tpls {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(t.Spec())
	}
	return sb.String()
}

// Resolve finds the template named by a spec string in any of the forms the
// C's sample-rates parser accepts: `"NAME":HASH`, `NAME:HASH`, `"NAME"`,
// `NAME` or `:HASH` (surrounding double quotes are optional, a hash of 0
// matches any). It returns an error wrapping voi.ErrInvalid for a malformed
// spec and voi.ErrNoTemplate when nothing matches.
func (r *Registry) Resolve(spec string) (*Template, error) {
	name, hash, err := ParseSpec(spec)
	if err != nil {
		return nil, err
	}
	var id int
	if name == "" {
		id, err = r.LookupHash(hash)
	} else {
		id, err = r.LookupName(name, hash)
	}
	if err != nil {
		return nil, err
	}
	return r.ByID(id)
}

// ParseSpec splits a template spec string (see Registry.Resolve) into a
// name (without quotes; empty for the `:HASH` form) and a hash (0 when
// absent). Malformed specs give an error wrapping voi.ErrInvalid.
func ParseSpec(spec string) (name string, hash uint32, err error) {
	bad := func(why string) (string, uint32, error) {
		return "", 0, fmt.Errorf("tpl: spec %q: %s: %w", spec, why, voi.ErrInvalid)
	}
	s := spec
	if i := strings.LastIndexByte(s, ':'); i >= 0 && !strings.Contains(s[i:], `"`) {
		h, perr := strconv.ParseUint(s[i+1:], 10, 32)
		if perr != nil {
			return bad("hash is not a 32-bit decimal number")
		}
		hash = uint32(h)
		s = s[:i]
	}
	if strings.HasPrefix(s, `"`) {
		if len(s) < 2 || !strings.HasSuffix(s, `"`) {
			return bad("unbalanced quotes")
		}
		s = s[1 : len(s)-1]
	}
	if strings.ContainsAny(s, "\",=") {
		return bad("name contains a quote, comma or '='")
	}
	if len(s) > MaxNameLen {
		return bad("name too long")
	}
	if s == "" && hash == 0 {
		return bad("neither name nor hash")
	}
	return s, hash, nil
}
