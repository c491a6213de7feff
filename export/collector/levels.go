package collector

import (
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
// posting keeps counting at its last level; at most MaxLevelSenders are
// kept per template and label set, the least recently heard from going
// first. A label set's levels go when its aggregates do: when it expires
// (LabelTTL), or when two windows have closed without a post of it.

// MaxLevelSenders bounds the senders whose levels are kept per template
// and label set.
const MaxLevelSenders = 4096

type levels struct {
	mu    sync.Mutex
	by    map[string]*labelLevels // level key -> its senders' latest
	epoch uint64                  // windows closed (rotate)

	gauges sync.Map // *tpl.Template -> *gaugeIDs
}

// labelLevels is a label set's senders' latest levels and when it last
// had a post: at now() (last) and in which window (epoch).
type labelLevels struct {
	senders map[string]*reading
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

type reading struct {
	seq  uint64
	at   time.Time
	vals map[int32]float64
}

// record keeps the levels of blob b of template t, posted by the
// request's sender at now(), for t's aggregates with labels. Blobs of templates
// without relative-update VOIs cost a lookup.
func (l *levels) record(t *tpl.Template, labels []export.Label, h func(string) string, now func() time.Time, b *blob.Blob) {
	ids := l.gaugeIDs(t)
	if len(ids) == 0 {
		return
	}
	var vals map[int32]float64
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
		if vals == nil {
			vals = map[int32]float64{}
		}
		vals[id] = v
	}
	if vals == nil {
		return
	}
	k := levelKey(t, labels)
	sender := h(ship.HeaderSender)
	seq, _ := strconv.ParseUint(h(ship.HeaderSeq), 10, 64)
	at := now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.by == nil {
		l.by = map[string]*labelLevels{}
	}
	ls := l.by[k]
	if ls == nil {
		ls = &labelLevels{senders: map[string]*reading{}}
		l.by[k] = ls
	}
	ls.last, ls.epoch = at, l.epoch
	m := ls.senders
	if r := m[sender]; r != nil && seq < r.seq {
		return // an older message than the levels kept
	}
	if _, ok := m[sender]; !ok && len(m) >= MaxLevelSenders {
		oldest := ""
		for s, r := range m {
			if oldest == "" || r.at.Before(m[oldest].at) {
				oldest = s
			}
		}
		delete(m, oldest)
	}
	m[sender] = &reading{seq: seq, at: at, vals: vals}
}

// rotate starts a window, dropping the label sets that had no post in the
// last two (their aggregates have left with them).
func (l *levels) rotate() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, ls := range l.by {
		if ls.epoch < l.epoch {
			delete(l.by, k)
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
		if ls.last.Before(cutoff) {
			delete(l.by, k)
		}
	}
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
		for id, v := range r.vals {
			out[id] += v
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
