package aggregate

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/export"
	"github.com/statsblob/statsblob/export/internal/par"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// The state of a Set, as AppendState writes it and LoadState reads it
// (little-endian; a string is its length as a uint32 and its bytes):
//
//	"SBAGG1\n"         magic and version
//	start   int64      the current window's start, Unix nanoseconds
//	n       uint32     aggregates, then each:
//	  key     string   the caller's key (Add)
//	  hash    uint32   the senders' template hash
//	  labels  uint32 count, then name and value strings
//	  blobs   uint64   blobs added
//	  wide    string   the aggregate's blob, of the template's wide form (all folded)
//	m       uint32     senders, then each:
//	  id      string
//	  k       uint32   marks, then each: key string, seq uint64 (the highest merged)
const stateMagic = "SBAGG1\n"

// ErrState is wrapped by LoadState's errors for bytes that are not a
// state AppendState wrote.
var ErrState = errors.New("aggregate: bad state")

// AppendState appends the Set's state to dst: the current window's
// aggregates (their queues folded) and the senders' sequence marks, what
// LoadState needs to go on exactly where the Set is. It is Snapshot's
// state, written whole: adds wait while the snapshot is taken, not while
// it is folded and written. Closed windows are not part of it.
func (s *Set) AppendState(dst []byte) []byte {
	st := s.Snapshot()
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

// Snapshot takes the Set's state as AppendState writes it, cheaply: under
// the Set's locks (adds wait) it copies references to what the state is
// made of, the aggregates' blobs (never modified once added or folded)
// and the senders' marks; the folds of the blobs queued, the sorting and
// the encoding are left to the State's Len and WriteTo, which run while
// the Set goes on, and write the state as it was when Snapshot returned.
// A checkpoint so holds the adds back for a copy of references, not for
// the folds and the encoding of the whole state, and needs no copy of
// the whole state in memory (wal.Log.CheckpointState writes it to the
// file piece by piece). Snapshot must not run while a Once or OnceAll is
// under way, whose marks it reads (it would wait for them while they wait
// for it): callers serialise the two, as the collector does under its
// log's lock.
func (s *Set) Snapshot() *State {
	s.rot.Lock()
	defer s.rot.Unlock()
	w := s.cur
	w.mu.RLock()
	st := &State{start: w.start, aggs: make([]stateAgg, 0, len(w.aggs))}
	for k, a := range w.aggs {
		sa := stateAgg{key: k, a: a}
		a.mu.Lock()
		sa.blobs, sa.resets = a.blobs, a.resets
		if a.pub != nil {
			sa.srcs = []*blob.Blob{a.pub}
		} else {
			sa.srcs = a.sources() // a copy: the queue's array is cleared when it is folded
			sa.queued = len(a.queue)
		}
		a.mu.Unlock()
		st.aggs = append(st.aggs, sa)
	}
	w.mu.RUnlock()
	s.sendMu.Lock()
	st.senders = make([]stateSender, 0, len(s.senders))
	for id, p := range s.senders {
		p.mu.Lock()
		ps := stateSender{id: id, marks: make([]stateMark, 0, len(p.seqs))}
		for k, m := range p.seqs {
			m.mu.Lock()
			if m.has {
				ps.marks = append(ps.marks, stateMark{key: k, hw: m.hw})
			}
			m.mu.Unlock()
		}
		p.mu.Unlock()
		st.senders = append(st.senders, ps)
	}
	s.sendMu.Unlock()
	return st
}

// State is a Set's state taken by Snapshot: Len and WriteTo fold, sort and
// encode it (as AppendState writes it) after the Set has gone on. Neither
// is safe for concurrent use.
type State struct {
	start   time.Time
	aggs    []stateAgg
	senders []stateSender
	made    bool  // folded and sorted
	size    int64 // the encoding's length, once made
}

// stateAgg is an aggregate as Snapshot found it: what its published blob
// folds (that blob alone, if it had one), and its counts then.
type stateAgg struct {
	key           string
	a             *group
	blobs, resets uint64
	srcs          []*blob.Blob // its levels, then its queued blobs (queued of them)
	queued        int
	out           *blob.Blob // the fold of srcs
}

type stateSender struct {
	id    string
	marks []stateMark
}

type stateMark struct {
	key string
	hw  uint64
}

// make folds the aggregates (each in one step, as snapshot does, on the
// cores there are), publishing a fold where the aggregate has not changed
// since the snapshot, and sorts the aggregates, senders and marks.
func (st *State) make() {
	if st.made {
		return
	}
	st.made = true
	par.Do(len(st.aggs), parallelMin, func(_, i int) {
		sa := &st.aggs[i]
		if len(sa.srcs) == 1 && sa.queued == 0 { // a published blob, or one level
			sa.out = sa.srcs[0]
		} else {
			out := sa.a.w.empty.Clone()
			sat, err := blob.Fold(out, sa.srcs...)
			if err != nil { // as Set.add: cannot happen; one by one
				sat = 1
				for _, b := range sa.srcs {
					_, _ = blob.Fold(out, b)
				}
			}
			sa.out = out
			if sat > 0 {
				return // left to snapshot to publish: it folds all and counts what saturates
			}
		}
		a := sa.a
		a.mu.Lock()
		if a.pub == nil && a.blobs == sa.blobs && a.resets == sa.resets {
			a.pub = sa.out // unchanged since: a scrape need not fold it again
		}
		a.mu.Unlock()
	})
	slices.SortFunc(st.aggs, func(a, b stateAgg) int { return strings.Compare(a.key, b.key) })
	slices.SortFunc(st.senders, func(a, b stateSender) int { return strings.Compare(a.id, b.id) })
	n := int64(len(stateMagic) + 8 + 4 + 4)
	for i := range st.aggs {
		sa := &st.aggs[i]
		n += 4 + int64(len(sa.key)) + 4 + 4 + 8 + 4 + int64(len(sa.out.Bytes()))
		for _, l := range sa.a.labels {
			n += 8 + int64(len(l.Name)+len(l.Value))
		}
	}
	for i := range st.senders {
		p := &st.senders[i]
		slices.SortFunc(p.marks, func(a, b stateMark) int { return strings.Compare(a.key, b.key) })
		n += 4 + int64(len(p.id)) + 4
		for _, m := range p.marks {
			n += 4 + int64(len(m.key)) + 8
		}
	}
	st.size = n
}

// Len returns the length of the state's encoding.
func (st *State) Len() int64 {
	st.make()
	return st.size
}

// WriteTo writes the state's encoding to w, in writes of up to 64 KiB (a
// longer blob in one), and returns the bytes written.
func (st *State) WriteTo(w io.Writer) (int64, error) {
	st.make()
	sw := stateWriter{w: w, buf: make([]byte, 0, 64<<10)}
	sw.buf = append(sw.buf, stateMagic...)
	sw.u64(uint64(st.start.UnixNano()))
	sw.u32(uint32(len(st.aggs)))
	for i := range st.aggs {
		sa := &st.aggs[i]
		sw.str(sa.key)
		sw.u32(sa.a.t.Hash())
		sw.u32(uint32(len(sa.a.labels)))
		for _, l := range sa.a.labels {
			sw.str(l.Name)
			sw.str(l.Value)
		}
		sw.u64(sa.blobs)
		sw.bytes(sa.out.Bytes())
	}
	sw.u32(uint32(len(st.senders)))
	for _, p := range st.senders {
		sw.str(p.id)
		sw.u32(uint32(len(p.marks)))
		for _, m := range p.marks {
			sw.str(m.key)
			sw.u64(m.hw)
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

// stateReader reads the fields of a state, remembering the first error.
type stateReader struct {
	p   []byte
	err error
}

func (r *stateReader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s at %d bytes from the end", ErrState, what, len(r.p))
	}
	r.p = nil
}

func (r *stateReader) u32() uint32 {
	if len(r.p) < 4 {
		r.fail("short uint32")
		return 0
	}
	v := binary.LittleEndian.Uint32(r.p)
	r.p = r.p[4:]
	return v
}

func (r *stateReader) u64() uint64 {
	if len(r.p) < 8 {
		r.fail("short uint64")
		return 0
	}
	v := binary.LittleEndian.Uint64(r.p)
	r.p = r.p[8:]
	return v
}

func (r *stateReader) str() string {
	n := r.u32()
	if uint64(n) > uint64(len(r.p)) {
		r.fail("short string")
		return ""
	}
	s := string(r.p[:n])
	r.p = r.p[n:]
	return s
}

// count reads a count of items of at least min bytes each, bounded by what
// is left, so that damaged bytes cannot make LoadState allocate much.
func (r *stateReader) count(min int) int {
	n := r.u32()
	if uint64(n)*uint64(min) > uint64(len(r.p)) {
		r.fail("count beyond the bytes")
		return 0
	}
	return int(n)
}

// LoadState makes s, a Set nothing was added to, go on from a state
// AppendState wrote: its window start, aggregates and senders' marks.
// lookup finds a template by hash (the templates the collector knows);
// an aggregate of a template it does not find, or whose blob does not have
// the template's wide layout, is an error. Errors wrap ErrState for
// damaged bytes and leave s unchanged.
func (s *Set) LoadState(p []byte, lookup func(hash uint32) (*tpl.Template, error)) error {
	if len(p) < len(stateMagic) || string(p[:len(stateMagic)]) != stateMagic {
		return fmt.Errorf("%w: no state header", ErrState)
	}
	r := &stateReader{p: p[len(stateMagic):]}
	start := time.Unix(0, int64(r.u64()))
	w := newWindow(start)
	for range r.count(4 + 4 + 4 + 8 + 4) {
		key := r.str()
		hash := r.u32()
		var labels []export.Label
		for range r.count(8) {
			labels = append(labels, export.Label{Name: r.str(), Value: r.str()})
		}
		n := r.u64()
		raw := r.str()
		if r.err != nil {
			return r.err
		}
		if _, dup := w.aggs[key]; dup {
			return fmt.Errorf("%w: aggregate %q twice", ErrState, key)
		}
		t, err := lookup(hash)
		if err != nil {
			return fmt.Errorf("aggregate: state: aggregate %q: %w", key, err)
		}
		wt, err := s.wideOf(t)
		if err != nil {
			return fmt.Errorf("aggregate: state: aggregate %q: %w", key, err)
		}
		b, err := blob.FromBytes([]byte(raw), blob.NewEnv(nil, 1))
		if err == nil {
			err = blob.Compatible(wt.empty, b)
		}
		if err != nil {
			return fmt.Errorf("aggregate: state: aggregate %q: %w", key, err)
		}
		g := &group{t: t, w: wt, labels: labels, levels: []*blob.Blob{b}, blobs: n}
		g.lastAdd.Store(s.cfg.Now().UnixNano()) // not idle: Expire counts from the load
		w.aggs[key] = g
		w.perTpl[t]++
	}
	senders := map[string]*sender{}
	var marks markKeys               // each key kept once; all the marks, even beyond MaxMarks
	loaded := s.cfg.Now().UnixNano() // (marks are as if just posted to: they are kept at least as long)
	for range r.count(8) {
		id := r.str()
		p := &sender{seqs: map[string]*mark{}}
		p.heard.Store(s.gen.Load())
		p.heardAt.Store(loaded)
		for range r.count(12) {
			k := r.str()
			m := &mark{has: true, hw: r.u64()}
			m.used.Store(s.gen.Load())
			m.at.Store(loaded)
			if _, dup := p.seqs[k]; !dup {
				k = marks.keep(k)
			}
			p.seqs[k] = m
		}
		if r.err != nil {
			return r.err
		}
		if _, dup := senders[id]; dup { // (its marks, counted, would be held by none)
			return fmt.Errorf("%w: sender %q twice", ErrState, id)
		}
		senders[id] = p
	}
	if r.err != nil {
		return r.err
	}
	if len(r.p) != 0 {
		return fmt.Errorf("%w: %d bytes after the state", ErrState, len(r.p))
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
