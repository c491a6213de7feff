package blob_test

import (
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/hist"
	"github.com/statsblob/statsblob/internal/abi"
	"github.com/statsblob/statsblob/internal/accuracy"
	"github.com/statsblob/statsblob/internal/tcpstats"
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
	for id, s := range bl.Stats() {
		if s.Type != voi.TDgst {
			m[s.VOIDType.String()+"/"+s.Type.String()+"/"+string(rune('0'+id))] = append([]byte(nil), s.Data...)
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

	// A SUM overflow fails the whole merge and leaves x unchanged.
	x := blob.New(mixed(t), fixedEnv())
	y := blob.New(mixed(t), fixedEnv())
	require.NoError(t, x.UpdateU64(0, 1<<63))
	require.NoError(t, y.UpdateU64(0, 1<<63))
	before = append([]byte(nil), x.Bytes()...)
	err = blob.Merge(x, y)
	require.ErrorIs(t, err, voi.ErrOverflow)
	require.EqualError(t, err, "blob: merge: VOI 0 SUM (INT_U64): value does not fit its type")
	require.Equal(t, before, x.Bytes())
}

// poisonBound flips the low bit of bucket k's lower bound in the histogram
// of VOI id (8 header bytes, then buckets of 24 bytes for DRHIST, 16 for
// the others) of a copy of b and returns the copy, still a valid blob of
// the same template hash.
func poisonBound(t *testing.T, b *blob.Blob, id int32, k int) *blob.Blob {
	t.Helper()
	st, err := b.Fetch(id, voi.Hist)
	require.NoError(t, err)
	bsz := 16
	if st.DType == voi.DRHist32 || st.DType == voi.DRHist64 {
		bsz = 24
	}
	p := append([]byte(nil), b.Bytes()...)
	p[st.Offset+8+bsz*k] ^= 1
	out, err := blob.FromBytes(p, fixedEnv())
	require.NoError(t, err)
	return out
}

// TestMergeIsAtomic: a merge that fails anywhere leaves dst byte-identical,
// whichever statistic fails and however many merged before it (before, an
// incompatible histogram after VOI 0 left VOI 0's SUM doubled, and an
// overflow left the other statistics merged).
func TestMergeIsAtomic(t *testing.T) {
	tp := mixed(t)
	xs := make([]uint64, 100)
	for i := range xs {
		xs[i] = uint64(i)
	}
	mk := func() *blob.Blob {
		b := blob.New(tp, fixedEnv())
		feed(t, b, xs)
		return b
	}
	// VOI 2's DVHIST32 counter for 1 at its maximum: valid bytes whose
	// merge saturates the counter, after VOIs 0 and 1 merged.
	sat := mk()
	st, err := sat.Fetch(2, voi.Hist)
	require.NoError(t, err)
	p := append([]byte(nil), sat.Bytes()...)
	binary.LittleEndian.PutUint32(p[st.Offset+8+8:], 1<<32-1) // bucket 0: bounds, then the counter
	sat, err = blob.FromBytes(p, fixedEnv())
	require.NoError(t, err)

	for _, c := range []struct {
		name string
		src  *blob.Blob
		want error
		msg  string
	}{
		{"histogram bounds differ (VOI 1)", poisonBound(t, mk(), 1, 0), voi.ErrInvalid, "blob: merge: VOI 1 HIST: hist: merge: bucket 0 bounds differ"},
		{"histogram bounds differ (VOI 2)", poisonBound(t, mk(), 2, 2), voi.ErrInvalid, "blob: merge: VOI 2 HIST: hist: merge: bucket 2 bounds differ"},
		{"histogram counter saturates (VOI 2)", sat, voi.ErrOverflow, "blob: merge: VOI 2 HIST (DVHIST32): a counter saturated"},
	} {
		dst := mk()
		before := append([]byte(nil), dst.Bytes()...)
		err := blob.Merge(dst, c.src)
		require.ErrorIs(t, err, c.want, c.name)
		require.ErrorContains(t, err, c.msg, c.name)
		require.Equal(t, before, dst.Bytes(), c.name)
		// The blob still updates and merges as if nothing had happened.
		require.NoError(t, blob.Merge(dst, mk()), c.name)
		want := mk()
		require.NoError(t, blob.Merge(want, mk()))
		require.Equal(t, statBytes(want), statBytes(dst), c.name)
	}
}

// TestFailedMergeKeepsRandomSource: a merge whose t-digest merged before a
// later statistic overflowed leaves dst as it was, its random source
// included (t-digest merges draw none).
func TestFailedMergeKeepsRandomSource(t *testing.T) {
	tp, err := tpl.NewRegistry().New("TD_THEN_SUM")
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "td", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.TDigest(voi.TDgstClust64, 8, 4)}}))
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 1, Name: "sum", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}))
	dst, src := blob.New(tp, fixedEnv()), blob.New(tp, blob.NewEnv(nil, 7))
	for i := range uint64(50) {
		require.NoError(t, dst.UpdateU64(0, i))
		require.NoError(t, src.UpdateU64(0, 1000+i*i))
	}
	require.NoError(t, dst.UpdateU64(1, 1<<63))
	require.NoError(t, src.UpdateU64(1, 1<<63))
	before := append([]byte(nil), dst.Bytes()...)
	rnd := *dst.Env().Rand
	err = blob.Merge(dst, src)
	require.ErrorIs(t, err, voi.ErrOverflow)
	require.ErrorContains(t, err, "VOI 1 SUM")
	require.Equal(t, before, dst.Bytes())
	require.Equal(t, rnd, *dst.Env().Rand)
}

// TestMergeAllKeepsTheGoodOnes: MergeAll merges every input that fits and
// names each one it leaves out, with the reason: a flipped histogram bound
// under the same template hash, another template, an input whose merge
// overflows. Before, the poisoned input made MergeAll return nothing.
func TestMergeAllKeepsTheGoodOnes(t *testing.T) {
	tp := mixed(t)
	var good []*blob.Blob
	for i := range 3 {
		b := blob.New(tp, blob.NewEnv(func() int64 { return blob.SBinTime(int64(100+i), 0) }, 1))
		feed(t, b, []uint64{uint64(i), uint64(10 * i), 77})
		good = append(good, b)
	}
	poisoned := poisonBound(t, good[1], 1, 1)
	other := blob.New(manpage(t), fixedEnv())
	big := blob.New(tp, blob.NewEnv(func() int64 { return blob.SBinTime(999, 0) }, 1)) // last in canonical order
	require.NoError(t, big.UpdateU64(0, 1<<64-10))

	m, err := blob.MergeAll(fixedEnv(), good[0], poisoned, other, good[1], big, good[2])
	require.NotNil(t, m)
	want, werr := blob.MergeAll(fixedEnv(), good...)
	require.NoError(t, werr)
	require.Equal(t, want.Bytes(), m.Bytes())

	var joined interface{ Unwrap() []error }
	require.ErrorAs(t, err, &joined)
	errs := joined.Unwrap()
	require.Len(t, errs, 3)
	for i, w := range []struct {
		index int
		is    error
		msg   string
	}{
		{1, voi.ErrInvalid, "blob: input 1 not merged: unlike input 0 (merged): VOI 1 HIST: hist: merge: bucket 1 bounds differ"},
		{2, voi.ErrInvalid, "blob: input 2 not merged: unlike input 0 (merged): template hashes"},
		{4, voi.ErrOverflow, "blob: input 4 not merged: VOI 0 SUM (INT_U64): value does not fit"},
	} {
		var ie *blob.InputError
		require.ErrorAs(t, errs[i], &ie)
		require.Equal(t, w.index, ie.Index)
		require.ErrorIs(t, errs[i], w.is)
		require.ErrorContains(t, errs[i], w.msg)
	}
	require.ErrorIs(t, err, voi.ErrInvalid)
	require.ErrorIs(t, err, voi.ErrOverflow)

	// The largest group wins whatever the order; the poisoned blob alone
	// is left out of two.
	m, err = blob.MergeAll(fixedEnv(), poisoned, good[0])
	require.Error(t, err)
	require.Len(t, err.(interface{ Unwrap() []error }).Unwrap(), 1)
	require.NotNil(t, m)
}

// TestCompatibleAndCheckTemplate: the differences Compatible and
// CheckTemplate find, each named; a blob of the template passes both.
func TestCompatibleAndCheckTemplate(t *testing.T) {
	tp := mixed(t)
	good := blob.New(tp, fixedEnv())
	feed(t, good, []uint64{1, 2, 3})
	require.NoError(t, blob.Compatible(good, blob.New(tp, fixedEnv())))
	require.NoError(t, good.CheckTemplate(tp))

	edit := func(f func(p []byte)) *blob.Blob {
		p := append([]byte(nil), good.Bytes()...)
		f(p)
		b, err := blob.FromBytes(p, nil)
		require.NoError(t, err)
		return b
	}
	td, err := good.Fetch(3, voi.TDgst)
	require.NoError(t, err)
	qt, err := tpl.NewRegistry().New("QT")
	require.NoError(t, err)
	require.NoError(t, qt.AddVOI(tpl.VOIDef{ID: 0, Name: "q", DType: voi.QU64, Prec: 16, Stats: []tpl.StatSpec{tpl.Max()}}))
	qb := blob.New(qt, fixedEnv())
	qmax, err := qb.Fetch(0, voi.Max)
	require.NoError(t, err)
	qp := append([]byte(nil), qb.Bytes()...)
	qp[qmax.Offset] = qp[qmax.Offset]&^7 | 3 // other control bits, same value bits
	qpoisoned, err := blob.FromBytes(qp, nil)
	require.NoError(t, err)

	for _, c := range []struct {
		name      string
		tpl       *tpl.Template
		base, bad *blob.Blob
		msg       string
	}{
		{"histogram bound", tp, good, poisonBound(t, good, 2, 1), "VOI 2 HIST: hist: merge: bucket 1 bounds differ"},
		{"t-digest precision", tp, good, edit(func(p []byte) {
			for i := range 16 { // every mean: Validate wants them alike
				p[td.Offset+32+24*i+8] ^= 1
			}
		}), "VOI 3 TDGST: t-digest means of"},
		{"Q precision", qt, qb, qpoisoned, "VOI 0 MAX: precisions of the Q values differ"},
		{"template", tp, good, blob.New(manpage(t), fixedEnv()), "template hashes"},
	} {
		err := blob.Compatible(c.base, c.bad)
		require.ErrorIs(t, err, voi.ErrInvalid, c.name)
		require.ErrorContains(t, err, c.msg, c.name)
		err = c.bad.CheckTemplate(c.tpl)
		require.ErrorIs(t, err, voi.ErrInvalid, c.name)
		require.ErrorContains(t, err, c.msg, c.name)
		require.ErrorIs(t, blob.Merge(c.base.Clone(), c.bad), voi.ErrInvalid, c.name)
	}
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

// TestMergeAllFleetOfConnections merges TCP_DEFAULT blobs of simulated
// connections, as the demo does (each connection's RTTs around its own
// typical RTT, 20 to 419 samples): the merged TCP_RTT digest holds every
// sample, its bytes do not depend on the order of the blobs, it equals
// tdigest.MergeAll of the connections' digests in one step, and its rank
// error at p50, p90, p99 and p99.9 is at most 1% (a 20-slot digest).
// Merge(a, b) and Merge(b, a) give the same statistics.
func TestMergeAllFleetOfConnections(t *testing.T) {
	conns := 400
	if testing.Short() {
		conns = 100
	}
	tp, err := tcpstats.New(tpl.NewRegistry())
	require.NoError(t, err)
	dist := accuracy.DistByName("conn-rtt")
	r := rand.New(rand.NewPCG(9, 9))
	var blobs []*blob.Blob
	var rtts []float64
	for c := range conns {
		b := blob.New(tp, blob.NewEnv(func() int64 { return blob.SBinTime(int64(1000+c), 0) }, uint32(c+1)))
		base := dist.Base(r)
		for range accuracy.BlobSize(r) {
			v := dist.Sample(r, base)
			require.NoError(t, b.UpdateU32(tcpstats.RTT, v))
			rtts = append(rtts, float64(v))
		}
		blobs = append(blobs, b)
	}
	slices.Sort(rtts)
	merged, err := blob.MergeAll(fixedEnv(), blobs...)
	require.NoError(t, err)
	st, err := merged.Fetch(tcpstats.RTT, voi.TDgst)
	require.NoError(t, err)
	n, err := tdigest.Count(st.Data, st.DType)
	require.NoError(t, err)
	require.Equal(t, uint64(len(rtts)), n)
	maxRTT, err := merged.FetchU32(tcpstats.RTT, voi.Max)
	require.NoError(t, err)
	require.Equal(t, rtts[len(rtts)-1], float64(maxRTT))

	shuffled := slices.Clone(blobs)
	r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	again, err := blob.MergeAll(fixedEnv(), shuffled...)
	require.NoError(t, err)
	require.Equal(t, merged.Bytes(), again.Bytes())

	// One step: the canonically first blob (the earliest) is the base.
	one := slices.Clone(blobs[0].Bytes()[st.Offset : st.Offset+len(st.Data)])
	var rest [][]byte
	for _, b := range blobs[1:] {
		s, err := b.Fetch(tcpstats.RTT, voi.TDgst)
		require.NoError(t, err)
		rest = append(rest, s.Data)
	}
	require.NoError(t, tdigest.MergeAll(one, st.DType, rest...))
	require.Equal(t, one, st.Data)

	errs := accuracy.Errors(rtts, st.Data, st.DType)
	t.Logf("TCP_RTT rank errors at p50/p90/p99/p99.9: %.3f%%", pcts(errs))
	require.LessOrEqual(t, accuracy.Max(errs), 0.01)

	ab, ba := blobs[0].Clone(), blobs[1].Clone()
	require.NoError(t, blob.Merge(ab, blobs[1]))
	require.NoError(t, blob.Merge(ba, blobs[0]))
	off := abi.StatsOff(ab.Bytes())
	require.Equal(t, ab.Bytes()[off:], ba.Bytes()[off:])
}

func pcts(e []float64) []float64 {
	out := make([]float64, len(e))
	for i, v := range e {
		out[i] = 100 * v
	}
	return out
}

// TestMergeAllLongBlobs is the case of issue 11: 8 blobs of 20,000
// samples of 200 + Exp(3000) each in a TDGSTCLUST64(50,8) merge without
// error into a digest of all 160,000 samples (the old merge lost some and
// failed with ERANGE), within 0.3% of rank at p50, p90, p99 and p99.9;
// merged into an empty blob, a blob's digest stays as it was.
func TestMergeAllLongBlobs(t *testing.T) {
	tp, err := tpl.NewRegistry().New("LONG")
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "lat", DType: voi.IntU32,
		Stats: []tpl.StatSpec{tpl.TDigest(voi.TDgstClust64, 50, 8)}}))
	dist := accuracy.DistByName("exp")
	r := rand.New(rand.NewPCG(11, 11))
	var blobs []*blob.Blob
	var all []float64
	for i := range 8 {
		b := blob.New(tp, blob.NewEnv(func() int64 { return blob.SBinTime(int64(100+i), 0) }, uint32(i+1)))
		for range 20000 {
			v := dist.Sample(r, 0)
			require.NoError(t, b.UpdateU32(0, v))
			all = append(all, float64(v))
		}
		blobs = append(blobs, b)
	}
	slices.Sort(all)
	merged, err := blob.MergeAll(fixedEnv(), blobs...)
	require.NoError(t, err)
	st, err := merged.Fetch(0, voi.TDgst)
	require.NoError(t, err)
	n, err := tdigest.Count(st.Data, st.DType)
	require.NoError(t, err)
	require.Equal(t, uint64(len(all)), n)
	errs := accuracy.Errors(all, st.Data, st.DType)
	t.Logf("rank errors at p50/p90/p99/p99.9: %.3f%%", pcts(errs))
	require.LessOrEqual(t, accuracy.Max(errs), 0.003)

	empty := blob.New(tp, fixedEnv())
	require.NoError(t, blob.Merge(empty, blobs[0]))
	got, err := empty.Fetch(0, voi.TDgst)
	require.NoError(t, err)
	want, err := blobs[0].Fetch(0, voi.TDgst)
	require.NoError(t, err)
	require.Equal(t, want.Data, got.Data)
}
