package blob_test

import (
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/internal/abi"
	"github.com/statsblob/statsblob/internal/accuracy"
	"github.com/statsblob/statsblob/tdigest"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// modeTemplate has one INT_U32 VOI "lat" with MIN, MAX and a
// TDGSTCLUST32(slots, 4) t-digest of mode m.
func modeTemplate(t testing.TB, m tdigest.Mode, slots uint32) *tpl.Template {
	t.Helper()
	tp, err := tpl.NewRegistry().New("LAT")
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "lat", DType: voi.IntU32, Stats: []tpl.StatSpec{
		tpl.Min(), tpl.Max(),
		tpl.TDigestOf(tpl.TDigestSpec{DType: voi.TDgstClust32, NCtds: slots, Prec: 4, Mode: m}),
	}}))
	return tp
}

func digestOf(t testing.TB, bl *blob.Blob) blob.Stat {
	t.Helper()
	s, err := bl.Fetch(0, voi.TDgst)
	require.NoError(t, err)
	return s
}

func countOf(t testing.TB, data []byte) uint64 {
	t.Helper()
	n, err := tdigest.Count(data, voi.TDgstClust32)
	require.NoError(t, err)
	return n
}

// TestAccurateBlobViews: every view of an accurate-mode blob holds every
// accepted sample, and its bytes are a valid blob and digest.
func TestAccurateBlobViews(t *testing.T) {
	tp := modeTemplate(t, tdigest.Accurate, 20)
	feed := func(bl *blob.Blob, n int) {
		for i := range n {
			require.NoError(t, bl.UpdateU32(0, uint32(i)))
		}
	}
	views := map[string]func(bl *blob.Blob) []byte{
		"Bytes":        func(bl *blob.Blob) []byte { return slices.Clone(bl.Bytes()) },
		"Buffer":       func(bl *blob.Blob) []byte { return slices.Clone(bl.Buffer()[:bl.CurSz()]) },
		"AppendBinary": func(bl *blob.Blob) []byte { p, _ := bl.AppendBinary(nil); return p },
		"Clone":        func(bl *blob.Blob) []byte { return bl.Clone().Bytes() },
		"Snapshot":     func(bl *blob.Blob) []byte { return bl.Snapshot(false).Bytes() },
		"CloneInto": func(bl *blob.Blob) []byte {
			p := make([]byte, bl.MaxSz())
			abi.PutU16(p, abi.OffMaxSz, uint16(len(p)))
			require.NoError(t, bl.CloneInto(p, len(p)))
			return p
		},
		"Fetch": func(bl *blob.Blob) []byte {
			s := digestOf(t, bl)
			return slices.Clone(bl.Buffer()[:s.Offset+len(s.Data)])
		},
	}
	for name, view := range views {
		bl := blob.New(tp, nil)
		feed(bl, 1000) // fewer than a buffer: nothing written yet
		p := view(bl)
		got, err := blob.FromBytes(p[:bl.CurSz()], nil)
		require.NoError(t, err, name)
		require.Equal(t, uint64(1000), countOf(t, digestOf(t, got).Data), name)
	}

	bl := blob.New(tp, nil)
	feed(bl, 1000)
	n := 0
	for _, s := range bl.Stats() {
		if s.Type == voi.TDgst {
			require.Equal(t, uint64(1000), countOf(t, s.Data))
			n++
		}
	}
	require.Equal(t, 1, n)

	bl = blob.New(tp, nil)
	feed(bl, 999)
	q, err := bl.Quantile(0, 1)
	require.NoError(t, err)
	require.Equal(t, 998.0, q)
	snap := bl.Snapshot(true)
	require.Equal(t, uint64(999), countOf(t, digestOf(t, snap).Data))
	require.Zero(t, countOf(t, digestOf(t, bl).Data))
	feed(bl, 10)
	require.Equal(t, uint64(10), countOf(t, digestOf(t, bl).Data))
}

// TestModesMerge: a C-mode blob and an accurate-mode blob of one template
// merge with each other, either way and in MergeAll, exactly counted.
func TestModesMerge(t *testing.T) {
	c := blob.New(modeTemplate(t, tdigest.C, 20), blob.NewEnv(nil, 1))
	a := blob.New(modeTemplate(t, tdigest.Accurate, 20), nil)
	require.Equal(t, c.TplHash(), a.TplHash())
	for i := range 3000 {
		require.NoError(t, c.UpdateU32(0, uint32(i%977)))
		require.NoError(t, a.UpdateU32(0, uint32(i*7%1999)))
	}
	for _, tc := range []struct{ dst, src *blob.Blob }{{c.Clone(), a}, {a.Clone(), c}} {
		require.NoError(t, blob.Merge(tc.dst, tc.src))
		require.Equal(t, uint64(6000), countOf(t, digestOf(t, tc.dst).Data))
	}
	// An accurate blob with samples still buffered, as a source and as the
	// destination of MergeAll.
	a2 := blob.New(modeTemplate(t, tdigest.Accurate, 20), nil)
	for i := range 100 {
		require.NoError(t, a2.UpdateU32(0, uint32(i)))
	}
	out, err := blob.MergeAll(nil, a2, c, a)
	require.NoError(t, err)
	require.Equal(t, uint64(6100), countOf(t, digestOf(t, out).Data))
	require.NoError(t, blob.Validate(out.Bytes()))

	// Bytes from elsewhere (a C blob's, which a C-mode blob's equal
	// byte for byte) merge with accurate blobs either way.
	fromC, err := blob.FromBytes(c.Bytes(), nil)
	require.NoError(t, err)
	out, err = blob.MergeAll(nil, a, fromC, a2)
	require.NoError(t, err)
	require.Equal(t, uint64(6100), countOf(t, digestOf(t, out).Data))
	dst0 := fromC.Clone()
	require.NoError(t, blob.Merge(dst0, a))
	require.Equal(t, uint64(6000), countOf(t, digestOf(t, dst0).Data))

	// The merge result of an accurate destination keeps updating
	// accurately, counting both.
	dst := a.Clone()
	require.NoError(t, blob.Merge(dst, c))
	for i := range 500 {
		require.NoError(t, dst.UpdateU32(0, uint32(i)))
	}
	require.Equal(t, uint64(6500), countOf(t, digestOf(t, dst).Data))
}

// TestModesFromBytes: a blob made from bytes updates in the C's mode
// (byte-identical to a C-mode blob), and in its template's after
// UseModes.
func TestModesFromBytes(t *testing.T) {
	ta := modeTemplate(t, tdigest.Accurate, 20)
	tc := modeTemplate(t, tdigest.C, 20)
	fresh := blob.New(ta, blob.NewEnv(func() int64 { return 1 }, 1))
	p := slices.Clone(fresh.Bytes())
	fb, err := blob.FromBytes(p, blob.NewEnv(nil, 1))
	require.NoError(t, err)
	cb, err := blob.FromBytes(p, blob.NewEnv(nil, 1))
	require.NoError(t, err)
	cm := blob.New(tc, blob.NewEnv(func() int64 { return 1 }, 1))
	for i := range 5000 {
		v := uint32(i) // sorted: the C's clustering collapses it
		require.NoError(t, fb.UpdateU32(0, v))
		require.NoError(t, cb.UpdateU32(0, v))
		require.NoError(t, cm.UpdateU32(0, v))
	}
	require.Equal(t, cb.Bytes(), fb.Bytes())
	require.Equal(t, digestOf(t, cm).Data, digestOf(t, fb).Data)

	require.NoError(t, fb.UseModes(ta))
	env := fb.Env()
	calls := env.Rand.Calls()
	for i := range 5000 {
		require.NoError(t, fb.UpdateU32(0, uint32(5000+i)))
	}
	require.Equal(t, calls, env.Rand.Calls(), "the accurate mode draws no randomness")
	require.Equal(t, uint64(10000), countOf(t, digestOf(t, fb).Data))

	other, err := tpl.NewRegistry().New("OTHER")
	require.NoError(t, err)
	require.NoError(t, other.AddVOI(tpl.VOIDef{ID: 0, DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}))
	require.ErrorIs(t, fb.UseModes(other), voi.ErrInvalid)
}

// TestModesUnmarshalBinary: a blob keeps its t-digests' modes across
// UnmarshalBinary of bytes of its template (a collector's reused Blob, a
// checkpoint read back), and updates in the C's mode after bytes of
// another template.
func TestModesUnmarshalBinary(t *testing.T) {
	ta := modeTemplate(t, tdigest.Accurate, 20)
	clock := func() int64 { return 1 }
	feed := func(bl *blob.Blob) []byte {
		for i := range 5000 {
			require.NoError(t, bl.UpdateU32(0, uint32(i))) // sorted: the modes differ most
		}
		return digestOf(t, bl).Data
	}
	want := feed(blob.New(ta, blob.NewEnv(clock, 1)))
	cmode := feed(blob.New(modeTemplate(t, tdigest.C, 20), blob.NewEnv(clock, 1)))
	require.NotEqual(t, cmode, want)

	empty := slices.Clone(blob.New(ta, blob.NewEnv(clock, 1)).Bytes())
	used := blob.New(ta, blob.NewEnv(clock, 1))
	feed(used)
	require.NoError(t, used.UnmarshalBinary(empty))
	require.Equal(t, want, feed(used), "same template: the accurate mode stays")

	other := blob.New(modeTemplate(t, tdigest.Accurate, 50), blob.NewEnv(clock, 1))
	require.NoError(t, other.UnmarshalBinary(empty))
	require.Equal(t, cmode, feed(other), "another layout: the C's mode")

	var zero blob.Blob
	require.NoError(t, zero.UnmarshalBinary(empty))
	zero.SetEnv(blob.NewEnv(clock, 1))
	require.Equal(t, cmode, feed(&zero), "bytes alone: the C's mode")
	require.NoError(t, zero.UseModes(ta))
	require.NoError(t, zero.UnmarshalBinary(empty))
	require.Equal(t, want, feed(&zero), "UseModes, then bytes of its template")
}

// TestAccurateSharded: a Sharded snapshot of accurate-mode digests counts
// every sample and meets the accurate mode's bounds, and updates from
// several goroutines are safe.
func TestAccurateSharded(t *testing.T) {
	for _, slots := range []uint32{20, 50} {
		tp := modeTemplate(t, tdigest.Accurate, slots)
		s := blob.NewSharded(tp, 8, nil)
		samples := accuracy.StreamByName("lognormal").Gen(100_000, 1)
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < len(samples); i += 4 {
					_ = s.UpdateU32(0, samples[i])
				}
			}()
		}
		wg.Wait()
		snap, err := s.Snapshot(false)
		require.NoError(t, err)
		st := digestOf(t, snap)
		require.Equal(t, uint64(len(samples)), countOf(t, st.Data))
		sorted := make([]float64, len(samples))
		for i, v := range samples {
			sorted[i] = float64(v)
		}
		slices.Sort(sorted)
		e := accuracy.Max(accuracy.Errors(sorted, st.Data, st.DType))
		t.Logf("%d slots, 8 shards: worst rank error %.3f%%", slots, 100*e)
		bound := map[uint32]float64{20: 0.008, 50: 0.002}[slots]
		require.LessOrEqual(t, e, bound)
	}
}

// TestAccurateFullDigest: an accurate digest takes samples up to one
// centroid's count and refuses more (voi.ErrOverflow, counted in the
// statistic's voistat, the digest unchanged), so that whatever one value
// holds, every view can write its samples into the slots (before, a
// digest of 2^31−1 samples of one value took one more and its next view
// panicked with too few slots, for one slot and for four).
func TestAccurateFullDigest(t *testing.T) {
	full := func(tp *tpl.Template, v uint32) *blob.Blob { // 2^31−1 samples of v, by merges
		p := blob.New(tp, blob.NewEnv(nil, 1))
		require.NoError(t, p.UpdateU32(0, v))
		acc := p.Clone()
		for range 30 {
			require.NoError(t, blob.Merge(p, p.Clone()))
			require.NoError(t, blob.Merge(acc, p))
		}
		return acc
	}
	one := full(modeTemplate(t, tdigest.Accurate, 1), 7)
	require.Equal(t, uint64(1<<31-1), countOf(t, digestOf(t, one).Data))
	before := slices.Clone(digestOf(t, one).Data)
	require.ErrorIs(t, one.UpdateU32(0, 7), voi.ErrOverflow)
	require.Equal(t, before, digestOf(t, one).Data)
	require.Equal(t, uint8(1), digestOf(t, one).Errs)
	q, err := one.Quantile(0, 0.5)
	require.NoError(t, err)
	require.Equal(t, 7.0, q)

	tp4 := modeTemplate(t, tdigest.Accurate, 4)
	four := full(tp4, 50)
	ends := blob.New(tp4, blob.NewEnv(nil, 1))
	require.NoError(t, ends.UpdateU32(0, 0))
	require.NoError(t, ends.UpdateU32(0, 100))
	require.NoError(t, blob.Merge(four, ends))
	require.ErrorIs(t, four.UpdateU32(0, 10), voi.ErrOverflow)
	require.NoError(t, blob.Validate(four.Bytes()))
	require.Equal(t, uint64(1<<31+1), countOf(t, digestOf(t, four).Data))
	q, err = four.Quantile(0, 0.5)
	require.NoError(t, err)
	require.Equal(t, 50.0, q)
}
