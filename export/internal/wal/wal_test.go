package wal_test

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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
