package natsjs

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/export"
	"github.com/statsblob/statsblob/export/aggregate"
	"github.com/statsblob/statsblob/export/internal/hashfmt"
	"github.com/statsblob/statsblob/export/internal/versions"
	"github.com/statsblob/statsblob/ship"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// SetStore is the Store of a collector: each owned partition's aggregates
// are an aggregate.Set (wide aggregates, MergeAll-quality digests), its
// state the templates of its aggregates and the Set's state
// (AppendState/LoadState). A SetStore is an export.Source of the owned
// partitions' aggregates: a partition that moves away stops being
// exported at once. Over a TemplateSet, it tells apart the aggregates of
// versions of a template that share a label set, as the HTTP collector
// does (see the package documentation, Versions). It is safe for
// concurrent use.
//
// A partition's state (the bytes the consumer stores for it) carries
// the templates of its aggregates, each once as its JSON form with its
// hash, ahead of the Set's state: a collector whose templates file no
// longer holds one
// (a version dropped since) still opens, merges and exports the
// partition, and learns the template from the state, as if its file
// held it below its own versions of the name (a TemplateSet ranks it
// so; over another Templates the SetStore keeps it itself): the
// messages of that template are merged from then on, and every state
// the collector writes carries it again. Learned counts them, and Logf
// logs each.
type SetStore struct {
	reg Templates
	cfg aggregate.Config

	// Logf, if not nil, logs each template learned from a partition's
	// state. Set it before the store's first use.
	Logf func(format string, args ...any)

	mu      sync.RWMutex
	parts   map[int]*setPart
	own     map[uint32]*tpl.Template // learned from states, for a reg that cannot learn
	learned atomic.Int64
}

// Templates finds a blob's template by its hash: a *tpl.Registry (one
// version of each name), or a TemplateSet, which learns templates as it
// goes (the command's SIGHUP) and ranks versions of a name side by side.
// Its error for a hash it does not know wraps voi.ErrNoTemplate. It must
// be safe for concurrent use.
type Templates interface {
	ByHash(hash uint32) (*tpl.Template, error)
}

// NewSetStore returns a SetStore whose blobs' templates are found in reg
// (by hash) and whose Sets are configured by cfg. A template reg learns
// later is found from then on: the messages waiting for it are merged.
// Its Sets' states are of version 1 (cfg.StateV1 is set): a
// partition's Set adds without a sender check (the consumer makes it)
// and never expires an aggregate, so the aggregates' last-add times a
// later version keeps would tell nothing. In a partition's state the
// Set's state follows the templates the partition carries (see
// SetStore): a collector of a version from before partitions carried
// templates cannot open a partition a later one stored, and leaves it to
// the others (upgrade all the collectors of a stream; a later version
// reads the earlier states).
func NewSetStore(reg Templates, cfg aggregate.Config) *SetStore {
	cfg.StateV1 = true
	return &SetStore{reg: reg, cfg: cfg, parts: map[int]*setPart{}}
}

type setPart struct {
	s   *SetStore
	p   int
	set *aggregate.Set
	// tpls is the templates of the Set's aggregates (a partition's Set
	// never drops one), and json their JSON forms, made once: what Save
	// writes before the Set's state. The worker alone uses them.
	tpls map[uint32]*tpl.Template
	json map[uint32][]byte
}

// Open makes partition p's Set, from its state if there is one. A
// template of the state's aggregates that the store does not know is
// taken from the state, and learned. Errors: the state's bytes refused
// (wrapping aggregate.ErrState), or an aggregate of a template neither
// the store nor the state has (a state of an earlier version, which
// carries none: wrapping voi.ErrNoTemplate too).
func (s *SetStore) Open(p int, state []byte) (Partition, error) {
	sp := &setPart{s: s, p: p, tpls: map[uint32]*tpl.Template{}, json: map[uint32][]byte{}}
	set, err := aggregate.New(s.cfg, time.Now())
	if err != nil {
		return nil, err
	}
	if state != nil {
		if set, err = sp.load(set, state); err != nil {
			return nil, fmt.Errorf("natsjs: partition %d: %w", p, err)
		}
	}
	sp.set = set
	s.mu.Lock()
	s.parts[p] = sp
	s.mu.Unlock()
	return sp, nil
}

// load loads a partition's bytes into set, a new Set, learning the
// templates it takes from them, and returns the Set that holds them: set,
// or a new one if it had to load again.
func (sp *setPart) load(set *aggregate.Set, state []byte) (*aggregate.Set, error) {
	carried, rest, err := readSetState(state)
	if err != nil {
		return nil, err
	}
	byHash := make(map[uint32]carriedTpl, len(carried))
	for _, c := range carried {
		byHash[c.hash] = c
	}
	taken := map[uint32]*tpl.Template{} // from the state
	var fresh []*tpl.Template           // in the state's order of them
	lookup := func(hash uint32) (*tpl.Template, error) {
		t, err := sp.s.lookup(hash)
		if err != nil {
			if t = taken[hash]; t == nil {
				c, ok := byHash[hash]
				if !ok {
					return nil, err
				}
				ct, cerr := c.template()
				if cerr != nil {
					return nil, fmt.Errorf("%w (the state's copy: %w)", err, cerr)
				}
				t, taken[hash] = ct, ct
			}
		}
		sp.tpls[hash] = t
		return t, nil
	}
	if err := set.LoadState(rest, lookup); err != nil {
		return nil, err
	}
	if len(taken) == 0 {
		return set, nil
	}
	for _, c := range carried {
		if t := taken[c.hash]; t != nil {
			fresh = append(fresh, t)
		}
	}
	if known := sp.s.learn(sp.p, fresh); !slices.Equal(known, fresh) {
		// Another partition learned one of them first: load again with
		// the store's, one template per hash.
		clear(sp.tpls)
		clear(taken)
		byHash = nil
		if set, err = aggregate.New(sp.s.cfg, time.Now()); err == nil {
			err = set.LoadState(rest, lookup)
		}
		if err != nil {
			return nil, err
		}
	}
	return set, nil
}

// lookup finds a template by hash: reg's, or one learned from a state.
// Its error for neither is reg's.
func (s *SetStore) lookup(hash uint32) (*tpl.Template, error) {
	t, err := s.reg.ByHash(hash)
	if err == nil {
		return t, nil
	}
	s.mu.RLock()
	t = s.own[hash]
	s.mu.RUnlock()
	if t != nil {
		return t, nil
	}
	return nil, err
}

// learner is a Templates that learns templates, ranked below those it
// knows (TemplateSet).
type learner interface {
	learn(ts []*tpl.Template) ([]*tpl.Template, int)
}

// learn makes the templates of ts, taken from partition p's state, known
// to the store, and returns the store's template of each of their
// hashes (ts's, unless another partition's state taught one first).
func (s *SetStore) learn(p int, ts []*tpl.Template) []*tpl.Template {
	var known []*tpl.Template
	if l, ok := s.reg.(learner); ok {
		known, _ = l.learn(ts)
	} else {
		s.mu.Lock()
		if s.own == nil {
			s.own = map[uint32]*tpl.Template{}
		}
		known = make([]*tpl.Template, len(ts))
		for i, t := range ts {
			if k := s.own[t.Hash()]; k != nil {
				known[i] = k
				continue
			}
			s.own[t.Hash()] = t
			known[i] = t
		}
		s.mu.Unlock()
	}
	for i, t := range ts {
		if known[i] == t {
			s.learned.Add(1)
			if s.Logf != nil {
				s.Logf("natsjs: partition %d: template %q (hash %s) learned from the partition's state: its aggregates are exported and its messages merged, though the templates do not hold it",
					p, t.Name(), hashfmt.String(t.Hash()))
			}
		}
	}
	return known
}

// Learned returns how many templates the store learned from partition
// states (templates its Templates did not know when a partition was
// opened: versions dropped from the templates file, say).
func (s *SetStore) Learned() int { return int(s.learned.Load()) }

// Label limits of a message: those the HTTP collector applies by
// default (its -max-labels and -max-label-bytes).
const (
	MaxLabels     = export.DefaultMaxLabels     // labels of a message
	MaxLabelBytes = export.DefaultMaxLabelBytes // bytes of a label's name, and of its value
)

// Merge adds a message's blob to its aggregate. A blob of a template the
// registry does not have (yet) is an error wrapping ErrUnknownTemplate
// (and voi.ErrNoTemplate): the message waits for it. A blob that is no
// valid blob is refused, and so are labels the exports cannot carry
// (export.CheckPostedLabels) or past MaxLabels and MaxLabelBytes: merged,
// they would take an aggregate that no export shows. Those errors wrap
// voi.ErrInvalid.
func (sp *setPart) Merge(m Message) error {
	labels := exportLabels(m.Labels)
	if err := checkLabels(labels); err != nil {
		return err
	}
	t, err := sp.s.lookup(m.TplHash)
	if err != nil {
		return fmt.Errorf("%w %s: %w", ErrUnknownTemplate, hashfmt.String(m.TplHash), err)
	}
	b, err := blob.FromBytes(m.Body, blob.NewEnv(nil, 1))
	if err != nil {
		return err
	}
	if err := b.CheckTemplate(t); err != nil {
		return err
	}
	// No check by sender and sequence here (aggregate.Set.Once): the
	// consumer makes it, in stream order (redeliveries come out of order,
	// which a high-water mark kept here would take for duplicates).
	if err := sp.set.Add(aggregateKey(m.TplHash, labels), t, labels, b); err != nil {
		return err
	}
	if sp.tpls[m.TplHash] == nil {
		sp.tpls[m.TplHash] = t
	}
	return nil
}

// exportLabels converts a message's labels.
func exportLabels(ls []ship.Label) []export.Label {
	out := make([]export.Label, len(ls))
	for i, l := range ls {
		out[i] = export.Label{Name: l.Name, Value: l.Value}
	}
	return out
}

// checkLabels refuses labels no export can carry or past the limits.
func checkLabels(ls []export.Label) error {
	if len(ls) > MaxLabels {
		return fmt.Errorf("natsjs: %d labels, at most %d: %w", len(ls), MaxLabels, voi.ErrInvalid)
	}
	for _, l := range ls {
		if len(l.Name) > MaxLabelBytes || len(l.Value) > MaxLabelBytes {
			return fmt.Errorf("natsjs: label %.40q: name or value over %d bytes: %w", l.Name, MaxLabelBytes, voi.ErrInvalid)
		}
	}
	return export.CheckPostedLabels(ls)
}

// aggregateKey names a template's label set: the hash, then each label's
// name and value with their lengths, so that no value can mimic another
// label set.
func aggregateKey(hash uint32, labels []export.Label) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%08x", hash)
	for _, l := range labels {
		fmt.Fprintf(&b, ";%d:%s=%d:%s", len(l.Name), l.Name, len(l.Value), l.Value)
	}
	return b.String()
}

// Save returns the partition's bytes: its aggregates' templates, then
// the Set's state (the layout is setStateMagic's doc).
func (sp *setPart) Save() ([]byte, error) {
	var order []*tpl.Template
	if r, ok := sp.s.reg.(ranked); ok && len(sp.tpls) > 0 {
		for _, t := range r.versionIndex().Templates() {
			if sp.tpls[t.Hash()] != nil {
				order = append(order, t)
			}
		}
	}
	if len(order) < len(sp.tpls) { // (not all ranked: a store's own, or no ranking)
		in := make(map[uint32]bool, len(order))
		for _, t := range order {
			in[t.Hash()] = true
		}
		for _, h := range slices.Sorted(maps.Keys(sp.tpls)) {
			if !in[h] {
				order = append(order, sp.tpls[h])
			}
		}
	}
	carried := make([]carriedTpl, len(order))
	for i, t := range order {
		j := sp.json[t.Hash()]
		if j == nil {
			var err error
			if j, err = t.MarshalJSON(); err != nil {
				return nil, fmt.Errorf("natsjs: partition %d: template %s: %w", sp.p, hashfmt.String(t.Hash()), err)
			}
			sp.json[t.Hash()] = j
		}
		carried[i] = carriedTpl{hash: t.Hash(), json: j}
	}
	return sp.set.AppendState(appendSetState(nil, carried)), nil
}

// Close stops exporting the partition.
func (sp *setPart) Close() {
	sp.s.mu.Lock()
	defer sp.s.mu.Unlock()
	if sp.s.parts[sp.p] == sp {
		delete(sp.s.parts, sp.p)
	}
}

// ranked is a Templates that ranks the versions of a name (TemplateSet).
type ranked interface {
	versionIndex() *versions.Index
}

// Blobs returns the aggregates of the owned partitions (export.Source),
// by partition, each partition's sorted by template hash and labels.
// Over a TemplateSet, where aggregates of several versions of a template
// share a label set among them (in one partition or in several), those of
// each version but the newest of its name (TemplateSet.Add) carry
// export.VersionLabel, the hash of their template.
func (s *SetStore) Blobs() []export.Named {
	s.mu.RLock()
	ps := make([]int, 0, len(s.parts))
	for p := range s.parts {
		ps = append(ps, p)
	}
	slices.Sort(ps)
	parts := make([]*setPart, len(ps))
	for i, p := range ps {
		parts[i] = s.parts[p]
	}
	s.mu.RUnlock()
	var out []export.Named
	for _, sp := range parts {
		out = append(out, sp.set.Blobs()...)
	}
	if r, ok := s.reg.(ranked); ok {
		out = r.versionIndex().Label(out)
	}
	return out
}

// Partitions returns the partitions held, ascending.
func (s *SetStore) Partitions() []int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.Sorted(maps.Keys(s.parts))
}
