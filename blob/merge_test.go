package blob_test

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/hist"
	"github.com/statsblob/statsblob/tdigest"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// mixed is a template with every kind of statistic on signed and unsigned
// VOIs of both widths.
func mixed(t testing.TB) *tpl.Template {
	t.Helper()
	tp, err := tpl.NewRegistry().New("MIXED")
	require.NoError(t, err)
	defs := []tpl.VOIDef{
		{ID: 0, Name: "u64", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum(), tpl.Max(), tpl.Min(),
			tpl.Histogram(hist.Spec{DType: voi.CRHist64, Scheme: hist.Lin, LB: 0, UB: 990, StepInc: 10})}},
		{ID: 1, Name: "s32", DType: voi.IntS32, Stats: []tpl.StatSpec{tpl.Sum(), tpl.Max(), tpl.Min(),
			tpl.Histogram(hist.Spec{DType: voi.DRHist32, Scheme: hist.Usr, Buckets: []hist.Bound{{LB: uint64(1<<64 - 500), UB: 0}, {LB: 0, UB: 500}}})}},
		{ID: 2, Name: "dv", DType: voi.IntU32, Stats: []tpl.StatSpec{tpl.Histogram(hist.Spec{DType: voi.DVHist32, Scheme: hist.Usr, Buckets: []hist.Bound{{LB: 1, UB: 1}, {LB: 2, UB: 2}, {LB: 3, UB: 3}}})}},
		{ID: 3, Name: "td", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.TDigest(voi.TDgstClust64, 16, 4)}},
	}
	for _, d := range defs {
		require.NoError(t, tp.AddVOI(d))
	}
	return tp
}

func feed(t testing.TB, bl *blob.Blob, xs []uint64) {
	t.Helper()
	for _, x := range xs {
		require.NoError(t, bl.UpdateU64(0, x%1000))
		require.NoError(t, bl.UpdateS32(1, int32(x%1000)-500))
		require.NoError(t, bl.UpdateU32(2, uint32(x%5)))
		require.NoError(t, bl.UpdateU64(3, x%10000))
	}
}

// statBytes returns the data of every statistic but t-digests.
func statBytes(bl *blob.Blob) map[string][]byte {
	m := map[string][]byte{}
	for s := range bl.Walk(0) {
		if s.Stat.Type != voi.TDgst {
			m[s.VOI.DType.String()+"/"+s.Stat.Type.String()+"/"+string(rune('0'+s.VOISlot))] = append([]byte(nil), s.Data...)
		}
	}
	return m
}

// TestMergeEqualsSerial: merging the blobs of disjoint parts of a stream
// gives the SUM/MAX/MIN/histogram bytes of one blob fed the whole stream,
// and a valid digest of all the samples.
func TestMergeEqualsSerial(t *testing.T) {
	tp := mixed(t)
	r := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 20; round++ {
		xs := make([]uint64, 1+r.IntN(2000))
		for i := range xs {
			xs[i] = r.Uint64()
		}
		whole := blob.New(tp, fixedEnv())
		feed(t, whole, xs)

		parts := 1 + r.IntN(6)
		var blobs []*blob.Blob
		for p, lo := 0, 0; p < parts; p++ {
			hi := len(xs) * (p + 1) / parts
			b := blob.New(tp, fixedEnv())
			feed(t, b, xs[lo:hi])
			blobs = append(blobs, b)
			lo = hi
		}
		merged, err := blob.MergeAll(fixedEnv(), blobs...)
		require.NoError(t, err)
		require.Equal(t, statBytes(whole), statBytes(merged), "round %d", round)

		st, err := merged.Fetch(3, voi.TDgst)
		require.NoError(t, err)
		require.NoError(t, tdigest.Validate(st.Data, st.DType))
		n, err := tdigest.Count(st.Data, st.DType)
		require.NoError(t, err)
		require.Equal(t, uint64(len(xs)), n)
		require.NoError(t, blob.Validate(merged.Bytes()))
	}
}

func TestMergeDeterministicAndCanonical(t *testing.T) {
	tp := mixed(t)
	var blobs []*blob.Blob
	for i := 0; i < 4; i++ {
		b := blob.New(tp, fixedEnv())
		xs := make([]uint64, 300)
		for j := range xs {
			xs[j] = uint64(i*1000 + j*7)
		}
		feed(t, b, xs)
		blobs = append(blobs, b)
	}
	a, err := blob.MergeAll(fixedEnv(), blobs...)
	require.NoError(t, err)
	b, err := blob.MergeAll(fixedEnv(), blobs[3], blobs[1], blobs[0], blobs[2])
	require.NoError(t, err)
	require.Equal(t, a.Bytes(), b.Bytes(), "MergeAll does not depend on argument order")
	c, err := blob.MergeAll(fixedEnv(), blobs...)
	require.NoError(t, err)
	require.Equal(t, a.Bytes(), c.Bytes())
}

func TestMergeErrors(t *testing.T) {
	a := blob.New(mixed(t), fixedEnv())
	other := blob.New(manpage(t), fixedEnv())
	before := append([]byte(nil), a.Bytes()...)
	require.ErrorIs(t, blob.Merge(a, other), voi.ErrInvalid)
	require.Equal(t, before, a.Bytes(), "a failed merge changes nothing")
	_, err := blob.MergeAll(nil)
	require.ErrorIs(t, err, voi.ErrInvalid)

	// SUM overflow is counted in the voistat and returned.
	x := blob.New(mixed(t), fixedEnv())
	y := blob.New(mixed(t), fixedEnv())
	require.NoError(t, x.UpdateU64(0, 1<<63))
	require.NoError(t, y.UpdateU64(0, 1<<63))
	require.ErrorIs(t, blob.Merge(x, y), voi.ErrOverflow)
	sum, err := x.Fetch(0, voi.Sum)
	require.NoError(t, err)
	require.Equal(t, uint8(1), sum.Errs)
}

// TestShardedStress runs writers, snapshotters and resetters together and
// checks that no update is lost: the sum over every resetting snapshot and
// the final one equals what the writers added.
func TestShardedStress(t *testing.T) {
	tp := mixed(t)
	s := blob.NewSharded(tp, 4, nil)
	const writers, perWriter = 4, 3000
	var wg sync.WaitGroup
	var taken atomic.Uint64
	var count atomic.Uint64
	stop := make(chan struct{})
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < perWriter; i++ {
				v := uint64(w*perWriter + i)
				require.NoError(t, s.UpdateU64(0, v%1000))
				require.NoError(t, s.UpdateU64(3, v))
			}
		}(w)
	}
	var side sync.WaitGroup
	side.Add(1)
	go func() {
		defer side.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			snap, err := s.Snapshot(true)
			require.NoError(t, err)
			v, err := snap.FetchU64(0, voi.Sum)
			require.NoError(t, err)
			taken.Add(v)
			st, _ := snap.Fetch(3, voi.TDgst)
			n, err := tdigest.Count(st.Data, st.DType)
			require.NoError(t, err)
			count.Add(n)
			require.NoError(t, blob.Validate(snap.Bytes()))
		}
	}()
	wg.Wait()
	close(stop)
	side.Wait()
	final, err := s.Snapshot(false)
	require.NoError(t, err)
	v, err := final.FetchU64(0, voi.Sum)
	require.NoError(t, err)
	var want uint64
	for i := 0; i < writers*perWriter; i++ {
		want += uint64(i) % 1000
	}
	require.Equal(t, want, taken.Load()+v)
	st, _ := final.Fetch(3, voi.TDgst)
	n, err := tdigest.Count(st.Data, st.DType)
	require.NoError(t, err)
	require.Equal(t, uint64(writers*perWriter), count.Load()+n)
}

// TestShardedSnapshotIsSerial: after concurrent writers, the snapshot's
// SUM/MAX/MIN/histogram bytes equal one blob fed all the values.
func TestShardedSnapshotIsSerial(t *testing.T) {
	tp := mixed(t)
	s := blob.NewSharded(tp, 3, func() int64 { return blob.SBinTime(1000, 0) })
	var wg sync.WaitGroup
	all := make([][]uint64, 3)
	for w := range all {
		all[w] = make([]uint64, 2000)
		for i := range all[w] {
			all[w][i] = uint64(w)*7919 + uint64(i)*104729
		}
		wg.Add(1)
		go func(xs []uint64) {
			defer wg.Done()
			for _, x := range xs {
				_ = s.UpdateU64(0, x%1000)
				_ = s.UpdateS32(1, int32(x%1000)-500)
				_ = s.UpdateU32(2, uint32(x%5))
				_ = s.UpdateU64(3, x%10000)
			}
		}(all[w])
	}
	wg.Wait()
	snap, err := s.Snapshot(false)
	require.NoError(t, err)
	whole := blob.New(tp, fixedEnv())
	for _, xs := range all {
		feed(t, whole, xs)
	}
	require.Equal(t, statBytes(whole), statBytes(snap))
}
