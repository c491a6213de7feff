package tdigest

// The merge's bytes pinned by a fingerprint: the SHA-256 of every output of
// a few hundred seeded merges, computed by the merge before its hot loops
// were reworked for the collector (fold) path. Optimisations of the merge
// must leave it unchanged: the merge's results are exact and order-free,
// the accuracy tables were measured on them, and tests elsewhere assert
// exact bytes.

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/bsdrand"
	"github.com/statsblob/statsblob/internal/trusted"
	"github.com/statsblob/statsblob/voi"
)

// mergeFingerprint is the SHA-256 of TestMergeFingerprint's outputs.
// (Changed on purpose 2026-11-28: runs of equal samples stay whole and
// pinned, and centroids of two samples are not spread; see coalesce.
// Again 2026-11-28: the accurate cache keeps its means at 32 more
// fractional bits, see accFine; the accurate-mode inputs' bytes moved.
// Again 2026-11-28: the accurate mode splits every run of equal samples it
// can into pieces (exactRuns), and a merge gives a centroid sharing its
// mean with a neighbour a one-sample part, as a run's (splitCentroids);
// C-mode digests with such centroids moved too.)
const mergeFingerprint = "4f65e6a2338bfe45da06ea7e9a8f7b2aaac937e567278bbf3b4f7a0309e8395b"

// fpDigest returns a digest of dt (slots, prec) fed n samples of stream
// kind by the C's clustering or, if accurate, the accurate mode's.
func fpDigest(t testing.TB, r *rand.Rand, dt voi.DType, slots, prec uint32, accurate bool, kind, n int) []byte {
	d, err := Build(dt, slots, prec)
	require.NoError(t, err)
	c := trusted.TDigestCache{Accurate: accurate}
	rnd := bsdrand.New(r.Uint32())
	base := r.Int64N(1000) // where this input's samples sit (hosts differ)
	for i := range n {
		v := fpSample(r, kind, base, i)
		// (Samples out of the digest's range are refused: fine.)
		if kind == 6 {
			_ = updateTrusted(&c, d, dt, voi.IntS64, uint64(v), rnd)
		} else {
			_ = updateTrusted(&c, d, dt, voi.IntU64, uint64(max(v, 0)), rnd)
		}
	}
	if accurate {
		flushTrusted(&c, d, dt)
	}
	return d
}

// fpSample returns the i-th sample of an input of stream kind whose
// samples sit near base. Integer arithmetic and single correctly rounded
// float operations only, so the samples are the same on every platform
// (no math.Exp or Log, which differ in the last bit between platforms, no
// expression a compiler may fuse).
func fpSample(r *rand.Rand, kind int, base int64, i int) int64 {
	u := func() float64 { return 1 - r.Float64() } // (0, 1]
	norm := func(sd int64) int64 {                 // about normal: the sum of 4 uniforms
		return (r.Int64N(sd) + r.Int64N(sd) + r.Int64N(sd) + r.Int64N(sd)) - 2*sd
	}
	switch kind {
	case 0: // uniform
		return r.Int64N(1000)
	case 1: // Pareto, alpha 1
		return int64(min(100/u(), 1e12))
	case 2: // lognormal-like: 2^k times a uniform mantissa, k about normal
		return int64(math.Ldexp(1+r.Float64(), int(8+norm(4))))
	case 3: // Zipf-like over a few integers
		return int64(1 / (1 - float64(0.95*r.Float64()))) // 1 to 20, mostly 1
	case 4: // ascending
		return base + 3*int64(i)
	case 5: // bimodal, 90/10
		if r.IntN(10) == 0 {
			return 200000 + norm(10000)
		}
		return 5000 + norm(300)
	case 6: // signed
		return norm(2000)
	case 7: // Pareto, alpha 2
		return int64(100 / math.Sqrt(u()))
	}
	return int64(r.Uint64() >> (20 + r.IntN(44))) // every magnitude
}

// TestMergeFingerprint: MergeAll, MergeAllFrom and the bounded trusted
// merge of blobs give the bytes they gave when the fingerprint was taken,
// on C-mode and accurate-mode digests of both widths, several slot counts
// and precisions, destinations as tpl.Widen makes them (TDGSTCLUST64,
// four times the slots) folded batch after batch as a collector does, 1
// to 300 sources with empty ones, and skewed, sorted, bimodal and Zipf-like
// samples.
func TestMergeFingerprint(t *testing.T) {
	h := sha256.New()
	r := rand.New(rand.NewPCG(20, 22))
	cases := 300
	combined := 0 // merges that regrouped (so that combine is covered)
	for i := range cases {
		dt := []voi.DType{voi.TDgstClust32, voi.TDgstClust64}[r.IntN(2)]
		slots := []uint32{1, 3, 8, 20, 50, 100}[r.IntN(6)]
		prec := []uint32{0, 4, 8, 16}[r.IntN(4)]
		if dt == voi.TDgstClust32 {
			prec = min(prec, 8)
		}
		accurate := r.IntN(2) == 0
		kind := r.IntN(9)
		nsrc := 1 + r.IntN([]int{3, 30, 300}[r.IntN(3)])
		srcs := make([][]byte, nsrc)
		for j := range srcs {
			n := 0
			if r.IntN(8) != 0 { // some empty
				n = 1 + r.IntN([]int{10, 100, 600}[r.IntN(3)])
			}
			acc := accurate
			if r.IntN(6) == 0 {
				acc = !acc // a mixed fleet
			}
			srcs[j] = fpDigest(t, r, dt, slots, prec, acc, kind, n)
		}
		fpCase(t, h, r, i, dt, slots, prec, srcs, &combined)
	}
	require.Greater(t, combined, cases/2)
	got := hex.EncodeToString(h.Sum(nil))
	require.Equal(t, mergeFingerprint, got, "the merge's bytes changed")
}

// fpCase hashes the merges of one fleet srcs (of type dt) into h.
func fpCase(t testing.TB, h hash.Hash, r *rand.Rand, i int, dt voi.DType, slots, prec uint32, srcs [][]byte, combined *int) {
	put := func(b []byte, err error) {
		var hdr [8]byte
		binary.LittleEndian.PutUint32(hdr[:], uint32(i))
		binary.LittleEndian.PutUint32(hdr[4:], uint32(len(b)))
		h.Write(hdr[:])
		h.Write(b)
		if err != nil {
			h.Write([]byte(err.Error()))
		}
	}
	// One MergeAll into a digest of the fleet's geometry (empty, or the
	// first source).
	dst, err := Build(dt, slots, prec)
	require.NoError(t, err)
	if r.IntN(2) == 0 {
		copy(dst, srcs[0])
	}
	ncs := 0
	for _, s := range srcs {
		ncs += curNodes(s, dt)
	}
	if ncs > int(slots) {
		*combined++
	}
	err = MergeAll(dst, dt, srcs...)
	put(dst, err)
	// The bounded merge of blobs (a VOI's MIN and MAX known), bounds
	// around or inside the centroids' range.
	dst2, _ := Build(dt, slots, prec)
	lo, hi := -1e3*r.Float64(), 1e6*r.Float64()
	if r.IntN(3) == 0 {
		lo, hi = math.NaN(), math.NaN()
	}
	err = trusted.TDigestMergeAllIn(dst2, dt, trusted.Samples{Lo: lo, Hi: hi}, srcs...)
	put(dst2, err)
	// A collector's wide aggregate: TDGSTCLUST64 of four times the slots,
	// folded batch after batch, with a level merge of two aggregates.
	wslots := min(4*slots, 8000)
	w, err := Build(voi.TDgstClust64, wslots, prec)
	require.NoError(t, err)
	w2 := slices.Clone(w)
	batch := 1 + r.IntN(64)
	for k := 0; k < len(srcs); k += batch {
		b := srcs[k:min(len(srcs), k+batch)]
		into := w
		if (k/batch)%2 == 1 {
			into = w2
		}
		err := MergeAllFrom(into, voi.TDgstClust64, dt, b...)
		put(into, err)
	}
	err = MergeAll(w, voi.TDgstClust64, w2)
	put(w, err)
	// And the wide aggregate reduced back to the senders' geometry.
	back, _ := Build(dt, slots, prec)
	err = MergeAllFrom(back, dt, voi.TDgstClust64, w)
	put(back, err)
	// Weighted samples into the first source's copy.
	vals, ws := make([]float64, 1+r.IntN(300)), make([]uint64, 0, 300)
	for j := range vals {
		vals[j] = float64(r.IntN(4000)) / 4
		ws = append(ws, uint64(r.IntN(5)))
	}
	mw := slices.Clone(srcs[0])
	err = MergeWeighted(mw, dt, vals, ws)
	put(mw, err)
}

// TestSortItems: sortItems orders items by mean, then count, as a
// comparison sort does, for every size and range of means (its passes
// and digits depend on both), long runs of equal means included (few bits
// of range).
func TestSortItems(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var tmp []item
	for i := range 400 {
		n := r.IntN([]int{70, 300, 5000}[i%3])
		width := r.IntN(63)
		items := make([]item, n)
		base := r.Int64N(1<<62) - 1<<61
		for j := range items {
			items[j] = item{base + r.Int64N(1<<width+1)/2 - 1<<width/4, uint64(r.IntN(1 + r.IntN([]int{5, 1000}[i%2])))}
		}
		want := slices.Clone(items)
		slices.SortFunc(want, func(a, b item) int {
			if a.v != b.v {
				return cmp.Compare(a.v, b.v)
			}
			return cmp.Compare(a.n, b.n)
		})
		tmp = sortItems(items, tmp)
		require.Equal(t, want, items, "case %d: %d items, %d bits", i, n, width)
	}
}

// TestRebuildShaped: a rebuild from a cached shape writes the bytes of a
// rebuild, for both layouts, every count of centroids, several precisions
// and equal means, on a cache hit and a miss.
func TestRebuildShaped(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	sc := new(mergeScratch)
	for i := range 300 {
		dt := []voi.DType{voi.TDgstClust32, voi.TDgstClust64}[i%2]
		slots := uint32(1 + r.IntN(90))
		want, err := Build(dt, slots, uint32(r.IntN(9)))
		require.NoError(t, err)
		got, again := slices.Clone(want), slices.Clone(want)
		cs := make([]item, r.IntN(int(slots)+1))
		for j := range cs {
			cs[j] = item{r.Int64N(1<<20) - 1<<19, 1 + r.Uint64N(1000)}
		}
		slices.SortFunc(cs, func(a, b item) int { return cmp.Compare(a.v, b.v) })
		total, comp := r.Uint64N(1<<40), r.Uint32()
		if dt == voi.TDgstClust32 {
			var d digest[node32]
			require.NoError(t, d.init(want, nil))
			ctrl := d.muRaw(0) & ctrlMask
			d.rebuild(ctrl, cs, total, comp)
			require.NoError(t, d.init(got, nil))
			d.rebuildShaped(sc, ctrl, cs, total, comp)
			require.NoError(t, d.init(again, nil))
			d.rebuildShaped(sc, ctrl, cs, total, comp) // from the cache
		} else {
			var d digest[node64]
			require.NoError(t, d.init(want, nil))
			ctrl := d.muRaw(0) & ctrlMask
			d.rebuild(ctrl, cs, total, comp)
			require.NoError(t, d.init(got, nil))
			d.rebuildShaped(sc, ctrl, cs, total, comp)
			require.NoError(t, d.init(again, nil))
			d.rebuildShaped(sc, ctrl, cs, total, comp)
		}
		require.Equal(t, want, got, "case %d: %v, %d slots, %d centroids", i, dt, slots, len(cs))
		require.Equal(t, want, again, "case %d, again", i)
	}
}
