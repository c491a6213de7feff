package aggregate_test

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"flag"
	"fmt"
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

var updateState = flag.Bool("update-state", false, "write testdata/state-v2.bin: the state of testdata/state-v1.bin, as this code writes it")

// tinyTpl is a template of one VOI with a sum and a max: its wide blob is
// small, for states a test keeps as bytes and for the fuzzer's seeds.
func tinyTpl(t testing.TB) *tpl.Template {
	t.Helper()
	tp, err := tpl.NewRegistry().New("TINY")
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "n", DType: voi.IntU32, Stats: []tpl.StatSpec{tpl.Sum(), tpl.Max()}}))
	return tp
}

// versionPost is one post of versionSet: a sender's sequence number and the
// label sets it goes to.
type versionPost struct {
	id   string
	seq  uint64
	keys []string
}

// versionSet is a Set with what a state holds: aggregates with labels in
// the window under way, and senders' marks of them and of label sets of
// the window before (not in the state's aggregates); posts are what was
// posted, to check the marks against.
func versionSet(t testing.TB) (s *aggregate.Set, tp *tpl.Template, posts []versionPost) {
	t.Helper()
	tp = tinyTpl(t)
	s, err := aggregate.New(aggregate.Config{Now: func() time.Time { return time.Unix(1_700_000_100, 0) }}, time.Unix(1_700_000_000, 0))
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
		_, err := s.OnceAll(p.id, p.keys, p.seq, func([]bool) error { return s.AddAll(items) })
		require.NoError(t, err)
		posts = append(posts, p)
	}
	post(versionPost{"s1", 1, []string{"web-1", "web-2", "web-3"}})
	post(versionPost{"s2", 7, []string{"web-2", "web-4"}})
	s.Rotate(time.Unix(1_700_000_060, 0)) // the marks stay; web-1 to web-4 are not in the window now
	post(versionPost{"s1", 2, []string{"web-1", "web-5"}})
	post(versionPost{"s3", 40, []string{"web-5"}})
	post(versionPost{"s2", 9, []string{"web-6"}})
	return s, tp, posts
}

// A state of version 1 ("SBAGG1\n"), as AppendState wrote it before
// version 2, loads: testdata/state-v1.bin is versionSet's, written by
// AppendState at version 1 (commit 8bf32dd), and loads to what versionSet
// holds; written again, it is testdata/state-v2.bin.
func TestStateVersion1(t *testing.T) {
	a, tp, posts := versionSet(t)
	old, err := os.ReadFile("testdata/state-v1.bin")
	require.NoError(t, err)
	b := checkLoaded(t, a, tp, posts, old)
	if *updateState {
		require.NoError(t, os.WriteFile("testdata/state-v2.bin", b.AppendState(nil), 0o644))
	}
	v2, err := os.ReadFile("testdata/state-v2.bin")
	require.NoError(t, err)
	require.Equal(t, v2, b.AppendState(nil))
	require.Equal(t, []string{
		`s1 "web-1" 2`, `s1 "web-2" 1`, `s1 "web-3" 1`, `s1 "web-5" 2`,
		`s2 "web-2" 7`, `s2 "web-4" 7`, `s2 "web-6" 9`,
		`s3 "web-5" 40`,
	}, aggregate.MarkSeqs(b))
	require.Equal(t, []uint64{1, 2, 1}, b.Merged()) // web-1, web-5, web-6
}

// A state of version 2 loads to what it was written from, and is written
// again byte for byte: testdata/state-v2.bin is versionSet's (that of
// testdata/state-v1.bin, written by this version: go test -run
// TestStateVersion1 -update-state). Its marks of web-1, web-5 and web-6
// refer to their aggregates, those of web-2, web-3 and web-4 (label sets
// of the window before) to the key table: each key is written once (and
// the label values of the aggregates, which are their keys here).
func TestStateVersion2(t *testing.T) {
	a, tp, posts := versionSet(t)
	state, err := os.ReadFile("testdata/state-v2.bin")
	require.NoError(t, err)
	require.Equal(t, "SBAGG2\n", string(state[:7]))
	b := checkLoaded(t, a, tp, posts, state)
	require.Equal(t, state, b.AppendState(nil))
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

// checkLoaded checks that state loads into a Set that holds what a does
// (the same aggregates, their blobs the bytes in state, and the same
// marks: every post a duplicate), and that the loaded Set's state loads
// to the same again; it returns the loaded Set.
func checkLoaded(t *testing.T, a *aggregate.Set, tp *tpl.Template, posts []versionPost, state []byte) *aggregate.Set {
	t.Helper()
	lookup := func(h uint32) (*tpl.Template, error) {
		if h == tp.Hash() {
			return tp, nil
		}
		return nil, fmt.Errorf("hash %d: %w", h, voi.ErrNotFound)
	}
	b, err := aggregate.New(aggregate.Config{}, time.Unix(0, 0))
	require.NoError(t, err)
	require.NoError(t, b.LoadState(state, lookup))
	require.Equal(t, dumpSet(a), dumpSet(b))
	for _, n := range b.Blobs() {
		require.True(t, bytes.Contains(state, n.Blob.Bytes()), "the blob as stored")
	}
	again := b.AppendState(nil)
	c, err := aggregate.New(aggregate.Config{}, time.Unix(0, 0))
	require.NoError(t, err)
	require.NoError(t, c.LoadState(again, lookup))
	require.Equal(t, dumpSet(b), dumpSet(c))
	require.Equal(t, again, c.AppendState(nil))
	for _, p := range posts {
		dups, err := b.OnceAll(p.id, p.keys, p.seq, func([]bool) error { t.Fatal("added twice"); return nil })
		require.NoError(t, err)
		require.Equal(t, []bool{true}, slices.Compact(dups), "%s %d", p.id, p.seq)
	}
	return b
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
	v1      bool
	start   int64
	aggs    []specAgg
	table   []string // the key table (version 2)
	senders []specSender
	nTable  uint32 // if not 0, the key table's count written
	nMarks  uint32 // if not 0, the first sender's count of marks written
}

type specAgg struct {
	key    string
	hash   uint32
	labels []export.Label
	blobs  uint64
	raw    []byte
}

type specSender struct {
	id    string
	marks []specMark
}

type specMark struct {
	ref uint32 // version 2
	key string // version 1
	seq uint64
}

func (sp stateSpec) bytes() []byte {
	var p []byte
	u32 := func(v uint32) { p = binary.LittleEndian.AppendUint32(p, v) }
	str := func(s string) { u32(uint32(len(s))); p = append(p, s...) }
	if sp.v1 {
		p = append(p, "SBAGG1\n"...)
	} else {
		p = append(p, "SBAGG2\n"...)
	}
	p = binary.LittleEndian.AppendUint64(p, uint64(sp.start))
	u32(uint32(len(sp.aggs)))
	for _, a := range sp.aggs {
		str(a.key)
		u32(a.hash)
		u32(uint32(len(a.labels)))
		for _, l := range a.labels {
			str(l.Name)
			str(l.Value)
		}
		p = binary.LittleEndian.AppendUint64(p, a.blobs)
		str(string(a.raw))
	}
	if !sp.v1 {
		u32(cmp.Or(sp.nTable, uint32(len(sp.table))))
		for _, k := range sp.table {
			str(k)
		}
	}
	u32(uint32(len(sp.senders)))
	for i, s := range sp.senders {
		str(s.id)
		if i == 0 && sp.nMarks != 0 {
			u32(sp.nMarks)
		} else {
			u32(uint32(len(s.marks)))
		}
		for _, m := range s.marks {
			if sp.v1 {
				str(m.key)
			} else {
				u32(m.ref)
			}
			p = binary.LittleEndian.AppendUint64(p, m.seq)
		}
	}
	return p
}

// specSet is a Set and its state as a stateSpec: aggregates a and c in
// the window, b in the window before; s1's marks of a, b and c, s2's of c.
func specSet(t testing.TB) (*aggregate.Set, *tpl.Template, stateSpec) {
	t.Helper()
	tp := tinyTpl(t)
	s, err := aggregate.New(aggregate.Config{}, time.Unix(0, 0))
	require.NoError(t, err)
	post := func(id, key string, seq uint64) {
		_, err := s.Once(id, key, seq, func() error { return s.Add(key, tp, []export.Label{{Name: "k", Value: key}}, blob.New(tp, nil)) })
		require.NoError(t, err)
	}
	post("s1", "b", 1)
	s.Rotate(time.Unix(60, 0))
	post("s1", "a", 2)
	post("s1", "c", 3)
	post("s2", "c", 9)
	named := s.Blobs()
	agg := func(i int, key string, blobs uint64) specAgg {
		return specAgg{key: key, hash: tp.Hash(), labels: []export.Label{{Name: "k", Value: key}}, blobs: blobs, raw: named[i].Blob.Bytes()}
	}
	return s, tp, stateSpec{
		start:   time.Unix(60, 0).UnixNano(),
		aggs:    []specAgg{agg(0, "a", 1), agg(1, "c", 2)},
		table:   []string{"b"},
		senders: []specSender{{"s1", []specMark{{ref: 0, seq: 2}, {ref: 1, seq: 3}, {ref: 2, seq: 1}}}, {"s2", []specMark{{ref: 1, seq: 9}}}},
	}
}

// The state is written as state.go spells it; what AppendState would not
// write is refused whole, wrapping ErrState, and leaves the Set empty:
// keys, aggregates, senders or marks out of order or twice, marks of keys
// that are not there, keys of no mark, counts beyond the bytes, a version
// read as the other.
func TestStateFormat(t *testing.T) {
	s, tp, spec := specSet(t)
	require.Equal(t, spec.bytes(), s.AppendState(nil))
	lookup := func(uint32) (*tpl.Template, error) { return tp, nil }
	load := func(p []byte) (*aggregate.Set, error) {
		t.Helper()
		l, err := aggregate.New(aggregate.Config{}, time.Unix(0, 0))
		require.NoError(t, err)
		return l, l.LoadState(p, lookup)
	}
	v1 := spec
	v1.v1, v1.table = true, nil
	v1.senders = []specSender{{"s2", []specMark{{key: "c", seq: 9}}}, {"s1", []specMark{{key: "c", seq: 3}, {key: "b", seq: 1}, {key: "a", seq: 5}, {key: "a", seq: 2}}}}
	for _, ok := range []stateSpec{spec, v1} { // version 1: in any order, a key twice the later number
		l, err := load(ok.bytes())
		require.NoError(t, err)
		require.Equal(t, aggregate.MarkSeqs(s), aggregate.MarkSeqs(l))
		require.Equal(t, 4, l.Stats().Marks)
		require.Equal(t, s.AppendState(nil), l.AppendState(nil))
	}

	// A state without marks (package natsjs's: it adds without Once) is
	// written in version 1, which versions before 2 read too.
	nm, err := aggregate.New(aggregate.Config{}, time.Unix(60, 0))
	require.NoError(t, err)
	require.NoError(t, nm.Add("c", tp, []export.Label{{Name: "k", Value: "c"}}, blob.New(tp, nil)))
	onlyAggs := stateSpec{v1: true, start: time.Unix(60, 0).UnixNano(), aggs: []specAgg{spec.aggs[1]}}
	onlyAggs.aggs[0].blobs, onlyAggs.aggs[0].raw = 1, nm.Blobs()[0].Blob.Bytes()
	require.Equal(t, onlyAggs.bytes(), nm.AppendState(nil))

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
		sp.v1, sp.table = true, nil
		sp.senders = []specSender{{"s1", []specMark{{key: "a"}}}, {"s1", nil}}
	})
	f("key table beyond the bytes", func(sp *stateSpec) { sp.nTable = 1 << 30 })
	f("marks beyond the bytes", func(sp *stateSpec) { sp.nMarks = 1 << 28 })
	f("marks one more than the bytes", func(sp *stateSpec) { sp.nMarks = 4 })
	for name, p := range map[string][]byte{
		"version 2 as version 1": append([]byte("SBAGG1\n"), spec.bytes()[7:]...),
		"version 1 as version 2": append([]byte("SBAGG2\n"), v1.bytes()[7:]...),
		"version 3":              append([]byte("SBAGG3\n"), spec.bytes()[7:]...),
	} {
		l, err := load(p)
		require.ErrorIs(t, err, aggregate.ErrState, name)
		require.Zero(t, l.Len(), name)
	}
}
