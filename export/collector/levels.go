package collector

import (
	"cmp"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/export"
	"github.com/statsblob/statsblob/ship"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// Levels are gauges: a VOI that takes relative updates holds in its state
// a current level (requests in flight, a queue's depth), which a merge
// cannot add up (it keeps the destination's). So the collector keeps each
// sender's latest levels (the sender named by ship's Statsblob-Sender
// header; posts without one count as one anonymous sender, whose latest
// post wins), per template and label set and across windows, and exports
// their sum as the VOI's level (export.Named.Levels). A later post of a
// sender replaces its levels unless its Statsblob-Seq is lower than the
// one they came from (a retry that arrived late). A sender that stops
// posting keeps counting at its last level, until its reading is evicted:
// at most MaxLevelSenders readings are kept per template and label set,
// and at most Config.MaxLevelReadings in all; past either, a new reading
// takes the place of the least recently heard one (of the label set, or
// of all), in constant time. Evicting the stalest, not refusing the new,
// is what a gauge wants: the freshest readings are the ones that tell the
// current level, and a reading refused would leave a live sender out of
// the sum for as long as the stale ones stayed. No post is refused for
// its levels. A label set's levels go when its aggregates do: when it
// expires (LabelTTL), or when a whole window closes without a post of it
// (its aggregate left with the window before; the levels bridge the one
// rotation in which its senders have yet to post to the new window).

// MaxLevelSenders bounds the senders whose levels are kept per template
// and label set.
const MaxLevelSenders = 4096

type levels struct {
	mu    sync.Mutex
	by    map[string]*labelLevels // level key -> its senders' latest
	epoch uint64                  // windows closed (rotate)

	// heard is all the readings, least recently heard first; n counts
	// them, at most max (0: DefaultMaxLevelReadings).
	heard   readingList
	n       int
	max     int
	evicted func() // counts a reading evicted for max (nil: not counted)

	gauges sync.Map // *tpl.Template -> *gaugeIDs
}

// labelLevels is a label set's senders' latest levels and when it last
// had a post: at now() (last) and in which window (epoch).
type labelLevels struct {
	senders map[string]*reading
	heard   readingList // senders' readings, least recently heard first
	last    time.Time
	epoch   uint64
}

// gaugeIDs are the VOIs of a template that take relative updates, as of
// the template's hash.
type gaugeIDs struct {
	hash uint32
	ids  []int32
}

// gaugeIDs returns the ids of t's relative-update VOIs, the only ones
// whose blobs hold a level.
func (l *levels) gaugeIDs(t *tpl.Template) []int32 {
	if g, ok := l.gauges.Load(t); ok && g.(*gaugeIDs).hash == t.Hash() {
		return g.(*gaugeIDs).ids
	}
	g := &gaugeIDs{hash: t.Hash()}
	for _, v := range t.VOIs() {
		if v.Flags&voi.FlagRelUpdate != 0 {
			g.ids = append(g.ids, v.ID)
		}
	}
	l.gauges.Store(t, g)
	return g.ids
}

// reading is a sender's latest levels for a label set, in two lists:
// its label set's (link[inSet]) and all the readings' (link[inAll]).
type reading struct {
	sender string
	set    *labelLevels
	seq    uint64
	vals   []level
	link   [2]struct{ prev, next *reading }
}

// level is a VOI's level in a reading.
type level struct {
	id int32
	v  float64
}

// The lists a reading is in.
const (
	inAll = iota // all the readings' (levels.heard's zero value)
	inSet        // its label set's
)

// readingList is a doubly linked list of readings through their link[l],
// oldest (least recently heard) first: pushing, moving to the back and
// removing are O(1).
type readingList struct {
	l           int // inSet or inAll
	front, back *reading
}

func (q *readingList) pushBack(r *reading) {
	k := &r.link[q.l]
	k.prev, k.next = q.back, nil
	if q.back != nil {
		q.back.link[q.l].next = r
	} else {
		q.front = r
	}
	q.back = r
}

func (q *readingList) remove(r *reading) {
	k := &r.link[q.l]
	if k.prev != nil {
		k.prev.link[q.l].next = k.next
	} else {
		q.front = k.next
	}
	if k.next != nil {
		k.next.link[q.l].prev = k.prev
	} else {
		q.back = k.prev
	}
	k.prev, k.next = nil, nil
}

func (q *readingList) toBack(r *reading) {
	if q.back != r {
		q.remove(r)
		q.pushBack(r)
	}
}

// record keeps the levels of blob b of template t, posted by the
// request's sender at time at, for t's aggregates with labels. Blobs of
// templates without relative-update VOIs cost a lookup.
func (l *levels) record(t *tpl.Template, labels []export.Label, h func(string) string, at time.Time, b *blob.Blob) {
	ids := l.gaugeIDs(t)
	if len(ids) == 0 {
		return
	}
	var buf [8]level
	vals := buf[:0]
	for _, id := range ids {
		s, err := b.Fetch(id, voi.StatVoiState)
		if err != nil || s.Type != voi.StatVoiState || len(s.Data) == 0 {
			continue
		}
		s.DType = s.VOIDType // the state holds a value of the VOI's type
		v, err := s.Value()
		if err != nil {
			continue
		}
		vals = append(vals, level{id, v})
	}
	if len(vals) == 0 {
		return
	}
	k := levelKey(t, labels)
	sender := h(ship.HeaderSender)
	seq, _ := strconv.ParseUint(h(ship.HeaderSeq), 10, 64)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.by == nil {
		l.by = map[string]*labelLevels{}
	}
	ls := l.by[k]
	if ls == nil {
		ls = &labelLevels{senders: map[string]*reading{}, heard: readingList{l: inSet}}
		l.by[k] = ls
	}
	ls.last, ls.epoch = at, l.epoch
	if r := ls.senders[sender]; r != nil {
		if seq < r.seq {
			return // an older message than the levels kept
		}
		r.seq, r.vals = seq, append(r.vals[:0], vals...)
		ls.heard.toBack(r)
		l.heard.toBack(r)
		return
	}
	if len(ls.senders) >= MaxLevelSenders {
		l.drop(ls.heard.front)
	} else if l.n >= cmp.Or(l.max, DefaultMaxLevelReadings) {
		l.drop(l.heard.front)
		if l.evicted != nil {
			l.evicted()
		}
	}
	r := &reading{sender: sender, set: ls, seq: seq, vals: slices.Clone(vals)}
	ls.senders[sender] = r
	ls.heard.pushBack(r)
	l.heard.pushBack(r)
	l.n++
}

// drop forgets reading r (its label set stays, if empty, until rotate or
// expire drops it with its aggregates). l.mu is held.
func (l *levels) drop(r *reading) {
	ls := r.set
	delete(ls.senders, r.sender)
	ls.heard.remove(r)
	l.heard.remove(r)
	l.n--
}

// dropSet forgets label set k's levels. l.mu is held.
func (l *levels) dropSet(k string, ls *labelLevels) {
	for r := ls.heard.front; r != nil; r = r.link[inSet].next {
		l.heard.remove(r)
		l.n--
	}
	delete(l.by, k)
}

// rotate starts a window, dropping the label sets that had no post in the
// window that closes: their aggregates left with the window before.
func (l *levels) rotate() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, ls := range l.by {
		if ls.epoch < l.epoch {
			l.dropSet(k, ls)
		}
	}
	l.epoch++
}

// expire drops the label sets without a post since cutoff (their
// aggregates expire with them).
func (l *levels) expire(cutoff time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, ls := range l.by {
		if !ls.last.After(cutoff) { // (as aggregate.Set.Expire: at the cutoff too)
			l.dropSet(k, ls)
		}
	}
}

// dropKeys drops the label sets of keys (level keys), as expire drops them:
// a log's replay of an expiry.
func (l *levels) dropKeys(keys []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, k := range keys {
		if ls := l.by[k]; ls != nil {
			l.dropSet(k, ls)
		}
	}
}

// readings returns how many readings are kept.
func (l *levels) readings() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

// sum returns the sum over senders of the levels kept for key k.
func (l *levels) sum(k string) map[int32]float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	ls := l.by[k]
	if ls == nil || len(ls.senders) == 0 {
		return nil
	}
	out := map[int32]float64{}
	for _, r := range ls.senders {
		for _, v := range r.vals {
			out[v.id] += v.v
		}
	}
	return out
}

// levelKey is the key of a label set's levels: by the template its
// senders post (the aggregates are blobs of its wide form, which another
// version can share, export.Named.Posted), so that each version's series
// carries its own senders' levels.
func levelKey(t *tpl.Template, labels []export.Label) string {
	return key(t.Hash(), labels)
}

// withLevels sets the Levels of the aggregates ns (those that say which
// template they were posted as).
func (s *Server) withLevels(ns []export.Named) []export.Named {
	for i := range ns {
		if ns[i].Posted != nil {
			ns[i].Levels = s.levels.sum(levelKey(ns[i].Posted, ns[i].Labels))
		}
	}
	return ns
}
