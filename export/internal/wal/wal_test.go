package wal_test

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/export/internal/wal"
)

func rec(i uint64) []byte { return binary.LittleEndian.AppendUint64(nil, i) }

// state is what a test replays: the sum and count of its uint64 records.
type state struct{ sum, n uint64 }

func (s *state) recovery() wal.Recovery {
	return wal.Recovery{
		Checkpoint: func(p []byte) error {
			s.sum, s.n = binary.LittleEndian.Uint64(p), binary.LittleEndian.Uint64(p[8:])
			return nil
		},
		Record: func(p []byte) error {
			s.sum += binary.LittleEndian.Uint64(p)
			s.n++
			return nil
		},
	}
}

func (s *state) bytes() []byte {
	return binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, s.sum), s.n)
}

func TestAppendReplay(t *testing.T) {
	dir := t.TempDir()
	var live state
	l, err := wal.Open(dir, wal.Options{}, live.recovery())
	require.NoError(t, err)
	var wg sync.WaitGroup
	var mu sync.Mutex // the test's own state lock (apply runs under the log's)
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				v := uint64(g*1000 + i)
				require.NoError(t, l.Append(rec(v), func() { mu.Lock(); live.sum += v; live.n++; mu.Unlock() }))
			}
		}()
	}
	wg.Wait()
	st := l.Stats()
	require.Equal(t, uint64(800), st.Appends)
	require.LessOrEqual(t, st.Syncs, st.Appends)
	t.Logf("%d appends, %d fsyncs", st.Appends, st.Syncs)
	require.NoError(t, l.Close())
	require.ErrorIs(t, l.Append(rec(1), nil), wal.ErrClosed)

	var got state
	l, err = wal.Open(dir, wal.Options{}, got.recovery())
	require.NoError(t, err)
	require.Equal(t, live, got)
	require.Equal(t, uint64(800), l.Stats().Replayed)
	require.NoError(t, l.Close())
}

func TestCheckpoint(t *testing.T) {
	dir := t.TempDir()
	var live state
	l, err := wal.Open(dir, wal.Options{NoSync: true}, live.recovery())
	require.NoError(t, err)
	add := func(v uint64) {
		require.NoError(t, l.Append(rec(v), func() { live.sum += v; live.n++ }))
	}
	for i := range 10 {
		add(uint64(i))
	}
	require.NoError(t, l.Checkpoint(func() ([]byte, error) { return live.bytes(), nil }))
	add(100)
	require.NoError(t, l.Checkpoint(func() ([]byte, error) { return live.bytes(), nil }))
	add(1000)
	add(2000)
	require.NoError(t, l.Close())

	names := func() []string {
		ents, err := os.ReadDir(dir)
		require.NoError(t, err)
		var n []string
		for _, e := range ents {
			n = append(n, e.Name())
		}
		return n
	}
	// only the newest checkpoint and the segment after it stay
	require.Equal(t, []string{"ckpt-0000000000000002.ckpt", "seg-0000000000000002.wal"}, names())

	var got state
	l, err = wal.Open(dir, wal.Options{NoSync: true}, got.recovery())
	require.NoError(t, err)
	require.Equal(t, state{sum: 45 + 100 + 3000, n: 13}, got)
	require.Equal(t, uint64(2), l.Stats().Replayed)
	require.NoError(t, l.Close())

	// a failing snapshot leaves the log whole and usable
	l, err = wal.Open(dir, wal.Options{NoSync: true}, (&state{}).recovery())
	require.NoError(t, err)
	require.Error(t, l.Checkpoint(func() ([]byte, error) { return nil, fmt.Errorf("no") }))
	require.NoError(t, l.Append(rec(5), nil))
	require.NoError(t, l.Close())
	got = state{}
	_, err = wal.Open(dir, wal.Options{NoSync: true}, got.recovery())
	require.NoError(t, err)
	require.Equal(t, state{sum: 3150, n: 14}, got)
}

func TestTornTail(t *testing.T) {
	dir := t.TempDir()
	l, err := wal.Open(dir, wal.Options{NoSync: true}, wal.Recovery{})
	require.NoError(t, err)
	for i := range 3 {
		require.NoError(t, l.Append(rec(uint64(i+1)), nil))
	}
	require.NoError(t, l.Close())
	seg := filepath.Join(dir, "seg-0000000000000000.wal")
	full, err := os.ReadFile(seg)
	require.NoError(t, err)
	require.Len(t, full, 3*16)

	for _, cut := range []int{1, 8, 15} { // inside the last record
		require.NoError(t, os.WriteFile(seg, full[:len(full)-cut], 0o644))
		var got state
		l, err := wal.Open(dir, wal.Options{NoSync: true}, got.recovery())
		require.NoError(t, err)
		require.Equal(t, state{sum: 3, n: 2}, got, "cut %d", cut)
		require.Equal(t, uint64(16-cut), l.Stats().Truncated)
		require.NoError(t, l.Close())
		fi, err := os.Stat(seg)
		require.NoError(t, err)
		require.Equal(t, int64(32), fi.Size())
		require.NoError(t, os.Remove(filepath.Join(dir, "seg-0000000000000001.wal")))
	}

	// a flipped bit in a record that is not the last: corrupt, refused
	bad := append([]byte(nil), full...)
	bad[8] ^= 1
	require.NoError(t, os.WriteFile(seg, bad, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "seg-0000000000000001.wal"), wal.AppendRecord(nil, rec(9)), 0o644))
	_, err = wal.Open(dir, wal.Options{NoSync: true}, wal.Recovery{})
	require.ErrorIs(t, err, wal.ErrCorrupt)

	// a missing segment after a damaged checkpoint: refused, not skipped
	dir2 := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir2, "ckpt-0000000000000003.ckpt"), []byte("SBCKPT1\nxx"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir2, "seg-0000000000000003.wal"), nil, 0o644))
	_, err = wal.Open(dir2, wal.Options{NoSync: true}, wal.Recovery{})
	require.ErrorIs(t, err, wal.ErrCorrupt)
}

func TestDecode(t *testing.T) {
	f := func(p []byte, wantN int, wantErr bool) {
		t.Helper()
		payload, n, err := wal.Decode(p)
		if wantErr {
			require.ErrorIs(t, err, wal.ErrCorrupt)
			return
		}
		require.NoError(t, err)
		require.Equal(t, wantN, n)
		require.Equal(t, p[8:n], payload)
	}
	r := wal.AppendRecord(nil, []byte("hello"))
	f(r, 13, false)
	f(append(r, 1, 2, 3), 13, false)
	f(r[:12], 0, true)
	f(r[:7], 0, true)
	f(binary.LittleEndian.AppendUint32(nil, wal.MaxRecord+1), 0, true)
	f(wal.AppendRecord(nil, nil), 8, false)
	big := make([]byte, wal.MaxRecord+1)
	require.ErrorIs(t, func() error {
		l, err := wal.Open(t.TempDir(), wal.Options{NoSync: true}, wal.Recovery{})
		require.NoError(t, err)
		defer l.Close()
		return l.Append(big, nil)
	}(), wal.ErrTooLarge)
}

func FuzzDecode(f *testing.F) {
	f.Add(wal.AppendRecord(nil, []byte("seed")))
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, p []byte) {
		payload, n, err := wal.Decode(p)
		if err != nil {
			require.ErrorIs(t, err, wal.ErrCorrupt)
			return
		}
		// what decodes re-encodes to the same bytes
		require.Equal(t, p[:n], wal.AppendRecord(nil, payload))
	})
}

// FuzzOpen: any bytes as the last segment open without panic, and what is
// replayed is a prefix of records that re-encode to the segment's start.
func FuzzOpen(f *testing.F) {
	f.Add(append(wal.AppendRecord(nil, []byte("a")), 3, 0, 0))
	f.Fuzz(func(t *testing.T, p []byte) {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, "seg-0000000000000000.wal"), p, 0o644))
		var re []byte
		l, err := wal.Open(dir, wal.Options{NoSync: true}, wal.Recovery{Record: func(r []byte) error {
			re = wal.AppendRecord(re, r)
			return nil
		}})
		require.NoError(t, err)
		require.NoError(t, l.Close())
		require.Equal(t, string(p[:len(re)]), string(re))
		q, err := os.ReadFile(filepath.Join(dir, "seg-0000000000000000.wal"))
		require.NoError(t, err)
		require.Equal(t, string(re), string(q)) // the torn tail was cut
	})
}

// TestKill9: a child process appends and reports each acknowledged record;
// it is killed with SIGKILL mid-run; every acknowledged record is replayed.
func TestKill9(t *testing.T) {
	if dir := os.Getenv("WAL_CHILD_DIR"); dir != "" {
		child(dir)
		return
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKill9$")
	cmd.Env = append(os.Environ(), "WAL_CHILD_DIR="+dir)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	sc := bufio.NewScanner(out)
	acked := map[uint64]bool{}
	for sc.Scan() && len(acked) < 300 {
		v, err := strconv.ParseUint(sc.Text(), 10, 64)
		if err == nil {
			acked[v] = true
		}
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	require.GreaterOrEqual(t, len(acked), 300)

	seen := map[uint64]bool{}
	_, err = wal.Open(dir, wal.Options{}, wal.Recovery{
		Checkpoint: func(p []byte) error {
			for ; len(p) >= 8; p = p[8:] {
				seen[binary.LittleEndian.Uint64(p)] = true
			}
			return nil
		},
		Record: func(p []byte) error {
			seen[binary.LittleEndian.Uint64(p)] = true
			return nil
		}})
	require.NoError(t, err)
	for v := range acked {
		require.True(t, seen[v], "acknowledged record %d lost", v)
	}
}

func child(dir string) {
	l, err := wal.Open(dir, wal.Options{}, wal.Recovery{})
	if err != nil {
		panic(err)
	}
	var mu sync.Mutex
	var applied []byte // the state: every record applied, as the checkpoint holds it
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := uint64(0); ; i++ {
				v := uint64(g)<<32 | i
				if err := l.Append(rec(v), func() { applied = append(applied, rec(v)...) }); err != nil {
					panic(err)
				}
				mu.Lock()
				fmt.Println(v)
				mu.Unlock()
				if i%97 == 0 {
					if err := l.Checkpoint(func() ([]byte, error) { return append([]byte(nil), applied...), nil }); err != nil {
						panic(err)
					}
				}
			}
		}()
	}
	wg.Wait()
}

// AppendIf appends only the records whose apply succeeds: a refused one
// is not replayed, and the log goes on.
func TestAppendIf(t *testing.T) {
	dir := t.TempDir()
	var live state
	l, err := wal.Open(dir, wal.Options{NoSync: true}, live.recovery())
	require.NoError(t, err)
	refuse := fmt.Errorf("odd")
	for v := uint64(1); v <= 10; v++ {
		err := l.AppendIf(rec(v), func() error {
			if v%2 == 1 {
				return refuse
			}
			live.sum += v
			live.n++
			return nil
		})
		if v%2 == 1 {
			require.ErrorIs(t, err, refuse)
		} else {
			require.NoError(t, err)
		}
	}
	require.Equal(t, uint64(5), l.Stats().Appends)
	require.NoError(t, l.Close())
	called := false
	require.ErrorIs(t, l.AppendIf(rec(2), func() error { called = true; return nil }), wal.ErrClosed)
	require.False(t, called, "a closed log calls no apply")

	var got state
	l, err = wal.Open(dir, wal.Options{NoSync: true}, got.recovery())
	require.NoError(t, err)
	require.Equal(t, state{sum: 2 + 4 + 6 + 8 + 10, n: 5}, got)
	require.NoError(t, l.Close())
}

// encodeCheckpoint is the checkpoint file of state, as the package's doc
// describes it: the magic, the state's length as a record, the state in
// pieces of CheckpointPiece bytes, each a record.
func encodeCheckpoint(state []byte) []byte {
	p := wal.AppendRecord([]byte("SBCKPT2\n"), binary.LittleEndian.AppendUint64(nil, uint64(len(state))))
	for len(state) > 0 {
		n := min(wal.CheckpointPiece, len(state))
		p = wal.AppendRecord(p, state[:n])
		state = state[n:]
	}
	return p
}

// pattern is n bytes that differ from piece to piece.
func pattern(n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(i*31 + i>>20)
	}
	return p
}

// A checkpoint is not bounded by MaxRecord, which bounds a record (a
// post): the state of many posts can pass it, and its checkpoint was
// refused ("record too large"), every one of them for as long as that
// state lived, so the log was never cut. Now it is written in pieces,
// read back whole, and the segments it covers go.
func TestCheckpointPastMaxRecord(t *testing.T) {
	dir := t.TempDir()
	l, err := wal.Open(dir, wal.Options{NoSync: true}, wal.Recovery{})
	require.NoError(t, err)
	require.NoError(t, l.Append(rec(1), nil))
	big := pattern(wal.MaxRecord + wal.CheckpointPiece/2 + 3)
	require.NoError(t, l.Checkpoint(func() ([]byte, error) { return big, nil }))
	require.Equal(t, uint64(1), l.Stats().Checkpoints)
	require.Zero(t, l.Stats().Failed)
	require.NoError(t, l.Append(rec(2), nil))
	require.NoError(t, l.Close())
	_, err = os.Stat(filepath.Join(dir, "seg-0000000000000000.wal"))
	require.ErrorIs(t, err, os.ErrNotExist, "the segment the checkpoint covers is deleted")
	fi, err := os.Stat(filepath.Join(dir, "ckpt-0000000000000001.ckpt"))
	require.NoError(t, err)
	require.Equal(t, int64(len(big)+8+16+8*(wal.MaxRecord/wal.CheckpointPiece+1)), fi.Size())

	var got []byte
	var records []uint64
	l, err = wal.Open(dir, wal.Options{NoSync: true}, wal.Recovery{
		Checkpoint: func(p []byte) error { got = p; return nil },
		Record:     func(p []byte) error { records = append(records, binary.LittleEndian.Uint64(p)); return nil },
	})
	require.NoError(t, err)
	require.True(t, string(big) == string(got), "the state read back is the one written")
	require.Equal(t, []uint64{2}, records)
	require.NoError(t, l.Close())
}

// The checkpoint file is what the package's doc says, and reads back;
// damage anywhere in it is ErrCorrupt, and a damaged length is refused
// by the file's own length before anything is allocated for it. A
// version 1 checkpoint (the state as one record) is still read.
func TestCheckpointFile(t *testing.T) {
	dir := t.TempDir()
	write := func(p []byte) string {
		t.Helper()
		path := filepath.Join(dir, "ckpt-0000000000000001.ckpt")
		require.NoError(t, os.WriteFile(path, p, 0o644))
		return path
	}
	for _, n := range []int{0, 1, wal.CheckpointPiece, 2*wal.CheckpointPiece + 5} {
		state := pattern(n)
		dir := t.TempDir()
		l, err := wal.Open(dir, wal.Options{NoSync: true}, wal.Recovery{})
		require.NoError(t, err)
		require.NoError(t, l.Checkpoint(func() ([]byte, error) { return state, nil }))
		require.NoError(t, l.Close())
		ckpts, err := filepath.Glob(filepath.Join(dir, "ckpt-*.ckpt"))
		require.NoError(t, err)
		require.Len(t, ckpts, 1)
		p, err := os.ReadFile(ckpts[0])
		require.NoError(t, err)
		require.True(t, string(encodeCheckpoint(state)) == string(p), "a checkpoint of %d bytes as documented", n)
		got, err := wal.ReadCheckpoint(ckpts[0])
		require.NoError(t, err)
		require.Len(t, got, n)
		require.True(t, string(state) == string(got))
	}

	state := pattern(2*wal.CheckpointPiece + 5)
	good := encodeCheckpoint(state)
	lastPiece := len(good) - 8 - 5 // the header of the 5-byte piece
	withLength := func(n uint64) []byte {
		return append(wal.AppendRecord([]byte("SBCKPT2\n"), binary.LittleEndian.AppendUint64(nil, n)), good[24:]...)
	}
	flip := func(i int) []byte {
		p := append([]byte(nil), good...)
		p[i] ^= 1
		return p
	}
	for what, p := range map[string][]byte{
		"a length of 1 TiB":            withLength(1 << 40),
		"a length of 2^64-1":           withLength(1<<64 - 1),
		"a length one short":           withLength(uint64(len(state) - 1)),
		"a length one long":            withLength(uint64(len(state) + 1)),
		"the length's checksum":        flip(12),
		"a byte of the length":         flip(16),
		"the first piece's length":     flip(25),
		"a byte of the first piece":    flip(40),
		"the last piece's checksum":    flip(lastPiece + 4),
		"a byte of the last piece":     flip(len(good) - 1),
		"the magic":                    flip(0),
		"cut by a byte":                good[:len(good)-1],
		"cut after the length":         good[:24],
		"cut in the header":            good[:20],
		"a byte more":                  append(append([]byte(nil), good...), 0),
		"pieces in another cut":        append(withLength(uint64(len(state)))[:24], wal.AppendRecord(wal.AppendRecord(nil, state[:5]), state[5:wal.CheckpointPiece+5])...),
		"empty":                        nil,
		"a version 1 record too large": append([]byte("SBCKPT1\n"), binary.LittleEndian.AppendUint64(nil, wal.MaxRecord+1)...),
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := wal.ReadCheckpoint(write(p))
		runtime.ReadMemStats(&after)
		require.ErrorIs(t, err, wal.ErrCorrupt, what)
		require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(len(p)+1<<16), "%s: what is read is bounded by the file", what)
	}

	// a version 1 file past what a version 1 checkpoint can be is refused
	// unread (a sparse file of 100 MiB)
	path := write([]byte("SBCKPT1\n"))
	require.NoError(t, os.Truncate(path, 100<<20))
	_, err := wal.ReadCheckpoint(path)
	require.ErrorIs(t, err, wal.ErrCorrupt)

	got, err := wal.ReadCheckpoint(write(wal.AppendRecord([]byte("SBCKPT1\n"), state)))
	require.NoError(t, err)
	require.True(t, string(state) == string(got), "a version 1 checkpoint is read")
}

// FuzzCheckpointFile: any bytes as a checkpoint file read without panic;
// what is read is a state whose checkpoint (of either version) is those
// bytes, anything else is ErrCorrupt.
func FuzzCheckpointFile(f *testing.F) {
	f.Add(encodeCheckpoint([]byte("state")))
	f.Add(encodeCheckpoint(nil))
	f.Add(wal.AppendRecord([]byte("SBCKPT1\n"), []byte("state")))
	f.Fuzz(func(t *testing.T, p []byte) {
		path := filepath.Join(t.TempDir(), "ckpt-0000000000000001.ckpt")
		require.NoError(t, os.WriteFile(path, p, 0o644))
		state, err := wal.ReadCheckpoint(path)
		if err != nil {
			require.ErrorIs(t, err, wal.ErrCorrupt)
			return
		}
		if string(p[:8]) == "SBCKPT1\n" {
			require.Equal(t, p, wal.AppendRecord([]byte("SBCKPT1\n"), state))
		} else {
			require.Equal(t, p, encodeCheckpoint(state))
		}
	})
}

// A checkpoint that cannot be written is counted (Stats.Failed), and the
// log stays whole and goes on: its segments are kept until a checkpoint
// is written.
func TestCheckpointFailed(t *testing.T) {
	dir := t.TempDir()
	var live state
	l, err := wal.Open(dir, wal.Options{NoSync: true}, live.recovery())
	require.NoError(t, err)
	require.NoError(t, l.Append(rec(7), func() { live.sum += 7; live.n++ }))
	// the next checkpoint's temporary file cannot be created
	require.NoError(t, os.Mkdir(filepath.Join(dir, "ckpt-0000000000000001.ckpt.tmp"), 0o755))
	require.Error(t, l.Checkpoint(func() ([]byte, error) { return live.bytes(), nil }))
	require.Error(t, l.Checkpoint(func() ([]byte, error) { return nil, fmt.Errorf("no") }))
	require.Equal(t, uint64(2), l.Stats().Failed)
	require.Zero(t, l.Stats().Checkpoints)
	require.NoError(t, l.Append(rec(8), func() { live.sum += 8; live.n++ }))
	require.NoError(t, l.Close())

	var got state
	l, err = wal.Open(dir, wal.Options{NoSync: true}, got.recovery())
	require.NoError(t, err)
	require.Equal(t, live, got)
	require.Zero(t, l.Stats().Failed, "counted since Open")
	require.NoError(t, l.Checkpoint(func() ([]byte, error) { return got.bytes(), nil }))
	require.NoError(t, l.Close())
	segs, err := filepath.Glob(filepath.Join(dir, "seg-*.wal"))
	require.NoError(t, err)
	require.Len(t, segs, 1, "a checkpoint written cuts the log")
}

// AppendEvent appends an event's records at the point of the log's order
// where the event ran, and they replay there, also when the checkpoint
// after the event fails; an event without records appends nothing; a
// failed log calls no event; an event's record past MaxRecord fails the
// log, whose records before it still replay.
func TestAppendEvent(t *testing.T) {
	dir := t.TempDir()
	var order []uint64 // what the records did, in order: the live state
	l, err := wal.Open(dir, wal.Options{NoSync: true}, wal.Recovery{})
	require.NoError(t, err)
	require.NoError(t, l.Append(rec(1), func() { order = append(order, 1) }))
	require.NoError(t, l.AppendEvent(func() [][]byte {
		order = append(order, 100, 101)
		return [][]byte{rec(100), rec(101)}
	}))
	require.NoError(t, l.AppendEvent(func() [][]byte { return nil }))
	require.Equal(t, uint64(3), l.Stats().Appends, "an event without records appends nothing")
	// the next checkpoint fails: the event is in the log all the same
	require.NoError(t, os.Mkdir(filepath.Join(dir, "ckpt-0000000000000001.ckpt.tmp"), 0o755))
	require.Error(t, l.Checkpoint(func() ([]byte, error) { return []byte("state"), nil }))
	require.NoError(t, l.Append(rec(2), func() { order = append(order, 2) }))
	called := false
	err = l.AppendEvent(func() [][]byte {
		called = true
		return [][]byte{rec(102), make([]byte, wal.MaxRecord+1)}
	})
	require.ErrorIs(t, err, wal.ErrTooLarge)
	require.True(t, called)
	require.ErrorIs(t, l.Append(rec(3), nil), wal.ErrClosed, "an event that could not be logged fails the log")
	called = false
	require.ErrorIs(t, l.AppendEvent(func() [][]byte { called = true; return nil }), wal.ErrClosed)
	require.False(t, called, "a failed log calls no event")
	require.NoError(t, l.Close())

	var got []uint64
	l, err = wal.Open(dir, wal.Options{NoSync: true}, wal.Recovery{
		Checkpoint: func([]byte) error { t.Fatal("no checkpoint was written"); return nil },
		Record:     func(p []byte) error { got = append(got, binary.LittleEndian.Uint64(p)); return nil },
	})
	require.NoError(t, err)
	require.Equal(t, order, got)
	require.NoError(t, l.Close())
}

// chunkState is a State written in writes of chunk bytes; extra bytes
// more (or fewer, below zero) than its Len; during runs before it writes.
type chunkState struct {
	p      []byte
	chunk  int
	extra  int
	during func()
}

func (c *chunkState) Len() int64 { return int64(len(c.p)) }

func (c *chunkState) WriteTo(w io.Writer) (int64, error) {
	if c.during != nil {
		c.during()
	}
	p := c.p
	if c.extra > 0 {
		p = append(append([]byte(nil), p...), make([]byte, c.extra)...)
	} else {
		p = p[:len(p)+c.extra]
	}
	var n int64
	for len(p) > 0 {
		k := min(c.chunk, len(p))
		m, err := w.Write(p[:k])
		n += int64(m)
		if err != nil {
			return n, err
		}
		p = p[k:]
	}
	return n, nil
}

// CheckpointState writes a state as it is made, outside the log's lock
// (an append made while it is written goes on, and is replayed after
// the checkpoint), cut in pieces as the package's doc says whatever the
// writes it is made of; a state that writes other than its length fails
// the checkpoint, and leaves no file and the log whole.
func TestCheckpointState(t *testing.T) {
	for _, n := range []int{0, 1, 7, wal.CheckpointPiece, 2*wal.CheckpointPiece + 5} {
		for _, chunk := range []int{1 << 30, 7, wal.CheckpointPiece - 1} {
			if n > 1<<20 && chunk == 7 {
				continue // slow, and no other cut
			}
			dir := t.TempDir()
			l, err := wal.Open(dir, wal.Options{NoSync: true}, wal.Recovery{})
			require.NoError(t, err)
			require.NoError(t, l.Append(rec(1), nil))
			state := pattern(n)
			during := func() { require.NoError(t, l.Append(rec(2), nil), "an append while the state is written") }
			require.NoError(t, l.CheckpointState(func() (wal.State, error) {
				return &chunkState{p: state, chunk: chunk, during: during}, nil
			}))
			require.NoError(t, l.Close())
			p, err := os.ReadFile(filepath.Join(dir, "ckpt-0000000000000001.ckpt"))
			require.NoError(t, err)
			require.True(t, string(encodeCheckpoint(state)) == string(p), "a state of %d bytes in writes of %d", n, chunk)
			var got []byte
			var records []uint64
			l, err = wal.Open(dir, wal.Options{NoSync: true}, wal.Recovery{
				Checkpoint: func(p []byte) error { got = p; return nil },
				Record:     func(p []byte) error { records = append(records, binary.LittleEndian.Uint64(p)); return nil },
			})
			require.NoError(t, err)
			require.True(t, string(state) == string(got))
			require.Equal(t, []uint64{2}, records, "the append made while the state was written follows it")
			require.NoError(t, l.Close())
		}
	}

	for _, extra := range []int{-1, 1} {
		dir := t.TempDir()
		var live state
		l, err := wal.Open(dir, wal.Options{NoSync: true}, live.recovery())
		require.NoError(t, err)
		require.NoError(t, l.Append(rec(7), func() { live.sum += 7; live.n++ }))
		err = l.CheckpointState(func() (wal.State, error) {
			return &chunkState{p: pattern(wal.CheckpointPiece + 3), chunk: 1000, extra: extra}, nil
		})
		require.ErrorContains(t, err, "wal: checkpoint: ")
		require.Equal(t, uint64(1), l.Stats().Failed)
		ckpts, err := filepath.Glob(filepath.Join(dir, "ckpt-*"))
		require.NoError(t, err)
		require.Empty(t, ckpts, "no file, not even a temporary one")
		require.NoError(t, l.Append(rec(8), func() { live.sum += 8; live.n++ }), "the log goes on")
		require.NoError(t, l.Close())
		var got state
		l, err = wal.Open(dir, wal.Options{NoSync: true}, got.recovery())
		require.NoError(t, err)
		require.Equal(t, live, got)
		require.NoError(t, l.Close())
	}
}

// errDisk is the failure a test's disk makes (disk).
var errDisk = errors.New("injected disk failure")

// disk is a disk that fails the operations of Options.Fault it is told
// to: op "write" or "sync" of the files whose names start with a prefix
// ("seg-", "ckpt-").
type disk struct {
	mu   sync.Mutex
	fail map[[2]string]bool // {op, prefix}
}

func (d *disk) set(fail ...[2]string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.fail = map[[2]string]bool{}
	for _, f := range fail {
		d.fail[f] = true
	}
}

func (d *disk) fault(op, file string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for f := range d.fail {
		if f[0] == op && strings.HasPrefix(file, f[1]) {
			return errDisk
		}
	}
	return nil
}

// Options.Fault fails a disk's operations as they would fail: a write of
// a segment writes nothing, an fsync fails after the write went through
// (Open replays the record, which was never acknowledged), a checkpoint's
// write leaves the log whole. A failed write or fsync fails the log:
// ErrClosed, wrapping the disk's error.
func TestFault(t *testing.T) {
	for _, c := range []struct {
		op   string
		want state // replayed by Open
	}{
		{"write", state{sum: 1, n: 1}},
		{"sync", state{sum: 3, n: 2}},
	} {
		t.Run(c.op, func(t *testing.T) {
			dir := t.TempDir()
			d := &disk{}
			opts := wal.Options{NoSync: true, Fault: d.fault}
			l, err := wal.Open(dir, opts, wal.Recovery{})
			require.NoError(t, err)
			require.NoError(t, l.Append(rec(1), nil))
			d.set([2]string{"write", "ckpt-"})
			require.ErrorIs(t, l.Checkpoint(func() ([]byte, error) { return []byte("state"), nil }), errDisk)
			d.set([2]string{c.op, "seg-"})
			err = l.Append(rec(2), nil)
			require.ErrorIs(t, err, wal.ErrClosed)
			require.ErrorIs(t, err, errDisk)
			require.ErrorIs(t, l.Append(rec(4), nil), wal.ErrClosed)
			require.NoError(t, l.Close())
			var got state
			_, err = wal.Open(dir, wal.Options{NoSync: true}, got.recovery())
			require.NoError(t, err)
			require.Equal(t, c.want, got)
		})
	}
}

// copyDir copies the files of dir to a new directory: what a crash would
// leave of the log now.
func copyDir(t *testing.T, dir string) string {
	t.Helper()
	to := t.TempDir()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range ents {
		p, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(to, e.Name()), p, 0o644))
	}
	return to
}

// Recover makes a failed log whole again with a checkpoint of the state,
// which holds the record whose write or fsync failed (its apply ran):
// appends go on, and a restart starts from that checkpoint. A Recover
// whose checkpoint fails leaves the log failed and its files as they
// were, so that a restart replays what was durable (a torn tail cut, not
// a segment after it). On a whole log Recover is a checkpoint; on a
// closed one, ErrClosed.
func TestRecover(t *testing.T) {
	for _, c := range []struct {
		op       string
		restart  state // what a restart before Recover replays
		replayed uint64
	}{
		{"write", state{sum: 1, n: 1}, 1},
		{"sync", state{sum: 3, n: 2}, 2},
	} {
		t.Run(c.op, func(t *testing.T) {
			dir := t.TempDir()
			d := &disk{}
			l, err := wal.Open(dir, wal.Options{NoSync: true, Fault: d.fault}, wal.Recovery{})
			require.NoError(t, err)
			var live state
			add := func(v uint64) error { return l.Append(rec(v), func() { live.sum += v; live.n++ }) }
			snap := func() (wal.State, error) { return &chunkState{p: live.bytes(), chunk: 3}, nil }
			require.NoError(t, add(1))
			require.NoError(t, l.Failed())
			d.set([2]string{c.op, "seg-"}, [2]string{"write", "ckpt-"})
			require.ErrorIs(t, add(2), errDisk)
			require.Equal(t, state{sum: 3, n: 2}, live, "its apply ran")
			require.ErrorIs(t, l.Failed(), wal.ErrClosed)
			require.ErrorIs(t, l.Failed(), errDisk)
			require.ErrorIs(t, l.Recover(snap), errDisk, "the disk still fails")
			require.ErrorIs(t, l.Failed(), errDisk, "still failed")
			require.ErrorIs(t, add(4), wal.ErrClosed)
			require.Equal(t, state{sum: 3, n: 2}, live, "no apply while failed")
			require.Equal(t, uint64(1), l.Stats().Failed)

			var got state
			crashed, err := wal.Open(copyDir(t, dir), wal.Options{NoSync: true}, got.recovery())
			require.NoError(t, err, "the failed segment is still the last")
			require.Equal(t, c.restart, got)
			require.Equal(t, c.replayed, crashed.Stats().Replayed)
			require.NoError(t, crashed.Close())

			d.set()
			require.NoError(t, l.Recover(snap))
			require.NoError(t, l.Failed())
			require.Equal(t, uint64(1), l.Stats().Checkpoints)
			require.NoError(t, add(8))
			require.NoError(t, l.Recover(snap), "a whole log: a checkpoint")
			require.Equal(t, uint64(2), l.Stats().Checkpoints)
			require.NoError(t, add(16))
			require.NoError(t, l.Close())
			require.ErrorIs(t, l.Recover(snap), wal.ErrClosed)
			require.NoError(t, l.Failed(), "closed, not failed")

			got = state{}
			l, err = wal.Open(dir, wal.Options{NoSync: true}, got.recovery())
			require.NoError(t, err)
			require.Equal(t, live, got)
			require.Equal(t, state{sum: 27, n: 4}, got)
			require.Equal(t, uint64(1), l.Stats().Replayed, "the record after the last checkpoint")
			require.NoError(t, l.Close())
			names, err := filepath.Glob(filepath.Join(dir, "*"))
			require.NoError(t, err)
			for i := range names {
				names[i] = filepath.Base(names[i])
			}
			require.Equal(t, []string{"ckpt-0000000000000002.ckpt", "seg-0000000000000002.wal", "seg-0000000000000003.wal"}, names)
		})
	}
}

// Close of a failed log writes nothing to the failed segment: a record
// appended while the failing fsync was under way (its apply ran, and it
// was answered with the failure) stays out of the log, as Recover leaves
// it out, and no write or fsync touches the segment again. Before, Close
// flushed it to the failed segment, which a restart then replayed.
func TestCloseFailed(t *testing.T) {
	dir := t.TempDir()
	var mu sync.Mutex
	armed, failedOps := false, []string(nil)
	entered, release := make(chan struct{}), make(chan struct{})
	fault := func(op, file string) error {
		mu.Lock()
		if armed && op == "sync" {
			armed = false
			mu.Unlock()
			close(entered)
			<-release
			mu.Lock()
			failedOps = []string{} // from now on, the log is failed
			mu.Unlock()
			return errDisk
		}
		if failedOps != nil {
			failedOps = append(failedOps, op+" "+file)
		}
		mu.Unlock()
		return nil
	}
	l, err := wal.Open(dir, wal.Options{NoSync: true, Fault: fault}, wal.Recovery{})
	require.NoError(t, err)
	mu.Lock()
	armed = true
	mu.Unlock()
	errA := make(chan error, 1)
	go func() { errA <- l.Append(rec(1), nil) }()
	<-entered // A's record is written, its fsync under way
	placed := make(chan struct{})
	errB := make(chan error, 1)
	go func() { errB <- l.Append(rec(2), func() { close(placed) }) }()
	<-placed // B's record is pending, B waits for A's fsync
	close(release)
	require.ErrorIs(t, <-errA, errDisk)
	require.ErrorIs(t, <-errB, wal.ErrClosed)
	require.ErrorIs(t, l.Failed(), errDisk)
	require.NoError(t, l.Close())
	mu.Lock()
	require.Empty(t, failedOps, "nothing written or synced after the failure")
	mu.Unlock()

	var got state
	l, err = wal.Open(dir, wal.Options{NoSync: true}, got.recovery())
	require.NoError(t, err)
	require.Equal(t, state{sum: 1, n: 1}, got, "A's record (written, its fsync failed), not B's")
	require.NoError(t, l.Close())
}
