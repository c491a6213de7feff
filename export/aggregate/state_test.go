package aggregate_test

import (
	"bytes"
	"fmt"
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

// A Set loaded from another's state goes on exactly: the same aggregates
// (every count and sum), and the senders' marks, so a copy of a post
// merged before the state is a duplicate after it.
func TestStateRoundTrip(t *testing.T) {
	tp := latTpl(t)
	lookup := func(h uint32) (*tpl.Template, error) {
		if h == tp.Hash() {
			return tp, nil
		}
		return nil, fmt.Errorf("hash %d: %w", h, voi.ErrNotFound)
	}
	blobs, _ := fleet(t, tp, "bimodal", 300, 7)
	start := time.Unix(1_700_000_000, 0)
	a, err := aggregate.New(aggregate.Config{Batch: 64}, start)
	require.NoError(t, err)
	for i, b := range blobs {
		key := fmt.Sprintf("host=%d", i%3)
		labels := []export.Label{{Name: "host", Value: fmt.Sprint(i % 3)}}
		dup, err := a.Once("s", key, uint64(i+1), func() error { return a.Add(key, tp, labels, b) })
		require.NoError(t, err)
		require.False(t, dup)
	}
	state := a.AppendState(nil)

	b, err := aggregate.New(aggregate.Config{Batch: 64}, time.Unix(0, 0))
	require.NoError(t, err)
	require.NoError(t, b.LoadState(state, lookup))
	na, nb := a.Blobs(), b.Blobs()
	require.Len(t, nb, 3)
	for i := range na {
		require.Equal(t, na[i].Labels, nb[i].Labels)
		require.Equal(t, start, nb[i].Start)
		for _, st := range []voi.SType{voi.Sum, voi.Max} {
			x, err := na[i].Blob.FetchU64(0, st)
			require.NoError(t, err)
			y, err := nb[i].Blob.FetchU64(0, st)
			require.NoError(t, err)
			require.Equal(t, x, y)
		}
		sa, err := na[i].Blob.Fetch(0, voi.TDgst)
		require.NoError(t, err)
		sb, err := nb[i].Blob.Fetch(0, voi.TDgst)
		require.NoError(t, err)
		ca, _ := sa.Count()
		cb, _ := sb.Count()
		require.Equal(t, ca, cb)
	}
	require.Equal(t, a.Merged(), b.Merged())
	// the state of the loaded set is the same state
	require.Equal(t, state, b.AppendState(nil))
	// a copy of an earlier post is a duplicate after the load
	dup, err := b.Once("s", "host=0", 1, func() error { t.Fatal("merged twice"); return nil })
	require.NoError(t, err)
	require.True(t, dup)

	// refusals leave the set as it was
	c, err := aggregate.New(aggregate.Config{}, start)
	require.NoError(t, err)
	for _, bad := range [][]byte{nil, []byte("SBAGG1\n"), state[:len(state)-1], append(append([]byte(nil), state...), 0)} {
		require.ErrorIs(t, c.LoadState(bad, lookup), aggregate.ErrState)
		require.Zero(t, c.Len())
	}
	require.ErrorIs(t, c.LoadState(state, func(uint32) (*tpl.Template, error) { return nil, voi.ErrNotFound }), voi.ErrNotFound)
	require.Zero(t, c.Len())
	require.ErrorIs(t, b.LoadState(state, lookup), voi.ErrInvalid) // b holds aggregates
}

// FuzzLoadState: what loads is written and loads again to the same Set,
// the aggregates' last-add times, the marks' numbers, times and ages and
// the senders' times and ages (a state of version 3, to the same bytes:
// there is one way to write a state); what does not leaves the Set empty, with an error
// wrapping ErrState, whatever the damage (before, a damaged blob's error
// wrapped the blob's voi.ErrInvalid or voi.ErrNotSupported, and an
// unknown template's the lookup's voi.ErrNotFound, not ErrState: seeded
// below). The seeds are small states (of
// tinyTpl, whose blob is 80 bytes) of each version: the fuzzer minimises
// each input that finds new coverage, trying every pair of cut points (a
// minute at most each, the default -fuzzminimizetime), which for a state
// of a t-digest blob (2 KB, the seed before) took the whole minute each
// time, so that a minute's fuzzing ran a few inputs.
func FuzzLoadState(f *testing.F) {
	tp := tinyTpl(f)
	lookup := func(h uint32) (*tpl.Template, error) {
		if h == tp.Hash() {
			return tp, nil
		}
		return nil, voi.ErrNotFound
	}
	now := func() time.Time { return time.Unix(1, 0) }
	a, err := aggregate.New(aggregate.Config{Now: now}, time.Unix(0, 0))
	require.NoError(f, err)
	f.Add(a.AppendState(nil)) // nothing
	item := func(key string, seq uint64) []aggregate.Item {
		b := blob.New(tp, blob.NewEnv(func() int64 { return 1 << 40 }, 1))
		require.NoError(f, b.UpdateU32(0, uint32(seq)))
		return []aggregate.Item{{Key: key, T: tp, Labels: []export.Label{{Name: "a", Value: key}}, B: b}}
	}
	post := func(id, key string, seq uint64, at time.Time) {
		_, err := a.OnceAllAt(id, []string{key}, seq, at, func([]bool) error { return a.AddAllAt(item(key, seq), at) })
		require.NoError(f, err)
	}
	noSenders, err := aggregate.New(aggregate.Config{Now: now}, time.Unix(0, 0))
	require.NoError(f, err)
	require.NoError(f, noSenders.AddAllAt(item("k", 1), time.Unix(3, 0)))
	require.NoError(f, noSenders.AddAllAt(item("j", 2), time.Unix(40, 0)))
	f.Add(noSenders.AppendState(nil)) // aggregates without marks, added to 37 s apart
	post("s0", "k", 1, time.Unix(1, 0))
	post("s1", "k", 2, time.Unix(2, 0))
	post("s0", "j", 3, time.Unix(1, 0))
	f.Add(a.AppendState(nil)) // aggregates and their marks
	a.Rotate(time.Unix(60, 0))
	post("s1", "k", 4, time.Unix(61, 0))
	f.Add(a.AppendState(nil)) // and marks of label sets of the window before, a window old
	a.Rotate(time.Unix(120, 0))
	post("s0", "k", 5, time.Unix(0, -1<<62)) // a mark 73 years and more from its sender's time: written whole (and the aggregate's idle in 9 bytes)
	post("s0", "i", 6, time.Unix(125, 0))
	f.Add(a.AppendState(nil)) // and two windows old
	_, _, spec := specSet(f)
	spec.version = 2
	f.Add(spec.bytes()) // version 2
	spec.version, spec.table = 1, nil
	spec.senders = []specSender{{id: "s2", marks: []specMark{{key: "c", seq: 9}}}, {id: "s1", marks: []specMark{{key: "c", seq: 3}, {key: "b", seq: 1}}}}
	f.Add(spec.bytes())     // version 1
	_, _, spec = specSet(f) // version 3, damaged:
	for _, damage := range []func(a *specAgg){
		func(a *specAgg) { a.raw = a.raw[:len(a.raw)-1] },              // voi.ErrInvalid
		func(a *specAgg) { a.raw = slices.Clone(a.raw); a.raw[0] = 2 }, // ABI version 2: voi.ErrNotSupported
		func(a *specAgg) { a.hash++ },                                  // a template lookup does not find: voi.ErrNotFound
	} {
		bad := spec
		bad.aggs = slices.Clone(spec.aggs)
		damage(&bad.aggs[0])
		f.Add(bad.bytes())
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		s, err := aggregate.New(aggregate.Config{Now: now}, time.Unix(0, 0))
		require.NoError(t, err)
		if err := s.LoadState(p, lookup); err != nil {
			require.Zero(t, s.Len())
			require.Zero(t, s.Stats().Marks)
			require.ErrorIs(t, err, aggregate.ErrState)
			return
		}
		// what loads can be written and loaded again to the same aggregates
		s2, err := aggregate.New(aggregate.Config{Now: now}, time.Unix(0, 0))
		require.NoError(t, err)
		state := s.AppendState(nil)
		require.NoError(t, s2.LoadState(state, lookup))
		require.Equal(t, s.Merged(), s2.Merged())
		require.Equal(t, marksNow(s), marksNow(s2))
		require.Equal(t, aggregate.AddTimes(s), aggregate.AddTimes(s2))
		require.Equal(t, len(aggregate.MarkSeqs(s)), s.Stats().Marks, "marks counted are marks held")
		require.Equal(t, aggregate.MarkKeys(s), aggregate.MarkKeys(s2))
		require.Equal(t, state, s2.AppendState(nil))
		if string(p[:7]) == "SBAGG3\n" {
			require.Equal(t, p, state, "version 3 is written as it was read")
		}
	})
}

// The marks a state holds are loaded all, counted in MaxMarks, each key
// kept once: a loaded Set with a smaller MaxMarks keeps every number
// (each a post added, whose retry must stay a duplicate) and tracks no
// new one until places are freed.
func TestStateMarksCountedInMaxMarks(t *testing.T) {
	tp := latTpl(t)
	lookup := func(uint32) (*tpl.Template, error) { return tp, nil }
	a, err := aggregate.New(aggregate.Config{}, time.Unix(0, 0))
	require.NoError(t, err)
	for _, id := range []string{"s1", "s2", "s3"} {
		for _, key := range []string{"k1", "k2"} {
			_, err := a.Once(id, key, 1, func() error { return a.Add(key, tp, nil, blob.New(tp, nil)) })
			require.NoError(t, err)
		}
	}
	b, err := aggregate.New(aggregate.Config{MaxMarks: 4}, time.Unix(0, 0))
	require.NoError(t, err)
	require.NoError(t, b.LoadState(a.AppendState(nil), lookup))
	require.Equal(t, 6, b.Stats().Marks)
	require.Equal(t, 2, aggregate.MarkKeys(b))
	for _, id := range []string{"s1", "s2", "s3"} {
		dup, err := b.Once(id, "k2", 1, func() error { t.Fatal("merged twice"); return nil })
		require.NoError(t, err)
		require.True(t, dup)
	}
	dup, err := b.Once("s4", "k1", 1, func() error { return nil })
	require.NoError(t, err)
	require.False(t, dup)
	require.Equal(t, uint64(1), b.Stats().MarksFull)
	require.Equal(t, 6, b.Stats().Marks)
}

// A State (Set.State, once Set.Snapshot) is the state when it was taken,
// whatever the Set does while the state is folded and written (adds to
// old and new aggregates, new marks, an expiry, a reset, a rotation): it
// writes what AppendState returned at that point, byte for byte. Adds
// wait only for State (a copy of references), not for the folds and the
// encoding; before,
// AppendState held the Set's lock (and the collector's log lock) for all
// of it, half a second at 10,000 aggregates (BenchmarkSnapshot). The
// folds it makes are published for the aggregates that did not change
// since, so a scrape after a checkpoint does not fold them again.
func TestSnapshotIsItsMoment(t *testing.T) {
	tp := latTpl(t)
	blobs, _ := fleet(t, tp, "bimodal", 40, 3)
	now := time.Unix(100, 0)
	s, err := aggregate.New(aggregate.Config{Now: func() time.Time { return now }}, time.Unix(0, 0))
	require.NoError(t, err)
	post := func(id, key string, seq uint64, b *blob.Blob) {
		labels := []export.Label{{Name: "k", Value: key}}
		_, err := s.Once(id, key, seq, func() error { return s.Add(key, tp, labels, b) })
		require.NoError(t, err)
	}
	for i, b := range blobs[:30] {
		post(fmt.Sprint("s", i%3), fmt.Sprint("k", i%5), uint64(i+1), b)
	}
	s.Blobs()                        // k0...k4 published
	post("s0", "k1", 100, blobs[30]) // k1 changed since
	post("s1", "k2", 101, blobs[31]) // k2 too
	st := s.State()
	want := s.AppendState(nil) // the state at the snapshot, as AppendState wrote it

	// The Set goes on.
	now = time.Unix(200, 0)
	post("s0", "k1", 102, blobs[32])
	post("s9", "k9", 1, blobs[33])
	_, err = s.ResetVOIs(func(*tpl.Template) []int32 { return []int32{0} })
	require.NoError(t, err)
	post("s1", "k3", 103, blobs[34])
	require.Equal(t, 2, s.Drop("k4", "k0"))
	var got appendBuf
	done := make(chan struct{})
	go func() { // adds while the state is written (run with -race)
		defer close(done)
		for i, b := range blobs[35:] {
			post("s2", fmt.Sprint("k", i%3), uint64(200+i), b)
		}
	}()
	n, err := st.WriteTo(&got)
	<-done
	require.NoError(t, err)
	require.Equal(t, int64(len(want)), n)
	require.Equal(t, st.Len(), n)
	require.True(t, string(want) == string(got), "the state written is the one at the snapshot")
	s.Rotate(time.Unix(300, 0))
	var again appendBuf
	_, err = st.WriteTo(&again)
	require.NoError(t, err)
	require.True(t, string(want) == string(again))

	// Publication: the folds of unchanged aggregates are what Blobs returns.
	s2, err := aggregate.New(aggregate.Config{}, time.Unix(0, 0))
	require.NoError(t, err)
	for i, b := range blobs[:20] {
		key := fmt.Sprint("k", i%4)
		require.NoError(t, s2.Add(key, tp, []export.Label{{Name: "k", Value: key}}, b))
	}
	st = s2.State()
	require.NoError(t, s2.Add("k3", tp, []export.Label{{Name: "k", Value: "k3"}}, blobs[20])) // k3 changed since
	folds := aggregate.StateBlobs(st)
	for _, nb := range s2.Blobs() {
		k := nb.Labels[0].Value
		if k == "k3" {
			require.NotSame(t, folds[k], nb.Blob, "changed since the snapshot: folded again")
		} else {
			require.Same(t, folds[k], nb.Blob, "%s: the snapshot's fold is published", k)
		}
	}
}

type appendBuf []byte

func (b *appendBuf) Write(p []byte) (int, error) {
	*b = append(*b, p...)
	return len(p), nil
}

// A state writes each key once, however many senders' marks it has: 12
// bytes a mark. Version 1 wrote the key with each mark, 31 times here (a
// label set of the widest labels, 4 KB, 104 times at the collector's
// limits: 4.1 GB for its 1,048,576 marks).
func TestStateWritesEachKeyOnce(t *testing.T) {
	tp := tinyTpl(t)
	s, err := aggregate.New(aggregate.Config{}, time.Unix(0, 0))
	require.NoError(t, err)
	keys := make([]string, 20)
	for i := range keys {
		keys[i] = fmt.Sprintf("%04d", i) + strings.Repeat("k", 2000)
	}
	post := func(id string, keys []string) {
		items := make([]aggregate.Item, len(keys))
		for i, k := range keys {
			items[i] = aggregate.Item{Key: k, T: tp, B: blob.New(tp, nil)}
		}
		_, err := s.OnceAll(id, keys, 1, func([]bool) error { return s.AddAll(items) })
		require.NoError(t, err)
	}
	for i := range 30 {
		post(fmt.Sprintf("s%02d", i), keys)
	}
	s.Rotate(time.Unix(60, 0))
	post("s30", keys[:5]) // 5 aggregates; the other 15 keys are those of marks only
	state := s.AppendState(nil)
	for _, k := range keys {
		require.Equal(t, 1, bytes.Count(state, []byte(k)))
	}
	blobSize := len(s.Blobs()[0].Blob.Bytes())
	require.Equal(t, 7+8+
		4+8+5*(4+2004+4+4+8+1+4+blobSize)+ // aggregates, added to at one time (idle 0: a byte)
		4+15*(4+2004)+ // the key table
		4+30*(4+3+8+1+4+20*13)+(4+3+8+1+4+5*13), // senders and marks, a post's marks of its sender's time
		len(state))
	b, err := aggregate.New(aggregate.Config{}, time.Unix(0, 0))
	require.NoError(t, err)
	require.NoError(t, b.LoadState(state, func(uint32) (*tpl.Template, error) { return tp, nil }))
	require.Equal(t, aggregate.MarkSeqs(s), aggregate.MarkSeqs(b))
	require.Equal(t, 20, aggregate.MarkKeys(b))
}

// markOp is a step of a Set's life: a post (OnceAllAt at the op's time)
// or, without an id, a rotation.
type markOp struct {
	at   int64 // seconds after markT0
	id   string
	keys []string
	seq  uint64
}

var markT0 = time.Unix(1_700_000_000, 0)

func (op markOp) apply(t *testing.T, s *aggregate.Set) []bool {
	t.Helper()
	at := markT0.Add(time.Duration(op.at) * time.Second)
	if op.id == "" {
		s.Rotate(at)
		return nil
	}
	dups, err := s.OnceAllAt(op.id, op.keys, op.seq, at, func([]bool) error { return nil })
	require.NoError(t, err)
	return dups
}

// marksOf is what a Set holds of its senders: their marks' numbers, times
// and ages in windows, the senders' times and ages, and the marks
// evicted.
type marksOf struct {
	seqs, times, ages, senders []string
	evicted                    uint64
}

func marksNow(s *aggregate.Set) marksOf {
	return marksOf{aggregate.MarkSeqs(s), aggregate.MarkTimes(s), aggregate.MarkAges(s), aggregate.Senders(s), s.Stats().MarksEvicted}
}

// A Set loaded from a state goes on with the marks it was written from,
// their times and their ages in windows: they age out (MarkAge, two
// rotations) and are evicted (the label sets posted to longest ago first)
// exactly as in the Set that wrote it, whatever the time the load is
// made at. The restart here is the collector's: the state is a
// checkpoint, the posts and rotations after it are replayed (OnceAllAt at
// their times), and the load is 60 s after the last of them. Before, the
// state held no times: every loaded mark took the load's time, in the
// window under way, so the replayed rotation at 30 s evicted nothing (all
// loaded marks seemed posted in the window it closed), the one at 110 s
// evicted two of them, of one time, in no order, and sparing k6 (posted
// at 40 s, after them), and the loaded marks not evicted outlived MarkAge
// by the downtime (kept until a rotation after 700 s, their time plus
// MarkAge). It fails at the load: the times are not the checkpoint's.
func TestStateMarksAgeAsLive(t *testing.T) {
	cfg := aggregate.Config{MaxAggregates: 2} // at a rotation, marks of more than 4 label sets are evicted
	before := []markOp{                       // written in the checkpoint
		{at: 0, id: "s1", keys: []string{"k1"}, seq: 1},
		{at: 1, id: "s2", keys: []string{"k2"}, seq: 1},
		{at: 10},
		{at: 12, id: "s1", keys: []string{"k3"}, seq: 2},
		{at: 20},
		{at: 25, id: "s2", keys: []string{"k4"}, seq: 2},
		{at: 26, id: "s3", keys: []string{"k5"}, seq: 1},
	}
	replayed := []markOp{ // after the checkpoint, before the crash
		{at: 30}, // evicts k1 (posted at 0 s), sparing k4 and k5 (posted in the window it closes)
		{at: 40, id: "s4", keys: []string{"k6"}, seq: 1},
	}
	after := []markOp{ // the restart at 100 s, and the same in the Set that never stopped
		{at: 110}, // evicts k2 (1 s), sparing k6
		{at: 111, id: "s5", keys: []string{"k7"}, seq: 1},
		{at: 112, id: "s1", keys: []string{"k3"}, seq: 3},
		{at: 120}, // evicts k4 (25 s): k5 (26 s) and k6 (40 s) are newer, k3 and k7 spared
		{at: 121, id: "s6", keys: []string{"k8"}, seq: 1},
		{at: 640}, // k5 (26 s) ages out, k6 (40 s) not: the cutoff is 40 s; s2 and s3 go
		{at: 700}, // k6 and s4 age out
	}
	live, err := aggregate.New(cfg, markT0)
	require.NoError(t, err)
	for _, op := range before {
		op.apply(t, live)
	}
	state := live.AppendState(nil)
	atCkpt := marksNow(live)
	for _, op := range replayed {
		op.apply(t, live)
	}

	restart := markT0.Add(100 * time.Second)
	cfg.Now = func() time.Time { return restart }
	back, err := aggregate.New(cfg, restart)
	require.NoError(t, err)
	require.NoError(t, back.LoadState(state, func(uint32) (*tpl.Template, error) { return nil, voi.ErrNotFound }))
	loaded := marksNow(back)
	loaded.evicted = atCkpt.evicted
	require.Equal(t, atCkpt, loaded, "the checkpoint's marks, as they were")
	for _, op := range replayed {
		op.apply(t, back)
	}
	sec := func(s int64) string { return fmt.Sprint(markT0.Add(time.Duration(s) * time.Second).UnixNano()) }
	require.Equal(t, []string{
		`s1 "k3" ` + sec(12), `s2 "k2" ` + sec(1), `s2 "k4" ` + sec(25), `s3 "k5" ` + sec(26), `s4 "k6" ` + sec(40),
	}, aggregate.MarkTimes(back))
	require.Equal(t, []string{`s1 "k3" 2`, `s2 "k2" 2`, `s2 "k4" 1`, `s3 "k5" 1`, `s4 "k6" 0`}, aggregate.MarkAges(back))
	require.Equal(t, uint64(1), back.Stats().MarksEvicted, "k1's")

	sameAsLive := func(step string) {
		t.Helper()
		l, b := marksNow(live), marksNow(back)
		l.evicted -= atCkpt.evicted
		require.Equal(t, l, b, step)
	}
	sameAsLive("replayed")
	for _, op := range after {
		require.Equal(t, op.apply(t, live), op.apply(t, back))
		sameAsLive(fmt.Sprint("at ", op.at, " s"))
	}
	require.Equal(t, []string{`s1 "k3" ` + sec(112), `s5 "k7" ` + sec(111), `s6 "k8" ` + sec(121)}, aggregate.MarkTimes(back))
	require.Equal(t, []string{"s1 " + sec(112) + " 2", "s5 " + sec(111) + " 2", "s6 " + sec(121) + " 2"}, aggregate.Senders(back))
	require.Equal(t, uint64(3), back.Stats().MarksEvicted, "k1's, k2's and k4's")
	// Every post again: the same duplicates.
	for _, op := range slices.Concat(before, replayed, after) {
		if op.id != "" {
			require.Equal(t, op.apply(t, live), op.apply(t, back), "%s %d", op.id, op.seq)
		}
	}
}

// expireOp is a step of TestStateExpiresAsLive, at seconds after markT0:
// an add to keys (AddAllAt, at the op's time), an expiry of the
// aggregates without an add for expireTTL (expire), or a rotation.
type expireOp struct {
	at     int64
	keys   []string
	expire bool
}

const expireTTL = 100 * time.Second

// apply makes op in s and returns what it dropped: the keys expired, and
// the least recent last-add time left; or the keys of the window closed.
func (op expireOp) apply(t *testing.T, s *aggregate.Set) string {
	t.Helper()
	tp := tinyTpl(t)
	at := markT0.Add(time.Duration(op.at) * time.Second)
	switch {
	case op.expire:
		gone, oldest := s.ExpireList(at.Add(-expireTTL))
		keys := make([]string, len(gone))
		for i, e := range gone {
			keys[i] = e.Key
		}
		if oldest.IsZero() {
			return fmt.Sprintf("expired %v, none left", keys)
		}
		return fmt.Sprintf("expired %v, oldest left %v", keys, oldest.Sub(markT0))
	case len(op.keys) == 0:
		var keys []string
		for _, n := range s.Rotate(at).Blobs {
			keys = append(keys, n.Labels[0].Value)
		}
		return fmt.Sprintf("closed %v", keys)
	}
	items := make([]aggregate.Item, len(op.keys))
	for i, k := range op.keys {
		items[i] = aggregate.Item{Key: k, T: tp, Labels: []export.Label{{Name: "k", Value: k}}, B: blob.New(tp, nil)}
	}
	require.NoError(t, s.AddAllAt(items, at))
	return ""
}

// A Set loaded from a state expires (Expire) exactly the aggregates the
// Set that wrote it expires, at the same expiries, whatever the time the
// load is made at: the state holds each aggregate's last-add time. The
// restart is the collector's, as in TestStateMarksAgeAsLive: the state is
// a checkpoint, the adds after it are replayed at their times (AddAllAt)
// into a Set loaded 70 s after them. Before, the state held no last-add
// times: every loaded aggregate took the load's (110 s), so that k1, k2
// and k3 outlived the TTL by the time between their last add and the
// load (the collector kept exporting them until 210 s, idle since 20 s
// to 40 s); it fails at the load.
func TestStateExpiresAsLive(t *testing.T) {
	before := []expireOp{ // written in the checkpoint
		{at: 0, keys: []string{"k0"}},
		{at: 5}, // k0 leaves with the window
		{at: 6, keys: []string{"k1"}},
		{at: 10, keys: []string{"k2", "k3"}},
		{at: 20, keys: []string{"k3"}},
		{at: 21, expire: true}, // none idle for 100 s
		{at: 28, keys: []string{"k1"}},
	}
	replayed := []expireOp{ // after the checkpoint, before the crash
		{at: 35, keys: []string{"k4"}},
		{at: 40, keys: []string{"k2"}},
		{at: 15, keys: []string{"k3"}}, // logged after k2's (posts made together): k3 keeps 20 s
		{at: 45, keys: []string{"k5"}},
	}
	after := []expireOp{ // the restart at 110 s, and the same in the Set that never stopped
		{at: 110, expire: true}, // none: k3's cutoff is 20 s
		{at: 120, expire: true}, // k3 (20 s)
		{at: 127, expire: true}, // none: k1 was added to at 28 s
		{at: 128, expire: true}, // k1
		{at: 130, keys: []string{"k6"}},
		{at: 140, expire: true}, // k2 (40 s) and k4 (35 s)
		{at: 150},               // k5 and k6 close with the window
		{at: 151, keys: []string{"k7"}},
		{at: 250, expire: true}, // none
		{at: 251, expire: true}, // k7
	}
	live, err := aggregate.New(aggregate.Config{}, markT0)
	require.NoError(t, err)
	for _, op := range before {
		op.apply(t, live)
	}
	state := live.AppendState(nil)
	atCkpt := aggregate.AddTimes(live)
	for _, op := range replayed {
		op.apply(t, live)
	}

	restart := markT0.Add(110 * time.Second)
	back, err := aggregate.New(aggregate.Config{Now: func() time.Time { return restart }}, restart)
	require.NoError(t, err)
	tp := tinyTpl(t)
	require.NoError(t, back.LoadState(state, func(uint32) (*tpl.Template, error) { return tp, nil }))
	sec := func(s int64) string { return fmt.Sprint(markT0.Add(time.Duration(s) * time.Second).UnixNano()) }
	require.Equal(t, []string{`"k1" ` + sec(28), `"k2" ` + sec(10), `"k3" ` + sec(20)}, aggregate.AddTimes(back))
	require.Equal(t, atCkpt, aggregate.AddTimes(back), "the checkpoint's last-add times")
	for _, op := range replayed {
		op.apply(t, back)
	}
	require.Equal(t, []string{`"k1" ` + sec(28), `"k2" ` + sec(40), `"k3" ` + sec(20), `"k4" ` + sec(35), `"k5" ` + sec(45)}, aggregate.AddTimes(back))

	var got []string
	for _, op := range after {
		want := op.apply(t, live)
		require.Equal(t, want, op.apply(t, back), "at %d s", op.at)
		require.Equal(t, aggregate.AddTimes(live), aggregate.AddTimes(back), "at %d s", op.at)
		require.Equal(t, live.Merged(), back.Merged(), "at %d s", op.at)
		if want != "" {
			got = append(got, fmt.Sprint(op.at, ": ", want))
		}
	}
	require.Equal(t, []string{
		"110: expired [], oldest left 20s",
		"120: expired [k3], oldest left 28s",
		"127: expired [], oldest left 28s",
		"128: expired [k1], oldest left 35s",
		"140: expired [k2 k4], oldest left 45s",
		"150: closed [k5 k6]",
		"250: expired [], oldest left 2m31s",
		"251: expired [k7], none left",
	}, got)
}
