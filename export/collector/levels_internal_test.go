package collector

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/export"
	"github.com/statsblob/statsblob/ship"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// gaugeBlob returns a template with one relative-update VOI and a blob of
// it at level v.
func gaugeBlob(t *testing.T, v int64) (*tpl.Template, *blob.Blob) {
	t.Helper()
	tp, err := tpl.NewRegistry().New("POOL")
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "inflight", DType: voi.IntS64, Flags: voi.FlagRelUpdate, Stats: []tpl.StatSpec{tpl.Max()}}))
	b := blob.New(tp, nil)
	require.NoError(t, b.UpdateRelS64(0, v))
	return tp, b
}

// senderHeaders answers a post's headers: sender id, sequence number 1.
func senderHeaders(id string) func(string) string {
	return func(h string) string {
		if h == ship.HeaderSender {
			return id
		}
		return "1"
	}
}

// checkLevels requires l's lists to hold exactly its readings: each label
// set's, linked both ways, and all of them, l.n.
func checkLevels(t *testing.T, l *levels) {
	t.Helper()
	total := 0
	for _, ls := range l.by {
		n := 0
		var prev *reading
		for r := ls.heard.front; r != nil; r = r.link[inSet].next {
			if r.set != ls || ls.senders[r.sender] != r || r.link[inSet].prev != prev {
				t.Fatalf("reading %q of its label set's list: not the label set's, or mislinked", r.sender)
			}
			prev = r
			n++
		}
		require.Equal(t, prev, ls.heard.back)
		require.Equal(t, len(ls.senders), n)
		total += n
	}
	n := 0
	var prev *reading
	for r := l.heard.front; r != nil; r = r.link[inAll].next {
		if r.set.senders[r.sender] != r || r.link[inAll].prev != prev {
			t.Fatalf("reading %q of all the readings' list: not its label set's, or mislinked", r.sender)
		}
		prev = r
		n++
	}
	require.Equal(t, prev, l.heard.back)
	require.Equal(t, total, n)
	require.Equal(t, total, l.n)
}

// A post from a sender a full label set (MaxLevelSenders) has not heard
// from evicted the least recently heard by scanning all 4096 readings
// under the levels' one lock, which every post with levels, of every
// label set, takes: a client cycling Statsblob-Sender ids made each of
// its posts hold it ~100 times as long as a known sender's post. The
// readings are now kept in the order they were heard, a list through
// them: the one to evict is the list's front, taken in constant time;
// hearing a sender again moves it to the back.
func TestLevelsEvictLeastRecentlyHeardFromListFront(t *testing.T) {
	tp, b := gaugeBlob(t, 3)
	var l levels
	labels := []export.Label{{Name: "pool", Value: "db"}}
	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time { return now } // one time for all: the order heard is what counts
	for i := range MaxLevelSenders {
		l.record(tp, labels, senderHeaders(strconv.Itoa(i)), clock(), b)
	}
	l.record(tp, labels, senderHeaders("0"), clock(), b) // heard again: now the most recent
	ls := l.by[levelKey(tp, labels)]
	require.Equal(t, "1", ls.heard.front.sender)
	require.Equal(t, "0", ls.heard.back.sender)
	checkLevels(t, &l)
	for i := range 2000 {
		front := ls.heard.front
		want, fresh := strconv.Itoa(i+1), "new"+strconv.Itoa(i) // "0" was heard again
		if front.sender != want {
			t.Fatalf("new sender %d: the list's front is %q, not the least recently heard %q", i, front.sender, want)
		}
		l.record(tp, labels, senderHeaders(fresh), clock(), b)
		if _, kept := ls.senders[want]; kept || front.link[inSet].next != nil || ls.heard.back.sender != fresh || len(ls.senders) != MaxLevelSenders {
			t.Fatalf("new sender %d: %q kept %v (unlinked: %v), back %q, %d readings", i, want, kept,
				front.link[inSet].next == nil, ls.heard.back.sender, len(ls.senders))
		}
	}
	require.Contains(t, ls.senders, "0")
	checkLevels(t, &l)
	require.Equal(t, map[int32]float64{0: 3 * MaxLevelSenders}, l.sum(levelKey(tp, labels)))
}

// Readings are bounded over all label sets (MaxLevelReadings), not only
// per label set: past the bound a new sender's reading takes the place of
// the least recently heard one of any label set (the stalest level; a
// live sender's fresh one is what the sum wants), each such eviction
// counted. The places of the label sets that rotate or expire away are
// free again.
func TestLevelReadingsBeyondMaxEvictTheGloballyOldest(t *testing.T) {
	tp, b := gaugeBlob(t, 1)
	evicted := 0
	l := levels{max: 3, evicted: func() { evicted++ }}
	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time { return now }
	set := func(v string) []export.Label { return []export.Label{{Name: "pool", Value: v}} }
	rec := func(pool, sender string) { l.record(tp, set(pool), senderHeaders(sender), clock(), b) }
	sum := func(pool string) float64 { return l.sum(levelKey(tp, set(pool)))[0] }

	rec("a", "s1")
	rec("b", "s2")
	rec("b", "s3")
	rec("a", "s1") // s1 heard again: s2 is now the oldest
	require.Zero(t, evicted)
	rec("c", "s4")
	require.Equal(t, 1, evicted)
	require.Equal(t, []float64{1, 1, 1}, []float64{sum("a"), sum("b"), sum("c")}, "s2 went")
	require.NotContains(t, l.by[levelKey(tp, set("b"))].senders, "s2")
	rec("c", "s3") // a known sender of another label set is a new reading too
	require.Equal(t, 2, evicted)
	require.Equal(t, []float64{1, 0, 2}, []float64{sum("a"), sum("b"), sum("c")}, "b's s3 went, then a's s1 is the oldest")
	checkLevels(t, &l)
	rec("c", "s4") // known: no eviction
	require.Equal(t, 2, evicted)

	// Expiry frees the places of the label sets that go.
	now = now.Add(time.Hour)
	rec("d", "s5") // evicts a's s1
	require.Equal(t, 3, evicted)
	l.expire(now.Add(-time.Minute)) // c's readings: at or before the cutoff; d's after it
	require.Equal(t, 1, l.n)
	rec("e", "s6")
	rec("f", "s7")
	require.Equal(t, 3, evicted)
	checkLevels(t, &l)

	// So do rotations: a label set without a post in a whole window goes
	// when that window closes.
	l.rotate()
	rec("d", "s5")
	l.rotate()
	require.Equal(t, 1, l.n)
	rec("g", "s8")
	rec("g", "s9")
	require.Equal(t, 3, evicted)
	checkLevels(t, &l)

	// A label set's own bound (MaxLevelSenders) is not the budget's: not
	// counted as its eviction.
	m := levels{max: MaxLevelSenders + 10, evicted: func() { evicted++ }}
	for i := range MaxLevelSenders + 5 {
		m.record(tp, set("big"), senderHeaders(strconv.Itoa(i)), clock(), b)
	}
	require.Equal(t, 3, evicted)
	require.Equal(t, MaxLevelSenders, m.n)
	checkLevels(t, &m)
}
