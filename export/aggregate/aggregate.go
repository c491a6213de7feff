// Package aggregate adds up the blobs a collector receives: per template
// and label set, per window, at the accuracy of one blob.MergeAll of all
// of them whatever their order of arrival, without ever refusing a valid
// blob because a fixed-width field of the sum would overflow, and with
// idempotent posts (a sender id and sequence number per post).
//
// How: an aggregate holds its blobs in the wide form of their template
// (tpl.Widen: 64-bit integer VOIs and histogram counters, TDGSTCLUST64
// digests with tpl.WideSlots times the slots). Posted blobs are queued and
// folded in batches (blob.Fold: every statistic added exactly, each
// t-digest merging the batch in one step) when the batch is full
// (Config.Batch), when the queues of all aggregates hold more than a
// memory budget (Config.PendingBytes), and at a snapshot that finds eight
// or more queued (a snapshot publishes the levels and the queue in one
// merge, which costs less than a fold and then a merge of the levels). The
// folded batches are kept as a binary counter of levels (level i holds
// 2^i batches; two full levels merge into the next), so a sample's
// centroid is merged again about log2(batches) times, and a snapshot
// merges the levels in one step. What passes even 64 bits saturates at
// the limit, is counted in the statistic's error count and in
// Stats.Saturated, and is never wrapped nor refused.
//
// Snapshots (Set.Blobs, Set.Rotate) return blobs of the wide template,
// which the export mapping reads as it reads the senders': same template
// name and VOI names, a different hash.
package aggregate

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/export"
	"github.com/statsblob/statsblob/export/internal/hashfmt"
	"github.com/statsblob/statsblob/export/internal/par"
	"github.com/statsblob/statsblob/ship"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// The headers that make a POST idempotent, as package ship sends them: the
// sender's id (1 to MaxSenderLen bytes of printable ASCII, the same for
// all of one sender's posts) and the message's sequence number (a uint64
// in decimal; see Once). A post without them is added every time it
// arrives. (The shipper's third header, Statsblob-Settled-Below, is not
// needed by the check Once makes.)
const (
	HeaderSender = ship.HeaderSender // "Statsblob-Sender"
	HeaderSeq    = ship.HeaderSeq    // "Statsblob-Seq"
	MaxSenderLen = 128
)

// Defaults of Config.
const (
	DefaultBatch         = 1024
	DefaultPendingBytes  = 64 << 20
	DefaultMaxSenders    = 100000
	DefaultMaxMarks      = 1 << 20 // 1,048,576: 10 aggregates for each of DefaultMaxSenders senders, or 104 senders on each of DefaultMaxAggregates
	DefaultMaxAggregates = 10000
	DefaultMarkAge       = 10 * time.Minute
)

// Errors of Add, usable with errors.Is.
var (
	// ErrLimit is a new aggregate beyond Config.MaxAggregates.
	ErrLimit = errors.New("aggregate: too many aggregates")
	// ErrTemplateLimit is a new aggregate beyond Config.MaxPerTemplate.
	ErrTemplateLimit = errors.New("aggregate: too many aggregates of one template")
)

// Config configures a Set. The zero value uses the defaults.
type Config struct {
	// Batch is how many blobs an aggregate queues before folding them
	// (0: DefaultBatch).
	Batch int
	// PendingBytes bounds the bytes of queued blobs of all aggregates:
	// past it, an Add folds its aggregate's queue at once (0:
	// DefaultPendingBytes). Queued blobs a State (Set.State) holds
	// count until it lets them go, even once their aggregate has folded
	// them.
	PendingBytes int64
	// MaxAggregates bounds the aggregates of a window (0:
	// DefaultMaxAggregates).
	MaxAggregates int
	// MaxPerTemplate bounds the aggregates of one template in a window
	// (0: MaxAggregates).
	MaxPerTemplate int
	// Now is the clock of the aggregates' last-add times (Expire; nil:
	// time.Now), but for AddAllAt's, which are given.
	Now func() time.Time
	// MaxSenders bounds the senders whose sequence numbers are kept; a
	// post of a new sender beyond it is merged without that check, and
	// counted (0: DefaultMaxSenders).
	MaxSenders int
	// MaxMarks bounds the sequence numbers kept, one per sender and
	// aggregate it posted to (see Once), over all senders: a message's
	// blobs whose number would be one more are merged without the check,
	// and counted (0: DefaultMaxMarks). A mark costs about 100 bytes, and
	// 13 in the state (AppendState; up to 19 if posted minutes before its
	// sender's latest post): its key is kept, and written, once for all
	// senders, its time against its sender's.
	MaxMarks int
	// MarkAge is how long at least a sender and its sequence number for
	// an aggregate are kept after its latest post there, however many
	// windows rotate meanwhile (they are also kept for two rotations): a
	// retry later than both is added again, so it should exceed the
	// senders' longest wait between retries (0: DefaultMarkAge, ten
	// minutes, over package ship's MaxRetryAfter and DefaultMaxBackoff).
	// The label sets the marks are of stay bounded however short the
	// windows: past twice MaxAggregates at a rotation, the marks of the
	// label sets posted to longest ago go first (Stats.MarksEvicted), so
	// the marks' keys are at most three windows' worth of label sets, as
	// with the two rotations alone. A state (AppendState) holds the
	// times and rotations counted: the marks LoadState loads age and go
	// as they would have without the state's write and load, the time
	// between counted.
	MarkAge time.Duration
	// OnMarksFull, if not nil, is called once for each message with blobs
	// merged without the check for want of MaxMarks.
	OnMarksFull func()
	// StateV1 makes AppendState (and State) write a state without
	// senders in version 1, in place of version 3, which adds the
	// aggregates' last-add times: a Set loaded from it takes the load's
	// time for them, and so keeps an idle aggregate past an Expire cutoff
	// by the time between the write and the load. For Sets that never
	// expire aggregates, whose last-add times would tell nothing (package
	// natsjs's partitions, which add without Once and wrap the state in
	// their own framing). A state with senders is written in version 3 in
	// any case.
	StateV1 bool
}

// Set is the aggregates of the current window. It is safe for concurrent
// use.
type Set struct {
	cfg Config

	// rot is held shared by Add for the whole of an add and exclusively
	// by Rotate, so that nothing lands in a window that has closed.
	rot sync.RWMutex
	cur *window

	wideMu sync.Mutex
	wide   map[*tpl.Template]*wideTpl

	pending atomic.Int64 // bytes queued in all aggregates

	sendMu  sync.Mutex
	senders map[string]*sender
	gen     atomic.Uint64 // windows rotated
	marks   markKeys      // the senders' marks: counted, their keys kept once

	saturated, duplicates, untracked, marksFull, marksEvicted, folds atomic.Uint64
}

// wideTpl is a template's wide form and an empty blob of each, the
// aggregates' starting points.
type wideTpl struct {
	wide   *tpl.Template
	narrow *blob.Blob // the template's own empty blob: what posted blobs must be compatible with
	empty  *blob.Blob // the wide template's empty blob
}

// window is the aggregates of one window.
type window struct {
	start  time.Time
	mu     sync.RWMutex // guards aggs and perTpl
	aggs   map[string]*group
	perTpl map[*tpl.Template]int // aggregates by template
}

func newWindow(start time.Time) *window {
	return &window{start: start, aggs: map[string]*group{}, perTpl: map[*tpl.Template]int{}}
}

// admit reports whether w may take new aggregates of the templates in
// fresh (how many of each) beyond the n it has. w.mu is held.
func (s *Set) admit(w *window, fresh map[*tpl.Template]int) error {
	total := 0
	for _, k := range fresh {
		total += k
	}
	if len(w.aggs)+total > s.cfg.MaxAggregates {
		return fmt.Errorf("%w: %d aggregates in this window and %d new, at most %d", ErrLimit, len(w.aggs), total, s.cfg.MaxAggregates)
	}
	for t, k := range fresh {
		if n := w.perTpl[t]; n+k > s.cfg.MaxPerTemplate {
			return fmt.Errorf("%w: %d aggregates of template hash %s in this window and %d new, at most %d",
				ErrTemplateLimit, n, hashfmt.String(t.Hash()), k, s.cfg.MaxPerTemplate)
		}
	}
	return nil
}

// group is the aggregate of one template's blobs with one label set.
type group struct {
	t      *tpl.Template // the senders' template
	w      *wideTpl
	labels []export.Label

	mu     sync.Mutex
	queue  []*blob.Blob // posted, not yet folded
	qbytes int64
	held   *queueHold // the part of queue States hold (Set.State), nil if none
	// levels[i] is nil or the fold of 2^i batches (a binary counter of
	// batches), so that a sample's centroid is merged again about
	// log2(batches) times, not once per batch. A level is never modified
	// once made (pub may be one).
	levels []*blob.Blob
	pub    *blob.Blob // the fold of all levels and the queue: published, never modified; nil when either changed
	blobs  uint64     // blobs added, folded or queued
	resets uint64     // ResetVOIs of it (with blobs, tells a State whether it changed)
	last   *blob.Blob // the last blob added: the next ones are compared with it

	lastAdd atomic.Int64 // the latest add's time, Unix nanoseconds (Expire), written under mu
}

// New returns an empty Set whose first window starts at start. Errors
// wrap voi.ErrInvalid: a negative setting.
func New(cfg Config, start time.Time) (*Set, error) {
	if cfg.Batch < 0 || cfg.PendingBytes < 0 || cfg.MaxAggregates < 0 || cfg.MaxPerTemplate < 0 || cfg.MaxSenders < 0 || cfg.MaxMarks < 0 || cfg.MarkAge < 0 {
		return nil, fmt.Errorf("aggregate: negative setting: %w", voi.ErrInvalid)
	}
	if cfg.Batch == 0 {
		cfg.Batch = DefaultBatch
	}
	if cfg.PendingBytes == 0 {
		cfg.PendingBytes = DefaultPendingBytes
	}
	if cfg.MaxAggregates == 0 {
		cfg.MaxAggregates = DefaultMaxAggregates
	}
	if cfg.MaxPerTemplate == 0 {
		cfg.MaxPerTemplate = cfg.MaxAggregates
	}
	if cfg.MaxSenders == 0 {
		cfg.MaxSenders = DefaultMaxSenders
	}
	if cfg.MaxMarks == 0 {
		cfg.MaxMarks = DefaultMaxMarks
	}
	if cfg.MarkAge == 0 {
		cfg.MarkAge = DefaultMarkAge
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Set{
		cfg:     cfg,
		cur:     newWindow(start),
		wide:    map[*tpl.Template]*wideTpl{},
		senders: map[string]*sender{},
		marks:   markKeys{max: cfg.MaxMarks},
	}, nil
}

// wideOf returns the wide form of t, made on first use.
func (s *Set) wideOf(t *tpl.Template) (*wideTpl, error) {
	s.wideMu.Lock()
	defer s.wideMu.Unlock()
	if w := s.wide[t]; w != nil {
		return w, nil
	}
	wt, err := tpl.Widen(t)
	if err != nil {
		return nil, err
	}
	w := &wideTpl{wide: wt, narrow: blob.New(t, blob.NewEnv(nil, 1)), empty: blob.New(wt, blob.NewEnv(nil, 1))}
	s.wide[t] = w
	return w, nil
}

// Add adds b, a blob of template t (decoded by blob.FromBytes), to the
// aggregate of key (the caller's name for t and labels; labels are
// exported with it) in the current window. Errors, after which nothing
// changed (a new aggregate is not made): one wrapping voi.ErrInvalid for
// a blob that does not have t's layout (blob.Compatible), ErrLimit for a
// new aggregate beyond MaxAggregates. Add keeps b: the caller must not
// modify it afterwards.
func (s *Set) Add(key string, t *tpl.Template, labels []export.Label, b *blob.Blob) error {
	return s.AddAt(key, t, labels, b, s.cfg.Now())
}

// AddAt is Add for a blob posted at time at, in place of Config.Now (see
// AddAllAt).
func (s *Set) AddAt(key string, t *tpl.Template, labels []export.Label, b *blob.Blob, at time.Time) error {
	s.rot.RLock()
	defer s.rot.RUnlock()
	a, err := s.aggregate(key, t, labels, b)
	if err != nil {
		return err
	}
	return a.add(s, b, at.UnixNano())
}

// Item is one blob of AddAll: as Add's arguments.
type Item struct {
	Key    string
	T      *tpl.Template
	Labels []export.Label
	B      *blob.Blob
}

// AddAll adds the items as Add does, all in the current window: if a new
// aggregate would pass MaxAggregates, nothing is added (ErrLimit). The
// caller checks first that every blob has its template's layout (for
// example with blob.Blob.CheckTemplate): a blob that has not is refused
// as Add refuses it (the error names it), the items before it added, or
// none if its aggregate is new (a new aggregate is made only for a blob
// that fits it).
func (s *Set) AddAll(items []Item) error { return s.AddAllAt(items, s.cfg.Now()) }

// AddAllAt is AddAll for items posted at time at, in place of
// Config.Now: the last-add time their aggregates take (but one added to
// at a later time keeps its own), from which Expire counts. A log replayed at a
// restart (package collector's -data-dir) gives each post the time it
// was added at when it arrived, as OnceAllAt gives its marks, so that
// an idle label set expires when it would have without the restart:
// with the restart's time it outlived its expiry by the time between
// the post and the restart.
func (s *Set) AddAllAt(items []Item, at time.Time) error {
	now := at.UnixNano()
	s.rot.RLock()
	defer s.rot.RUnlock()
	aggs := make([]*group, len(items))
	win := s.cur
	missing := false
	win.mu.RLock()
	for i, it := range items {
		aggs[i] = win.aggs[it.Key]
		missing = missing || aggs[i] == nil
	}
	win.mu.RUnlock()
	if missing {
		ws := make([]*wideTpl, len(items))
		for i, it := range items {
			if aggs[i] == nil {
				w, err := s.wideOf(it.T)
				if err != nil {
					return err
				}
				if err := blob.Compatible(w.narrow, it.B); err != nil {
					return fmt.Errorf("aggregate: item %d: %w", i, err)
				}
				ws[i] = w
			}
		}
		win.mu.Lock()
		fresh := map[string]bool{}
		perTpl := map[*tpl.Template]int{}
		for i, it := range items {
			if aggs[i] == nil && win.aggs[it.Key] == nil && !fresh[it.Key] {
				fresh[it.Key] = true
				perTpl[it.T]++
			}
		}
		if err := s.admit(win, perTpl); err != nil {
			win.mu.Unlock()
			return err
		}
		for i, it := range items {
			if aggs[i] != nil {
				continue
			}
			if a := win.aggs[it.Key]; a != nil {
				aggs[i] = a
				continue
			}
			aggs[i] = &group{t: it.T, w: ws[i], labels: it.Labels, pub: ws[i].empty}
			win.aggs[it.Key] = aggs[i]
			win.perTpl[it.T]++
		}
		win.mu.Unlock()
	}
	for i, it := range items {
		if err := aggs[i].add(s, it.B, now); err != nil {
			return fmt.Errorf("aggregate: item %d: %w", i, err)
		}
	}
	return nil
}

// aggregate finds the aggregate of key, or creates it for b if b fits t
// (so that a refused blob leaves no empty aggregate); the caller holds rot.
func (s *Set) aggregate(key string, t *tpl.Template, labels []export.Label, b *blob.Blob) (*group, error) {
	win := s.cur
	win.mu.RLock()
	a := win.aggs[key]
	win.mu.RUnlock()
	if a != nil {
		return a, nil
	}
	w, err := s.wideOf(t)
	if err != nil {
		return nil, err
	}
	if err := blob.Compatible(w.narrow, b); err != nil {
		return nil, err
	}
	win.mu.Lock()
	defer win.mu.Unlock()
	if a = win.aggs[key]; a != nil {
		return a, nil
	}
	if err := s.admit(win, map[*tpl.Template]int{t: 1}); err != nil {
		return nil, err
	}
	a = &group{t: t, w: w, labels: labels, pub: w.empty}
	win.aggs[key] = a
	win.perTpl[t]++
	return a, nil
}

// add checks b, added at Unix nanoseconds at, against the aggregate's
// template and queues it, folding the queue when it is full or the Set's
// queues are over budget. The aggregate's last-add time is the latest of
// its adds' (adds given their times, AddAllAt, may come out of order).
func (a *group) add(s *Set, b *blob.Blob, at int64) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.check(b); err != nil {
		return err
	}
	a.queue = append(a.queue, b)
	if a.blobs == 0 || at > a.lastAdd.Load() {
		a.lastAdd.Store(at)
	}
	n := int64(b.CurSz())
	a.qbytes += n
	a.blobs++
	a.pub = nil
	if total := s.pending.Add(n); len(a.queue) >= s.cfg.Batch || total > s.cfg.PendingBytes {
		s.fold(a)
	}
	return nil
}

// check returns nil if b can join the aggregate: compatible with its
// template's blob. Blobs decoded from one layout share what Compatible
// derives from it, so b is compared with the last blob added (itself
// compatible), which costs a comparison of precisions, not of layouts.
func (a *group) check(b *blob.Blob) error {
	ref := a.last
	if ref == nil {
		ref = a.w.narrow
	}
	if err := blob.Compatible(ref, b); err != nil {
		return err
	}
	a.last = b
	return nil
}

// fold folds the aggregate's queue into a new level-0 blob and carries
// it up the levels; the caller holds a.mu.
func (s *Set) fold(a *group) {
	if len(a.queue) == 0 {
		return
	}
	// The batch and the full levels below the first empty one, k, merge
	// in one step into level k: what a chain of pairwise carries would
	// make, with one merge instead of k+1, and each sample's centroid
	// merged again once instead of k+1 times.
	k := 0
	for k < len(a.levels) && a.levels[k] != nil {
		k++
	}
	srcs := append(a.levels[:k:k], a.queue...)
	carry := a.w.empty.Clone()
	s.add(carry, srcs)
	clear(a.levels[:k])
	if k == len(a.levels) {
		a.levels = append(a.levels, carry)
	} else {
		a.levels[k] = carry
	}
	a.pub = nil
	s.folds.Add(1)
	s.dropQueue(a)
}

// release drops the queue of a, an aggregate dropped from the current
// window, from the bytes queued.
func (s *Set) release(a *group) {
	a.mu.Lock()
	defer a.mu.Unlock()
	s.dropQueue(a)
}

// dropQueue empties a's queue and gives its bytes back to the budget,
// but for those of the blobs States still hold, which their hold counts
// from then on (until the last of them lets go); the caller holds a.mu.
func (s *Set) dropQueue(a *group) {
	clear(a.queue)
	a.queue = a.queue[:0]
	back := a.qbytes
	if h := a.held; h != nil {
		back -= h.bytes
		h.dropped = true
		a.held = nil
	}
	s.pending.Add(-back)
	a.qbytes = 0
}

// add folds srcs into dst, counting what saturates.
func (s *Set) add(dst *blob.Blob, srcs []*blob.Blob) {
	sat, err := blob.Fold(dst, srcs...)
	if err != nil {
		// Every blob was found compatible with the template, of which
		// dst's is the wide form (or is that wide form): Fold cannot
		// refuse them. Should it, they are folded one by one, and those
		// it refuses are counted as saturated.
		sat = 0
		for _, b := range srcs {
			n, err := blob.Fold(dst, b)
			sat += n
			if err != nil {
				sat++
			}
		}
	}
	s.saturated.Add(uint64(sat))
}

// snapshot returns the published blob: the levels and the queue folded
// into one, in one step per t-digest. The queue joins the levels only once
// it holds keepQueued blobs: until then each snapshot merges it again,
// which costs less than folding it first (a merge of its own) would in a
// collector's common case, a snapshot per scrape and a blob or two per
// aggregate between them; and a batch folds more blobs at once. A
// publication that saturates folds everything first, so that
// Stats.Saturated counts it when it is published.
func (s *Set) snapshot(a *group) (*blob.Blob, uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.queue) >= keepQueued {
		s.fold(a)
	}
	if a.pub != nil {
		return a.pub, a.blobs
	}
	srcs := a.sources()
	if len(srcs) == 1 && len(a.queue) == 0 {
		a.pub = srcs[0] // levels are never modified once made
		return a.pub, a.blobs
	}
	pub := a.w.empty.Clone()
	if sat, err := blob.Fold(pub, srcs...); err != nil || sat > 0 {
		s.collapse(a)
		return a.pub, a.blobs
	}
	a.pub = pub
	return a.pub, a.blobs
}

// keepQueued is how many queued blobs make a snapshot fold the queue
// into the levels before it publishes.
const keepQueued = 8

// collapse folds the queue and every level of a into one level, at the
// top, and publishes it; the caller holds a.mu.
func (s *Set) collapse(a *group) {
	top := a.w.empty.Clone()
	s.add(top, a.sources())
	s.dropQueue(a)
	a.setTop(top, top)
	s.folds.Add(1)
}

// sources returns what a's published blob folds: the levels that hold a
// blob, then the queue. The caller holds a.mu.
func (a *group) sources() []*blob.Blob {
	srcs := make([]*blob.Blob, 0, len(a.levels)+len(a.queue))
	for _, l := range a.levels {
		if l != nil {
			srcs = append(srcs, l)
		}
	}
	return append(srcs, a.queue...)
}

// setTop makes level, the fold of everything a holds (its queue dropped),
// a's only level, at the top so that later batches merge into it as
// rarely as before, and publishes pub (level, or an equal blob). The
// caller holds a.mu.
func (a *group) setTop(level, pub *blob.Blob) {
	if len(a.levels) == 0 {
		a.levels = make([]*blob.Blob, 1)
	} else {
		clear(a.levels)
	}
	a.levels[len(a.levels)-1] = level
	a.pub = pub
}

// Blobs returns the current window's aggregates, sorted by key, each
// starting at the window's start, as blobs of their template's wide form
// (the blobs queued included). The blobs are never modified afterwards.
// Blobs makes the Set an export.Source.
func (s *Set) Blobs() []export.Named {
	s.rot.RLock()
	defer s.rot.RUnlock()
	named, _ := s.named(s.cur)
	return named
}

// BlobsCounts is Blobs with, for each aggregate, how many blobs it holds
// (as Merged says, taken together with the blobs).
func (s *Set) BlobsCounts() ([]export.Named, []uint64) {
	s.rot.RLock()
	defer s.rot.RUnlock()
	return s.named(s.cur)
}

// named folds and lists the aggregates of w, sorted by key, with their
// blob counts.
func (s *Set) named(w *window) ([]export.Named, []uint64) {
	w.mu.RLock()
	keys := slices.Sorted(maps.Keys(w.aggs))
	aggs := make([]*group, len(keys))
	for i, k := range keys {
		aggs[i] = w.aggs[k]
	}
	w.mu.RUnlock()
	out := make([]export.Named, len(aggs))
	counts := make([]uint64, len(aggs))
	// Each fold under its own lock: a snapshot of many aggregates takes
	// the cores there are.
	par.Do(len(aggs), parallelMin, func(_, i int) {
		a := aggs[i]
		b, n := s.snapshot(a)
		out[i] = export.Named{Blob: b, Template: a.w.wide, Posted: a.t, Labels: a.labels, Start: w.start}
		counts[i] = n
	})
	return out, counts
}

// parallelMin is the fewest aggregates a goroutine of a snapshot folds.
const parallelMin = 16

// Len returns the number of aggregates in the current window.
func (s *Set) Len() int {
	s.rot.RLock()
	defer s.rot.RUnlock()
	s.cur.mu.RLock()
	defer s.cur.mu.RUnlock()
	return len(s.cur.aggs)
}

// Merged returns how many blobs each of the current window's aggregates
// holds, in key order (see Blobs).
func (s *Set) Merged() []uint64 {
	s.rot.RLock()
	defer s.rot.RUnlock()
	w := s.cur
	w.mu.RLock()
	defer w.mu.RUnlock()
	keys := slices.Sorted(maps.Keys(w.aggs))
	out := make([]uint64, len(keys))
	for i, k := range keys {
		a := w.aggs[k]
		a.mu.Lock()
		out[i] = a.blobs
		a.mu.Unlock()
	}
	return out
}

// Closed is a window that has ended: its span and its aggregates (see
// Blobs).
type Closed struct {
	Start, End time.Time
	Blobs      []export.Named
	Counts     []uint64 // the blobs added to each of Blobs
	Posts      uint64   // the blobs added to Blobs
}

// Rotate closes the current window at now and starts the next: the
// aggregates start afresh. It waits for adds under way, which land in the
// closed window, and returns the closed window. Senders that have not
// posted in the last two windows nor for Config.MarkAge are forgotten, and
// so is a sender's number for an aggregate it has not posted to in them
// (see Once).
func (s *Set) Rotate(now time.Time) Closed {
	s.rot.Lock()
	old := s.cur
	s.cur = newWindow(now)
	s.rot.Unlock()
	s.pruneSenders(now)
	named, counts := s.named(old)
	old.mu.RLock()
	for _, a := range old.aggs { // no add reaches them any more
		s.release(a) // their queues are in named
	}
	old.mu.RUnlock()
	c := Closed{Start: old.start, End: now, Blobs: named, Counts: counts}
	for _, n := range counts {
		c.Posts += n
	}
	return c
}

// Start returns the current window's start.
func (s *Set) Start() time.Time {
	s.rot.RLock()
	defer s.rot.RUnlock()
	return s.cur.start
}

// Posts returns how many blobs the current window's aggregates hold.
func (s *Set) Posts() uint64 {
	var n uint64
	for _, k := range s.Merged() {
		n += k
	}
	return n
}

// Expire drops the current window's aggregates whose last add was at or
// before cutoff, so that their keys stop counting against the limits, and
// the senders' sequence numbers for them (see Once), and returns how many
// it dropped and the last-add time of the least recently added aggregate
// left (zero if none). It waits for adds under way (which it never
// drops). An aggregate's last add is the latest of its adds' times
// (Config.Now's, or AddAllAt's), and a state holds it: a Set loaded from
// one (LoadState) expires an aggregate when the Set that wrote it would
// have.
func (s *Set) Expire(cutoff time.Time) (int, time.Time) {
	gone, oldest := s.ExpireList(cutoff)
	return len(gone), oldest
}

// Expired is an aggregate Expire dropped: its key, its template and its
// labels, as Add was given them.
type Expired struct {
	Key    string
	T      *tpl.Template
	Labels []export.Label
}

// ExpireList is Expire returning the aggregates it dropped, sorted by
// key: what a write-ahead log records, so that its replay drops them
// again (Drop) where the last-add times are not the ones Expire saw.
func (s *Set) ExpireList(cutoff time.Time) ([]Expired, time.Time) {
	s.rot.Lock() // no add is under way: none lands in a dropped aggregate
	defer s.rot.Unlock()
	w := s.cur
	c := cutoff.UnixNano()
	oldest := int64(math.MaxInt64)
	var gone []Expired
	w.mu.Lock()
	for k, a := range w.aggs {
		last := a.lastAdd.Load()
		if last <= c {
			gone = append(gone, Expired{Key: k, T: a.t, Labels: a.labels})
			continue
		}
		oldest = min(oldest, last)
	}
	w.mu.Unlock()
	slices.SortFunc(gone, func(a, b Expired) int { return cmp.Compare(a.Key, b.Key) })
	keys := make([]string, len(gone))
	for i, e := range gone {
		keys[i] = e.Key
	}
	s.drop(keys)
	if oldest == math.MaxInt64 {
		return gone, time.Time{}
	}
	return gone, time.Unix(0, oldest)
}

// Drop drops the current window's aggregates of keys, and the senders'
// sequence numbers for them, as Expire drops idle ones, whatever their
// last add; keys without an aggregate are passed over. It returns how
// many it dropped. It is how a log's replay makes an expiry again
// (ExpireList). It waits for adds under way.
func (s *Set) Drop(keys ...string) int {
	s.rot.Lock()
	defer s.rot.Unlock()
	return s.drop(keys)
}

// drop drops the aggregates of keys and their marks; the caller holds rot
// (no add under way: none lands in a dropped aggregate, and none recreates
// a key before its marks go; marks in use stay).
func (s *Set) drop(keys []string) int {
	w := s.cur
	var gone map[string]bool
	w.mu.Lock()
	for _, k := range keys {
		a := w.aggs[k]
		if a == nil {
			continue
		}
		s.release(a)
		delete(w.aggs, k)
		w.perTpl[a.t]--
		if gone == nil {
			gone = map[string]bool{}
		}
		gone[k] = true
	}
	w.mu.Unlock()
	if len(gone) > 0 {
		s.forgetMarks(gone)
	}
	return len(gone)
}

// Stats are the Set's counters since it was made.
type Stats struct {
	// Saturated counts statistics that saturated even at 64 bits (each
	// also counted in its voistat's error count).
	Saturated uint64
	// Duplicates counts messages with blobs left out because they had
	// been added already (see Once).
	Duplicates uint64
	// Untracked counts posts merged without the sequence check, or with
	// some of their blobs merged without it: senders beyond MaxSenders,
	// marks beyond MaxMarks.
	Untracked uint64
	// MarksFull counts the posts of Untracked that were for want of
	// MaxMarks.
	MarksFull uint64
	// MarksEvicted counts the marks a rotation dropped before their time
	// (two rotations and MarkAge) because their label sets, none posted
	// to in the window just closed, were more than twice MaxAggregates
	// (label sets cycling through short windows): a retry of their
	// posts would be added again.
	MarksEvicted uint64
	// Marks is the sequence marks kept now (at most MaxMarks, but for
	// those LoadState loaded beyond it).
	Marks int
	// Folds counts folds of a queue into its aggregate.
	Folds uint64
	// PendingBytes is the bytes of blobs queued now, and of those folded
	// since that a State still holds (see Config.PendingBytes).
	PendingBytes int64
}

// Stats returns the Set's counters.
func (s *Set) Stats() Stats {
	return Stats{
		Saturated:    s.saturated.Load(),
		Duplicates:   s.duplicates.Load(),
		Untracked:    s.untracked.Load(),
		MarksFull:    s.marksFull.Load(),
		MarksEvicted: s.marksEvicted.Load(),
		Marks:        s.marks.count(),
		Folds:        s.folds.Load(),
		PendingBytes: s.pending.Load(),
	}
}
