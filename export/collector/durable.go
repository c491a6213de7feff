package collector

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/export"
	"github.com/statsblob/statsblob/export/aggregate"
	"github.com/statsblob/statsblob/export/internal/hashfmt"
	"github.com/statsblob/statsblob/export/internal/wal"
	"github.com/statsblob/statsblob/export/internal/wire"
	"github.com/statsblob/statsblob/voi"
)

// Durability (Config.DataDir). Every post the server adds is first a
// record of a write-ahead log in DataDir (package export/internal/wal),
// and is answered 204 only once that record is on disk (fsync, shared by
// the posts arriving together). The record is appended in the same step
// as the add, under the log's lock, and only if the add succeeds: the log
// holds exactly the posts that were added, in their order. The changes
// of the state that are not posts are records too, appended in the same
// step as the change (logEvent): an expiry of idle label sets (the label
// sets dropped), a window's rotation (the new window's start; a new log
// starts with one, the first window's start) and a reset of VOIs
// (/v1/definition). Every CheckpointInterval, at every window rotation
// and at Close, the current window's aggregates and the senders'
// sequence marks (aggregate.Set.State) replace the records they
// cover. On start, New loads the last checkpoint and replays the records
// since: a post through the same sender check and add as a live post, an
// event as the server made it. A post acknowledged before a crash (kill
// -9, power loss) is counted once after it, and a sender's retry of it
// is still a duplicate. A post's record holds the time it was added at,
// which its sender's marks took: replayed, they take it again, and age
// out at the rotations replayed after it as they did live (see replay).
// A checkpoint holds its marks' times too, and the rotations since each
// (aggregate's state, version 3): loaded, they age out and are evicted
// at the rotations after it as in the server that never stopped, the
// downtime counted. (Before, they took the restart's time: they outlived
// SequenceMarkAge by the downtime, and seemed newer than the marks of
// the posts replayed after the checkpoint.) So with the label sets: a
// post's label sets take its time as their last post's, from which
// LabelTTL counts, a replay gives it again, and a checkpoint holds each
// label set's: after a restart, an idle label set expires at the expiry
// that expires it in the server that never stopped. (Before, the label
// sets of the checkpoint and of the posts replayed took the restart's
// time: an idle one outlived LabelTTL by the time between its last post
// and the restart, and its series was exported all that while.)
//
// A checkpoint is not bounded by wal.MaxRecord, which bounds one post's
// record: the state the limits allow passes it (DefaultMaxAggregates
// label sets of DefaultMaxLabels labels of DefaultMaxLabelBytes names
// and values, which one batch of 740 KB of a small template's blobs
// makes, are 99.4 MB with a 2 KB wide blob each and one sender's marks;
// with 1,040,000 marks, 104 senders on each (about
// DefaultMaxSequenceMarks), 13 bytes each, their label sets' keys
// written once and their times against their senders' (one byte for the
// marks of a sender's latest post), 112.8 MB: package aggregate's
// BenchmarkAppendState, limit-aggregates and limit-marks; before, each
// mark wrote its label set's key again, 4.1 GB; with Window, the key of
// a label set of a window before that marks outlive is written once
// too), and the
// log writes it in pieces as it is made (wal.Log.CheckpointState): posts
// wait only while aggregate.Set.State copies references to the blobs and
// marks, and
// the whole state is never in memory (it is folded a chunk of aggregates
// at a time as it is written); Open reads it back with memory
// bounded by the file's length. A checkpoint that fails (a disk full,
// say) is logged and counted (statsblob_collector_checkpoint_failures_total): the
// records it would have replaced stay, and are replayed at a restart,
// until a checkpoint succeeds. It undoes nothing: the expiry or rotation
// it follows is among those records, so the restart recovers the state
// the server had, as after a checkpoint written (before, an expiry was
// made only in the checkpoint's state, and a restart after a failed one
// brought the expired label sets back, in place of the posts that took
// their places since; a rotation's closed window came back into the
// window under way).
//
// A write or an fsync of the log that fails (an I/O error, a full disk)
// fails the log (Server.broken): the posts of that write were added
// (their applies ran) but are answered 503, and every later post is
// refused (503, and /readyz 503) until the log heals. Meanwhile nothing
// is shipped that a restart would replay: the window under way does not
// close (Rotate holds it back), and a window whose own rotation's record
// failed is closed but held, not shipped. At every checkpoint, window's
// end and Close the server tries to heal the log (Server.healLocked): it
// writes a checkpoint of the state in memory to a new file
// (wal.Log.Recover), which replaces the log; the failed segment is never
// written or synced again. That state holds the posts answered 503 with
// their senders' marks: once healed they are counted once, and a
// sequenced sender's retry of one is a duplicate (a post without a
// sender id retried after the 503 is added again, as after an answer
// lost on the way). Posts are then taken again and the held window is
// shipped. If the process dies first, the restart replays the log as it
// is: a post of the failed write is replayed or not (its record on disk
// or not), its sequenced retry a duplicate or added, once either way;
// the held window's posts come back into the window under way (its
// rotation's record lost), or the window is closed again (the record on
// disk), and then the delta pusher's file ships it and a remote writer
// loses it, as any window it had not sent. No post is added while the
// log is failed and at most one window is held: memory does not grow.
// Each failure and each heal is logged once; counted in
// statsblob_collector_log_broken, _log_failures_total, _log_heals_total,
// _rotations_held_total, and the tries that fail in
// _checkpoint_failures_total. Before, a failed log went on closing and
// shipping windows whose rotations were not in the log, so a restart
// replayed their posts into the window under way and shipped them a
// second time, and a post answered 503 after its add was shipped all the
// same, while its sender's retry was added again after the restart (or
// at another collector); the log never took a post again.
//
// Why heal rather than exit, as PostgreSQL does after a failed fsync:
// PostgreSQL cannot know what its data files hold after one and rebuilds
// them from its log; here the state in memory is known and holds all the
// log does, and it is written to a new file. An exit under systemd or
// Kubernetes would restart into a loop while the disk stays full,
// replaying the log at every start and serving no scrape; a collector
// that heals keeps its state, is out of the load balancers while failed
// (/readyz), and takes posts again as soon as the disk does. A restart
// loses nothing acknowledged, for an operator who prefers one.
//
// A window closed and not yet pushed by a delta OTLP Pusher is kept too,
// until pushed (closed.go). What is not kept: the levels (gauges) of the
// senders, which come back with their next post, a closed window a remote
// writer (package remotewrite, fed by OnClose) had not sent when the
// process died, and the closed windows kept for the query API (History).
// With a log, idle label sets expire at checkpoints.

// The first byte of a log record says what it is: a post (recordVersion,
// or recordV2 or recordV1, which the collector wrote before and still
// reads), or an event, a change of the state the server made at that
// point of the log's order (see event).
const (
	recordVersion = 6
	recordV2      = 2
	recordV1      = 1
	recordExpire  = 3
	recordRotate  = 4
	recordReset   = 5
)

// frame is one blob of a record: its labels and bytes (the template hash
// is the blob's own).
type frame struct {
	labels []export.Label
	blob   []byte
}

// record is one post as the log holds it: the sender's id and sequence
// number (tracked false: a post without them), the time it was added at
// (timed false: a record of version 1 or 2, which did not hold it) and
// its blobs; or, with event not nil, an event.
type record struct {
	tracked bool
	sender  string
	seq     uint64
	timed   bool
	at      int64 // Unix nanoseconds (Config.Now): the time its sender's marks took
	frames  []frame
	event   *event
}

// event is a record of a change of the state the server made under the
// log's lock, at its point of the log's order, which recovery makes again
// there (replayEvent): the log alone then gives the state, whether or not
// the checkpoint written after the event succeeded. Its encoding, after
// its first byte (little-endian; strings and labels as in a post):
//
//	recordExpire  n uint32 label sets expired, then each:
//	                hash uint32 (the template posted), k uint32 labels, then each label
//	recordRotate  at int64: the new window's start, Unix nanoseconds
//	recordReset   template name string, n uint32 VOI names, then each string
//
// An expiry's label sets are written as their posts' records wrote them,
// not as aggregate keys, so that one fits a record wherever a post of it
// did; an expiry of more than a record holds is written as several.
type event struct {
	kind byte
	sets []labelSet // recordExpire
	at   int64      // recordRotate
	tpl  string     // recordReset
	vois []string   // recordReset
}

// labelSet is an aggregate's template (hash) and labels.
type labelSet struct {
	hash   uint32
	labels []export.Label
}

// appendEvent appends e's encoding to dst.
func appendEvent(dst []byte, e *event) []byte {
	dst = append(dst, e.kind)
	switch e.kind {
	case recordExpire:
		dst = binary.LittleEndian.AppendUint32(dst, uint32(len(e.sets)))
		for _, ls := range e.sets {
			dst = appendLabelSet(dst, ls)
		}
	case recordRotate:
		dst = binary.LittleEndian.AppendUint64(dst, uint64(e.at))
	case recordReset:
		dst = appendStr(dst, e.tpl)
		dst = binary.LittleEndian.AppendUint32(dst, uint32(len(e.vois)))
		for _, v := range e.vois {
			dst = appendStr(dst, v)
		}
	}
	return dst
}

func appendLabelSet(dst []byte, ls labelSet) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, ls.hash)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(ls.labels)))
	for _, l := range ls.labels {
		dst = appendLabel(dst, l)
	}
	return dst
}

func labelSetSize(ls labelSet) int { return 8 + labelsSize(ls.labels) }

// expireRecords is the records of an expiry of label sets: as many as it
// takes for each to hold at most max bytes (wal.MaxRecord; none for
// none). A label set's own encoding is shorter than the record of a post
// of it, which fitted.
func expireRecords(gone []aggregate.Expired, max int) [][]byte {
	var recs [][]byte
	var cur []byte
	for _, g := range gone {
		ls := labelSet{hash: g.T.Hash(), labels: g.Labels}
		if cur != nil && len(cur)+labelSetSize(ls) > max {
			recs = append(recs, cur)
			cur = nil
		}
		if cur == nil {
			cur = append(make([]byte, 0, 64<<10), recordExpire, 0, 0, 0, 0)
		}
		cur = appendLabelSet(cur, ls)
		binary.LittleEndian.PutUint32(cur[1:], binary.LittleEndian.Uint32(cur[1:])+1)
	}
	if cur != nil {
		recs = append(recs, cur)
	}
	return recs
}

// event reads an event of kind, after the record's first byte.
func (d *decoder) event(kind byte) *event {
	e := &event{kind: kind}
	switch kind {
	case recordExpire:
		n := d.U32()
		if !d.Fits(uint64(n), 8) { // a label set is at least 8 bytes
			d.fail("label set count beyond the bytes")
		}
		for i := uint32(0); i < n && d.Err() == nil; i++ {
			ls := labelSet{hash: d.U32()}
			ls.labels = d.labels()
			e.sets = append(e.sets, ls)
		}
	case recordRotate:
		e.at = int64(d.U64())
	case recordReset:
		e.tpl = string(d.Bytes(int(d.U32())))
		n := d.U32()
		if !d.Fits(uint64(n), 4) { // a name is at least 4 bytes
			d.fail("VOI name count beyond the bytes")
		}
		for i := uint32(0); i < n && d.Err() == nil; i++ {
			e.vois = append(e.vois, string(d.Bytes(int(d.U32()))))
		}
	}
	return e
}

// appendRecord appends r's encoding to dst (little-endian; a label is its
// name and its value, each as a uint32 length and bytes):
//
//	version  byte      recordVersion (6)
//	flags    byte      bit 0: tracked
//	sender   uint16 length and bytes, seq uint64   (tracked only)
//	at       int64     the time the post was added at, Unix nanoseconds
//	shared   uint32    labels every frame has (none without frames), then each label
//	n        uint32    frames, then each:
//	  k        uint32  its other labels, then each label
//	  blob     uint32 length and bytes
//
// A frame's labels are the shared ones and its own, each list sorted by
// name, no name in both. The labels of a batch's URL are written once,
// not once per blob: version 1 wrote every frame's labels whole (as
// uint16 count and lengths), so that a batch of small blobs under long
// URL labels made a record many times its size, past wal.MaxRecord, and
// a label of 64 KiB or more wrapped its length. Version 2 was version 6
// without at: a replay gave the marks of its sender the restart's time,
// so that they outlived the rotations replayed after it, which had aged
// them out live (see Server.replay).
// Every frame's labels must be sorted by name, without a name twice (as
// posts' labels are).
func appendRecord(dst []byte, r *record) []byte {
	if r.event != nil {
		return appendEvent(dst, r.event)
	}
	shared := sharedLabels(r.frames)
	return appendRecordShared(slices.Grow(dst, recordSize(r, shared)), r, shared)
}

// appendRecordHead appends a record's version and its sender, the same in
// every version of the record.
func appendRecordHead(dst []byte, version byte, r *record) []byte {
	dst = append(dst, version)
	if r.tracked {
		dst = append(dst, 1)
		dst = binary.LittleEndian.AppendUint16(dst, uint16(len(r.sender)))
		dst = append(dst, r.sender...)
		dst = binary.LittleEndian.AppendUint64(dst, r.seq)
	} else {
		dst = append(dst, 0)
	}
	return dst
}

// appendRecordShared is appendRecord with the shared labels (sharedLabels).
func appendRecordShared(dst []byte, r *record, shared []export.Label) []byte {
	dst = appendRecordHead(dst, recordVersion, r)
	dst = binary.LittleEndian.AppendUint64(dst, uint64(r.at))
	return appendRecordFrames(dst, r, shared)
}

// appendRecordFrames appends a record's shared labels and frames, the
// same in versions 2 and 6.
func appendRecordFrames(dst []byte, r *record, shared []export.Label) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(shared)))
	for _, l := range shared {
		dst = appendLabel(dst, l)
	}
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(r.frames)))
	for _, f := range r.frames {
		dst = binary.LittleEndian.AppendUint32(dst, uint32(len(f.labels)-len(shared)))
		j := 0 // shared's labels are among f's, in order
		for _, l := range f.labels {
			if j < len(shared) && l == shared[j] {
				j++
				continue
			}
			dst = appendLabel(dst, l)
		}
		dst = binary.LittleEndian.AppendUint32(dst, uint32(len(f.blob)))
		dst = append(dst, f.blob...)
	}
	return dst
}

func appendLabel(dst []byte, l export.Label) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(l.Name)))
	dst = append(dst, l.Name...)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(l.Value)))
	return append(dst, l.Value...)
}

// sharedLabels returns the labels (name and value) every frame has, in
// order; none without frames. The frames' labels are sorted by name.
func sharedLabels(frames []frame) []export.Label {
	if len(frames) == 0 {
		return nil
	}
	shared := frames[0].labels
	for _, f := range frames[1:] {
		if len(shared) == 0 {
			break
		}
		if !sameLabels(f.labels, frames[0].labels) { // a batch's frames mostly share their slice
			shared = commonLabels(shared, f.labels)
		}
	}
	return shared
}

// commonLabels returns the labels of a that b has too, a itself if that
// is all of them; both are sorted by name.
func commonLabels(a, b []export.Label) []export.Label {
	var out []export.Label
	j := 0
	for i, l := range a {
		for j < len(b) && b[j].Name < l.Name {
			j++
		}
		if j < len(b) && b[j] == l {
			if out != nil {
				out = append(out, l)
			}
			continue
		}
		if out == nil {
			out = append(make([]export.Label, 0, len(a)-1), a[:i]...)
		}
	}
	if out == nil {
		return a
	}
	return out
}

// recordSize is the length of r's encoding with the shared labels.
func recordSize(r *record, shared []export.Label) int {
	n := 1 + 1 + 8 + 4 + labelsSize(shared) + 4
	if r.tracked {
		n += 2 + len(r.sender) + 8
	}
	for _, f := range r.frames {
		n += 4 + labelsSize(f.labels) - labelsSize(shared) + 4 + len(f.blob)
	}
	return n
}

func labelsSize(labels []export.Label) int {
	n := 0
	for _, l := range labels {
		n += 8 + len(l.Name) + len(l.Value)
	}
	return n
}

// errRecord is wrapped by decodeRecord's errors.
var errRecord = fmt.Errorf("collector: bad log record: %w", voi.ErrInvalid)

// decodeRecord reads a record appendRecord wrote (a post or an event), or
// a post of version 1 or 2. Its strings are copies; its blobs alias p, and
// frames whose labels are all shared share one slice. Bytes that are not
// such a record (another version or kind, a field cut short, bytes after
// the end, a sender id CheckSender refuses, labels out of order or shared
// but not written so) give an error wrapping voi.ErrInvalid: one record
// has one encoding.
func decodeRecord(p []byte) (*record, error) {
	d := newDecoder(p, errRecord)
	v := d.U8()
	switch {
	case d.Err() != nil, v == recordVersion, v == recordV2, v == recordV1:
	case v == recordExpire, v == recordRotate, v == recordReset:
		r := &record{event: d.event(v)}
		if d.Err() == nil && d.Len() != 0 {
			d.fail(fmt.Sprintf("%d bytes after the record", d.Len()))
		}
		if d.Err() != nil {
			return nil, d.Err()
		}
		return r, nil
	default:
		return nil, fmt.Errorf("%w: version %d, want %d to %d", errRecord, v, recordV1, recordVersion)
	}
	r := &record{}
	switch fl := d.U8(); {
	case d.Err() != nil:
	case fl == 1:
		r.tracked = true
		r.sender = string(d.Bytes(int(d.U16())))
		r.seq = d.U64()
		if d.Err() == nil {
			if err := aggregate.CheckSender(r.sender); err != nil {
				return nil, fmt.Errorf("%w: %w", errRecord, err)
			}
		}
	case fl != 0:
		return nil, fmt.Errorf("%w: flags %#x", errRecord, fl)
	}
	if v == recordVersion && d.Err() == nil {
		r.timed, r.at = true, int64(d.U64())
	}
	if v == recordV1 {
		d.framesV1(r)
	} else {
		d.frames(r)
	}
	if d.Err() == nil && d.Len() != 0 {
		d.fail(fmt.Sprintf("%d bytes after the record", d.Len()))
	}
	if d.Err() != nil {
		return nil, d.Err()
	}
	return r, nil
}

// frames reads the shared labels and the frames of a record.
func (d *decoder) frames(r *record) {
	shared := d.labels()
	n := d.U32()
	if !d.Fits(uint64(n), 8) { // a frame is at least 8 bytes
		d.fail("frame count beyond the bytes")
	}
	if n == 0 && len(shared) != 0 {
		d.fail("shared labels without frames")
	}
	var common []export.Label // the labels of every frame's own: none, as appendRecord writes them
	for i := uint32(0); i < n && d.Err() == nil; i++ {
		own := d.labels()
		if i == 0 {
			common = own
		} else if len(common) != 0 {
			common = commonLabels(common, own)
		}
		f := frame{labels: shared}
		if len(shared) == 0 {
			f.labels = own
		} else if len(own) != 0 {
			f.labels = mergeLabels(shared, own)
			if f.labels == nil {
				d.fail(fmt.Sprintf("frame %d: a label both shared and its own", i))
			}
		}
		f.blob = d.Bytes(int(d.U32()))
		r.frames = append(r.frames, f)
	}
	if d.Err() == nil && len(common) != 0 {
		d.fail(fmt.Sprintf("label %q in every frame, not shared", common[0].Name))
	}
}

// labels reads a count and that many labels, sorted by name, each name
// once.
func (d *decoder) labels() []export.Label {
	k := d.U32()
	if !d.Fits(uint64(k), 8) { // a label is at least 8 bytes
		d.fail("label count beyond the bytes")
		return nil
	}
	var out []export.Label
	for j := uint32(0); j < k && d.Err() == nil; j++ {
		name := string(d.Bytes(int(d.U32())))
		value := string(d.Bytes(int(d.U32())))
		if len(out) > 0 && out[len(out)-1].Name >= name {
			d.fail(fmt.Sprintf("label %.40q out of order", name))
		}
		out = append(out, export.Label{Name: name, Value: value})
	}
	return out
}

// mergeLabels returns a's and b's labels, sorted by name (each is), or
// nil if a name is in both.
func mergeLabels(a, b []export.Label) []export.Label {
	out := make([]export.Label, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j == len(b) || i < len(a) && a[i].Name < b[j].Name:
			out = append(out, a[i])
			i++
		case i == len(a) || b[j].Name < a[i].Name:
			out = append(out, b[j])
			j++
		default:
			return nil
		}
	}
	return out
}

// framesV1 reads the frames of a version 1 record: each with all its
// labels, as uint16 count and lengths.
func (d *decoder) framesV1(r *record) {
	n := d.U32()
	if !d.Fits(uint64(n), 6) { // a frame is at least 6 bytes
		d.fail("frame count beyond the bytes")
	}
	for i := uint32(0); i < n && d.Err() == nil; i++ {
		var f frame
		k := d.U16()
		for j := uint16(0); j < k && d.Err() == nil; j++ {
			name := string(d.Bytes(int(d.U16())))
			value := string(d.Bytes(int(d.U16())))
			f.labels = append(f.labels, export.Label{Name: name, Value: value})
		}
		f.blob = d.Bytes(int(d.U32()))
		r.frames = append(r.frames, f)
	}
}

// decoder reads the fields of a log record or a closed window
// (wire.Reader), its errors wrapping base: errRecord or errClosedFile.
type decoder struct {
	wire.Reader
	base error
}

// newDecoder returns a decoder of p whose errors wrap base; a read past
// the end is "cut short".
func newDecoder(p []byte, base error) decoder {
	return decoder{Reader: wire.New(p, func(string, int) error { return fmt.Errorf("%w: cut short", base) }), base: base}
}

func (d *decoder) fail(what string) { d.Fail(fmt.Errorf("%w: %s", d.base, what)) }

// newRecord is the record of a post r whose blobs are frames, added at
// time at: the sender and sequence of its headers, if both parse
// (otherwise once refuses the post and the record is not used).
func newRecord(r *post, frames []frame, at time.Time) *record {
	rec := &record{frames: frames, timed: true, at: at.UnixNano()}
	id, seqv := r.sender, r.seq
	if seq, err := aggregate.ParseSeq(seqv); err == nil && aggregate.CheckSender(id) == nil {
		rec.tracked, rec.sender, rec.seq = true, id, seq
	}
	return rec
}

// header answers the headers of a replayed post, as levels.record asks.
func (r *record) header(name string) string {
	if !r.tracked {
		return ""
	}
	switch http.CanonicalHeaderKey(name) {
	case aggregate.HeaderSender:
		return r.sender
	case aggregate.HeaderSeq:
		return strconv.FormatUint(r.seq, 10)
	}
	return ""
}

// durably adds a post: apply adds it; with a log, it runs under the log's
// lock and the post's record is appended only if apply succeeds, and
// durably returns once the record is on disk. Both are given the post's
// time (Config.Now, once): its sender's marks take it (once), its label
// sets take it as their last post's (which LabelTTL counts from) and
// their levels', and its record holds it, so that a replay gives them the
// same. A post whose record would pass wal.MaxRecord is a 413, checked before the record is made; the log
// goes on. A log that fails (a write, an fsync) makes this post and every
// later one a 503 until it heals (the log may have lost the record: the
// post is not acknowledged, though apply added it; see heal). Such a post
// is counted as its answer says, in statsblob_collector_blobs_rejected_total
// alone: apply must not count it accepted (its caller counts the
// acknowledged post, countAccepted).
func (s *Server) durably(rec func(at time.Time) *record, apply func(at time.Time) *rejection) *rejection {
	at := s.cfg.Now()
	if s.log == nil {
		return apply(at)
	}
	r := rec(at)
	shared := sharedLabels(r.frames)
	size := recordSize(r, shared)
	if size > wal.MaxRecord {
		return s.recordTooLarge(r, size)
	}
	var rej *rejection
	err := s.log.AppendIf(appendRecordShared(make([]byte, 0, size), r, shared), func() error {
		if rej = apply(at); rej != nil {
			return errRefused
		}
		return nil
	})
	if rej != nil {
		return rej
	}
	// recordSize is the encoding's size, so the check above catches a
	// record too large; should they ever disagree, the log refused it
	// before writing a byte and is whole: never mark it broken for that.
	if errors.Is(err, wal.ErrTooLarge) {
		return s.recordTooLarge(r, size)
	}
	if err != nil {
		s.broken(err)
		rej := reject(http.StatusServiceUnavailable, "durability", "the collector cannot store posts (its -data-dir log failed): not acknowledged")
		rej.retryAfter = time.Minute
		return rej
	}
	return nil
}

// recordTooLarge is the 413 of a post whose log record, of size bytes,
// would pass wal.MaxRecord.
func (s *Server) recordTooLarge(r *record, size int) *rejection {
	s.hit("body_bytes")
	return reject(http.StatusRequestEntityTooLarge, "size", "a post of %d blobs whose -data-dir log record would be %d bytes, over the log's limit of %d",
		len(r.frames), size, wal.MaxRecord)
}

// replay adds a post of the log at start, as accept or acceptBatch added
// it: the same sender check, the same adds, its sender's marks taking the
// time the post was added at, as they did live. Before, they took the
// restart's time: the rotations replayed after the post (at the times
// they were made) kept marks they had aged out live, which could fill
// MaxMarks and leave the marks of later posts untaken (a retry of one
// added twice), and the eviction for want of MaxMarks took them for the
// newest. A record of version 1 or 2, without its time, takes the latest
// bound the log gives of it: the start of the window it was posted in
// (the latest rotation replayed before it, or the checkpoint's window).
// Its label sets take the time the post was added at too, as their last
// post's (aggregate.Set.AddAllAt) and their levels': an idle label set
// expires (LabelTTL) when it did live. Before, they took the restart's,
// and outlived LabelTTL by the time between the post and the restart;
// they still do for a record of version 1 or 2 (a label set expired late
// loses nothing, one expired early would).
func (s *Server) replay(p []byte) error {
	rec, err := decodeRecord(p)
	if err != nil {
		return err
	}
	if rec.event != nil {
		s.replayEvent(rec.event)
		return nil
	}
	items := make([]aggregate.Item, len(rec.frames))
	var checked []export.Label // the labels of the frame before, checked; its key
	var prev aggregate.Item
	for i, f := range rec.frames {
		if !sameLabels(f.labels, checked) || i == 0 {
			if err := export.CheckLabels(f.labels); err != nil || !slices.IsSortedFunc(f.labels, func(a, b export.Label) int {
				return strings.Compare(a.Name, b.Name)
			}) {
				return fmt.Errorf("%w: frame %d: labels %v", errRecord, i, f.labels)
			}
			checked = f.labels
		}
		b, err := blob.FromBytes(f.blob, nil)
		if err != nil {
			return fmt.Errorf("%w: frame %d: %w", errRecord, i, err)
		}
		t, err := s.lookup(b.TplHash())
		if err != nil {
			return fmt.Errorf("collector: the log holds a blob of template hash %s, which the templates file no longer has: %w", hashfmt.String(b.TplHash()), err)
		}
		k := prev.Key // a batch's frames mostly share their labels and template: one key
		if i == 0 || prev.T != t || !sameLabels(f.labels, prev.Labels) {
			k = key(b.TplHash(), f.labels)
		}
		items[i] = aggregate.Item{Key: k, T: t, Labels: f.labels, B: b}
		prev = items[i]
	}
	keys := make([]string, len(items))
	for i, it := range items {
		keys[i] = it.Key
	}
	addAt := s.cfg.Now() // a record of version 1 or 2: the restart's time, as before (its label sets are kept at least as long)
	if rec.timed {
		addAt = time.Unix(0, rec.at)
	}
	add := func(skip []bool) error {
		var add []aggregate.Item
		for i, it := range items {
			if !skip[i] {
				add = append(add, it)
			}
		}
		if err := s.set.AddAllAt(add, addAt); err != nil {
			return err
		}
		for _, it := range add {
			s.levels.record(it.T, it.Labels, rec.header, addAt, it.B)
		}
		return nil
	}
	if rec.tracked {
		at := s.replayAt
		if rec.timed {
			at = rec.at
		}
		_, err = s.set.OnceAllAt(rec.sender, keys, rec.seq, time.Unix(0, at), add)
	} else {
		err = add(make([]bool, len(keys)))
	}
	if err != nil {
		// The post was added when it arrived: the state replayed differs
		// from the one it met. Counted and logged; the rest replays.
		s.replayFailed++
		if s.cfg.Log != nil {
			s.cfg.Log.Error("a logged post could not be added again", "err", err)
		}
	}
	return nil
}

// replayEvent makes an event of the log again, as the server made it
// (see event): the same label sets dropped, the same window started, the
// same VOIs reset. The window a rotation closes is dropped: it was
// shipped (OnClose) or saved for the delta pusher when it closed.
func (s *Server) replayEvent(e *event) {
	switch e.kind {
	case recordExpire:
		keys := make([]string, len(e.sets))
		for i, ls := range e.sets {
			keys[i] = key(ls.hash, ls.labels)
		}
		s.set.Drop(keys...)
		s.levels.dropKeys(keys)
	case recordRotate:
		s.set.Rotate(time.Unix(0, e.at))
		s.levels.rotate()
		s.replayAt = e.at
	case recordReset:
		if _, err := s.set.ResetVOIs(resetIDs(e.tpl, e.vois)); err != nil {
			s.replayFailed++
			if s.cfg.Log != nil {
				s.cfg.Log.Error("a logged reset could not be made again", "template", e.tpl, "err", err)
			}
		}
	}
}

// openLog opens the write-ahead log in DataDir, loading its checkpoint and
// replaying its records into the (new, empty) set.
func (s *Server) openLog() error {
	lock, err := lockDir(s.cfg.DataDir)
	if err != nil {
		return err
	}
	lookup := s.lookup
	loaded := false
	s.replayAt = s.set.Start().UnixNano()
	l, err := wal.Open(s.cfg.DataDir, wal.Options{NoSync: s.cfg.NoSync, Fault: s.cfg.diskFault}, wal.Recovery{
		Checkpoint: func(state []byte) error {
			loaded = true
			err := s.set.LoadState(state, lookup)
			s.replayAt = s.set.Start().UnixNano()
			return err
		},
		Record: s.replay,
	})
	if err == nil && !loaded && l.Stats().Replayed == 0 {
		// A new log: its first record is the window's start (a rotation
		// of the empty window), so that a restart before the first
		// checkpoint is written keeps it, as a checkpoint would.
		err = l.AppendEvent(func() [][]byte {
			return [][]byte{appendEvent(nil, &event{kind: recordRotate, at: s.set.Start().UnixNano()})}
		})
		if err != nil {
			_ = l.Close()
		}
	}
	if err != nil {
		if lock != nil {
			lock.Close()
		}
		return fmt.Errorf("collector: -data-dir %s: %w", s.cfg.DataDir, err)
	}
	s.log, s.lock = l, lock
	s.logFailures = prometheus.NewCounter(prometheus.CounterOpts{Name: "statsblob_collector_log_failures_total",
		Help: "Failures of the -data-dir log (a write or an fsync; logged): posts are refused until it heals."})
	s.logHeals = prometheus.NewCounter(prometheus.CounterOpts{Name: "statsblob_collector_log_heals_total",
		Help: "Failed -data-dir logs made whole again by a checkpoint of the state in memory (logged): posts are taken again."})
	s.rotHeld = prometheus.NewCounter(prometheus.CounterOpts{Name: "statsblob_collector_rotations_held_total",
		Help: "Window ends the failed -data-dir log held back: the window went on (or, its rotation's record failed, was kept unshipped) until the log heals."})
	stat := func(f func(wal.Stats) uint64) func() float64 {
		return func() float64 { return float64(f(l.Stats())) }
	}
	s.own.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "statsblob_collector_log_records_total",
			Help: "Records written to the -data-dir log since the start: posts, and the expiries, rotations and resets among them."}, stat(func(st wal.Stats) uint64 { return st.Appends })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "statsblob_collector_log_syncs_total",
			Help: "fsyncs of the -data-dir log (each covers the posts that arrived together)."}, stat(func(st wal.Stats) uint64 { return st.Syncs })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "statsblob_collector_log_bytes_total",
			Help: "Bytes written to the -data-dir log."}, stat(func(st wal.Stats) uint64 { return st.Bytes })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "statsblob_collector_checkpoints_total",
			Help: "Checkpoints written to -data-dir."}, stat(func(st wal.Stats) uint64 { return st.Checkpoints })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "statsblob_collector_checkpoint_failures_total",
			Help: "Checkpoints of -data-dir that failed (logged), and tries to heal a failed log: the log is cut at the next one that succeeds."},
			stat(func(st wal.Stats) uint64 { return st.Failed })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "statsblob_collector_log_broken",
			Help: "1 while the -data-dir log is failed (a write or an fsync failed; logged): posts are refused (503) and windows are not shipped until it heals."},
			func() float64 {
				if s.logBroken.Load() {
					return 1
				}
				return 0
			}),
		s.logFailures, s.logHeals, s.rotHeld,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "statsblob_collector_log_replayed_records",
			Help: "Records (posts, expiries, rotations, resets) replayed from the -data-dir log at the start."}, stat(func(st wal.Stats) uint64 { return st.Replayed })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "statsblob_collector_log_replay_failures",
			Help: "Records of the -data-dir log that could not be made again at the start (logged): posts not added, resets of VOIs not made."},
			func() float64 { return float64(s.replayFailed) }),
	)
	if s.cfg.Log != nil {
		st := l.Stats()
		s.cfg.Log.Info("recovered from the data directory", "data_dir", s.cfg.DataDir, "aggregates", s.set.Len(),
			"posts", s.set.Posts(), "records_replayed", st.Replayed, "torn_bytes_cut", st.Truncated, "records_failed", s.replayFailed)
	}
	return nil
}

// logEvent makes a change of the state at a point of the log's order:
// event runs under the log's lock and returns the records of the change
// (see event), which are durable when logEvent returns. It reports
// whether event ran: not when the log had failed before. A log that fails
// writing the records is failed from then on (posts are refused) until it
// heals: the change is made, and a restart before then may not make it
// again.
func (s *Server) logEvent(event func() [][]byte) (bool, error) {
	ran := false
	err := s.log.AppendEvent(func() [][]byte {
		ran = true
		return event()
	})
	if err != nil {
		s.broken(err)
	}
	return ran, err
}

// broken marks the log failed if it is (wal.Log.Failed; not once it has
// healed again, nor once it is closed): posts are refused (503), /readyz
// answers 503 and windows are not shipped until heal makes it whole. Each
// failure is logged and counted once.
func (s *Server) broken(err error) {
	if s.logBroken.Load() {
		return
	}
	s.brokenMu.Lock()
	defer s.brokenMu.Unlock()
	if s.logBroken.Load() || s.log.Failed() == nil {
		return
	}
	s.logBroken.Store(true)
	s.logFailures.Inc()
	if s.cfg.Log != nil {
		s.cfg.Log.Error("the write-ahead log failed: posts are refused and windows held until a checkpoint of the state in memory succeeds (tried at every checkpoint and window's end)",
			"data_dir", s.cfg.DataDir, "err", err)
	}
}

// heal is healLocked under logMu.
func (s *Server) heal() error {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	return s.healLocked()
}

// healLocked makes a failed log whole again, if it can, and returns nil
// if the log is whole (or closed). A log fails (a write, an fsync) after
// its posts' applies ran: the state in memory holds posts answered 503,
// with their senders' marks, and maybe events whose records are not on
// disk; the log holds no more than the state, maybe less. So the state is
// what is written: a checkpoint of it (wal.Log.Recover), to a new file,
// replaces the log, and the refused posts are counted once (a sequenced
// retry of one is a duplicate). Until then nothing is shipped that a
// restart would replay: Rotate closes no window, and a window whose
// rotation's record failed is held; once healed, that window is shipped
// (its file for the delta pusher written first: the checkpoint leaves it
// out of the log). Called with logMu held.
func (s *Server) healLocked() error {
	failed := s.log.Failed()
	if failed == nil {
		return nil
	}
	s.broken(failed) // logged and counted, if no post has met it yet
	if s.held != nil && !s.heldSaved {
		if err := s.saveClosed(*s.held); err != nil {
			return fmt.Errorf("collector: the -data-dir log failed and cannot heal: %w", err)
		}
		s.heldSaved = true
	}
	var st *aggregate.State
	err := s.log.Recover(func() (wal.State, error) {
		st = s.set.State() // under the log's lock, as a checkpoint's
		return st, nil
	})
	if st != nil {
		st.Release()
	}
	if err != nil {
		err = fmt.Errorf("collector: the -data-dir log failed and cannot heal: %w", err)
		if s.cfg.Log != nil {
			s.cfg.Log.Debug("the write-ahead log is still failed", "data_dir", s.cfg.DataDir, "err", err)
		}
		return err
	}
	s.brokenMu.Lock()
	s.logBroken.Store(false)
	s.brokenMu.Unlock()
	s.logHeals.Inc()
	if s.cfg.Log != nil {
		s.cfg.Log.Info("the write-ahead log healed: a checkpoint of the state in memory was written, posts are taken again",
			"data_dir", s.cfg.DataDir, "held_window", s.held != nil)
	}
	if c := s.held; c != nil {
		s.held = nil
		s.ship(*c)
	}
	return nil
}

// checkpoint writes a checkpoint of the log: the current window's
// aggregates and the senders' marks replace the records before it.
// Posts wait only while the state is taken (a copy of references,
// aggregate.Set.State), not while it is folded, encoded and written,
// piece by piece, without a copy of it whole in memory; once written (or
// failed), it is released, and with it the queued blobs it held, which
// count against QueueBytes until then. One
// that fails is logged (and counted by the log): its records stay, and a
// restart replays them, the events among them too (logEvent), so it
// recovers the same state.
func (s *Server) checkpoint() error {
	var st *aggregate.State
	err := s.log.CheckpointState(func() (wal.State, error) {
		st = s.set.State() // under the log's lock; folded and written outside it
		return st, nil
	})
	if st != nil {
		st.Release()
	}
	switch {
	case err == nil:
	case s.log.Failed() != nil: // writing the log's last records failed
		s.broken(err)
	case s.cfg.Log != nil:
		s.cfg.Log.Error("checkpoint failed: the log is not cut until one succeeds, a restart replays it", "data_dir", s.cfg.DataDir, "err", err)
	}
	return err
}

// Checkpoint writes the aggregates and the senders' marks to DataDir,
// replacing the log records they cover, after expiring idle label sets
// (see Expire). Without DataDir it does nothing. RunWindows calls it every
// CheckpointInterval. Posts wait while the state is snapshot (a copy of
// references), not while it is written. A checkpoint that fails (a full
// disk) undoes nothing: the log keeps its records, the expiry's among
// them, and a restart recovers the state from them. A log that failed
// (a write or an fsync) is healed first, if it can be (see heal).
func (s *Server) Checkpoint() error {
	if s.log == nil {
		return nil
	}
	if err := s.heal(); err != nil {
		return err
	}
	_, err := s.expireLogged()
	return err
}

// Close writes a last checkpoint and closes the log in DataDir; posts
// after Close are refused (503). Without DataDir it does nothing. Call it
// once no post is under way (after http.Server.Shutdown). If that
// checkpoint fails, Close returns its error and the log keeps every
// record since the last one written: the next start replays them to the
// same state. A log that failed is healed instead, if it can be (a
// window it held is shipped); if it cannot, the next start replays what
// it holds.
func (s *Server) Close() error {
	if s.log == nil {
		return nil
	}
	s.logClosed.Store(true)
	failed := s.logBroken.Load() || s.log.Failed() != nil
	err := s.heal() // (a checkpoint, if it heals)
	if err == nil && !failed {
		err = s.checkpoint()
	}
	if cerr := s.log.Close(); err == nil && !errors.Is(cerr, wal.ErrClosed) {
		err = cerr
	}
	if s.lock != nil {
		s.lock.Close() // releases the flock
		s.lock = nil
	}
	return err
}
