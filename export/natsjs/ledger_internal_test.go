package natsjs

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/ship"
)

func msgOf(sender string, seq uint64, host string) Message {
	return Message{Sender: sender, Seq: seq, TplHash: 0xabc, Labels: []ship.Label{{Name: "host", Value: host}}}
}

// A ledger's rule: a copy whose sequence is at most its mark, or held
// exactly, is a duplicate; the fold takes in only what is at or below
// the acknowledgement floor, and keeps exact what a waiting message of
// its template precedes.
func TestLedgerMarks(t *testing.T) {
	l := newLedger()
	t0 := time.Unix(1000, 0)
	id, ok := markOf(msgOf("s", 5, "web1"))
	require.True(t, ok)
	other, _ := markOf(msgOf("s", 5, "web2"))
	require.NotEqual(t, id, other)
	_, ok = markOf(msgOf("", 5, "web1"))
	require.False(t, ok, "no sender: not checked")
	_, ok = markOf(msgOf("s", 0, "web1"))
	require.False(t, ok, "no sequence: not checked")

	// stream 10: seq 5 merged; stream 12: seq 6 merged (before stream 11, a redelivery)
	l.merged(10, id, 5, 0xabc, t0)
	l.merged(12, id, 6, 0xabc, t0)
	require.True(t, l.seen(id, 5))
	require.True(t, l.seen(id, 6))
	require.False(t, l.seen(id, 4), "exact above the floor: 4 is not below a mark yet")
	require.False(t, l.seen(other, 5))

	l.fold(10, time.Hour) // the floor at 10: seq 5 into the mark
	require.Equal(t, uint64(5), l.marks[id].hw)
	require.Equal(t, 1, l.marks[id].open)
	require.NotContains(t, l.done, uint64(10))
	require.True(t, l.seen(id, 4), "at most the mark")
	require.True(t, l.seen(id, 6))

	// a waiting message of the template at stream 11 keeps stream 12 exact
	l.processed(11, 0xabc)
	l.wait(11, 0xabc, t0)
	l.fold(12, time.Hour)
	require.Equal(t, uint64(5), l.marks[id].hw)
	require.Contains(t, l.done, uint64(12))
	l.unwait(0xabc)
	require.Zero(t, l.nWaiting)
	require.Empty(t, l.waiting)
	l.fold(12, time.Hour)
	require.Equal(t, uint64(6), l.marks[id].hw)
	require.Empty(t, l.done)
	require.Empty(t, l.exact)

	// marks go once their label set has been silent for maxAge of the stream's clock
	l.clock(t0.Add(time.Hour))
	l.fold(12, time.Hour)
	require.Contains(t, l.marks, id)
	l.clock(t0.Add(time.Hour + time.Second))
	l.fold(12, time.Hour)
	require.NotContains(t, l.marks, id)
}

func TestLedgerEncoding(t *testing.T) {
	l := newLedger()
	t0 := time.Unix(1000, 0)
	id, _ := markOf(msgOf("s", 5, "web1"))
	l.merged(10, id, 5, 0xabc, t0)
	l.fold(10, time.Hour)
	l.merged(12, id, 6, 0xabc, t0.Add(time.Second))
	l.processed(13, 0xdef)
	l.wait(13, 0xdef, t0)
	l.processed(20, 0xdef)
	l.wait(20, 0xdef, t0)
	b := l.append(nil)
	require.Len(t, b, 4+4+4+3*doneSize+4+markSize+4+4+4+2*8)
	got, rest, err := readLedger(append(b, "tail"...), t0)
	require.NoError(t, err)
	require.Equal(t, "tail", string(rest))
	require.Equal(t, l.done, got.done)
	require.Equal(t, l.marks, got.marks)
	require.Equal(t, l.exact, got.exact)
	require.Equal(t, l.waiting, got.waiting)
	require.Equal(t, 2, got.nWaiting)
	require.Equal(t, t0.Add(time.Second).UnixNano(), got.now)

	// version 1: a count and stream sequences
	v1 := binary.LittleEndian.AppendUint32(nil, 2)
	v1 = binary.LittleEndian.AppendUint64(v1, 7)
	v1 = binary.LittleEndian.AppendUint64(v1, 9)
	got, rest, err = readLedger(append(v1, 1, 2), t0)
	require.NoError(t, err)
	require.Equal(t, map[uint64]doneMsg{7: {}, 9: {}}, got.done)
	require.Equal(t, []byte{1, 2}, rest)

	f := func(name string, v []byte, want string) {
		t.Helper()
		_, _, err := readLedger(v, t0)
		require.EqualError(t, err, want, name)
	}
	head := func(words ...uint32) []byte {
		var b []byte
		for _, w := range words {
			b = binary.LittleEndian.AppendUint32(b, w)
		}
		return b
	}
	f("empty", nil, "state: 0 sequences in 0 bytes")
	f("v1 short", head(3, 0), "state: 3 sequences in 8 bytes")
	f("version", head(ledgerMagic, 3), "state: version 3, want 2")
	f("done past the end", head(ledgerMagic, 2, 1), "state: 1 items of 36 bytes in 0 bytes")
	f("marks missing", head(ledgerMagic, 2, 0), "state: truncated")
	f("empty queue", head(ledgerMagic, 2, 0, 0, 1, 0xabc, 0), "state: template 2748 (00000abc) waits with no message")
	unsorted := append(head(ledgerMagic, 2, 0, 0, 1, 0xabc, 2), make([]byte, 16)...)
	binary.LittleEndian.PutUint64(unsorted[len(unsorted)-16:], 9)
	f("queue out of order", unsorted, "state: template 2748 (00000abc): waiting message 0 after 9")
	twice := append(head(ledgerMagic, 2, 0, 0, 2, 0xabc, 1), make([]byte, 8)...)
	twice = append(append(twice, head(0xabc, 1)...), make([]byte, 8)...)
	f("queue twice", twice, "state: template 2748 (00000abc) after 2748 (00000abc)")

	// An entry given twice is refused, not taken once (a done message, a
	// mark: the later overwrote the earlier) or twice (a waiting message
	// was merged twice, once per copy, if it had no sender to check).
	u64s := func(b []byte, vs ...uint64) []byte {
		for _, v := range vs {
			b = binary.LittleEndian.AppendUint64(b, v)
		}
		return b
	}
	seqTwice := u64s(head(ledgerMagic, 2, 0, 0, 1, 0xabc, 2), 9, 9)
	f("waiting message twice", seqTwice, "state: template 2748 (00000abc): waiting message 9 after 9")
	done := func(s uint64) []byte { return append(u64s(nil, s, 0), make([]byte, 4+16)...) }
	doneTwice := append(append(head(ledgerMagic, 2, 2), done(7)...), done(7)...)
	f("done twice", append(doneTwice, head(0, 0)...), "state: processed message 7 after 7")
	doneUnsorted := append(append(head(ledgerMagic, 2, 2), done(8)...), done(7)...)
	f("done out of order", append(doneUnsorted, head(0, 0)...), "state: processed message 7 after 8")
	mk := func(b byte) []byte { return append(append(make([]byte, 15), b), make([]byte, 16)...) }
	marksTwice := append(append(head(ledgerMagic, 2, 0, 2), mk(1)...), mk(1)...)
	f("mark twice", append(marksTwice, head(0)...), "state: mark 00000000000000000000000000000001 after 00000000000000000000000000000001")
}

// FuzzReadLedger: a stored state from anywhere decodes or fails with an
// error, never a panic, and a ledger that decodes encodes to bytes that
// decode to the same encoding, the Partition's bytes after it untouched.
func FuzzReadLedger(f *testing.F) {
	l := newLedger()
	t0 := time.Unix(1000, 0)
	id, _ := markOf(msgOf("s", 5, "web1"))
	l.merged(10, id, 5, 0xabc, t0)
	l.merged(12, id, 6, 0xabc, t0)
	l.processed(11, 0xabc)
	l.fold(11, time.Hour)
	l.wait(13, 0xdef, t0)
	l.wait(14, 0xdef, t0)
	f.Add(l.append(nil))
	f.Add(append(l.append(nil), "partition"...))
	f.Add(binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint32(nil, 1), 7)) // version 1: one sequence
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, v []byte) {
		l, rest, err := readLedger(v, t0)
		if err != nil {
			return
		}
		require.LessOrEqual(t, len(rest), len(v))
		require.Equal(t, v[len(v)-len(rest):], rest, "the Partition's bytes are the tail")
		enc := l.append(nil)
		l2, rest2, err := readLedger(append(enc, rest...), t0)
		require.NoError(t, err)
		require.Equal(t, rest, rest2)
		require.Equal(t, enc, l2.append(nil))
	})
}
