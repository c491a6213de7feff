package aggregate_test

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"flag"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/export"
	"github.com/statsblob/statsblob/export/aggregate"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

var updateState = flag.Bool("update-state", false, "write testdata/state-v3.bin: versionSet's state, as this code writes it")

// tinyTpl is a template of one VOI with a sum and a max: its wide blob is
// small, for states a test keeps as bytes and for the fuzzer's seeds.
func tinyTpl(t testing.TB) *tpl.Template {
	t.Helper()
	tp, err := tpl.NewRegistry().New("TINY")
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "n", DType: voi.IntU32, Stats: []tpl.StatSpec{tpl.Sum(), tpl.Max()}}))
	return tp
}

// versionPost is one post of versionSet: a sender's sequence number, the
// label sets it goes to, and its time (seconds after versionT0).
type versionPost struct {
	id   string
	seq  uint64
	keys []string
	at   int64
}

var (
	versionT0 = time.Unix(1_700_000_000, 0)
	loadTime  = time.Unix(1_700_000_500, 0) // checkLoaded's clock
)

// versionSet is a Set with what a state holds: aggregates with labels in
// the window under way, and senders' marks of them and of label sets of
// the window before (not in the state's aggregates), posted at times of
// their own (the aggregates' last adds, web-1 at 70 s, web-5 at 75 s,
// web-6 at 80 s, and the marks'); posts are what was posted, to check
// the marks against.
// (Versions 1 and 2 hold no times: their fixtures, of the same Set,
// were written when its posts all took one time.)
func versionSet(t testing.TB) (s *aggregate.Set, tp *tpl.Template, posts []versionPost) {
	t.Helper()
	tp = tinyTpl(t)
	s, err := aggregate.New(aggregate.Config{Now: func() time.Time { return time.Unix(1_700_000_100, 0) }}, versionT0)
	require.NoError(t, err)
	post := func(p versionPost) {
		items := make([]aggregate.Item, len(p.keys))
		for i, k := range p.keys {
			b := blob.New(tp, blob.NewEnv(func() int64 { return 1 << 40 }, 1))
			require.NoError(t, b.UpdateU32(0, uint32(p.seq)*10+uint32(i)))
			wire, err := blob.FromBytes(b.Bytes(), nil)
			require.NoError(t, err)
			items[i] = aggregate.Item{Key: k, T: tp, Labels: []export.Label{{Name: "host", Value: k}, {Name: "svc", Value: "api"}}, B: wire}
		}
		at := versionT0.Add(time.Duration(p.at) * time.Second)
		_, err := s.OnceAllAt(p.id, p.keys, p.seq, at, func([]bool) error { return s.AddAllAt(items, at) })
		require.NoError(t, err)
		posts = append(posts, p)
	}
	post(versionPost{"s1", 1, []string{"web-1", "web-2", "web-3"}, 10})
	post(versionPost{"s2", 7, []string{"web-2", "web-4"}, 20})
	s.Rotate(versionT0.Add(60 * time.Second)) // the marks stay; web-1 to web-4 are not in the window now
	post(versionPost{"s1", 2, []string{"web-1", "web-5"}, 70})
	post(versionPost{"s3", 40, []string{"web-5"}, 75})
	post(versionPost{"s2", 9, []string{"web-6"}, 80})
	return s, tp, posts
}

// versionMarks are versionSet's marks, by sender and key.
var versionMarks = []string{
	`s1 "web-1" 2`, `s1 "web-2" 1`, `s1 "web-3" 1`, `s1 "web-5" 2`,
	`s2 "web-2" 7`, `s2 "web-4" 7`, `s2 "web-6" 9`,
	`s3 "web-5" 40`,
}

// A state of version 1 ("SBAGG1\n"), as AppendState wrote it before
// version 2, loads: testdata/state-v1.bin is versionSet's, written by
// AppendState at version 1 (commit 8bf32dd), and loads to what versionSet
// holds, but for the times of the marks, which it does not hold: they
// take the load's, in the window under way.
func TestStateVersion1(t *testing.T) {
	a, tp, posts := versionSet(t)
	old, err := os.ReadFile("testdata/state-v1.bin")
	require.NoError(t, err)
	require.Equal(t, "SBAGG1\n", string(old[:7]))
	b := checkLoaded(t, a, tp, posts, old, false)
	require.Equal(t, versionMarks, aggregate.MarkSeqs(b))
	require.Equal(t, []uint64{1, 2, 1}, b.Merged()) // web-1, web-5, web-6
}

// A state of version 2 ("SBAGG2\n", each key written once), as
// AppendState wrote it before version 3, loads: testdata/state-v2.bin is
// versionSet's (that of testdata/state-v1.bin, written by version 2,
// commit 6285bfd), and loads to what versionSet holds, the marks taking
// the load's time. Its marks of web-1, web-5 and web-6 refer to their
// aggregates, those of web-2, web-3 and web-4 (label sets of the window
// before) to the key table: each key is written once (and the label
// values of the aggregates, which are their keys here).
func TestStateVersion2(t *testing.T) {
	a, tp, posts := versionSet(t)
	state, err := os.ReadFile("testdata/state-v2.bin")
	require.NoError(t, err)
	require.Equal(t, "SBAGG2\n", string(state[:7]))
	b := checkLoaded(t, a, tp, posts, state, false)
	require.Equal(t, versionMarks, aggregate.MarkSeqs(b))
	old, err := os.ReadFile("testdata/state-v1.bin")
	require.NoError(t, err)
	for k, want := range map[string][2]int{
		"web-1": {2, 3}, "web-5": {2, 4}, "web-6": {2, 3}, // key and label value (and marks, in version 1)
		"web-2": {1, 2}, "web-3": {1, 1}, "web-4": {1, 1},
	} {
		field := []byte("\x05\x00\x00\x00" + k)
		require.Equal(t, want, [2]int{bytes.Count(state, field), bytes.Count(old, field)}, k)
	}
}

// A state of version 3 holds the marks' times and ages in windows, and
// loads to them: testdata/state-v3.bin is versionSet's, as AppendState
// writes it (go test -run TestStateVersion3 -update-state; the blobs'
// headers hold the wall clock's time), and is written again byte for
// byte. Each mark's time is written against its
// sender's, a byte when a post to many label sets gave them the same.
func TestStateVersion3(t *testing.T) {
	a, tp, posts := versionSet(t)
	if *updateState {
		require.NoError(t, os.WriteFile("testdata/state-v3.bin", a.AppendState(nil), 0o644))
	}
	state, err := os.ReadFile("testdata/state-v3.bin")
	require.NoError(t, err)
	require.Equal(t, "SBAGG3\n", string(state[:7]))
	v2, err := os.ReadFile("testdata/state-v2.bin")
	require.NoError(t, err)
	sec := func(s int64) string { return fmt.Sprint(versionT0.Add(time.Duration(s) * time.Second).UnixNano()) }
	// Version 2's and, per sender, 9 bytes (its time and age), per mark
	// 1 (its post's time that of its sender's latest, and its age) but
	// for those of a post 60 s before its sender's latest: 6 (s1's web-2
	// and web-3, s2's web-2 and web-4); the latest last-add time, 8, and
	// per aggregate its idle: 5 bytes for web-1's 10 s and web-5's 5 s, 1
	// for web-6's 0.
	require.Equal(t, len(v2)+3*9+8+4*5+8+5+5+1, len(state))
	require.Equal(t, []string{
		`"web-1" ` + sec(70), `"web-5" ` + sec(75), `"web-6" ` + sec(80),
	}, aggregate.AddTimes(a))
	require.Equal(t, []string{
		`s1 "web-1" ` + sec(70), `s1 "web-2" ` + sec(10), `s1 "web-3" ` + sec(10), `s1 "web-5" ` + sec(70),
		`s2 "web-2" ` + sec(20), `s2 "web-4" ` + sec(20), `s2 "web-6" ` + sec(80),
		`s3 "web-5" ` + sec(75),
	}, aggregate.MarkTimes(a))
	b := checkLoaded(t, a, tp, posts, state, true)
	require.Equal(t, versionMarks, aggregate.MarkSeqs(b))
	require.Equal(t, []uint64{1, 2, 1}, b.Merged())
	c, err := aggregate.New(aggregate.Config{}, time.Unix(0, 0))
	require.NoError(t, err)
	require.NoError(t, c.LoadState(state, func(uint32) (*tpl.Template, error) { return tp, nil }))
	require.Equal(t, state, c.AppendState(nil), "written again as it was")
}

// checkLoaded checks that state loads into a Set that holds what a does
// (the same aggregates, their blobs the bytes in state, and the same
// marks: every post a duplicate; if timed, the marks' and senders' times
// and ages too, else the load's time, loadTime, in the window under
// way), and that the loaded Set's state loads to the same again; it
// returns the loaded Set.
func checkLoaded(t *testing.T, a *aggregate.Set, tp *tpl.Template, posts []versionPost, state []byte, timed bool) *aggregate.Set {
	t.Helper()
	lookup := func(h uint32) (*tpl.Template, error) {
		if h == tp.Hash() {
			return tp, nil
		}
		return nil, fmt.Errorf("hash %d: %w", h, voi.ErrNotFound)
	}
	cfg := aggregate.Config{Now: func() time.Time { return loadTime }}
	b, err := aggregate.New(cfg, time.Unix(0, 0))
	require.NoError(t, err)
	require.NoError(t, b.LoadState(state, lookup))
	require.Equal(t, dumpSet(a), dumpSet(b))
	for _, n := range b.Blobs() {
		require.True(t, bytes.Contains(state, n.Blob.Bytes()), "the blob as stored")
	}
	if timed {
		require.Equal(t, marksNow(a), marksNow(b))
		require.Equal(t, aggregate.AddTimes(a), aggregate.AddTimes(b))
	} else {
		at := fmt.Sprint(loadTime.UnixNano())
		require.Equal(t, []string{at}, slices.Compact(lastFields(aggregate.AddTimes(b))))
		require.Equal(t, []string{at}, slices.Compact(lastFields(aggregate.MarkTimes(b))))
		require.Equal(t, []string{"0"}, slices.Compact(lastFields(aggregate.MarkAges(b))))
		for _, l := range aggregate.Senders(b) {
			require.Equal(t, at+" 0", l[strings.IndexByte(l, ' ')+1:])
		}
	}
	again := b.AppendState(nil)
	c, err := aggregate.New(cfg, time.Unix(0, 0))
	require.NoError(t, err)
	require.NoError(t, c.LoadState(again, lookup))
	require.Equal(t, dumpSet(b), dumpSet(c))
	require.Equal(t, marksNow(b), marksNow(c))
	require.Equal(t, aggregate.AddTimes(b), aggregate.AddTimes(c))
	require.Equal(t, again, c.AppendState(nil))
	for _, p := range posts {
		dups, err := b.OnceAll(p.id, p.keys, p.seq, func([]bool) error { t.Fatal("added twice"); return nil })
		require.NoError(t, err)
		require.Equal(t, []bool{true}, slices.Compact(dups), "%s %d", p.id, p.seq)
	}
	return b
}

// lastFields returns the last field of each line.
func lastFields(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		f := strings.Fields(l)
		out[i] = f[len(f)-1]
	}
	return out
}

// dumpSet is what a Set holds, as text: its aggregates (their blobs but
// for the times in their headers, which the Set's empty blob takes from
// the wall clock) and marks.
func dumpSet(s *aggregate.Set) string {
	var out strings.Builder
	named, counts := s.BlobsCounts()
	for i, n := range named {
		p := slices.Clone(n.Blob.Bytes())
		clear(p[16:32]) // STATS_ABI_V1's created and lastrst
		fmt.Fprintf(&out, "%s %v %v %d %x\n", n.Template.Name(), n.Labels, n.Start.UnixNano(), counts[i], p)
	}
	fmt.Fprintf(&out, "marks %d of %d keys\n%s\n", s.Stats().Marks, aggregate.MarkKeys(s), strings.Join(aggregate.MarkSeqs(s), "\n"))
	return out.String()
}

// stateSpec is a state field by field, as state.go spells the format, for
// tests to write the states AppendState writes and those it does not.
type stateSpec struct {
	version int // 1, 2, or 3 (0)
	start   int64
	last    int64 // version 3, with aggregates: the latest of their last-add times
	aggs    []specAgg
	table   []string // the key table (versions 2 and 3)
	senders []specSender
	nTable  uint32 // if not 0, the key table's count written
	nMarks  uint32 // if not 0, the first sender's count of marks written
}

type specAgg struct {
	key    string
	hash   uint32
	labels []export.Label
	blobs  uint64
	at     int64  // version 3: its last-add time
	idle   []byte // version 3: if not nil, written in place of last minus at
	raw    []byte
}

type specSender struct {
	id    string
	at    int64 // version 3: its latest post's time
	age   uint8 // version 3: the windows rotated since
	marks []specMark
}

type specMark struct {
	ref  uint32 // versions 2 and 3
	key  string // version 1
	seq  uint64
	at   int64  // version 3: its latest post's time
	age  uint8  // version 3: the windows rotated since
	when []byte // version 3: if not nil, written in place of at and age
}

func (sp stateSpec) bytes() []byte {
	var p []byte
	u32 := func(v uint32) { p = binary.LittleEndian.AppendUint32(p, v) }
	u64 := func(v uint64) { p = binary.LittleEndian.AppendUint64(p, v) }
	str := func(s string) { u32(uint32(len(s))); p = append(p, s...) }
	v := cmp.Or(sp.version, 3)
	p = append(p, fmt.Sprintf("SBAGG%d\n", v)...)
	u64(uint64(sp.start))
	u32(uint32(len(sp.aggs)))
	if v == 3 && len(sp.aggs) > 0 {
		u64(uint64(sp.last))
	}
	for _, a := range sp.aggs {
		str(a.key)
		u32(a.hash)
		u32(uint32(len(a.labels)))
		for _, l := range a.labels {
			str(l.Name)
			str(l.Value)
		}
		u64(a.blobs)
		switch {
		case v < 3:
		case a.idle != nil:
			p = append(p, a.idle...)
		default:
			p = binary.AppendUvarint(p, uint64(sp.last-a.at))
		}
		str(string(a.raw))
	}
	if v > 1 {
		u32(cmp.Or(sp.nTable, uint32(len(sp.table))))
		for _, k := range sp.table {
			str(k)
		}
	}
	u32(uint32(len(sp.senders)))
	for i, s := range sp.senders {
		str(s.id)
		if v == 3 {
			u64(uint64(s.at))
			p = append(p, s.age)
		}
		if i == 0 && sp.nMarks != 0 {
			u32(sp.nMarks)
		} else {
			u32(uint32(len(s.marks)))
		}
		for _, m := range s.marks {
			if v == 1 {
				str(m.key)
			} else {
				u32(m.ref)
			}
			u64(m.seq)
			if v < 3 {
				continue
			}
			switch d := s.at - m.at; {
			case m.when != nil:
				p = append(p, m.when...)
			case d >= -1<<61 && d < 1<<61: // the zigzag form, d<<1 (^ -1 if negative), under 2^62
				p = binary.AppendUvarint(p, uint64(d<<1^d>>63)<<2|uint64(m.age))
			default:
				p = append(p, 3, m.age)
				u64(uint64(m.at))
			}
		}
	}
	return p
}

// specSet is a Set and its state as a stateSpec: aggregates a and c in
// the window, b in the window before; s1's marks of a, b and c, s2's of c,
// posted at 10 s (b), 61 s, 62 s and 70 s (the window starts at 60 s):
// a last added to at 61 s, c at 70 s.
func specSet(t testing.TB) (*aggregate.Set, *tpl.Template, stateSpec) {
	t.Helper()
	tp := tinyTpl(t)
	s, err := aggregate.New(aggregate.Config{}, time.Unix(0, 0))
	require.NoError(t, err)
	post := func(id, key string, seq uint64, at int64) {
		_, err := s.OnceAllAt(id, []string{key}, seq, time.Unix(at, 0), func([]bool) error {
			return s.AddAllAt([]aggregate.Item{{Key: key, T: tp, Labels: []export.Label{{Name: "k", Value: key}}, B: blob.New(tp, nil)}}, time.Unix(at, 0))
		})
		require.NoError(t, err)
	}
	post("s1", "b", 1, 10)
	s.Rotate(time.Unix(60, 0))
	post("s1", "a", 2, 61)
	post("s1", "c", 3, 62)
	post("s2", "c", 9, 70)
	named := s.Blobs()
	sec := func(s int64) int64 { return time.Unix(s, 0).UnixNano() }
	agg := func(i int, key string, blobs uint64, at int64) specAgg {
		return specAgg{key: key, hash: tp.Hash(), labels: []export.Label{{Name: "k", Value: key}}, blobs: blobs, at: sec(at), raw: named[i].Blob.Bytes()}
	}
	return s, tp, stateSpec{
		start: time.Unix(60, 0).UnixNano(),
		last:  sec(70),
		aggs:  []specAgg{agg(0, "a", 1, 61), agg(1, "c", 2, 70)},
		table: []string{"b"},
		senders: []specSender{
			{id: "s1", at: sec(62), marks: []specMark{{ref: 0, seq: 2, at: sec(61)}, {ref: 1, seq: 3, at: sec(62)}, {ref: 2, seq: 1, at: sec(10), age: 1}}},
			{id: "s2", at: sec(70), marks: []specMark{{ref: 1, seq: 9, at: sec(70)}}},
		},
	}
}

// The state is written as state.go spells it; what AppendState would not
// write is refused whole, wrapping ErrState, and leaves the Set empty:
// keys, aggregates, senders or marks out of order or twice, marks of keys
// that are not there, keys of no mark, counts beyond the bytes, ages
// beyond 2, a mark's time in another form than the one written, a version
// read as another, a damaged blob or one of another layout, an aggregate
// of a template lookup does not find (those wrapping their cause too).
func TestStateFormat(t *testing.T) {
	s, tp, spec := specSet(t)
	require.Equal(t, spec.bytes(), s.AppendState(nil))
	lookup := func(h uint32) (*tpl.Template, error) {
		if h == tp.Hash() {
			return tp, nil
		}
		return nil, fmt.Errorf("hash %d: %w", h, voi.ErrNotFound)
	}
	load := func(p []byte) (*aggregate.Set, error) {
		t.Helper()
		l, err := aggregate.New(aggregate.Config{Now: func() time.Time { return time.Unix(100, 0) }}, time.Unix(0, 0))
		require.NoError(t, err)
		return l, l.LoadState(p, lookup)
	}
	l, err := load(spec.bytes())
	require.NoError(t, err)
	require.Equal(t, marksNow(s), marksNow(l))
	require.Equal(t, []string{`"a" 61000000000`, `"c" 70000000000`}, aggregate.AddTimes(l))
	require.Equal(t, aggregate.AddTimes(s), aggregate.AddTimes(l))
	require.Equal(t, spec.bytes(), l.AppendState(nil))

	// Versions 2 and 1: their aggregates and marks take the load's time
	// (100 s).
	v2 := spec
	v2.version = 2
	v1 := spec
	v1.version, v1.table = 1, nil
	v1.senders = []specSender{{id: "s2", marks: []specMark{{key: "c", seq: 9}}}, {id: "s1", marks: []specMark{{key: "c", seq: 3}, {key: "b", seq: 1}, {key: "a", seq: 5}, {key: "a", seq: 2}}}}
	loaded := spec
	loaded.last = 100e9
	loaded.aggs = slices.Clone(spec.aggs)
	for i := range loaded.aggs {
		loaded.aggs[i].at = 100e9
	}
	loaded.senders = []specSender{
		{id: "s1", at: 100e9, marks: []specMark{{ref: 0, seq: 2, at: 100e9}, {ref: 1, seq: 3, at: 100e9}, {ref: 2, seq: 1, at: 100e9}}},
		{id: "s2", at: 100e9, marks: []specMark{{ref: 1, seq: 9, at: 100e9}}},
	}
	for _, old := range []stateSpec{v2, v1} { // version 1: in any order, a key twice the later number
		l, err := load(old.bytes())
		require.NoError(t, err)
		require.Equal(t, aggregate.MarkSeqs(s), aggregate.MarkSeqs(l))
		require.Equal(t, 4, l.Stats().Marks)
		require.Equal(t, loaded.bytes(), l.AppendState(nil))
	}

	// A mark's time 2^61 ns (73 years) or more from its sender's (a clock
	// set wrong) is written whole; one a nanosecond nearer is a varint; one
	// after its sender's (posts whose times are out of order), a varint.
	fs, err := aggregate.New(aggregate.Config{}, time.Unix(0, 0))
	require.NoError(t, err)
	for _, p := range []struct {
		key string
		at  int64
	}{{"k3", 1<<61 + 5}, {"k0", 0}, {"k1", 1}, {"k2", 1 << 61}} { // the sender's time: the last, 2^61
		_, err := fs.OnceAllAt("s", []string{p.key}, 1, time.Unix(0, p.at), func([]bool) error { return nil })
		require.NoError(t, err)
	}
	far := stateSpec{table: []string{"k0", "k1", "k2", "k3"}, senders: []specSender{{id: "s", at: 1 << 61, marks: []specMark{
		{ref: 0, seq: 1, at: 0}, {ref: 1, seq: 1, at: 1}, {ref: 2, seq: 1, at: 1 << 61}, {ref: 3, seq: 1, at: 1<<61 + 5},
	}}}}
	state := fs.AppendState(nil)
	require.Equal(t, far.bytes(), state)
	require.Equal(t, 7+8+4+4+4*(4+2)+4+(4+1)+8+1+4+4*12+10+10+1+1, len(state))
	l, err = load(state)
	require.NoError(t, err)
	require.Equal(t, marksNow(fs), marksNow(l))
	require.Equal(t, state, l.AppendState(nil))

	// A state without senders (posts without Once) is written in version
	// 3 too, with its last-add times; with Config.StateV1 (package
	// natsjs's partitions: it adds without Once, and never expires) in
	// version 1, as before, which every version reads.
	for _, v1 := range []bool{false, true} {
		nm, err := aggregate.New(aggregate.Config{StateV1: v1, Now: func() time.Time { return time.Unix(65, 0) }}, time.Unix(60, 0))
		require.NoError(t, err)
		require.NoError(t, nm.Add("c", tp, []export.Label{{Name: "k", Value: "c"}}, blob.New(tp, nil)))
		onlyAggs := stateSpec{start: time.Unix(60, 0).UnixNano(), last: 65e9, aggs: []specAgg{spec.aggs[1]}}
		onlyAggs.aggs[0].blobs, onlyAggs.aggs[0].at, onlyAggs.aggs[0].raw = 1, 65e9, nm.Blobs()[0].Blob.Bytes()
		if v1 {
			onlyAggs.version = 1
		}
		require.Equal(t, onlyAggs.bytes(), nm.AppendState(nil), "StateV1 %v", v1)
	}
	onlyAggs := stateSpec{start: 60e9, last: 65e9, aggs: []specAgg{spec.aggs[1]}}
	onlyAggs.aggs[0].at = 65e9
	require.Len(t, onlyAggs.bytes(), 7+8+4+8+ // the header, the latest last-add time
		4+1+4+4+4+1+4+1+8+1+4+len(spec.aggs[1].raw)+ // the aggregate, its idle 0 one byte
		4+4) // no key table, no senders

	f := func(name string, edit func(sp *stateSpec)) {
		t.Helper()
		sp := spec
		sp.aggs = slices.Clone(spec.aggs)
		sp.table = slices.Clone(spec.table)
		sp.senders = slices.Clone(spec.senders)
		for i := range sp.senders {
			sp.senders[i].marks = slices.Clone(sp.senders[i].marks)
		}
		edit(&sp)
		l, err := load(sp.bytes())
		require.ErrorIs(t, err, aggregate.ErrState, name)
		require.Zero(t, l.Len(), name)
		require.Zero(t, l.Stats().Marks, name)
	}
	f("aggregates out of order", func(sp *stateSpec) { sp.aggs[0], sp.aggs[1] = sp.aggs[1], sp.aggs[0] })
	f("aggregate twice", func(sp *stateSpec) { sp.aggs[1].key = "a" })
	f("key table out of order", func(sp *stateSpec) {
		sp.table = []string{"d", "b"}
		sp.senders[1].marks = append(sp.senders[1].marks, specMark{ref: 3})
	})
	f("key twice", func(sp *stateSpec) {
		sp.table = []string{"b", "b"}
		sp.senders[1].marks = append(sp.senders[1].marks, specMark{ref: 3})
	})
	f("aggregate's key in the key table", func(sp *stateSpec) {
		sp.table = []string{"a", "b"}
		sp.senders[1].marks = append(sp.senders[1].marks, specMark{ref: 3})
	})
	f("key of no mark", func(sp *stateSpec) { sp.table = []string{"b", "d"} })
	f("mark of no key", func(sp *stateSpec) { sp.senders[1].marks[0].ref = 3 })
	f("marks out of order", func(sp *stateSpec) { sp.senders[0].marks[0].ref = 2 })
	f("mark twice", func(sp *stateSpec) { sp.senders[0].marks[1].ref = 0 })
	f("senders out of order", func(sp *stateSpec) { sp.senders[0], sp.senders[1] = sp.senders[1], sp.senders[0] })
	f("sender twice", func(sp *stateSpec) { sp.senders[1].id = "s1" })
	f("sender twice, version 1", func(sp *stateSpec) {
		sp.version, sp.table = 1, nil
		sp.senders = []specSender{{id: "s1", marks: []specMark{{key: "a"}}}, {id: "s1"}}
	})
	f("key table beyond the bytes", func(sp *stateSpec) { sp.nTable = 1 << 30 })
	f("marks beyond the bytes", func(sp *stateSpec) { sp.nMarks = 1 << 28 })
	f("marks one more than the bytes", func(sp *stateSpec) { sp.nMarks = 4 })
	f("sender's age 3", func(sp *stateSpec) { sp.senders[1].age = 3 })
	f("far mark's age 3", func(sp *stateSpec) { sp.senders[1].marks[0].when = []byte{3, 3, 0, 0, 0, 0, 0, 0, 0, 0} })
	f("far mark time with bits set", func(sp *stateSpec) { sp.senders[1].marks[0].when = []byte{7, 0, 0, 0, 0, 0, 0, 0, 0, 0} })
	f("far mark time that is near", func(sp *stateSpec) {
		sp.senders[1].marks[0].when = binary.LittleEndian.AppendUint64([]byte{3, 0}, uint64(sp.senders[1].at))
	})
	f("varint longer than its value", func(sp *stateSpec) { sp.senders[1].marks[0].when = []byte{0x80, 0} })
	f("varint past 64 bits", func(sp *stateSpec) { sp.senders[1].marks[0].when = bytes.Repeat([]byte{0xff}, 11) })
	f("varint cut short", func(sp *stateSpec) { sp.senders[1].marks[0].when = []byte{0x80} })
	f("idle longer than its value", func(sp *stateSpec) { sp.aggs[1].idle = []byte{0x80, 0} })
	f("idle past 64 bits", func(sp *stateSpec) { sp.aggs[1].idle = bytes.Repeat([]byte{0xff}, 11) })
	f("no aggregate at the latest last-add time", func(sp *stateSpec) { sp.last += 1 })
	f("last-add time before the earliest int64", func(sp *stateSpec) {
		sp.last, sp.aggs[1].at = math.MinInt64+5, math.MinInt64+5
		sp.aggs[0].idle = binary.AppendUvarint(nil, 6)
	})

	// What the bytes hold and the Set refuses (a damaged blob, one of
	// another layout, an aggregate of a template lookup does not find)
	// wraps ErrState too, and the cause. Before, it wrapped the cause
	// alone: voi.ErrInvalid, voi.ErrNotSupported, the lookup's error.
	other := tpl.NewRegistry()
	otp, err := other.New("TINY")
	require.NoError(t, err)
	require.NoError(t, otp.AddVOI(tpl.VOIDef{ID: 0, Name: "n", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}))
	otherWide, err := tpl.Widen(otp)
	require.NoError(t, err)
	for _, c := range []struct {
		name  string
		edit  func(a *specAgg)
		cause error
	}{
		{"blob cut short", func(a *specAgg) { a.raw = a.raw[:len(a.raw)-1] }, voi.ErrInvalid},
		{"blob of ABI version 2", func(a *specAgg) { a.raw = slices.Clone(a.raw); a.raw[0] = 2 }, voi.ErrNotSupported},
		{"blob big-endian", func(a *specAgg) { a.raw = slices.Clone(a.raw); a.raw[1] = 2 }, voi.ErrNotSupported},
		{"blob of another layout", func(a *specAgg) { a.raw = blob.New(otherWide, nil).Bytes() }, voi.ErrInvalid},
		{"template lookup does not find", func(a *specAgg) { a.hash++ }, voi.ErrNotFound},
	} {
		sp := spec
		sp.aggs = slices.Clone(spec.aggs)
		c.edit(&sp.aggs[1])
		l, err := load(sp.bytes())
		require.ErrorIs(t, err, aggregate.ErrState, c.name)
		require.ErrorIs(t, err, c.cause, c.name)
		require.Zero(t, l.Len(), c.name)
		require.Zero(t, l.Stats().Marks, c.name)
	}

	for name, p := range map[string][]byte{
		"version 2 as version 1": append([]byte("SBAGG1\n"), v2.bytes()[7:]...),
		"version 1 as version 2": append([]byte("SBAGG2\n"), v1.bytes()[7:]...),
		"version 2 as version 3": append([]byte("SBAGG3\n"), v2.bytes()[7:]...),
		"version 3 as version 2": append([]byte("SBAGG2\n"), spec.bytes()[7:]...),
		"version 4":              append([]byte("SBAGG4\n"), spec.bytes()[7:]...),
	} {
		l, err := load(p)
		require.ErrorIs(t, err, aggregate.ErrState, name)
		require.Zero(t, l.Len(), name)
	}
}
