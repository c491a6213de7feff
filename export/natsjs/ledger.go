package natsjs

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/statsblob/statsblob/export/internal/hashfmt"
	"github.com/statsblob/statsblob/export/internal/wire"
)

// A ledger is the consumer's own part of a partition's state, stored
// before the Partition's bytes: the messages processed that may be
// delivered again, the shippers' sequence marks, and the messages waiting
// for their template. One worker owns it.
//
// Marks. The shipper numbers its messages (ship.HeaderSeq), sends one
// label set's messages one at a time and forms sequence N+1 only after N
// is acknowledged, so in the stream every copy of N precedes N+1 of the
// same sender, template and label set. A copy the stream stores after its
// duplicate window (a retry whose acknowledgement was lost, published
// after Setup.Duplicates) is then recognised by the highest sequence
// merged of its sender and label set, provided that mark is taken in
// stream order. Deliveries are not in stream order: a message
// redelivered (after a collector died holding it) comes after newer
// ones. So a mark only takes in the messages at or below the consumer's
// acknowledgement floor, which are never delivered again; a merged
// message above it is remembered exactly (sender, label set, sequence)
// until the floor passes it. A message delivered is above
// the floor. A copy of its sequence merged before is above the floor
// too, remembered exactly, or at or below it, and then in the mark; and
// its mark cannot be above its sequence, since the mark's message is at
// or below the floor and every copy of a smaller sequence precedes it. So
// a message whose sequence is at most its mark, or remembered exactly, is
// a duplicate; any other is merged.
//
// A message that waited for its template is merged long after the floor
// passed it. Its template's newer messages waited behind it (none of its
// label set was merged since it began to wait), and the fold keeps exact the merged
// messages of its template above the first waiting one, so its mark
// holds only what precedes it in the stream: the same rule holds.
type ledger struct {
	// done holds the messages processed (merged, refused, recognised as
	// duplicates, set waiting) that may be delivered again, by stream
	// sequence: a delivery of one of them is skipped.
	done map[uint64]doneMsg
	// marks is the highest sequence merged per sender, template and
	// label set, of the messages the fold took in.
	marks map[markID]*mark
	// exact holds the sender, label set and sequence of the merged
	// messages in done (those with a mark).
	exact map[markSeq]struct{}
	// waiting holds the messages of templates the Partition did not know,
	// by template hash: stream sequences, ascending.
	waiting  map[uint32]*waitQueue
	nWaiting int
	// now is the stream's clock as the partition saw it: the latest
	// store time of its messages, Unix nanoseconds.
	now int64
}

// markID names a sender's label set of a template: the first 16 bytes of
// SHA-256 of the sender, the template hash and the labels, so that a mark
// costs the same whatever the labels' length.
type markID [16]byte

// mark is the highest sequence merged of one markID.
type mark struct {
	hw   uint64 // the highest sequence folded in (0: none; the shipper starts at 1)
	last int64  // the store time of its latest message, Unix nanoseconds
	open int    // its messages in done, not folded in yet
}

type markSeq struct {
	id  markID
	seq uint64
}

// doneMsg is a message processed: seq (the shipper's) is 0 unless it was
// merged with a mark.
type doneMsg struct {
	id   markID
	seq  uint64
	hash uint32 // the template hash
}

// waitQueue is the stream sequences of one template's messages waiting
// for it, ascending, and when to try them again.
type waitQueue struct {
	seqs []uint64
	due  time.Time
}

func newLedger() *ledger {
	return &ledger{done: map[uint64]doneMsg{}, marks: map[markID]*mark{}, exact: map[markSeq]struct{}{}, waiting: map[uint32]*waitQueue{}}
}

// markOf returns a message's markID, and false for a message without a
// sender or sequence (not checked: merged as it comes).
func markOf(m Message) (markID, bool) {
	if m.Sender == "" || m.Seq == 0 {
		return markID{}, false
	}
	h := sha256.New()
	var b [8]byte
	binary.LittleEndian.PutUint32(b[:], uint32(len(m.Sender)))
	h.Write(b[:4])
	h.Write([]byte(m.Sender))
	binary.LittleEndian.PutUint32(b[:], m.TplHash)
	h.Write(b[:4])
	for _, l := range m.Labels {
		binary.LittleEndian.PutUint32(b[:], uint32(len(l.Name)))
		binary.LittleEndian.PutUint32(b[4:], uint32(len(l.Value)))
		h.Write(b[:])
		h.Write([]byte(l.Name))
		h.Write([]byte(l.Value))
	}
	var id markID
	copy(id[:], h.Sum(nil))
	return id, true
}

// clock advances the stream's clock to a message's store time.
func (l *ledger) clock(t time.Time) {
	l.now = max(l.now, t.UnixNano())
}

// seen reports whether a copy of sequence seq of id was merged.
func (l *ledger) seen(id markID, seq uint64) bool {
	if mk := l.marks[id]; mk != nil && seq <= mk.hw {
		return true
	}
	_, ok := l.exact[markSeq{id, seq}]
	return ok
}

// touch notes a message of id stored at t (a duplicate keeps its mark).
func (l *ledger) touch(id markID, t time.Time) {
	if mk := l.marks[id]; mk != nil {
		mk.last = max(mk.last, t.UnixNano())
	}
}

// room reports whether id has a mark or one more fits under limit.
func (l *ledger) room(id markID, limit int) bool {
	return l.marks[id] != nil || len(l.marks) < limit
}

// merged records message streamSeq, sequence seq of id, stored at t, as
// merged.
func (l *ledger) merged(streamSeq uint64, id markID, seq uint64, hash uint32, t time.Time) {
	mk := l.marks[id]
	if mk == nil {
		mk = &mark{}
		l.marks[id] = mk
	}
	mk.open++
	mk.last = max(mk.last, t.UnixNano())
	if old, ok := l.done[streamSeq]; ok && old.seq != 0 {
		l.unref(old) // (cannot happen: a message is merged once)
	}
	l.done[streamSeq] = doneMsg{id: id, seq: seq, hash: hash}
	l.exact[markSeq{id, seq}] = struct{}{}
}

// processed records message streamSeq as processed without a mark.
func (l *ledger) processed(streamSeq uint64, hash uint32) {
	if _, ok := l.done[streamSeq]; !ok {
		l.done[streamSeq] = doneMsg{hash: hash}
	}
}

func (l *ledger) unref(d doneMsg) {
	delete(l.exact, markSeq{d.id, d.seq})
	if mk := l.marks[d.id]; mk != nil {
		mk.open--
	}
}

// fold forgets the messages at or below floor, the consumer's
// acknowledgement floor (never delivered again), taking the merged ones
// into their marks, and then the marks without a message for maxAge of
// the stream's clock (a copy stored later than that after the original
// is merged again). A merged message above the first waiting message of
// its template stays exact: when the waiting one is merged, its mark
// must not hold a later sequence of its label set.
func (l *ledger) fold(floor uint64, maxAge time.Duration) {
	for s, d := range l.done {
		if s > floor {
			continue
		}
		if d.seq != 0 {
			if q := l.waiting[d.hash]; q != nil && s > q.seqs[0] {
				continue
			}
			mk := l.marks[d.id]
			mk.hw = max(mk.hw, d.seq)
			l.unref(d)
		}
		delete(l.done, s)
	}
	for id, mk := range l.marks {
		if mk.open == 0 && l.now-mk.last > int64(maxAge) {
			delete(l.marks, id)
		}
	}
}

// wait adds message streamSeq of template hash to the waiting ones.
func (l *ledger) wait(streamSeq uint64, hash uint32, due time.Time) {
	q := l.waiting[hash]
	if q == nil {
		q = &waitQueue{due: due}
		l.waiting[hash] = q
	}
	i, found := slices.BinarySearch(q.seqs, streamSeq)
	if found {
		return
	}
	q.seqs = slices.Insert(q.seqs, i, streamSeq)
	l.nWaiting++
}

// unwait removes the first waiting message of template hash.
func (l *ledger) unwait(hash uint32) {
	q := l.waiting[hash]
	q.seqs = q.seqs[1:]
	l.nWaiting--
	if len(q.seqs) == 0 {
		delete(l.waiting, hash)
	}
}

// The ledger's encoding, before the Partition's bytes in a stored state
// (little-endian):
//
//	u32 0xffffffff, u32 version (2)
//	u32 n, n × (u64 stream sequence, u64 sequence, u32 template hash, [16]byte markID)   done
//	u32 n, n × ([16]byte markID, u64 highest sequence, i64 store time)                    marks
//	u32 n, n × (u32 template hash, u32 k, k × u64 stream sequence)                         waiting
//
// The first state format (version 1) was u32 n, n × u64 stream sequence:
// done without marks. A count of 0xffffffff sequences cannot fit a state,
// so the two are told apart by their first word.
const (
	ledgerMagic   = 0xffffffff
	ledgerVersion = 2
	doneSize      = 8 + 8 + 4 + 16
	markSize      = 16 + 8 + 8
)

// appendLedger appends l's encoding to b.
func (l *ledger) append(b []byte) []byte {
	b = binary.LittleEndian.AppendUint32(b, ledgerMagic)
	b = binary.LittleEndian.AppendUint32(b, ledgerVersion)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(l.done)))
	for _, s := range slices.Sorted(maps.Keys(l.done)) {
		d := l.done[s]
		b = binary.LittleEndian.AppendUint64(b, s)
		b = binary.LittleEndian.AppendUint64(b, d.seq)
		b = binary.LittleEndian.AppendUint32(b, d.hash)
		b = append(b, d.id[:]...)
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(len(l.marks)))
	ids := slices.SortedFunc(maps.Keys(l.marks), func(a, b markID) int { return cmp.Compare(string(a[:]), string(b[:])) })
	for _, id := range ids {
		mk := l.marks[id]
		b = append(b, id[:]...)
		b = binary.LittleEndian.AppendUint64(b, mk.hw)
		b = binary.LittleEndian.AppendUint64(b, uint64(mk.last))
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(len(l.waiting)))
	for _, h := range slices.Sorted(maps.Keys(l.waiting)) {
		q := l.waiting[h]
		b = binary.LittleEndian.AppendUint32(b, h)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(q.seqs)))
		for _, s := range q.seqs {
			b = binary.LittleEndian.AppendUint64(b, s)
		}
	}
	return b
}

// readLedger decodes a ledger from the start of a stored state and
// returns the rest (the Partition's bytes). Waiting messages are due at
// due.
func readLedger(v []byte, due time.Time) (*ledger, []byte, error) {
	l := newLedger()
	r := wire.New(v, ledgerShort)
	n := r.U32()
	if n != ledgerMagic { // version 1
		if r.Err() != nil || !r.Fits(uint64(n), 8) {
			return nil, nil, fmt.Errorf("state: %d sequences in %d bytes", n, len(v))
		}
		for range n {
			l.done[r.U64()] = doneMsg{}
		}
		return l, r.Rest(), nil
	}
	if ver := r.U32(); r.Err() == nil && ver != ledgerVersion {
		return nil, nil, fmt.Errorf("state: version %d, want %d", ver, ledgerVersion)
	}
	// Each list is in the strictly increasing order append writes it in,
	// so that one ledger has one encoding: an entry given twice (a
	// waiting message, which would be merged twice) is refused, not
	// overwritten or taken twice.
	n = readCount(&r, doneSize)
	var lastSeq uint64
	for i := range n {
		s := r.U64()
		d := doneMsg{seq: r.U64(), hash: r.U32()}
		copy(d.id[:], r.Bytes(16))
		if r.Err() == nil && i > 0 && s <= lastSeq {
			r.Fail(fmt.Errorf("processed message %d after %d", s, lastSeq))
		}
		lastSeq = s
		l.done[s] = d
	}
	n = readCount(&r, markSize)
	var lastID markID
	for i := range n {
		var id markID
		copy(id[:], r.Bytes(16))
		mk := &mark{hw: r.U64(), last: int64(r.U64())}
		if r.Err() == nil && i > 0 && string(id[:]) <= string(lastID[:]) {
			r.Fail(fmt.Errorf("mark %x after %x", id, lastID))
		}
		lastID = id
		l.marks[id] = mk
		l.now = max(l.now, mk.last)
	}
	n = readCount(&r, 8)
	var lastHash uint32
	for i := range n {
		h := r.U32()
		k := readCount(&r, 8)
		if r.Err() != nil {
			break
		}
		if k == 0 {
			r.Fail(fmt.Errorf("template %s waits with no message", hashfmt.String(h)))
			break
		}
		if i > 0 && h <= lastHash {
			r.Fail(fmt.Errorf("template %s after %s", hashfmt.String(h), hashfmt.String(lastHash)))
			break
		}
		lastHash = h
		q := &waitQueue{due: due, seqs: make([]uint64, k)}
		for i := range q.seqs {
			q.seqs[i] = r.U64()
			if r.Err() == nil && i > 0 && q.seqs[i] <= q.seqs[i-1] {
				r.Fail(fmt.Errorf("template %s: waiting message %d after %d", hashfmt.String(h), q.seqs[i], q.seqs[i-1]))
			}
		}
		if r.Err() != nil {
			break
		}
		l.waiting[h] = q
		l.nWaiting += int(k)
	}
	if r.Err() != nil {
		return nil, nil, fmt.Errorf("state: %w", r.Err())
	}
	for _, d := range l.done {
		if d.seq == 0 {
			continue
		}
		mk := l.marks[d.id]
		if mk == nil { // stored by another version, or forged: the message stays exact
			mk = &mark{}
			l.marks[d.id] = mk
		}
		mk.open++
		l.exact[markSeq{d.id, d.seq}] = struct{}{}
	}
	return l, r.Rest(), nil
}

// errTruncated is readLedger's error for a state cut short.
var errTruncated = errors.New("truncated")

func ledgerShort(string, int) error { return errTruncated }

// readCount reads a count of items of size bytes each, checking that they
// can fit in what is left (0 if not, or after an error).
func readCount(r *wire.Reader, size int) uint32 {
	n := r.U32()
	if r.Err() == nil && !r.Fits(uint64(n), size) {
		r.Fail(fmt.Errorf("%d items of %d bytes in %d bytes", n, size, r.Len()))
	}
	if r.Err() != nil {
		return 0
	}
	return n
}
