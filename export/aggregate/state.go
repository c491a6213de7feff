package aggregate

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/export"
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
// LoadState needs to go on exactly where the Set is. Adds wait while it
// runs. It must not run while a Once or OnceAll is under way, whose marks
// it reads (it would wait for them while they wait for it): callers
// serialise the two, as the collector does under its log's lock. Closed
// windows are not part of it.
func (s *Set) AppendState(dst []byte) []byte {
	s.rot.Lock()
	defer s.rot.Unlock()
	w := s.cur
	w.mu.RLock()
	defer w.mu.RUnlock()
	keys := slices.Sorted(maps.Keys(w.aggs))
	dst = append(dst, stateMagic...)
	dst = binary.LittleEndian.AppendUint64(dst, uint64(w.start.UnixNano()))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(keys)))
	for _, k := range keys {
		a := w.aggs[k]
		b, n := s.snapshot(a)
		dst = appendString(dst, k)
		dst = binary.LittleEndian.AppendUint32(dst, a.t.Hash())
		dst = binary.LittleEndian.AppendUint32(dst, uint32(len(a.labels)))
		for _, l := range a.labels {
			dst = appendString(dst, l.Name)
			dst = appendString(dst, l.Value)
		}
		dst = binary.LittleEndian.AppendUint64(dst, n)
		dst = appendString(dst, string(b.Bytes()))
	}
	s.sendMu.Lock()
	ids := make([]string, 0, len(s.senders))
	for id := range s.senders {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(ids)))
	for _, id := range ids {
		p := s.senders[id]
		p.mu.Lock()
		mk := make([]string, 0, len(p.seqs))
		for k, m := range p.seqs {
			m.mu.Lock()
			if m.has {
				mk = append(mk, k)
			}
			m.mu.Unlock()
		}
		slices.Sort(mk)
		dst = appendString(dst, id)
		dst = binary.LittleEndian.AppendUint32(dst, uint32(len(mk)))
		for _, k := range mk {
			m := p.seqs[k]
			m.mu.Lock()
			dst = appendString(dst, k)
			dst = binary.LittleEndian.AppendUint64(dst, m.hw)
			m.mu.Unlock()
		}
		p.mu.Unlock()
	}
	s.sendMu.Unlock()
	return dst
}

func appendString(dst []byte, s string) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(s)))
	return append(dst, s...)
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
	var marks markKeys // each key kept once; all the marks, even beyond MaxMarks
	for range r.count(8) {
		id := r.str()
		p := &sender{seqs: map[string]*mark{}}
		p.heard.Store(s.gen.Load())
		for range r.count(12) {
			k := r.str()
			m := &mark{has: true, hw: r.u64()}
			m.used.Store(s.gen.Load())
			if _, dup := p.seqs[k]; !dup {
				k = marks.keep(k)
			}
			p.seqs[k] = m
		}
		if r.err != nil {
			return r.err
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
