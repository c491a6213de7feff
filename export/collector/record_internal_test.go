package collector

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/export"
	"github.com/statsblob/statsblob/export/aggregate"
	"github.com/statsblob/statsblob/export/internal/wal"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

func TestRecordRoundTrip(t *testing.T) {
	ab := []export.Label{{Name: "a", Value: "1"}, {Name: "b", Value: "2"}}
	for _, r := range []*record{
		{timed: true, frames: []frame{}},
		{tracked: true, sender: "web-1", seq: 1<<64 - 1, timed: true, at: 1700000000123456789, frames: []frame{{labels: []export.Label{{Name: "host", Value: "a\x00b"}}, blob: []byte{1, 2, 3}}}},
		{timed: true, at: -1, frames: []frame{{blob: []byte{9}}, {labels: ab, blob: []byte{7, 7}}}},
		{timed: true, frames: []frame{{labels: ab, blob: []byte{1}}, {labels: ab, blob: []byte{2}}}},
		{timed: true, frames: []frame{ // shared a=1; own b=2, then c=3, then none
			{labels: ab, blob: []byte{1}},
			{labels: []export.Label{{Name: "a", Value: "1"}, {Name: "c", Value: "3"}}, blob: []byte{2}},
			{labels: ab[:1], blob: []byte{3}},
		}},
	} {
		p := appendRecord(nil, r)
		got, err := decodeRecord(p)
		require.NoError(t, err)
		if len(r.frames) == 0 {
			r.frames = nil
		}
		require.Equal(t, r, got)
	}
	for _, e := range testEvents() {
		p := appendRecord(nil, &record{event: e})
		got, err := decodeRecord(p)
		require.NoError(t, err)
		require.Equal(t, &record{event: e}, got)
	}
	u32 := func(n int) []byte { return binary.LittleEndian.AppendUint32(nil, uint32(n)) }
	label := func(name, value string) []byte {
		return append(append(append(u32(len(name)), name...), u32(len(value))...), value...)
	}
	cat := func(parts ...[]byte) []byte {
		var p []byte
		for _, q := range parts {
			p = append(p, q...)
		}
		return p
	}
	blob := cat(u32(1), []byte{9})
	for _, c := range []struct {
		p   []byte
		msg string
	}{
		{nil, "cut short"},
		{[]byte{7, 0, 0, 0, 0, 0, 0, 0, 0, 0}, "version 7, want 1 to 6"},
		{[]byte{0}, "version 0, want 1 to 6"},
		{[]byte{6, 0, 0, 0, 0, 0, 0, 0}, "cut short"}, // at cut short
		{cat([]byte{6, 0}, make([]byte, 8), u32(0), u32(0), []byte{9}), "1 bytes after the record"},
		{cat([]byte{6, 2}, make([]byte, 8), u32(0), u32(0)), "flags 0x2"},
		{[]byte{2, 2, 0, 0, 0, 0, 0, 0, 0, 0}, "flags 0x2"},
		{cat([]byte{2, 0}, u32(0), u32(1)), "frame count beyond the bytes"},
		{cat([]byte{2, 0}, u32(1)), "label count beyond the bytes"},
		{cat([]byte{2, 0}, u32(0), u32(0), []byte{9}), "1 bytes after the record"},
		{[]byte{2, 1, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, "holds byte 0x1"},
		{cat([]byte{2, 0}, u32(2), label("b", "1"), label("a", "1"), u32(0)), `label "a" out of order`},
		{cat([]byte{2, 0}, u32(1), label("a", "1"), u32(0)), "shared labels without frames"},
		{cat([]byte{2, 0}, u32(1), label("a", "1"), u32(1), u32(1), label("a", "2"), blob), "frame 0: a label both shared and its own"},
		{cat([]byte{2, 0}, u32(0), u32(2), u32(1), label("a", "1"), blob, u32(1), label("a", "1"), blob), `label "a" in every frame, not shared`},
		// Events.
		{[]byte{3}, "cut short"},
		{cat([]byte{3}, u32(1)), "label set count beyond the bytes"},
		{cat([]byte{3}, u32(1), u32(7), u32(2), label("b", "1"), label("a", "1")), `label "a" out of order`},
		{cat([]byte{3}, u32(0), []byte{0}), "1 bytes after the record"},
		{[]byte{4, 0, 0, 0, 0, 0, 0, 0}, "cut short"},
		{[]byte{4, 0, 0, 0, 0, 0, 0, 0, 0, 0}, "1 bytes after the record"},
		{cat([]byte{5}, u32(1), []byte("T"), u32(1)), "VOI name count beyond the bytes"},
		{cat([]byte{5}, u32(9), []byte("T")), "cut short"},
		// Version 1.
		{[]byte{1, 2, 0, 0, 0, 0}, "flags 0x2"},
		{[]byte{1, 0, 1, 0, 0, 0}, "frame count beyond the bytes"},
		{[]byte{1, 0, 0, 0, 0, 0, 9}, "1 bytes after the record"},
	} {
		_, err := decodeRecord(c.p)
		require.ErrorIs(t, err, voi.ErrInvalid)
		require.ErrorContains(t, err, c.msg)
	}
}

// testEvents is an event of each kind.
func testEvents() []*event {
	return []*event{
		{kind: recordExpire, sets: []labelSet{
			{hash: 0xdeadbeef, labels: []export.Label{{Name: "host", Value: "a\x00b"}, {Name: "z", Value: ""}}},
			{hash: 1},
		}},
		{kind: recordExpire},
		{kind: recordRotate, at: -1},
		{kind: recordRotate, at: 1700000000123456789},
		{kind: recordReset, tpl: "KITCHEN", vois: []string{"rtt", ""}},
		{kind: recordReset},
	}
}

// An expiry is cut into records of at most the log's limit, each label
// set whole in one, and replays as the label sets in their order.
func TestExpireRecords(t *testing.T) {
	reg := tpl.NewRegistry()
	tp, err := reg.New("T")
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "x", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}))
	require.Empty(t, expireRecords(nil, wal.MaxRecord))
	var gone []aggregate.Expired
	var want []labelSet
	for i := range 10 {
		labels := []export.Label{{Name: "host", Value: fmt.Sprint(i)}}
		gone = append(gone, aggregate.Expired{Key: key(tp.Hash(), labels), T: tp, Labels: labels})
		want = append(want, labelSet{hash: tp.Hash(), labels: labels})
	}
	one := len(appendEvent(nil, &event{kind: recordExpire, sets: want[:1]})) // 5 bytes and a label set of 21
	require.Len(t, expireRecords(gone, wal.MaxRecord), 1)
	for _, c := range []struct{ max, records int }{{one, 10}, {one + 20, 10}, {one + 21, 5}, {5 + 3*21, 4}} {
		recs := expireRecords(gone, c.max)
		require.Len(t, recs, c.records, "at most %d bytes", c.max)
		var got []labelSet
		for _, p := range recs {
			require.LessOrEqual(t, len(p), c.max)
			r, err := decodeRecord(p)
			require.NoError(t, err)
			require.Equal(t, byte(recordExpire), r.event.kind)
			got = append(got, r.event.sets...)
		}
		require.Equal(t, want, got)
	}
}

// appendRecordV1 is what the collector wrote before version 2: every
// frame's labels whole, as uint16 count and lengths.
func appendRecordV1(dst []byte, r *record) []byte {
	dst = appendRecordHead(dst, recordV1, r)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(r.frames)))
	for _, f := range r.frames {
		dst = binary.LittleEndian.AppendUint16(dst, uint16(len(f.labels)))
		for _, l := range f.labels {
			dst = binary.LittleEndian.AppendUint16(dst, uint16(len(l.Name)))
			dst = append(dst, l.Name...)
			dst = binary.LittleEndian.AppendUint16(dst, uint16(len(l.Value)))
			dst = append(dst, l.Value...)
		}
		dst = binary.LittleEndian.AppendUint32(dst, uint32(len(f.blob)))
		dst = append(dst, f.blob...)
	}
	return dst
}

// appendRecordV2 is what the collector wrote before version 6: version 6
// without the post's time.
func appendRecordV2(dst []byte, r *record) []byte {
	return appendRecordFrames(appendRecordHead(dst, recordV2, r), r, sharedLabels(r.frames))
}

// A log written before version 6 is still read, without the posts'
// times (timed false): a restart after an upgrade replays the records
// of the version before.
func TestRecordReadsVersion2(t *testing.T) {
	r := &record{tracked: true, sender: "web-1", seq: 7, frames: []frame{
		{labels: []export.Label{{Name: "a", Value: "1"}, {Name: "b", Value: "2"}}, blob: []byte{1}},
		{labels: []export.Label{{Name: "a", Value: "1"}}, blob: []byte{2, 2}},
	}}
	p := appendRecordV2(nil, r)
	got, err := decodeRecord(p)
	require.NoError(t, err)
	require.Equal(t, r, got)
	require.Equal(t, p, appendRecordV2(nil, got))
	r.timed, r.at = true, 5
	require.Len(t, appendRecord(nil, r), len(p)+8, "version 6 is version 2 and the time")
}

// A log written before version 2 is still read: a restart after an
// upgrade replays the records of the version before.
func TestRecordReadsVersion1(t *testing.T) {
	r := &record{tracked: true, sender: "web-1", seq: 7, frames: []frame{
		{labels: []export.Label{{Name: "a", Value: "1"}, {Name: "b", Value: "2"}}, blob: []byte{1}},
		{blob: []byte{2, 2}},
	}}
	got, err := decodeRecord(appendRecordV1(nil, r))
	require.NoError(t, err)
	require.Equal(t, r, got)
}

// A batch's record holds its URL's labels once, not once per blob. With
// them in every frame, a 2 MiB batch of 64-byte blobs under 16 long URL
// labels made a record of 130 MB, past wal.MaxRecord: the post was a 503
// and the log was marked broken for the life of the process.
func TestRecordWritesSharedLabelsOnce(t *testing.T) {
	var labels []export.Label
	for i := range 16 {
		labels = append(labels, export.Label{Name: fmt.Sprintf("%s%02d", strings.Repeat("n", 126), i), Value: strings.Repeat("v", 128)})
	}
	const n, size = 32768, 64
	r := &record{timed: true, at: 1, frames: make([]frame, n)}
	blobs := make([]byte, n*size)
	for i := range r.frames {
		own := labels
		if i%2 == 1 { // labels of its own, and a slice of its own
			own = append([]export.Label{{Name: "frame", Value: fmt.Sprint(i)}}, labels...)
		}
		r.frames[i] = frame{labels: own, blob: blobs[i*size : (i+1)*size]}
	}
	p := appendRecord(nil, r)
	require.Equal(t, recordSize(r, sharedLabels(r.frames)), len(p))
	t.Logf("a record of %d bytes for %d bytes of blobs", len(p), len(blobs))
	require.Less(t, len(p), 2*len(blobs)) // 130 MB before
	got, err := decodeRecord(p)
	require.NoError(t, err)
	require.Equal(t, r, got)
}

// A post whose record would pass wal.MaxRecord is a 413 ("size") and is
// not added; the log is not broken by it: /readyz stays 200 and later
// posts are taken. The log's ErrTooLarge was taken for a failed log (503,
// and every later post refused).
func TestRecordOverLimitIs413(t *testing.T) {
	reg := tpl.NewRegistry()
	tp, err := reg.New("T")
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "x", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}))
	s, err := New(Config{Templates: reg, DataDir: t.TempDir(), NoSync: true})
	require.NoError(t, err)
	defer s.Close()
	huge := &record{frames: []frame{{blob: make([]byte, wal.MaxRecord)}}}
	rej := s.durably(func(time.Time) *record { return huge }, func(time.Time) *rejection {
		t.Fatal("a post over the log's limit added")
		return nil
	})
	require.NotNil(t, rej)
	require.Equal(t, http.StatusRequestEntityTooLarge, rej.status)
	require.Equal(t, "size", rej.reason)
	require.Equal(t, fmt.Sprintf("a post of 1 blobs whose -data-dir log record would be %d bytes, over the log's limit of %d", wal.MaxRecord+26, wal.MaxRecord), rej.msg)
	require.False(t, s.logBroken.Load())
	added := false
	require.Nil(t, s.durably(func(time.Time) *record { return &record{frames: []frame{}} }, func(time.Time) *rejection { added = true; return nil }))
	require.True(t, added)
}

// FuzzRecord: decodeRecord never panics, and what it accepts (a post of
// any version, an event of any kind) encodes back to the same bytes (one
// encoding per record: a log replays what was written), by the version
// that wrote it.
func FuzzRecord(f *testing.F) {
	f.Add(appendRecord(nil, &record{tracked: true, sender: "s", seq: 3, timed: true, at: 1700000000123456789, frames: []frame{{labels: []export.Label{{Name: "h", Value: "v"}}, blob: []byte{1}}}}))
	f.Add(appendRecord(nil, &record{timed: true, at: -1, frames: []frame{
		{labels: []export.Label{{Name: "a", Value: "1"}, {Name: "b", Value: "2"}}, blob: []byte{1}},
		{labels: []export.Label{{Name: "a", Value: "1"}}, blob: []byte{2}},
	}}))
	f.Add(appendRecord(nil, &record{}))
	f.Add(appendRecordV2(nil, &record{tracked: true, sender: "s", seq: 3, frames: []frame{{labels: []export.Label{{Name: "h", Value: "v"}}, blob: []byte{1}}}}))
	f.Add(appendRecordV2(nil, &record{frames: []frame{
		{labels: []export.Label{{Name: "a", Value: "1"}, {Name: "b", Value: "2"}}, blob: []byte{1}},
		{labels: []export.Label{{Name: "a", Value: "1"}}, blob: []byte{2}},
	}}))
	f.Add(appendRecordV1(nil, &record{tracked: true, sender: "s", seq: 3, frames: []frame{{labels: []export.Label{{Name: "h", Value: "v"}}, blob: []byte{1}}}}))
	f.Add([]byte{2, 0, 0, 0, 0, 0, 255, 255, 255, 255})
	f.Add([]byte{6, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 255, 255, 255, 255})
	for _, e := range testEvents() {
		f.Add(appendRecord(nil, &record{event: e}))
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		r, err := decodeRecord(p)
		if err != nil {
			require.ErrorIs(t, err, voi.ErrInvalid)
			return
		}
		switch p[0] {
		case recordV1:
			require.Equal(t, p, appendRecordV1(nil, r))
			return
		case recordV2:
			require.False(t, r.timed)
			require.Equal(t, p, appendRecordV2(nil, r))
			return
		}
		require.Equal(t, p, appendRecord(nil, r))
	})
}

// A post of a record of version 2, which does not hold its time, is
// replayed at the latest bound the log gives of it: the time of the
// rotation replayed before it (the start of its window), not the
// restart's. Its sender's mark then ages out at the rotations replayed
// after it, as it did live (at the latest as late).
func TestReplayVersion2TakesTheWindowStart(t *testing.T) {
	reg := tpl.NewRegistry()
	tp, err := reg.New("T")
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "x", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}))
	t0 := time.Unix(1700000000, 0)
	for _, c := range []struct {
		name  string
		v2    bool
		marks int
	}{
		{"version 2, at the window's start 0 s", true, 0},
		{"version 6, at its time 25 s", false, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			restart := t0.Add(time.Hour)
			s, err := New(Config{Templates: reg, SequenceMarkAge: time.Minute, Now: func() time.Time { return restart }})
			require.NoError(t, err)
			rotate := func(d time.Duration) {
				require.NoError(t, s.replay(appendEvent(nil, &event{kind: recordRotate, at: t0.Add(d).UnixNano()})))
			}
			rotate(0)
			r := &record{tracked: true, sender: "web-1", seq: 1, timed: true, at: t0.Add(25 * time.Second).UnixNano(),
				frames: []frame{{labels: []export.Label{{Name: "host", Value: "a"}}, blob: blob.New(tp, nil).Bytes()}}}
			p := appendRecord(nil, r)
			if c.v2 {
				p = appendRecordV2(nil, r)
			}
			require.NoError(t, s.replay(p))
			for _, d := range []time.Duration{10, 20, 30, 70} { // cutoff 10 s at the last
				rotate(d * time.Second)
			}
			require.Equal(t, c.marks, s.set.Stats().Marks)
			require.Zero(t, s.replayFailed)
		})
	}
}

// The decoder's errors in full: what they wrap (a log record's, a closed
// window's) and what was wrong, nothing else.
func TestDecoderErrorTexts(t *testing.T) {
	u32 := func(n int) []byte { return binary.LittleEndian.AppendUint32(nil, uint32(n)) }
	for _, c := range []struct {
		p    []byte
		want string
	}{
		{nil, "collector: bad log record: invalid argument: cut short"},
		{[]byte{6, 1, 9, 0, 1}, "collector: bad log record: invalid argument: cut short"},
		{append([]byte{2, 0}, u32(1)...), "collector: bad log record: invalid argument: label count beyond the bytes"},
		{[]byte{4, 0, 0, 0, 0, 0, 0, 0, 0, 0}, "collector: bad log record: invalid argument: 1 bytes after the record"},
	} {
		_, err := decodeRecord(c.p)
		require.EqualError(t, err, c.want)
	}
	closed := func(body ...[]byte) []byte {
		p := []byte(closedMagic)
		for _, b := range body {
			p = append(p, b...)
		}
		return binary.LittleEndian.AppendUint32(p, crc32.Checksum(p, castagnoli))
	}
	for _, c := range []struct {
		p    []byte
		want string
	}{
		{closed(make([]byte, 12)), "collector: bad closed-window file: invalid argument: cut short"},
		{closed(make([]byte, 16), u32(1)), "collector: bad closed-window file: invalid argument: aggregate count beyond the bytes"},
		{closed(make([]byte, 16), u32(0), []byte{1, 2}), "collector: bad closed-window file: invalid argument: 2 bytes after the window"},
	} {
		_, err := decodeClosed(c.p, nil, nil)
		require.EqualError(t, err, c.want)
		require.ErrorIs(t, err, voi.ErrInvalid)
	}
}
