// Package family keeps a family of blobs keyed by label values, the
// statsblob counterpart of client_golang's HistogramVec: one template, a
// fixed list of label names, and one blob (or Sharded blob) per label set,
// created from the template the first time its values are asked for.
//
//	fam, err := family.New(t, []string{"method", "status"}, family.Options{})
//	b, err := fam.With("GET", "200") // a *blob.Sharded, the same one every call
//	err = b.UpdateU32(0, 180)
//
// With finds an existing label set without allocating or locking. A family holds at most
// Options.MaxSets label sets; past that With returns an error wrapping
// ErrTooManySets. Label names and values are checked once, when a set is
// created, against what the collector and Prometheus accept.
//
// Snapshot takes a snapshot of every label set, which package ship sends
// with its labels.
package family

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// DefaultMaxSets is the bound on label sets of Options.MaxSets 0.
const DefaultMaxSets = 1000

// MaxValueLen is the longest label value in bytes (the collector's limit).
const MaxValueLen = 128

// ErrTooManySets is wrapped by With's error for a new label set in a family
// that already holds Options.MaxSets of them.
var ErrTooManySets = errors.New("too many label sets")

// Member is the type of a family's blobs: *blob.Sharded (New), safe for
// concurrent updates, or *blob.Blob (NewBlobs), for writers that hold
// Options.Locker.
type Member interface{ *blob.Blob | *blob.Sharded }

// Options configures a family. The zero value is usable.
type Options struct {
	// MaxSets bounds the number of label sets (0: DefaultMaxSets).
	MaxSets int
	// Shards is the number of shards of each Sharded blob (0: the
	// default of blob.NewSharded). NewBlobs ignores it.
	Shards int
	// Clock is the blobs' time source (nil: blob.WallClock).
	Clock func() int64
	// Control, if not nil, is attached to every blob of the family
	// (blob.Control): one switch turns a VOI off in all label sets.
	Control *blob.Control
	// Locker, if not nil, is held while Snapshot snapshots the blobs. A
	// family of plain blobs (NewBlobs) updated on a goroutine other than
	// the one that calls Snapshot needs one, and its writers hold it
	// around their updates; Sharded blobs do not.
	Locker sync.Locker
}

// Family is a set of blobs of one template, one per label set. It is safe
// for concurrent use; the zero value is not usable (use New or NewBlobs),
// and a Family must not be copied.
type Family[M Member] struct {
	t     *tpl.Template
	names []string
	opts  Options
	newM  func() M
	snapM func(M, bool) (*blob.Blob, error)
	// read is a map of the sets that With reads without a lock; it is
	// replaced, never modified. sets holds every set (read's and newer
	// ones) under mu; after as many lookups have missed read as sets
	// holds, read becomes a copy of sets (sync.Map's scheme, typed), so
	// copying costs O(1) per miss and lookups of an existing set take no
	// lock: no shared cache line written per With, as an RWMutex's read
	// lock would.
	read   atomic.Pointer[map[string]*set[M]]
	mu     sync.Mutex
	sets   map[string]*set[M]
	misses int
	order  []*set[M] // creation order
}

type set[M Member] struct {
	values []string
	m      M
}

// Snap is one label set's snapshot: its label values (in the order of the
// family's names; do not modify them), the snapshot, and the error of a
// Sharded snapshot (an overflow counted in the blob, see
// blob.Sharded.Snapshot; the blob is there anyway).
type Snap struct {
	Values []string
	Blob   *blob.Blob
	Err    error
}

// New returns a family of Sharded blobs of template t, keyed by the values
// of the label names. Errors wrap voi.ErrInvalid: a nil template, no
// names, a name Prometheus does not accept, a reserved one (le, quantile,
// bucket), or one given twice; or a negative option.
func New(t *tpl.Template, names []string, opts Options) (*Family[*blob.Sharded], error) {
	f, err := newFamily[*blob.Sharded](t, names, opts)
	if err != nil {
		return nil, err
	}
	f.newM = func() *blob.Sharded {
		s := blob.NewSharded(t, opts.Shards, opts.Clock)
		s.SetControl(opts.Control)
		return s
	}
	f.snapM = func(s *blob.Sharded, reset bool) (*blob.Blob, error) { return s.Snapshot(reset) }
	return f, nil
}

// NewBlobs is New for a family of plain blobs (see Options.Locker).
func NewBlobs(t *tpl.Template, names []string, opts Options) (*Family[*blob.Blob], error) {
	f, err := newFamily[*blob.Blob](t, names, opts)
	if err != nil {
		return nil, err
	}
	f.newM = func() *blob.Blob {
		b := blob.New(t, blob.NewEnv(opts.Clock, 1))
		b.SetControl(opts.Control)
		return b
	}
	f.snapM = func(b *blob.Blob, reset bool) (*blob.Blob, error) { return b.Snapshot(reset), nil }
	return f, nil
}

func newFamily[M Member](t *tpl.Template, names []string, opts Options) (*Family[M], error) {
	if t == nil {
		return nil, fmt.Errorf("family: no template: %w", voi.ErrInvalid)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("family: no label names: %w", voi.ErrInvalid)
	}
	if opts.MaxSets < 0 || opts.Shards < 0 {
		return nil, fmt.Errorf("family: negative MaxSets or Shards: %w", voi.ErrInvalid)
	}
	if opts.MaxSets == 0 {
		opts.MaxSets = DefaultMaxSets
	}
	for i, n := range names {
		if err := CheckName(n); err != nil {
			return nil, err
		}
		for _, m := range names[:i] {
			if m == n {
				return nil, fmt.Errorf("family: label %q given twice: %w", n, voi.ErrInvalid)
			}
		}
	}
	f := &Family[M]{t: t, names: append([]string(nil), names...), opts: opts, sets: map[string]*set[M]{}}
	f.read.Store(&map[string]*set[M]{})
	return f, nil
}

// CheckName returns nil for a label name the collector and Prometheus
// accept, else an error wrapping voi.ErrInvalid: the name must match
// [a-zA-Z_][a-zA-Z0-9_]*, not start with "__", and not be one the exporters
// use (le, quantile, bucket).
func CheckName(n string) error {
	ok := n != "" && !strings.HasPrefix(n, "__")
	for i := 0; ok && i < len(n); i++ {
		c := n[i]
		ok = c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9'
	}
	if !ok {
		return fmt.Errorf("family: label name %q: %w", n, voi.ErrInvalid)
	}
	switch n {
	case "le", "quantile", "bucket":
		return fmt.Errorf("family: label name %q is reserved: %w", n, voi.ErrInvalid)
	}
	return nil
}

// CheckValue returns nil for a label value the collector accepts, else an
// error wrapping voi.ErrInvalid: not empty, valid UTF-8, at most
// MaxValueLen bytes.
func CheckValue(v string) error {
	switch {
	case v == "":
		return fmt.Errorf("family: empty label value: %w", voi.ErrInvalid)
	case len(v) > MaxValueLen:
		return fmt.Errorf("family: label value %.40q...: over %d bytes: %w", v, MaxValueLen, voi.ErrInvalid)
	case !utf8.ValidString(v):
		return fmt.Errorf("family: label value %q is not valid UTF-8: %w", v, voi.ErrInvalid)
	}
	return nil
}

// sep separates the values in a key. It never occurs in valid UTF-8, so
// the key of valid values holds exactly len(names)-1 of them, and no
// other list of as many values has the same key.
const sep = 0xff

// With returns the blob of the label set values (one value per name, in
// the order of the names), creating it from the template on first use.
// Finding an existing set does not allocate (for keys up to 256 bytes). Errors:
// a wrong number of values or a value CheckValue refuses (voi.ErrInvalid),
// a new set past MaxSets (ErrTooManySets); the family is unchanged.
func (f *Family[M]) With(values ...string) (M, error) {
	var buf [256]byte
	key := buf[:0]
	for i, v := range values {
		if i > 0 {
			key = append(key, sep)
		}
		key = append(key, v...)
	}
	s := (*f.read.Load())[string(key)] // no allocation: the compiler looks up by the bytes
	if s != nil && len(values) == len(f.names) {
		return s.m, nil
	}
	return f.create(string(key), values)
}

// create adds the label set of values, or returns the one another
// goroutine added first.
func (f *Family[M]) create(key string, values []string) (M, error) {
	var zero M
	if len(values) != len(f.names) {
		return zero, fmt.Errorf("family %s: %d label values for %d names %v: %w", f.t.Name(), len(values), len(f.names), f.names, voi.ErrInvalid)
	}
	for i, v := range values {
		if err := CheckValue(v); err != nil {
			return zero, fmt.Errorf("family %s: label %q: %w", f.t.Name(), f.names[i], err)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.misses++; f.misses >= len(f.sets) {
		defer f.promote()
	}
	if s := f.sets[key]; s != nil {
		return s.m, nil
	}
	// A copy of values, so that the caller's (variadic) slice does not
	// escape and With allocates nothing when it finds the set.
	own := append([]string(nil), values...)
	if len(f.sets) >= f.opts.MaxSets {
		return zero, fmt.Errorf("family %s: new label set %q: %d sets, at most %d: %w", f.t.Name(), own, len(f.sets), f.opts.MaxSets, ErrTooManySets)
	}
	s := &set[M]{values: own, m: f.newM()}
	f.sets[key] = s
	f.order = append(f.order, s)
	return s.m, nil
}

// promote publishes a copy of sets as read; f.mu is held.
func (f *Family[M]) promote() {
	m := make(map[string]*set[M], len(f.sets))
	for k, s := range f.sets {
		m[k] = s
	}
	f.read.Store(&m)
	f.misses = 0
}

// Names returns the family's label names (a copy).
func (f *Family[M]) Names() []string { return append([]string(nil), f.names...) }

// Template returns the family's template.
func (f *Family[M]) Template() *tpl.Template { return f.t }

// Len returns the number of label sets.
func (f *Family[M]) Len() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.sets)
}

// Snapshot returns a snapshot of every label set, in the order they were
// created, and if reset is true resets them (Blob.Snapshot,
// Sharded.Snapshot), holding Options.Locker if set. The values of a Snap
// are the family's own: do not modify them.
func (f *Family[M]) Snapshot(reset bool) []Snap {
	f.mu.Lock()
	sets := f.order[:len(f.order):len(f.order)] // append-only: this prefix never changes
	f.mu.Unlock()
	out := make([]Snap, len(sets))
	if f.opts.Locker != nil {
		f.opts.Locker.Lock()
		defer f.opts.Locker.Unlock()
	}
	for i, s := range sets {
		b, err := f.snapM(s.m, reset)
		if err != nil {
			err = fmt.Errorf("family %s %q: %w", f.t.Name(), s.values, err)
		}
		out[i] = Snap{Values: s.values, Blob: b, Err: err}
	}
	return out
}

// ResetVOI resets VOI id's statistics in every blob of the family
// (blob.Blob.ResetVOI, under Options.Locker if set), so that a family can
// be a statdef.Resetter. Errors are the first blob's (voi.ErrInvalid for
// an id that names no VOI); the blobs before it are reset.
func (f *Family[M]) ResetVOI(id int32) error {
	f.mu.Lock()
	sets := f.order[:len(f.order):len(f.order)]
	f.mu.Unlock()
	if f.opts.Locker != nil {
		f.opts.Locker.Lock()
		defer f.opts.Locker.Unlock()
	}
	for _, s := range sets {
		if err := any(s.m).(interface{ ResetVOI(int32) error }).ResetVOI(id); err != nil {
			return fmt.Errorf("family %s %q: %w", f.t.Name(), s.values, err)
		}
	}
	return nil
}
