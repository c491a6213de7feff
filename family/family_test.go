package family_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/family"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// latency is a template with one U32 VOI: SUM, MAX and a t-digest.
func latency(t testing.TB) *tpl.Template {
	t.Helper()
	tp, err := tpl.NewRegistry().New("LAT")
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "lat", DType: voi.IntU32,
		Stats: []tpl.StatSpec{tpl.Sum(), tpl.Max(), tpl.TDigest(voi.TDgstClust32, 20, 4)}}))
	return tp
}

func TestNewRejects(t *testing.T) {
	tp := latency(t)
	f := func(names []string, opts family.Options) {
		t.Helper()
		_, err := family.New(tp, names, opts)
		require.ErrorIs(t, err, voi.ErrInvalid, "%q", names)
		_, err = family.NewBlobs(tp, names, opts)
		require.ErrorIs(t, err, voi.ErrInvalid, "%q", names)
	}
	f(nil, family.Options{})
	f([]string{"method", "method"}, family.Options{})
	f([]string{"le"}, family.Options{})
	f([]string{"quantile"}, family.Options{})
	f([]string{"bucket"}, family.Options{})
	f([]string{"__x"}, family.Options{})
	f([]string{"1x"}, family.Options{})
	f([]string{"a-b"}, family.Options{})
	f([]string{""}, family.Options{})
	f([]string{"ok"}, family.Options{MaxSets: -1})
	f([]string{"ok"}, family.Options{Shards: -1})
	_, err := family.New(nil, []string{"ok"}, family.Options{})
	require.ErrorIs(t, err, voi.ErrInvalid)
}

func TestWith(t *testing.T) {
	fam, err := family.New(latency(t), []string{"method", "status"}, family.Options{MaxSets: 2, Shards: 2})
	require.NoError(t, err)
	a, err := fam.With("GET", "200")
	require.NoError(t, err)
	again, err := fam.With("GET", "200")
	require.NoError(t, err)
	require.Same(t, a, again)
	b, err := fam.With("GET", "500")
	require.NoError(t, err)
	require.NotSame(t, a, b)
	require.Equal(t, 2, fam.Len())

	// Past the bound: a clear sentinel, the family unchanged; existing
	// sets still found.
	_, err = fam.With("POST", "200")
	require.ErrorIs(t, err, family.ErrTooManySets)
	require.EqualError(t, err, `family LAT: new label set ["POST" "200"]: 2 sets, at most 2: too many label sets`)
	require.Equal(t, 2, fam.Len())
	again, err = fam.With("GET", "500")
	require.NoError(t, err)
	require.Same(t, b, again)

	bad := [][]string{
		{"GET"},             // too few
		{"GET", "200", "x"}, // too many
		{"GET", ""},         // empty
		{"GET", "\xff"},     // not UTF-8
		{"GET\xff200"},      // a key-like single value: still too few
		{"GET", string(make([]byte, family.MaxValueLen+1))},
	}
	for _, v := range bad {
		_, err := fam.With(v...)
		require.ErrorIs(t, err, voi.ErrInvalid, "%q", v)
	}
	require.Equal(t, 2, fam.Len())
	require.Equal(t, []string{"method", "status"}, fam.Names())
}

// TestWithKeysDistinct: values that concatenate alike are distinct sets.
func TestWithKeysDistinct(t *testing.T) {
	fam, err := family.NewBlobs(latency(t), []string{"a", "b"}, family.Options{})
	require.NoError(t, err)
	x, err := fam.With("ab", "c")
	require.NoError(t, err)
	y, err := fam.With("a", "bc")
	require.NoError(t, err)
	require.NotSame(t, x, y)
	// A value holding the separator byte is invalid UTF-8, so it can
	// never be confused with a valid pair.
	_, err = fam.With("a\xffb", "c")
	require.ErrorIs(t, err, voi.ErrInvalid)
}

func TestWithAllocatesNothing(t *testing.T) {
	fam, err := family.New(latency(t), []string{"method", "status"}, family.Options{})
	require.NoError(t, err)
	_, err = fam.With("GET", "200")
	require.NoError(t, err)
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := fam.With("GET", "200"); err != nil {
			t.Fatal(err)
		}
	})
	require.Zero(t, allocs)
}

// TestSnapshotExact: updates from many goroutines through With, while
// snapshots with reset are taken, sum to exactly what was recorded.
func TestSnapshotExact(t *testing.T) {
	for _, sharded := range []bool{true, false} {
		t.Run(fmt.Sprint("sharded=", sharded), func(t *testing.T) {
			var mu sync.Mutex
			var with func(v ...string) (update func(uint32) error, err error)
			var snap func() []family.Snap
			if sharded {
				fam, err := family.New(latency(t), []string{"route"}, family.Options{Shards: 3})
				require.NoError(t, err)
				with = func(v ...string) (func(uint32) error, error) {
					b, err := fam.With(v...)
					if err != nil {
						return nil, err
					}
					return func(x uint32) error { return b.UpdateU32(0, x) }, nil
				}
				snap = func() []family.Snap { return fam.Snapshot(true) }
			} else {
				fam, err := family.NewBlobs(latency(t), []string{"route"}, family.Options{Locker: &mu})
				require.NoError(t, err)
				with = func(v ...string) (func(uint32) error, error) {
					b, err := fam.With(v...)
					if err != nil {
						return nil, err
					}
					return func(x uint32) error { mu.Lock(); defer mu.Unlock(); return b.UpdateU32(0, x) }, nil
				}
				snap = func() []family.Snap { return fam.Snapshot(true) }
			}
			routes := []string{"a", "b", "c"}
			const workers, n = 4, 500
			var wg sync.WaitGroup
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range n {
						up, err := with(routes[(w+i)%len(routes)])
						if err != nil {
							t.Error(err)
							return
						}
						if err := up(uint32(i)); err != nil {
							t.Error(err)
							return
						}
					}
				}()
			}
			sums := map[string]uint64{}
			counts := map[string]uint64{}
			collect := func() {
				for _, s := range snap() {
					require.NoError(t, s.Err)
					v, err := s.Blob.FetchU32(0, voi.Sum)
					require.NoError(t, err)
					sums[s.Values[0]] += uint64(v)
					st, err := s.Blob.Fetch(0, voi.TDgst)
					require.NoError(t, err)
					c, err := st.Count()
					require.NoError(t, err)
					counts[s.Values[0]] += c
				}
			}
			done := make(chan struct{})
			go func() { wg.Wait(); close(done) }()
			for running := true; running; {
				select {
				case <-done:
					running = false
				default:
					collect()
				}
			}
			collect()
			want := map[string]uint64{}
			wantN := map[string]uint64{}
			for w := range workers {
				for i := range n {
					want[routes[(w+i)%len(routes)]] += uint64(i)
					wantN[routes[(w+i)%len(routes)]]++
				}
			}
			require.Equal(t, want, sums)
			require.Equal(t, wantN, counts)
		})
	}
}

func TestSnapshotOrderAndValues(t *testing.T) {
	fam, err := family.NewBlobs(latency(t), []string{"route"}, family.Options{})
	require.NoError(t, err)
	require.Empty(t, fam.Snapshot(true))
	for _, r := range []string{"z", "a", "m"} {
		b, err := fam.With(r)
		require.NoError(t, err)
		require.NoError(t, b.UpdateU32(0, 7))
	}
	snaps := fam.Snapshot(true)
	var got [][]string
	for _, s := range snaps {
		got = append(got, s.Values)
		v, err := s.Blob.FetchU32(0, voi.Sum)
		require.NoError(t, err)
		require.Equal(t, uint32(7), v)
	}
	require.Equal(t, [][]string{{"z"}, {"a"}, {"m"}}, got)
	for _, s := range fam.Snapshot(false) { // reset: empty now
		v, err := s.Blob.FetchU32(0, voi.Sum)
		require.NoError(t, err)
		require.Zero(t, v)
	}
}

func BenchmarkWith(b *testing.B) {
	fam, err := family.New(latency(b), []string{"method", "status"}, family.Options{})
	require.NoError(b, err)
	for _, m := range []string{"GET", "POST", "PUT"} {
		for _, s := range []string{"200", "404", "500"} {
			_, err := fam.With(m, s)
			require.NoError(b, err)
		}
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := fam.With("POST", "404"); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// FuzzWith: two label sets get the same blob exactly when their values
// are equal; values CheckValue refuses give an error and no set.
func FuzzWith(f *testing.F) {
	tp := latency(f)
	f.Add("GET", "200", "GET", "200")
	f.Add("ab", "c", "a", "bc")
	f.Add("a\xffb", "c", "a", "b\xffc")
	f.Add("", "x", "x", "")
	f.Fuzz(func(t *testing.T, a1, a2, b1, b2 string) {
		fam, err := family.NewBlobs(tp, []string{"x", "y"}, family.Options{})
		require.NoError(t, err)
		valid := func(v ...string) bool { return family.CheckValue(v[0]) == nil && family.CheckValue(v[1]) == nil }
		ma, ea := fam.With(a1, a2)
		mb, eb := fam.With(b1, b2)
		require.Equal(t, valid(a1, a2), ea == nil, "%q %q: %v", a1, a2, ea)
		require.Equal(t, valid(b1, b2), eb == nil, "%q %q: %v", b1, b2, eb)
		n := 0
		if ea == nil {
			n++
		}
		if eb == nil {
			same := a1 == b1 && a2 == b2
			require.Equal(t, same, ma == mb, "%q %q / %q %q", a1, a2, b1, b2)
			if !same || ea != nil {
				n++
			}
		}
		require.Equal(t, n, fam.Len())
		again, err := fam.With(a1, a2) // found again, the same
		if ea == nil {
			require.NoError(t, err)
			require.Same(t, ma, again)
		}
	})
}
