package natsjs

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/export"
	"github.com/statsblob/statsblob/export/aggregate"
	"github.com/statsblob/statsblob/export/internal/versions"
	"github.com/statsblob/statsblob/ship"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// SetStore is the Store of a collector: each owned partition's aggregates
// are an aggregate.Set (wide aggregates, MergeAll-quality digests), its
// state the Set's
// (AppendState/LoadState). A SetStore is an export.Source of the owned
// partitions' aggregates: a partition that moves away stops being
// exported at once. Over a TemplateSet, it tells apart the aggregates of
// versions of a template that share a label set, as the HTTP collector
// does (see the package documentation, Versions). It is safe for
// concurrent use.
type SetStore struct {
	reg Templates
	cfg aggregate.Config

	mu    sync.RWMutex
	parts map[int]*setPart
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
// Its states are of version 1 (cfg.StateV1 is set), which collectors of
// every version read, so that a partition moves between collectors of
// two versions: a partition's Set adds without a sender check (the
// consumer makes it) and never expires an aggregate, so the aggregates'
// last-add times a later version keeps would tell nothing.
func NewSetStore(reg Templates, cfg aggregate.Config) *SetStore {
	cfg.StateV1 = true
	return &SetStore{reg: reg, cfg: cfg, parts: map[int]*setPart{}}
}

type setPart struct {
	s   *SetStore
	p   int
	set *aggregate.Set
}

// Open makes partition p's Set, from its state if there is one.
func (s *SetStore) Open(p int, state []byte) (Partition, error) {
	set, err := aggregate.New(s.cfg, time.Now())
	if err != nil {
		return nil, err
	}
	if state != nil {
		if err := set.LoadState(state, s.reg.ByHash); err != nil {
			return nil, fmt.Errorf("natsjs: partition %d: %w", p, err)
		}
	}
	sp := &setPart{s: s, p: p, set: set}
	s.mu.Lock()
	s.parts[p] = sp
	s.mu.Unlock()
	return sp, nil
}

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
	t, err := sp.s.reg.ByHash(m.TplHash)
	if err != nil {
		return fmt.Errorf("%w %08x: %w", ErrUnknownTemplate, m.TplHash, err)
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
	return sp.set.Add(aggregateKey(m.TplHash, labels), t, labels, b)
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

// Save returns the Set's state.
func (sp *setPart) Save() ([]byte, error) { return sp.set.AppendState(nil), nil }

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
