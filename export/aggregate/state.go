package aggregate

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/export"
	"github.com/statsblob/statsblob/export/internal/hashfmt"
	"github.com/statsblob/statsblob/export/internal/par"
	"github.com/statsblob/statsblob/export/internal/wire"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// The state of a Set, as AppendState writes it and LoadState reads it
// (little-endian; a string is its length as a uint32 and its bytes):
//
//	"SBAGG3\n"         magic and version
//	start   int64      the current window's start, Unix nanoseconds
//	n       uint32     aggregates
//	last    int64      the latest of their last-add times, Unix nanoseconds (if n > 0)
//	then the n aggregates, in increasing order of key, each:
//	  key     string   the caller's key (Add)
//	  hash    uint32   the senders' template hash
//	  labels  uint32 count, then name and value strings
//	  blobs   uint64   blobs added
//	  idle    uvarint  last minus its last-add time, nanoseconds (0 for one at least)
//	  wide    string   the aggregate's blob, of the template's wide form (all folded)
//	x       uint32     the key table: keys of marks that are no aggregate's
//	                   (label sets of windows before), in increasing order, then each:
//	  key     string
//	m       uint32     senders, in increasing order of id, then each:
//	  id      string
//	  at      int64    the time of its latest post, Unix nanoseconds
//	  age     uint8    the windows rotated since that post: 0, 1, or 2 for two or more
//	  k       uint32   marks, in increasing order of ref, then each:
//	    ref   uint32   its key: the ref-th aggregate's (ref < n), or the key table's (ref-n)-th
//	    seq   uint64   the highest number merged
//	    when  uvarint  its latest post's time and age (as the sender's): d<<2 | age, d the
//	                   zigzag form of the sender's at minus the time (d < 2^62); or, for a
//	                   time 2^61 ns (73 years) or more from the sender's, 3, then
//	                   age uint8 and the time int64
//
// Each key is written once, however many senders' marks it has, and a
// mark's time against its sender's: 13 bytes a mark when its sender's
// latest post, to all the label sets it posts to, was its (one byte of
// when), up to 19 for a post ten minutes (MarkAge) before the sender's
// latest. The times and ages are all a rotation reads of a mark
// (pruneSenders, evictMarkKeys): loaded, the marks age out and are
// evicted as they would have in the Set that wrote them, whatever the
// time since (a restart's downtime). So does an aggregate's last-add
// time, all Expire reads of it: loaded, the aggregate expires when it
// would have in the Set that wrote it. Its idle takes 1 byte for an
// aggregate added to at last's nanosecond (those of one batch), 5 for
// one added to up to 34 s before, 6 up to 73 minutes (the collector's
// default -label-ttl is an hour, and it expires the label sets idle
// longer before each checkpoint), 10 at most: 10,008 bytes for 10,000
// aggregates one batch made, 60,008 at most for 10,000 added to over
// the last hour.
//
// Version 2 ("SBAGG2\n") is version 3 without last and idle, without at
// and age, and without when: its aggregates take the load's time as their
// last add's, and so outlive an Expire cutoff by the time between the
// write and the load; its marks (and senders) take it too, in the window
// under way, and so outlive MarkAge by that time, and are evicted after
// marks posted since the write, as if newer. Version 1 ("SBAGG1\n") is
// version 2 without the key table, each mark a key string and its seq
// (the key of a label set of the widest labels, 4 KB, written as many
// times as senders posted to it: 4.1 GB for the marks the collector
// keeps at most), the aggregates and senders in any order. LoadState
// reads all three; AppendState writes version 3, or, with
// Config.StateV1, version 1 for a state without senders (version 3 but
// for last, the idles and x, one uint32), for Sets whose aggregates never
// expire (package natsjs's partitions, which keep no marks).
const (
	stateMagic   = "SBAGG3\n"
	stateMagicV2 = "SBAGG2\n"
	stateMagicV1 = "SBAGG1\n"
)

// ErrState is wrapped by every error of LoadState that refuses the
// bytes: bytes that are not a state AppendState wrote (a field cut short,
// out of order or twice, a damaged blob), or an aggregate of a template
// lookup does not find or whose blob does not have the template's wide
// layout. The cause is wrapped too: the lookup's error, the blob's
// (voi.ErrInvalid, voi.ErrNotSupported).
var ErrState = errors.New("aggregate: bad state")

// AppendState appends the Set's state to dst: the current window's
// aggregates (their queues folded) and the senders' sequence marks, what
// LoadState needs to go on exactly where the Set is. It is State's
// state, written whole: adds wait while the state is taken, not while it
// is folded and written. Closed windows are not part of it.
func (s *Set) AppendState(dst []byte) []byte {
	st := s.State()
	defer st.Release()
	w := appendWriter{b: slices.Grow(dst, int(st.Len()))}
	_, _ = st.WriteTo(&w)
	return w.b
}

// appendWriter is an io.Writer appending to b.
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// ErrReleased is WriteTo's error for a State already released.
var ErrReleased = errors.New("aggregate: state released")

// State takes the Set's state as AppendState writes it, a checkpoint's,
// cheaply: under the Set's locks (adds wait) it copies references to what
// the state is made of, the aggregates' blobs (never modified once added
// or folded) and the senders' marks; the folds of the blobs queued, the
// sorting and the encoding are left to the State's Len and WriteTo, which
// run while the Set goes on, and write the state as it was when State
// returned. A checkpoint so holds the adds back for a copy of references,
// not for the folds and the encoding of the whole state, and needs no
// copy of the whole state in memory (wal.Log.CheckpointState writes it to
// the file piece by piece; WriteTo folds a chunk of aggregates at a
// time). The queued blobs the State holds count against
// Config.PendingBytes until it is released, even once the Set has folded
// them: call Release when it is written (or failed). State must not run
// while a Once or OnceAll is under way, whose marks it reads (it would
// wait for them while they wait for it): callers serialise the two, as
// the collector does under its log's lock. (It was Snapshot: in this
// project a snapshot is a copy of a blob.)
func (s *Set) State() *State {
	s.rot.Lock()
	defer s.rot.Unlock()
	w := s.cur
	w.mu.RLock()
	st := &State{start: w.start, aggs: make([]stateAgg, 0, len(w.aggs))}
	// (The holds it takes are made in one allocation, not one each: they
	// are made under the lock.)
	var slab []queueHold
	var held []heldQueue
	for k, a := range w.aggs {
		sa := stateAgg{key: k, a: a, hold: -1}
		a.mu.Lock()
		sa.blobs, sa.resets, sa.at = a.blobs, a.resets, a.lastAdd.Load()
		if a.pub != nil {
			sa.srcs = []*blob.Blob{a.pub}
		} else {
			sa.srcs = a.sources() // a copy: the queue's array is cleared when it is folded
			sa.queued = len(a.queue)
			if sa.queued > 0 {
				h := a.held
				if h == nil {
					if slab == nil {
						slab = make([]queueHold, 0, len(w.aggs)) // (never grown: its elements stay put)
					}
					slab = append(slab, queueHold{})
					h = &slab[len(slab)-1]
					a.held = h
				}
				h.bytes = a.qbytes // the whole queue: what any State before holds of it, and more
				h.states++
				if held == nil {
					held = make([]heldQueue, 0, len(w.aggs))
				}
				sa.hold = len(held)
				held = append(held, heldQueue{a: a, h: h})
			}
		}
		a.mu.Unlock()
		st.aggs = append(st.aggs, sa)
	}
	w.mu.RUnlock()
	s.sendMu.Lock()
	g := s.gen.Load() // (a rotation counts it under sendMu: the marks' ages are of g)
	st.senders = make([]stateSender, 0, len(s.senders))
	for id, p := range s.senders {
		p.mu.Lock()
		ps := stateSender{id: id, at: p.heardAt.Load(), age: ageOf(g, p.heard.Load()), marks: make([]stateMark, 0, len(p.seqs))}
		for _, m := range p.seqs {
			m.mu.Lock()
			if m.has {
				ps.marks = append(ps.marks, stateMark{mk: m.key, hw: m.hw, at: m.at.Load(), age: ageOf(g, m.used.Load())})
			}
			m.mu.Unlock()
		}
		p.mu.Unlock()
		st.senders = append(st.senders, ps)
	}
	s.sendMu.Unlock()
	st.v1 = s.cfg.StateV1 && len(st.senders) == 0
	if len(held) > 0 {
		st.holds = &stateHolds{s: s, list: held}
		st.cleanup = runtime.AddCleanup(st, (*stateHolds).release, st.holds) // a State dropped unreleased
	}
	return st
}

// State is a Set's state taken by Set.State: Len and WriteTo fold, sort
// and encode it (as AppendState writes it) after the Set has gone on. Its
// memory is the references State copied (about 33 bytes a sequence mark
// and 100 an aggregate), the blobs they keep (the levels and queued blobs
// of the aggregates when State was taken: those the Set has since folded
// or dropped are held by the State alone, the queued ones counted against
// Config.PendingBytes) and, while WriteTo runs, the folds of one chunk of
// aggregates (stateChunk bytes of them) and a buffer of 64 KiB. None of
// its methods is safe for concurrent use.
type State struct {
	start   time.Time
	aggs    []stateAgg
	senders []stateSender
	holds   *stateHolds // the queued blobs the aggregates hold, nil if none
	cleanup runtime.Cleanup
	v1      bool     // written in version 1 (Config.StateV1, no senders)
	made    bool     // sorted and measured
	gone    bool     // released
	keys    []string // the key table, once made
	last    int64    // the latest of the aggregates' last-add times, once made
	size    int64    // the encoding's length, once made
}

// stateAgg is an aggregate as State found it: what its published blob
// folds (that blob alone, if it had one), and its counts then.
type stateAgg struct {
	key           string
	a             *group
	blobs, resets uint64
	at            int64        // its last-add time (group.lastAdd)
	srcs          []*blob.Blob // its levels, then its queued blobs (queued of them)
	queued        int
	hold          int // its entry of the State's holds (-1: none), while it holds queued blobs
}

// queueHold is queued blobs of an aggregate that States hold: a prefix
// of its queue, the whole of it when the latest of them was taken. Their
// bytes are counted in the Set's pending bytes once, by the queue while
// they are in it, then by the hold until the last State lets go, so that
// Config.PendingBytes bounds the queued blobs the Set and its States hold
// together. Guarded by the group's mu.
type queueHold struct {
	bytes   int64 // the bytes of the blobs held
	states  int   // the States holding them
	dropped bool  // the queue has let them go: the hold counts them
}

// stateHolds is the queueHolds a State takes part in, apart from the
// State so that a cleanup can release them once it is dropped unreleased.
type stateHolds struct {
	s    *Set
	list []heldQueue
}

type heldQueue struct {
	a *group
	h *queueHold // nil once let go
}

// release lets go of every hold left.
func (hs *stateHolds) release() {
	for i := range hs.list {
		hs.letGo(i)
	}
}

// letGo lets go of hold i: the last State to let go of blobs the queue has
// dropped gives their bytes back to the Set's budget; blobs the queue
// still has it leaves to the queue to count.
func (hs *stateHolds) letGo(i int) {
	hq := &hs.list[i]
	if hq.h == nil {
		return
	}
	a, h := hq.a, hq.h
	hq.h = nil
	a.mu.Lock()
	defer a.mu.Unlock()
	if h.states--; h.states > 0 {
		return
	}
	if h.dropped {
		hs.s.pending.Add(-h.bytes)
	} else if a.held == h {
		a.held = nil
	}
}

// Release lets go of the blobs the State holds, and of the queued blobs
// among them the Set counts against Config.PendingBytes for it. Len still
// answers after it (it reads no blob); WriteTo fails (ErrReleased). A
// State dropped without Release lets go of its queued blobs when the
// garbage collector finds it, not before.
func (st *State) Release() {
	if st.gone {
		return
	}
	st.gone = true
	if st.holds != nil {
		st.cleanup.Stop()
		st.holds.release()
	}
	for i := range st.aggs {
		st.aggs[i].srcs = nil
	}
}

type stateSender struct {
	id    string
	at    int64 // its latest post's time (sender.heardAt)
	age   uint8 // the windows rotated since (ageOf)
	marks []stateMark
}

type stateMark struct {
	mk  *markKey
	hw  uint64
	at  int64  // its latest post's time (mark.at)
	ref uint32 // its key's entry, once made
	age uint8  // the windows rotated since (ageOf)
}

// maxAge is the most windows rotated since a post that a state tells
// apart. A rotation prunes a mark more than two rotations old (and older
// than MarkAge), and spares from eviction those of the window it closes:
// from the next rotation on, a mark two rotations old and one older are
// alike. (The age so takes two bits of a mark's when.)
const maxAge = 2

// ageOf returns the windows rotated since a post of generation used, in
// generation g, at most maxAge.
func ageOf(g, used uint64) uint8 { return uint8(min(g-used, maxAge)) }

// make sorts the aggregates, senders and marks, and measures the
// encoding: an aggregate's blob has its wide template's size, whatever it
// holds, so nothing is folded for it.
func (st *State) make() {
	if st.made {
		return
	}
	st.made = true
	slices.SortFunc(st.aggs, func(a, b stateAgg) int { return strings.Compare(a.key, b.key) })
	slices.SortFunc(st.senders, func(a, b stateSender) int { return strings.Compare(a.id, b.id) })
	st.refer()
	n := int64(len(stateMagic) + 8 + 4 + 4)
	if !st.v1 && len(st.aggs) > 0 {
		st.last = st.aggs[0].at
		for _, sa := range st.aggs[1:] {
			st.last = max(st.last, sa.at)
		}
		n += 8
	}
	for i := range st.aggs {
		sa := &st.aggs[i]
		n += 4 + int64(len(sa.key)) + 4 + 4 + 8 + 4 + int64(sa.a.w.empty.CurSz())
		for _, l := range sa.a.labels {
			n += 8 + int64(len(l.Name)+len(l.Value))
		}
		if !st.v1 {
			n += int64(wire.UvarintLen(idleOf(st.last, sa.at)))
		}
	}
	if !st.v1 {
		n += 4 // the key table
		for _, k := range st.keys {
			n += 4 + int64(len(k))
		}
	}
	var tb [maxMarkTime]byte
	for i := range st.senders {
		p := &st.senders[i]
		n += 4 + int64(len(p.id)) + 8 + 1 + 4 + 12*int64(len(p.marks))
		for _, m := range p.marks {
			n += int64(len(appendMarkTime(tb[:0], p.at, m.at, m.age)))
		}
	}
	st.size = n
}

// stateChunk bounds the folds WriteTo holds at once: it folds aggregates
// (on the cores there are) until their folds hold this many bytes (one
// aggregate at least), writes them, and lets them go before the next.
const stateChunk = 1 << 20

// folds calls f with each aggregate, in order, and its blob: its fold,
// made a chunk at a time, or its only source. It stops when f returns
// false.
func (st *State) folds(f func(sa *stateAgg, out *blob.Blob) bool) {
	var outs []*blob.Blob
	for lo := 0; lo < len(st.aggs); {
		hi, n := lo, 0
		for hi < len(st.aggs) && (hi == lo || n < stateChunk) {
			if sa := &st.aggs[hi]; !sa.direct() {
				n += sa.a.w.empty.CurSz()
			}
			hi++
		}
		outs = slices.Grow(outs[:0], hi-lo)[:hi-lo]
		par.Do(hi-lo, parallelMin, func(_, j int) { outs[j] = st.fold(&st.aggs[lo+j]) })
		for j := range outs {
			ok := f(&st.aggs[lo+j], outs[j])
			outs[j] = nil
			if !ok {
				return
			}
		}
		lo = hi
	}
}

// direct reports whether the aggregate's blob is its only source, unfolded:
// a published blob, or one level.
func (sa *stateAgg) direct() bool { return len(sa.srcs) == 1 && sa.queued == 0 }

// fold returns the aggregate's blob: its only source, or their fold (in
// one step, as snapshot makes it). The blob of an aggregate that has not
// changed since the State was taken is published (a scrape need not fold
// it again), and a fold published becomes the State's only source of it:
// the queued blobs it held are let go, and the fold is the Set's. Other
// folds are the caller's alone.
func (st *State) fold(sa *stateAgg) *blob.Blob {
	direct := sa.direct()
	var out *blob.Blob
	if direct {
		out = sa.srcs[0]
	} else { // (none: the empty blob)
		out = sa.a.w.empty.Clone()
		sat, err := blob.Fold(out, sa.srcs...)
		if err != nil { // as Set.add: cannot happen; one by one
			sat = 1
			for _, b := range sa.srcs {
				_, _ = blob.Fold(out, b)
			}
		}
		if sat > 0 {
			return out // left to snapshot to publish: it folds all and counts what saturates
		}
	}
	a := sa.a
	a.mu.Lock()
	pub := a.pub == nil && a.blobs == sa.blobs && a.resets == sa.resets
	if pub {
		a.pub = out // unchanged since (a level is never modified once made)
	}
	a.mu.Unlock()
	if pub && !direct {
		sa.srcs, sa.queued = []*blob.Blob{out}, 0
		if sa.hold >= 0 {
			st.holds.letGo(sa.hold)
			sa.hold = -1
		}
	}
	return out
}

// refer sets each mark's ref, its key's entry: its aggregate's, or the key
// table's (made of the keys of no aggregate, sorted), and sorts the marks
// by ref. A key is looked up once, not once a mark (marks share their
// key's markKey), and never compared whole with another key of a mark.
func (st *State) refer() {
	const unset = ^uint32(0)
	aggOf := make(map[string]uint32, len(st.aggs))
	for i := range st.aggs {
		aggOf[st.aggs[i].key] = uint32(i)
	}
	refs := map[*markKey]uint32{}
	var table []*markKey
	for i := range st.senders {
		for _, m := range st.senders[i].marks {
			if _, ok := refs[m.mk]; ok {
				continue
			}
			if r, ok := aggOf[m.mk.key]; ok {
				refs[m.mk] = r
			} else {
				refs[m.mk] = unset
				table = append(table, m.mk)
			}
		}
	}
	slices.SortFunc(table, func(a, b *markKey) int { return strings.Compare(a.key, b.key) })
	for _, mk := range table {
		// (Two markKeys of one key, should a key's marks be dropped and
		// taken again within one snapshot, share its entry.)
		if len(st.keys) == 0 || st.keys[len(st.keys)-1] != mk.key {
			st.keys = append(st.keys, mk.key)
		}
		refs[mk] = uint32(len(st.aggs) + len(st.keys) - 1)
	}
	for i := range st.senders {
		marks := st.senders[i].marks
		for j := range marks {
			marks[j].ref = refs[marks[j].mk]
		}
		slices.SortFunc(marks, func(a, b stateMark) int { return cmp.Compare(a.ref, b.ref) })
	}
}

// Len returns the length of the state's encoding. It folds nothing.
func (st *State) Len() int64 {
	st.make()
	return st.size
}

// WriteTo writes the state's encoding to w, in writes of up to 64 KiB (a
// longer blob in one), and returns the bytes written. It folds the
// aggregates a chunk at a time as it writes them, so that it holds no
// more than a chunk's folds at once. It writes the same bytes each time.
func (st *State) WriteTo(w io.Writer) (int64, error) {
	if st.gone {
		return 0, fmt.Errorf("aggregate: write of a state: %w", ErrReleased)
	}
	st.make()
	sw := stateWriter{w: w, buf: make([]byte, 0, 64<<10)}
	v3 := !st.v1
	if v3 {
		sw.buf = append(sw.buf, stateMagic...)
	} else {
		sw.buf = append(sw.buf, stateMagicV1...) // the same but for the times and the key table: earlier versions read it
	}
	sw.u64(uint64(st.start.UnixNano()))
	sw.u32(uint32(len(st.aggs)))
	if v3 && len(st.aggs) > 0 {
		sw.u64(uint64(st.last))
	}
	st.folds(func(sa *stateAgg, out *blob.Blob) bool {
		sw.str(sa.key)
		sw.u32(sa.a.t.Hash())
		sw.u32(uint32(len(sa.a.labels)))
		for _, l := range sa.a.labels {
			sw.str(l.Name)
			sw.str(l.Value)
		}
		sw.u64(sa.blobs)
		if v3 {
			sw.room(binary.MaxVarintLen64)
			sw.buf = binary.AppendUvarint(sw.buf, idleOf(st.last, sa.at))
		}
		p := out.Bytes()
		if want := sa.a.w.empty.CurSz(); len(p) != want && sw.err == nil { // as Len counted it (cannot happen: Compatible)
			sw.err = fmt.Errorf("aggregate: state: aggregate %q: a blob of %d bytes, not its template's %d: %w", sa.key, len(p), want, voi.ErrInvalid)
		}
		sw.bytes(p)
		return sw.err == nil
	})
	if v3 {
		sw.u32(uint32(len(st.keys)))
		for _, k := range st.keys {
			sw.str(k)
		}
	}
	sw.u32(uint32(len(st.senders))) // (none in version 1)
	for _, p := range st.senders {
		sw.str(p.id)
		sw.u64(uint64(p.at))
		sw.u8(p.age)
		sw.u32(uint32(len(p.marks)))
		for _, m := range p.marks {
			sw.u32(m.ref)
			sw.u64(m.hw)
			sw.room(maxMarkTime)
			sw.buf = appendMarkTime(sw.buf, p.at, m.at, m.age)
		}
	}
	sw.flush()
	return sw.n, sw.err
}

// stateWriter buffers a state's fields for w, remembering the first
// error.
type stateWriter struct {
	w   io.Writer
	buf []byte
	n   int64
	err error
}

func (sw *stateWriter) flush() {
	if sw.err == nil && len(sw.buf) > 0 {
		var k int
		k, sw.err = sw.w.Write(sw.buf)
		sw.n += int64(k)
	}
	sw.buf = sw.buf[:0]
}

// room makes room for n bytes (at most the buffer's capacity).
func (sw *stateWriter) room(n int) {
	if len(sw.buf)+n > cap(sw.buf) {
		sw.flush()
	}
}

func (sw *stateWriter) u8(v uint8) {
	sw.room(1)
	sw.buf = append(sw.buf, v)
}

func (sw *stateWriter) u32(v uint32) {
	sw.room(4)
	sw.buf = binary.LittleEndian.AppendUint32(sw.buf, v)
}

func (sw *stateWriter) u64(v uint64) {
	sw.room(8)
	sw.buf = binary.LittleEndian.AppendUint64(sw.buf, v)
}

// bytes writes a string field of p: its length and p, written through
// if it would not fit the buffer.
func (sw *stateWriter) bytes(p []byte) {
	sw.u32(uint32(len(p)))
	if len(p) > cap(sw.buf)-len(sw.buf) {
		sw.flush()
		if len(p) > cap(sw.buf) {
			if sw.err == nil {
				var k int
				k, sw.err = sw.w.Write(p)
				sw.n += int64(k)
			}
			return
		}
	}
	sw.buf = append(sw.buf, p...)
}

// str writes a string field, in pieces of the buffer's size.
func (sw *stateWriter) str(v string) {
	sw.u32(uint32(len(v)))
	for len(v) > 0 {
		sw.room(min(len(v), cap(sw.buf)))
		k := min(len(v), cap(sw.buf)-len(sw.buf))
		sw.buf = append(sw.buf, v[:k]...)
		v = v[k:]
	}
}

// stateReader reads the fields of a state (wire.Reader), its errors
// wrapping ErrState and saying where the bytes were refused: how many
// were left to the end of the state.
type stateReader struct{ wire.Reader }

func newStateReader(p []byte) *stateReader { return &stateReader{wire.New(p, stateShort)} }

// stateError is the refusal of a state's bytes for what, left bytes from
// their end.
func stateError(what string, left int) error {
	return fmt.Errorf("%w: %s at %d bytes from the end", ErrState, what, left)
}

// stateShort is the error of a read wire.Reader fails, as the state has
// always named it.
func stateShort(what string, left int) error {
	switch what {
	case "bytes": // (read only as strings)
		what = "short string"
	case "uvarint", "uvarint past 64 bits":
		what = "bad varint"
	case "uvarint longer than its value": // (so that a state is written again as it was read)
		what = "varint longer than its value"
	default:
		what = "short " + what
	}
	return stateError(what, left)
}

// fail refuses the bytes for what, where the reader is, unless it has
// refused them already.
func (r *stateReader) fail(what string) {
	if r.Err() == nil {
		r.Fail(stateError(what, r.Len()))
	}
}

// str reads a string field: its length as a uint32, and its bytes.
func (r *stateReader) str() string { return string(r.Bytes(int(r.U32()))) }

// age reads the windows rotated since a post: at most maxAge.
func (r *stateReader) age() uint8 {
	a := r.U8()
	if a > maxAge {
		r.fail("age beyond 2")
	}
	return a
}

// idleOf is an aggregate's idle field: last (the latest last-add time of
// the state's aggregates) minus its last-add time at, nanoseconds. (The
// difference of two int64s, at <= last, is a uint64.)
func idleOf(last, at int64) uint64 { return uint64(last - at) }

// addTime reads an aggregate's idle field and returns its last-add time,
// last minus idle: it refuses an idle that would take it below the
// earliest int64 (idleOf never writes one).
func (r *stateReader) addTime(last int64) int64 {
	idle := r.Uvarint()
	if idle > uint64(last)^1<<63 { // last - math.MinInt64
		r.fail("idle beyond the earliest time")
		return 0
	}
	return last - int64(idle)
}

// markTime reads a mark's when field (appendMarkTime): the time of the
// post and its age. It refuses every encoding appendMarkTime would not
// write (a longer varint, the far form of a near time), so that a state
// is written again as it was read.
func (r *stateReader) markTime(base int64) (at int64, age uint8) {
	v := r.Uvarint()
	if r.Err() != nil {
		return 0, 0
	}
	if v&markTimeFar != markTimeFar {
		d := zigzagDecode(v >> 2)
		return base - d, uint8(v & 3)
	}
	if v != markTimeFar {
		r.fail("far mark time with bits set")
		return 0, 0
	}
	age = r.age()
	at = int64(r.U64())
	if r.Err() == nil && zigzag(base-at) < 1<<62 {
		r.fail("far mark time that is near")
	}
	return at, age
}

// markTimeFar is the when field of a mark whose time is 2^61 ns (73
// years) or more from its sender's, followed by its age and time
// (appendMarkTime).
const markTimeFar = 3

// maxMarkTime is the longest when field: the far form.
const maxMarkTime = 1 + 1 + 8

// appendMarkTime appends a mark's when field: its time at (Unix
// nanoseconds) and age, against its sender's time base. One varint of
// d<<2 | age, d the zigzag form of base-at, which is 0 for the marks of
// a post to many label sets (they share the sender's time: one byte);
// for d of 2^62 or more, a time 73 years or more from base,
// markTimeFar, age (a byte) and at (int64).
func appendMarkTime(dst []byte, base, at int64, age uint8) []byte {
	if d := zigzag(base - at); d < 1<<62 { // (base-at wraps: base-d gives at again)
		return binary.AppendUvarint(dst, d<<2|uint64(age))
	}
	dst = append(dst, markTimeFar, age)
	return binary.LittleEndian.AppendUint64(dst, uint64(at))
}

func zigzag(d int64) uint64 { return uint64(d<<1) ^ uint64(d>>63) }

func zigzagDecode(z uint64) int64 { return int64(z>>1) ^ -int64(z&1) }

// count reads a count of items of at least min bytes each, bounded by what
// is left, so that damaged bytes cannot make LoadState allocate much.
func (r *stateReader) count(min int) int {
	n := r.U32()
	if !r.Fits(uint64(n), min) {
		r.fail("count beyond the bytes")
		return 0
	}
	return int(n)
}

// LoadState makes s, a Set nothing was added to, go on from a state
// AppendState wrote (of this version, 3, or of versions 1 and 2): its
// window start, aggregates with their last-add times, and senders'
// marks, with the times and ages in windows of their latest posts
// (version 3; the aggregates and marks of a state of version 1 or 2
// take Config.Now's time, the marks in the window under way), so that
// the aggregates expire (Expire) and the marks age out and are evicted
// (see Config.MarkAge) as they would have in the Set that wrote it,
// whatever the time between the write and the load. lookup finds a template by hash (the
// templates the collector knows); an aggregate of a template it does not
// find, or whose blob does not have the template's wide layout, is an
// error. Every refusal of the bytes wraps ErrState (and its cause: see
// ErrState); a Set that holds aggregates already is an error wrapping
// voi.ErrInvalid. Errors leave s unchanged.
// What it allocates is bounded by len(p): each count is checked against
// the bytes left before anything is made of it.
func (s *Set) LoadState(p []byte, lookup func(hash uint32) (*tpl.Template, error)) error {
	var version int
	for v, magic := range []string{stateMagicV1, stateMagicV2, stateMagic} {
		if len(p) >= len(magic) && string(p[:len(magic)]) == magic {
			version = v + 1
		}
	}
	if version == 0 {
		return fmt.Errorf("%w: no state header", ErrState)
	}
	v1, v3 := version == 1, version == 3
	r := newStateReader(p[len(stateMagic):])
	start := time.Unix(0, int64(r.U64()))
	w := newWindow(start)
	loaded := s.cfg.Now().UnixNano() // versions 1 and 2: the last-add times and the marks' (they are kept at least as long)
	aggMin := 4 + 4 + 4 + 8 + 4
	if v3 {
		aggMin++ // idle
	}
	n := r.count(aggMin)
	var last int64 // version 3: the latest of the last-add times, which one aggregate has at least
	if v3 && n > 0 {
		last = int64(r.U64())
	}
	latest := false
	keys := make([]string, 0, n) // what a mark refers to (versions 2 and 3): the aggregates' keys, then the key table
	for range n {
		key := r.str()
		hash := r.U32()
		var labels []export.Label
		for range r.count(8) {
			labels = append(labels, export.Label{Name: r.str(), Value: r.str()})
		}
		blobs := r.U64()
		at := loaded
		if v3 {
			at = r.addTime(last)
			latest = latest || at == last
		}
		raw := r.Bytes(int(r.U32())) // FromBytes copies it
		if r.Err() != nil {
			return r.Err()
		}
		if _, dup := w.aggs[key]; dup {
			return fmt.Errorf("%w: aggregate %q twice", ErrState, key)
		}
		if !v1 && len(keys) > 0 && key < keys[len(keys)-1] {
			return fmt.Errorf("%w: aggregate %q after %q", ErrState, key, keys[len(keys)-1])
		}
		// The refusals of what the bytes hold wrap ErrState and their
		// cause: the lookup's error, the blob's (voi.ErrInvalid,
		// voi.ErrNotSupported).
		t, err := lookup(hash)
		if err != nil {
			return fmt.Errorf("%w: aggregate %q: template hash %s: %w", ErrState, key, hashfmt.String(hash), err)
		}
		wt, err := s.wideOf(t)
		if err != nil {
			return fmt.Errorf("%w: aggregate %q: template %s: %w", ErrState, key, t.Name(), err)
		}
		b, err := blob.FromBytes(raw, blob.NewEnv(nil, 1))
		if err == nil {
			err = blob.Compatible(wt.empty, b)
		}
		if err != nil {
			return fmt.Errorf("%w: aggregate %q: blob: %w", ErrState, key, err)
		}
		g := &group{t: t, w: wt, labels: labels, levels: []*blob.Blob{b}, blobs: blobs}
		g.lastAdd.Store(at)
		w.aggs[key] = g
		w.perTpl[t]++
		keys = append(keys, key)
	}
	if v3 && n > 0 && !latest {
		return fmt.Errorf("%w: no aggregate's last add is the latest, %d", ErrState, last)
	}
	if !v1 {
		for range r.count(4) {
			k := r.str()
			if r.Err() != nil {
				return r.Err()
			}
			if _, ok := w.aggs[k]; ok {
				return fmt.Errorf("%w: the key table holds aggregate %q", ErrState, k)
			}
			if len(keys) > n && k <= keys[len(keys)-1] {
				return fmt.Errorf("%w: key table: %q after %q", ErrState, k, keys[len(keys)-1])
			}
			keys = append(keys, k)
		}
	}
	senders := map[string]*sender{}
	var marks markKeys                  // each key kept once; all the marks, even beyond MaxMarks
	kept := make([]*markKey, len(keys)) // keys[i]'s, once a mark has it
	gen := s.gen.Load()
	senderMin, markMin := 4+4, 4+8 // an id and a count; a ref (a key in version 1) and a seq
	if v3 {
		senderMin, markMin = 4+8+1+4, 4+8+1 // and times and ages
	}

	lastID := ""
	for i := range r.count(senderMin) {
		id := r.str()
		at, age := loaded, uint8(0)
		if v3 {
			at = int64(r.U64())
			age = r.age()
		}
		k := r.count(markMin)
		if r.Err() != nil {
			return r.Err()
		}
		if _, dup := senders[id]; dup { // (its marks, counted, would be held by none)
			return fmt.Errorf("%w: sender %q twice", ErrState, id)
		}
		if !v1 && i > 0 && id < lastID {
			return fmt.Errorf("%w: sender %q after %q", ErrState, id, lastID)
		}
		lastID = id
		p := &sender{seqs: make(map[string]*mark, k)} // (k marks are in the bytes: at most 1 a markMin bytes)
		p.heard.Store(gen - uint64(age))              // (wraps: what counts is the windows rotated since, g - heard)
		p.heardAt.Store(at)
		last := -1
		for range k {
			var key string
			var ref uint32
			if v1 {
				key = r.str()
			} else {
				ref = r.U32()
			}
			hw := r.U64()
			mAt, mAge := loaded, uint8(0)
			if v3 {
				mAt, mAge = r.markTime(at)
			}
			if r.Err() != nil {
				return r.Err()
			}
			var mk *markKey
			if v1 {
				if m := p.seqs[key]; m != nil { // twice: the later number, as it always was
					m.hw = hw
					continue
				}
				mk = marks.keep(key)
			} else {
				if uint64(ref) >= uint64(len(keys)) || int(ref) <= last {
					return fmt.Errorf("%w: sender %q: mark of key %d after %d, of %d keys", ErrState, id, ref, last, len(keys))
				}
				last = int(ref)
				if mk = kept[ref]; mk == nil {
					mk = marks.keep(keys[ref]) // an aggregate's key is the aggregate's string: one copy in all
					kept[ref] = mk
				} else {
					marks.keepAgain(mk)
				}
			}
			p.seqs[mk.key] = newLoadedMark(mk, hw, gen-uint64(mAge), mAt)
		}
		senders[id] = p
	}
	if r.Err() != nil {
		return r.Err()
	}
	if r.Len() != 0 {
		return fmt.Errorf("%w: %d bytes after the state", ErrState, r.Len())
	}
	for i := n; i < len(keys); i++ {
		if kept[i] == nil {
			return fmt.Errorf("%w: key table: %q is no mark's key", ErrState, keys[i])
		}
	}
	s.rot.Lock()
	defer s.rot.Unlock()
	if len(s.cur.aggs) != 0 {
		return fmt.Errorf("aggregate: state: the set already holds aggregates: %w", voi.ErrInvalid)
	}
	s.cur = w
	s.sendMu.Lock()
	s.senders = senders
	s.marks.mu.Lock()
	s.marks.n, s.marks.keys = marks.n, marks.keys
	s.marks.mu.Unlock()
	s.sendMu.Unlock()
	return nil
}

// newLoadedMark is a mark LoadState made: number hw, last posted to in
// generation gen at Unix nanoseconds at (those of the state, or the
// load's for a state of version 1 or 2, which has none: as if just
// posted to, so that it is kept at least as long as it was).
func newLoadedMark(mk *markKey, hw, gen uint64, at int64) *mark {
	m := &mark{has: true, hw: hw, key: mk}
	m.used.Store(gen)
	m.at.Store(at)
	return m
}
