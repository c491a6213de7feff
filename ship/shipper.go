package ship

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/family"
	"github.com/statsblob/statsblob/voi"
)

// Defaults of Options.
const (
	DefaultInterval      = 10 * time.Second
	DefaultMinBackoff    = 500 * time.Millisecond
	DefaultMaxBackoff    = time.Minute
	DefaultMaxBacklog    = 16 << 20 // bytes
	MaxRetryAfter        = 5 * time.Minute
	maxSenderLen         = 64
	defaultSenderIDBytes = 16
)

// ErrClosed is returned by the methods of a closed Shipper.
var ErrClosed = errors.New("ship: shipper closed")

// Clock is the time source of a Shipper: Now and After as in package time.
// Tests inject one to drive intervals and backoffs.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

type wallClock struct{}

func (wallClock) Now() time.Time                         { return time.Now() }
func (wallClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Options configures a Shipper. The zero value is usable.
type Options struct {
	// Interval is the time between snapshots (0: DefaultInterval).
	Interval time.Duration
	// Sender is the sender id of every message (see HeaderSender): 1 to
	// 64 bytes of [A-Za-z0-9._-], unique to this Shipper for its life; a
	// restarted process must not reuse it, since its sequence numbers
	// start again at 1. Empty: 32 random hex digits.
	Sender string
	// Labels are added to every message's labels (e.g. host=web1). Their
	// names may not be any source's.
	Labels []Label
	// MinBackoff and MaxBackoff bound the wait before a retry: the n-th
	// retry of a message waits MinBackoff·2^(n-1), at most MaxBackoff,
	// jittered down by up to half (0: DefaultMinBackoff,
	// DefaultMaxBackoff). A receiver's Retry-After replaces it (at most
	// MaxRetryAfter).
	MinBackoff, MaxBackoff time.Duration
	// MaxBacklog bounds the bytes of the snapshots and messages held
	// unsent (0: DefaultMaxBacklog). See Shipper.
	MaxBacklog int
	// SkipIdle leaves out snapshots in which no statistic was updated and
	// no error counted since the last (Stat.Valid, Stat.Errs), counted in
	// Stats.Idle: an idle label set costs no POST. Off, every label set
	// is sent every interval, which keeps it present in a collector that
	// forgets the label sets of a window that were not posted.
	SkipIdle bool
	// Clock is the time source (nil: the wall clock).
	Clock Clock
	// Jitter returns numbers in [0, 1) for the backoff's jitter (nil:
	// math/rand/v2's Float64).
	Jitter func() float64
	// OnError, if set, is called with every failed send's error, every
	// error of a snapshot and every dropped snapshot, from the goroutine
	// that ships, inside a round: it must not call Ship or Close.
	OnError func(error)
}

// Stats counts what a Shipper did, from its start.
type Stats struct {
	Snapshots uint64 // snapshots taken of the sources, one per label set per interval
	Idle      uint64 // of those, the ones left out by Options.SkipIdle
	Sent      uint64 // messages acknowledged by the receiver
	SentBytes uint64 // their bodies' bytes
	Retried   uint64 // sends that failed and whose message is kept for a retry
	Refused   uint64 // of those, the ones the receiver refused (a SendError: e.g. HTTP 422, 429, 503)
	Rejected  uint64 // messages given up because the receiver refused them for good (a Permanent SendError)
	// RejectedBytes are the bytes of the rejected messages.
	RejectedBytes uint64
	Dropped       uint64 // snapshots dropped because the backlog was full and they could not merge
	DroppedBytes  uint64 // their bytes
	Pending       int    // snapshots and messages held, not yet acknowledged
	PendingBytes  int    // their bytes (at most Options.MaxBacklog)
	LastError     error  // the last send's error, nil after a success
}

// source is one thing shipped: a function that snapshots it.
type source struct {
	labels []Label              // the source's own (constant) labels, with the shipper's
	names  []string             // a family's label names, nil otherwise
	snap   func() []family.Snap // a reset snapshot of each label set
}

// queue holds what is unsent for one template and label set.
type queue struct {
	key      string
	labels   []Label
	inflight *message     // formed and (possibly) attempted: frozen until settled
	pending  []*blob.Blob // snapshots not yet in a message, oldest first
	attempts int          // failed attempts of inflight
	due      time.Time    // no attempt before
}

// message is a formed message: its body never changes once it has a seq.
type message struct {
	seq  uint64
	body []byte
}

// Shipper sends snapshots of blobs, Sharded blobs and families to a
// collector every interval; see the package documentation. Its methods are
// safe for concurrent use. The zero value is not usable; use New.
type Shipper struct {
	tr    Transport
	opts  Options
	round sync.Mutex // one round (snapshot and sends) at a time; guards what follows

	sources []source
	queues  map[string]*queue
	order   []*queue  // creation order: the order of sends in a round
	seq     uint64    // the last seq given
	backlog int       // bytes held
	down    time.Time // no sends before: the receiver was unreachable
	downN   int       // failures in a row that were not the receiver's answer

	statsMu sync.Mutex
	stats   Stats
	closed  bool
	closing <-chan struct{} // Close's ctx.Done(), set before stop is closed

	stop    chan struct{} // closed by Close
	running sync.Mutex    // held by Run
}

// New returns a Shipper that sends through tr. It sends nothing until Run
// or Ship is called. Errors wrap voi.ErrInvalid: a nil transport, an HTTP
// transport whose URL is not http(s) with a host, a negative option, a
// malformed sender id, or labels family.CheckName or family.CheckValue
// refuse.
func New(tr Transport, opts Options) (*Shipper, error) {
	if tr == nil {
		return nil, fmt.Errorf("ship: no transport: %w", voi.ErrInvalid)
	}
	if h, ok := tr.(*HTTP); ok {
		if err := h.check(); err != nil {
			return nil, err
		}
	}
	if opts.Interval < 0 || opts.MinBackoff < 0 || opts.MaxBackoff < 0 || opts.MaxBacklog < 0 {
		return nil, fmt.Errorf("ship: negative interval, backoff or backlog: %w", voi.ErrInvalid)
	}
	opts.Interval = cmp.Or(opts.Interval, DefaultInterval)
	opts.MinBackoff = cmp.Or(opts.MinBackoff, DefaultMinBackoff)
	opts.MaxBackoff = max(cmp.Or(opts.MaxBackoff, DefaultMaxBackoff), opts.MinBackoff)
	opts.MaxBacklog = cmp.Or(opts.MaxBacklog, DefaultMaxBacklog)
	if opts.Clock == nil {
		opts.Clock = wallClock{}
	}
	if opts.Jitter == nil {
		opts.Jitter = mrand.Float64
	}
	if opts.Sender == "" {
		var id [defaultSenderIDBytes]byte
		_, _ = rand.Read(id[:]) // never fails (crypto/rand)
		opts.Sender = hex.EncodeToString(id[:])
	}
	if err := checkSender(opts.Sender); err != nil {
		return nil, err
	}
	labels, err := checkLabels(opts.Labels, nil)
	if err != nil {
		return nil, err
	}
	opts.Labels = labels
	return &Shipper{tr: tr, opts: opts, queues: map[string]*queue{}, stop: make(chan struct{})}, nil
}

func checkSender(s string) error {
	ok := len(s) >= 1 && len(s) <= maxSenderLen
	for i := 0; ok && i < len(s); i++ {
		c := s[i]
		ok = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
	}
	if !ok {
		return fmt.Errorf("ship: sender id %q: want 1 to %d bytes of [A-Za-z0-9._-]: %w", s, maxSenderLen, voi.ErrInvalid)
	}
	return nil
}

// checkLabels checks labels and returns a sorted copy; names may not be
// among reserved (a family's label names).
func checkLabels(labels []Label, reserved []string) ([]Label, error) {
	out := slices.Clone(labels)
	for i, l := range out {
		if err := family.CheckName(l.Name); err != nil {
			return nil, fmt.Errorf("ship: %w", err)
		}
		if err := family.CheckValue(l.Value); err != nil {
			return nil, fmt.Errorf("ship: label %q: %w", l.Name, err)
		}
		if slices.ContainsFunc(out[:i], func(m Label) bool { return m.Name == l.Name }) || slices.Contains(reserved, l.Name) {
			return nil, fmt.Errorf("ship: label %q given twice: %w", l.Name, voi.ErrInvalid)
		}
	}
	slices.SortFunc(out, func(a, b Label) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Sender returns the shipper's sender id.
func (s *Shipper) Sender() string { return s.opts.Sender }

// add registers a source after checking its labels.
func (s *Shipper) add(labels []Label, names []string, snap func() []family.Snap) error {
	own, err := checkLabels(labels, names)
	if err != nil {
		return err
	}
	all, err := checkLabels(append(own, s.opts.Labels...), names)
	if err != nil {
		return err
	}
	s.round.Lock()
	defer s.round.Unlock()
	if s.isClosed() {
		return ErrClosed
	}
	s.sources = append(s.sources, source{labels: all, names: slices.Clone(names), snap: snap})
	return nil
}

// AddBlob ships b with labels: every interval a Snapshot(true) of it,
// taken holding mu. b is not safe for concurrent use, so mu must be the
// lock its writers hold around their updates; nil only if nothing else
// touches b after this call. Errors wrap voi.ErrInvalid (see New's labels,
// and a name given twice, here or in Options.Labels).
func (s *Shipper) AddBlob(b *blob.Blob, mu sync.Locker, labels ...Label) error {
	if b == nil {
		return fmt.Errorf("ship: nil blob: %w", voi.ErrInvalid)
	}
	return s.add(labels, nil, func() []family.Snap {
		if mu != nil {
			mu.Lock()
			defer mu.Unlock()
		}
		return []family.Snap{{Blob: b.Snapshot(true)}}
	})
}

// AddSharded ships sb with labels: every interval its Snapshot(true).
func (s *Shipper) AddSharded(sb *blob.Sharded, labels ...Label) error {
	if sb == nil {
		return fmt.Errorf("ship: nil Sharded: %w", voi.ErrInvalid)
	}
	return s.add(labels, nil, func() []family.Snap {
		b, err := sb.Snapshot(true)
		return []family.Snap{{Blob: b, Err: err}}
	})
}

// Family is what AddFamily ships: a *family.Family of Sharded blobs or of
// plain blobs.
type Family interface {
	Names() []string
	Snapshot(reset bool) []family.Snap
}

// AddFamily ships every label set of f, each with its label names and
// values and labels: every interval a reset snapshot of each (see
// family.Family.Snapshot), including label sets not updated since the last.
func (s *Shipper) AddFamily(f Family, labels ...Label) error {
	if f == nil {
		return fmt.Errorf("ship: nil family: %w", voi.ErrInvalid)
	}
	return s.add(labels, f.Names(), func() []family.Snap { return f.Snapshot(true) })
}

func (s *Shipper) isClosed() bool {
	s.statsMu.Lock()
	defer s.statsMu.Unlock()
	return s.closed
}

// Stats returns the shipper's counts.
func (s *Shipper) Stats() Stats {
	s.statsMu.Lock()
	defer s.statsMu.Unlock()
	return s.stats
}

func (s *Shipper) count(f func(st *Stats)) {
	s.statsMu.Lock()
	f(&s.stats)
	s.statsMu.Unlock()
}

func (s *Shipper) report(err error) {
	if err != nil && s.opts.OnError != nil {
		s.opts.OnError(err)
	}
}

// Ship takes a snapshot of every source now and sends what is due: each
// label set's messages whose retry time has come, in the order the label
// sets first appeared. It returns the first error of a send (the
// messages are kept, see Shipper), nil if every attempted send succeeded,
// ErrClosed after Close. Run calls it every interval; a program may call
// it to ship at a moment of its choosing.
func (s *Shipper) Ship(ctx context.Context) error {
	s.round.Lock()
	defer s.round.Unlock()
	if s.isClosed() {
		return ErrClosed
	}
	s.collect()
	return s.send(ctx)
}

// collect snapshots every source into its label sets' queues.
func (s *Shipper) collect() {
	for i := range s.sources {
		src := &s.sources[i]
		for _, sn := range src.snap() {
			if sn.Err != nil {
				s.report(sn.Err)
			}
			if sn.Blob == nil {
				continue
			}
			if s.opts.SkipIdle && idle(sn.Blob) {
				s.count(func(st *Stats) { st.Snapshots++; st.Idle++ })
				continue
			}
			s.count(func(st *Stats) { st.Snapshots++ })
			s.enqueue(s.queueOf(src, sn), sn.Blob)
		}
	}
	s.countPending()
}

// idle reports whether no statistic of b was updated or counted an error.
func idle(b *blob.Blob) bool {
	for _, st := range b.Stats() {
		if st.Valid || st.Errs > 0 {
			return false
		}
	}
	return true
}

// queueOf returns the queue of a snapshot's template and labels. The
// key is made of the labels as they are sent (sorted by name), each value
// with its length: sources whose labels are the same once merged share
// one queue whatever order they were given in, so a label set has one
// message in flight (the protocol's promise), and no value holding NUL
// can make two label sets share one.
func (s *Shipper) queueOf(src *source, sn family.Snap) *queue {
	labels := src.labels
	if len(src.names) > 0 {
		labels = make([]Label, 0, len(src.labels)+len(src.names))
		labels = append(labels, src.labels...)
		for i, n := range src.names {
			labels = append(labels, Label{n, sn.Values[i]})
		}
		slices.SortFunc(labels, func(a, b Label) int { return strings.Compare(a.Name, b.Name) })
	}
	var kb strings.Builder
	kb.WriteString(strconv.FormatUint(uint64(sn.Blob.TplHash()), 16))
	for _, l := range labels {
		kb.WriteByte(0)
		kb.WriteString(l.Name) // a name holds no NUL
		kb.WriteByte(0)
		kb.WriteString(strconv.Itoa(len(l.Value)))
		kb.WriteByte(':')
		kb.WriteString(l.Value)
	}
	key := kb.String()
	if q := s.queues[key]; q != nil {
		return q
	}
	q := &queue{key: key, labels: slices.Clone(labels)}
	s.queues[key] = q
	s.order = append(s.order, q)
	return q
}

// enqueue adds a snapshot to q's pending ones, within the backlog's bound:
// if it does not fit, pending snapshots are merged (the queues with the
// most first) until it does; if it still does not, it is merged into q's
// last pending snapshot, and if it cannot merge there, dropped and
// counted.
func (s *Shipper) enqueue(q *queue, b *blob.Blob) {
	n := b.CurSz()
	if s.backlog+n > s.opts.MaxBacklog {
		s.makeRoom(n)
	}
	if s.backlog+n <= s.opts.MaxBacklog {
		q.pending = append(q.pending, b)
		s.backlog += n
		return
	}
	if len(q.pending) > 0 {
		last := q.pending[len(q.pending)-1]
		if err := blob.Merge(last, b); err == nil { // all or nothing
			return
		}
	}
	s.count(func(st *Stats) { st.Dropped++; st.DroppedBytes += uint64(n) })
	s.report(fmt.Errorf("ship: backlog of %d bytes full: snapshot of %d bytes dropped (labels %v)", s.opts.MaxBacklog, n, q.labels))
}

// makeRoom merges the pending snapshots of queues, those with the most
// first, until need more bytes fit in the backlog or nothing merges.
func (s *Shipper) makeRoom(need int) {
	qs := slices.Clone(s.order)
	slices.SortStableFunc(qs, func(a, b *queue) int { return cmp.Compare(len(b.pending), len(a.pending)) })
	for _, q := range qs {
		if s.backlog+need <= s.opts.MaxBacklog || len(q.pending) < 2 {
			return
		}
		s.compact(q)
	}
}

// compact merges q's pending snapshots into one (blob.MergeAll); those
// that cannot merge stay beside it.
func (s *Shipper) compact(q *queue) {
	merged, rest := mergePending(q.pending)
	before := sizeOf(q.pending)
	q.pending = append([]*blob.Blob{merged}, rest...)
	s.backlog += sizeOf(q.pending) - before
}

// mergePending merges snapshots in one step (blob.MergeAll) and returns
// the merge and the snapshots left out of it, in their order.
func mergePending(bs []*blob.Blob) (*blob.Blob, []*blob.Blob) {
	merged, err := blob.MergeAll(nil, bs...)
	if err == nil {
		return merged, nil
	}
	var rest []*blob.Blob
	for _, e := range unjoin(err) {
		var ie *blob.InputError
		if errors.As(e, &ie) {
			rest = append(rest, bs[ie.Index])
		}
	}
	return merged, rest
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

func sizeOf(bs []*blob.Blob) int {
	n := 0
	for _, b := range bs {
		n += b.CurSz()
	}
	return n
}

func (s *Shipper) countPending() {
	n := 0
	for _, q := range s.order {
		n += len(q.pending)
		if q.inflight != nil {
			n++
		}
	}
	s.count(func(st *Stats) { st.Pending, st.PendingBytes = n, s.backlog })
}

// settledBelow is HeaderSettledBelow: the smallest seq in flight, or the
// next seq if none.
func (s *Shipper) settledBelow() uint64 {
	low := s.seq + 1
	for _, q := range s.order {
		if q.inflight != nil && q.inflight.seq < low {
			low = q.inflight.seq
		}
	}
	return low
}

// send sends every queue's due messages. A send whose outcome is unknown
// (a network error, not a refusal) ends the round and holds every send
// back for a backoff of its own (down, downN): the receiver is probably
// unreachable, and one probe per backoff is enough to find out.
func (s *Shipper) send(ctx context.Context) error {
	defer s.countPending()
	if s.opts.Clock.Now().Before(s.down) {
		return nil
	}
	var first error
	for _, q := range s.order {
		stop, err := s.drain(ctx, q)
		if err != nil && first == nil {
			first = err
		}
		if stop {
			break
		}
	}
	return first
}

// drain sends q's messages while they are due and succeed.
func (s *Shipper) drain(ctx context.Context, q *queue) (stop bool, rejected error) {
	for {
		if q.inflight == nil {
			if len(q.pending) == 0 {
				return false, rejected
			}
			merged, rest := mergePending(q.pending)
			before := sizeOf(q.pending)
			s.seq++
			q.inflight = &message{seq: s.seq, body: bytes.Clone(merged.Bytes())}
			q.pending = rest
			s.backlog += len(q.inflight.body) + sizeOf(rest) - before
			q.attempts, q.due = 0, time.Time{}
		}
		now := s.opts.Clock.Now()
		if now.Before(q.due) {
			return false, rejected
		}
		if err := ctx.Err(); err != nil {
			return true, err
		}
		m := Message{Sender: s.opts.Sender, Seq: q.inflight.seq, SettledBelow: s.settledBelow(), Labels: q.labels, Body: q.inflight.body}
		err := s.tr.Send(ctx, m)
		n := len(m.Body)
		if err == nil {
			s.down, s.downN = time.Time{}, 0
			s.count(func(st *Stats) { st.Sent++; st.SentBytes += uint64(n); st.LastError = nil })
			s.backlog -= n
			q.inflight = nil
			continue
		}
		s.report(err)
		var se *SendError
		refused := errors.As(err, &se)
		if refused && se.Permanent {
			s.count(func(st *Stats) { st.Rejected++; st.RejectedBytes += uint64(n); st.LastError = err })
			s.backlog -= n
			q.inflight = nil
			if rejected == nil {
				rejected = err
			}
			continue
		}
		s.count(func(st *Stats) {
			st.Retried++
			if refused {
				st.Refused++
			}
			st.LastError = err
		})
		if ctx.Err() != nil {
			return true, err // not the receiver's fault: no backoff
		}
		q.attempts++
		q.due = now.Add(s.backoff(q.attempts, se))
		if !refused {
			s.downN++
			s.down = now.Add(s.backoff(s.downN, nil))
		}
		return !refused, err
	}
}

// backoff returns the wait before retry n (1, 2, ...): the receiver's
// Retry-After, else MinBackoff·2^(n-1) at most MaxBackoff, less a random
// part of up to half.
func (s *Shipper) backoff(n int, se *SendError) time.Duration {
	if se != nil && se.RetryAfter > 0 {
		return min(se.RetryAfter, MaxRetryAfter)
	}
	d := s.opts.MaxBackoff
	if n-1 < 40 {
		d = min(s.opts.MinBackoff<<(n-1), s.opts.MaxBackoff)
	}
	return d - time.Duration(s.opts.Jitter()*float64(d/2))
}

// nextDue returns the earliest time a held message may be retried, and
// whether there is one.
func (s *Shipper) nextDue() (time.Time, bool) {
	var t time.Time
	found := false
	for _, q := range s.order {
		if q.inflight == nil && len(q.pending) == 0 {
			continue
		}
		if !found || q.due.Before(t) {
			t, found = q.due, true
		}
	}
	if found && t.Before(s.down) {
		t = s.down
	}
	return t, found
}

// Run ships every Interval (a snapshot of every source, then the sends),
// and retries held messages when their backoff ends, until ctx is done
// (returning ctx.Err()) or Close is called (returning nil). Run once.
func (s *Shipper) Run(ctx context.Context) error {
	if !s.running.TryLock() {
		if s.isClosed() {
			return nil // Close holds it
		}
		return fmt.Errorf("ship: Run called twice: %w", voi.ErrInvalid)
	}
	defer s.running.Unlock()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		// Close lets a round under way finish (a send cut off has an
		// unknown outcome, and its retry would rely on the receiver's
		// deduplication) unless Close's own context ends first.
		select {
		case <-s.stop:
			s.statsMu.Lock()
			closing := s.closing
			s.statsMu.Unlock()
			select {
			case <-closing:
				cancel()
			case <-ctx.Done():
			}
		case <-ctx.Done():
		}
	}()
	clock := s.opts.Clock
	next := clock.Now().Add(s.opts.Interval)
	for {
		wake := next
		s.round.Lock()
		due, ok := s.nextDue()
		s.round.Unlock()
		if ok && due.Before(wake) {
			wake = due
		}
		select {
		case <-s.stop:
			return nil
		case <-ctx.Done():
			select {
			case <-s.stop:
				return nil
			default:
			}
			return ctx.Err()
		case <-clock.After(wake.Sub(clock.Now())):
		}
		now := clock.Now()
		s.round.Lock()
		if !now.Before(next) {
			s.collect()
			next = next.Add(s.opts.Interval)
			if !next.After(now) { // a long stall: do not catch up
				next = now.Add(s.opts.Interval)
			}
		}
		_ = s.send(ctx)
		s.round.Unlock()
	}
}

// Close stops Run (letting a round under way finish, unless ctx ends
// first), takes a last snapshot of every source and sends
// everything held, retrying as backoffs allow, until all is acknowledged
// or rejected (nil) or ctx is done (an error wrapping ctx.Err() that says
// how many snapshots were left unsent). Later calls return ErrClosed.
func (s *Shipper) Close(ctx context.Context) error {
	s.statsMu.Lock()
	if s.closed {
		s.statsMu.Unlock()
		return ErrClosed
	}
	s.closed = true
	s.closing = ctx.Done()
	s.statsMu.Unlock()
	close(s.stop)
	s.running.Lock() // Run has returned
	defer s.running.Unlock()
	s.round.Lock()
	defer s.round.Unlock()
	s.collect()
	for {
		_ = s.send(ctx)
		due, ok := s.nextDue()
		if !ok {
			return nil
		}
		if ctx.Err() == nil {
			select {
			case <-ctx.Done():
			case <-s.opts.Clock.After(due.Sub(s.opts.Clock.Now())):
				continue
			}
		}
		st := s.Stats()
		return fmt.Errorf("ship: close: %d snapshots (%d bytes) unsent: %w", st.Pending, st.PendingBytes, ctx.Err())
	}
}
