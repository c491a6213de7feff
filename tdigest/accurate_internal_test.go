package tdigest

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/bsdrand"
	"github.com/statsblob/statsblob/internal/trusted"
	"github.com/statsblob/statsblob/qmath"
	"github.com/statsblob/statsblob/voi"
)

// accFeed feeds vals (IntS64 bit patterns) to a new digest of dt through
// an accurate cache, flushing after every flushEvery updates (0: only at
// the end), and returns the digest and the accepted samples.
func accFeed(t testing.TB, dt voi.DType, slots uint32, vals []int64, flushEvery int) ([]byte, []int64) {
	prec := uint32(4)
	if dt == voi.TDgstClust64 {
		prec = 8
	}
	d, err := Build(dt, slots, prec)
	require.NoError(t, err)
	c := trusted.TDigestCache{Accurate: true}
	var ok []int64
	for i, v := range vals {
		if updateTrusted(&c, d, dt, voi.IntS64, uint64(v), nil) == nil {
			ok = append(ok, v)
		}
		if flushEvery > 0 && (i+1)%flushEvery == 0 {
			flushTrusted(&c, d, dt)
		}
	}
	flushTrusted(&c, d, dt)
	return d, ok
}

// checkAccurate asserts the accurate mode's invariants on d fed samples:
// Validate accepts it, smplcnt and the centroids' counts are the number of
// samples, every mean lies in [min, max] of the samples, and the first and
// last centroids are the extremes.
func checkAccurate(t testing.TB, d []byte, dt voi.DType, samples []int64) {
	t.Helper()
	require.NoError(t, Validate(d, dt))
	n, err := Count(d, dt)
	require.NoError(t, err)
	require.Equal(t, uint64(len(samples)), n)
	if len(samples) == 0 {
		return
	}
	lo, hi := samples[0], samples[0]
	for _, v := range samples {
		lo, hi = min(lo, v), max(hi, v)
	}
	var sum uint64
	first, last := math.NaN(), math.NaN()
	for c := range Centroids(d, dt) {
		m := c.Mean()
		require.GreaterOrEqual(t, m, float64(lo))
		require.LessOrEqual(t, m, float64(hi))
		sum += c.Count
		if math.IsNaN(first) {
			first = m
		}
		last = m
	}
	require.Equal(t, uint64(len(samples)), sum)
	require.Equal(t, float64(lo), first)
	require.Equal(t, float64(hi), last)
}

func TestAccurateInvariants(t *testing.T) {
	r := bsdrand.New(7)
	for _, dt := range []voi.DType{voi.TDgstClust32, voi.TDgstClust64} {
		for _, slots := range []uint32{1, 2, 3, 5, 20, 60} {
			for _, n := range []int{0, 1, 2, 3, 50, 1000, 3000} {
				vals := make([]int64, n)
				for i := range vals {
					vals[i] = int64(r.Int31()%20000) - 5000
				}
				for _, every := range []int{0, 7, 300} {
					d, ok := accFeed(t, dt, slots, vals, every)
					require.Len(t, ok, n)
					if slots >= 3 {
						checkAccurate(t, d, dt, ok)
					} else {
						require.NoError(t, Validate(d, dt))
					}
				}
			}
		}
	}
}

// TestAccurateSortedDoesNotCollapse: ascending input uses the slots.
func TestAccurateSortedDoesNotCollapse(t *testing.T) {
	vals := make([]int64, 20000)
	for i := range vals {
		vals[i] = int64(i)
	}
	for _, dt := range []voi.DType{voi.TDgstClust32, voi.TDgstClust64} {
		d, ok := accFeed(t, dt, 20, vals, 0)
		checkAccurate(t, d, dt, ok)
		info, err := ReadInfo(d, dt)
		require.NoError(t, err)
		require.EqualValues(t, 20, info.CurNodes)
		var heaviest uint64
		for c := range Centroids(d, dt) {
			heaviest = max(heaviest, c.Count)
		}
		require.Less(t, heaviest, uint64(20000/5)) // the C: 19,956 in one centroid
		q, err := Quantile(d, dt, 0.5)
		require.NoError(t, err)
		require.InDelta(t, 10000, q, 200)
	}
}

// TestAccurateCContinues: the C's update continues an accurate digest.
func TestAccurateCContinues(t *testing.T) {
	vals := make([]int64, 3000)
	r := bsdrand.New(3)
	for i := range vals {
		vals[i] = int64(r.Int31() % 100000)
	}
	for _, dt := range []voi.DType{voi.TDgstClust32, voi.TDgstClust64} {
		d, _ := accFeed(t, dt, 20, vals, 0)
		env := &Env{Rand: bsdrand.New(1)}
		for _, v := range vals[:500] {
			require.NoError(t, Update(d, dt, voi.IntS64, uint64(v), env))
		}
		require.NoError(t, Validate(d, dt))
		n, _ := Count(d, dt)
		require.Equal(t, uint64(3500), n)
	}
}

// TestAccurateLimits: values are accepted exactly when the digest's means
// can hold them; a refused value changes nothing.
func TestAccurateLimits(t *testing.T) {
	f := func(dt voi.DType, voiDT voi.DType, v uint64, ok bool) {
		t.Helper()
		d, err := Build(dt, 20, 4)
		require.NoError(t, err)
		c := trusted.TDigestCache{Accurate: true}
		err = updateTrusted(&c, d, dt, voiDT, v, nil)
		flushTrusted(&c, d, dt)
		n, _ := Count(d, dt)
		if ok {
			require.NoError(t, err)
			require.Equal(t, uint64(1), n)
		} else {
			require.ErrorIs(t, err, voi.ErrOverflow)
			require.Zero(t, n)
		}
	}
	f(voi.TDgstClust32, voi.IntU32, 1<<24-1, true) // s32q, 4 fractional bits: 2^24-1 is the largest integer part
	f(voi.TDgstClust32, voi.IntU32, 1<<24, false)
	neg := -(int64(1)<<24 - 1)
	f(voi.TDgstClust32, voi.IntS64, uint64(neg), true)
	f(voi.TDgstClust64, voi.IntU64, 1<<56-1, true) // s64q, 4 fractional bits
	f(voi.TDgstClust64, voi.IntU64, 1<<56, false)
	f(voi.TDgstClust64, voi.IntU64, math.MaxUint64, false)
}

func TestAccurateNoAllocs(t *testing.T) {
	for _, dt := range []voi.DType{voi.TDgstClust32, voi.TDgstClust64} {
		d, _ := Build(dt, 50, 4)
		c := trusted.TDigestCache{Accurate: true}
		v := uint64(1)
		_ = updateTrusted(&c, d, dt, voi.IntU32, v, nil)
		allocs := testing.AllocsPerRun(5000, func() {
			v = v*6364136223846793005 + 1442695040888963407
			_ = updateTrusted(&c, d, dt, voi.IntU32, v>>44, nil)
		})
		require.Zero(t, allocs)
		// Runs of a whole buffer each, so that every run flushes (the
		// working memory is the free list's after the first).
		allocs = testing.AllocsPerRun(10, func() {
			for range 1600 {
				v = v*6364136223846793005 + 1442695040888963407
				_ = updateTrusted(&c, d, dt, voi.IntU32, v>>44, nil)
			}
			flushTrusted(&c, d, dt)
		})
		require.Zero(t, allocs)

		// A few integers whose runs the 20 slots cannot pin, matched
		// (exactRuns' working memory is the free list's too).
		d, _ = Build(dt, 20, 4)
		c = trusted.TDigestCache{Accurate: true}
		few := func() {
			for range 1600 {
				v = v*6364136223846793005 + 1442695040888963407
				_ = updateTrusted(&c, d, dt, voi.IntU32, 1+v>>61, nil)
			}
			flushTrusted(&c, d, dt)
		}
		few()
		require.Zero(t, testing.AllocsPerRun(10, few))
		n, err := Count(d, dt)
		require.NoError(t, err)
		require.Equal(t, uint64(12*1600), n) // (AllocsPerRun runs it once more)
		require.Equal(t, 16, len(slices.Collect(Centroids(d, dt))), "8 runs matched, two pieces each")
	}
}

// TestAccurateScratchShared: the flushes of caches updated from several
// goroutines at once share the free list of working memories, and each
// digest's bytes are what the same samples give alone.
func TestAccurateScratchShared(t *testing.T) {
	const workers = 4
	feed := func(w int) []byte {
		dt := []voi.DType{voi.TDgstClust32, voi.TDgstClust64}[w%2]
		d, err := Build(dt, uint32(20+30*w), 4)
		require.NoError(t, err)
		c := trusted.TDigestCache{Accurate: true}
		r := rand.New(rand.NewPCG(uint64(w), 5))
		for range 30_000 {
			if err := updateTrusted(&c, d, dt, voi.IntU32, uint64(r.IntN(1_000_000)), nil); err != nil {
				panic(err)
			}
		}
		flushTrusted(&c, d, dt)
		return d
	}
	alone := make([][]byte, workers)
	for w := range workers {
		alone[w] = feed(w)
	}
	together := make([][]byte, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			together[w] = feed(w)
		}()
	}
	wg.Wait()
	for w := range workers {
		require.Equal(t, alone[w], together[w], "worker %d", w)
	}
}

// FuzzAccurateUpdate: whatever the samples and whenever the buffer is
// flushed, an accurate digest is valid, counts every accepted sample and
// keeps its centroids within [min, max] of them, the extremes exact.
func FuzzAccurateUpdate(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, uint8(5), uint8(0), false)
	f.Add(make([]byte, 64), uint8(3), uint8(2), true)
	f.Fuzz(func(t *testing.T, p []byte, slots, every uint8, w32 bool) {
		dt := voi.TDgstClust64
		if w32 {
			dt = voi.TDgstClust32
		}
		var vals []int64
		for len(p) >= 2 {
			// Small values repeat (runs); the sign and scale bits spread
			// them over a wide range, up to what the Q types hold (where
			// the cache keeps fewer extra bits: fineBits) and past it.
			x := int64(binary.LittleEndian.Uint16(p))
			switch {
			case x&5 == 5:
				x <<= 36
			case x&1 != 0:
				x <<= 7
			}
			if x&2 != 0 {
				x = -x
			}
			vals, p = append(vals, x), p[2:]
			// Repeat the stream to go through several flushes.
		}
		all := vals
		for len(all) > 0 && len(all) < 600 {
			all = append(all, vals...)
		}
		s := uint32(slots%40) + 3
		d, ok := accFeed(t, dt, s, all, int(every))
		checkAccurate(t, d, dt, ok)
	})
}

// BenchmarkUpdateMode compares an update through the cache blobs hold in
// each mode (the accurate mode's cost includes its share of flushes).
func BenchmarkUpdateMode(b *testing.B) {
	for _, g := range []struct {
		name  string
		dt    voi.DType
		slots uint32
	}{{"32x20", voi.TDgstClust32, 20}, {"64x50", voi.TDgstClust64, 50}, {"64x100", voi.TDgstClust64, 100}} {
		for _, acc := range []bool{false, true} {
			name := g.name + "/c"
			if acc {
				name = g.name + "/accurate"
			}
			b.Run(name, func(b *testing.B) {
				d, _ := Build(g.dt, g.slots, 4)
				c := trusted.TDigestCache{Accurate: acc}
				src := bsdrand.New(1)
				vals := make([]uint64, 65536)
				for i := range vals {
					vals[i] = uint64(math.Exp(7 + 2*float64(src.Int31())/(1<<31)))
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					_ = updateTrusted(&c, d, g.dt, voi.IntU32, vals[i&65535], src)
				}
			})
		}
	}
}

// TestLoneStretches: a stretch between two modes whose extreme samples lie
// alone beside it, a quarter of the stretch or more from the next
// centroid, is found on the centroids (loneStretches) where the test on
// neighbouring items misses it; samples alone (a first flush), a heavy
// tail's growing gaps and evenly spread centroids mark nothing.
func TestLoneStretches(t *testing.T) {
	type item struct {
		v int64
		n uint64 // 1: a lone sample (exact); more: a centroid
	}
	modes := func(lone bool) []item {
		var its []item
		n := uint64(100)
		if lone {
			n = 1
		}
		for i := range 20 {
			its = append(its, item{1000 + 10*int64(i), n})
		}
		// The first mode's largest sample and the second's smallest,
		// alone: 10000-1195 = 8805 < 4·(12300-10000).
		its = append(its, item{1195, 1}, item{10000, 1})
		for i := range 20 {
			its = append(its, item{12300 + 20*int64(i), n})
		}
		return its
	}
	var tail, even []item
	v, g := int64(1000), int64(10)
	for range 30 {
		tail = append(tail, item{v, 50}, item{v + g/2, 1})
		v += g
		g += g / 2
	}
	for i := range 40 {
		d := int64(10)
		if i == 20 {
			d = 20
		}
		even = append(even, item{int64(100 * i), 30}, item{int64(100*i) + d, 1})
	}
	for _, tc := range []struct {
		name  string
		items []item
		want  []int32 // modeEdges' forced items
	}{
		{"centroids, lone edges", modes(false), []int32{0, 20, 21, 41}},
		{"samples only", modes(true), []int32{0, 41}},
		{"a heavy tail", tail, []int32{0, 59}},
		{"evenly spread", even, []int32{0, 79}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			items := make([]accItem, len(tc.items))
			var heavy []int32
			for i, it := range tc.items {
				items[i] = accItemOf(it.v, it.n, it.n == 1)
				if it.n > 1 {
					heavy = append(heavy, int32(i))
				}
			}
			c := &accCache[node32]{}
			require.Equal(t, tc.want, c.modeEdges(items, heavy, 640))
		})
	}
	// Without the test on the centroids, the lone edges hide the stretch.
	items := make([]accItem, 0, 42)
	for _, it := range modes(false) {
		items = append(items, accItemOf(it.v, it.n, it.n == 1))
	}
	c := &accCache[node32]{}
	require.Equal(t, []int32{0, 41}, c.modeEdges(items, nil, 640))
}

// TestAccurateFineMeansDoNotDrift: the accurate cache's finer centroids
// stay where their ranks say over many flushes. Fed 10^6 bimodal samples
// (90% near 5000, 10% near 200000, σ 0.1 of each; about 1,000 flushes),
// each finer centroid's mean has about as many samples below it as its
// cumulative middle rank says, within 0.05% of the samples, whatever
// the digest's precision (kept at the digest's own, the means of
// TDGSTCLUST32(20,4) stuck and drifted by up to 0.22%; see accFine).
func TestAccurateFineMeansDoNotDrift(t *testing.T) {
	if raceOn {
		t.Skip("10^6 updates per case")
	}
	r := rand.New(rand.NewPCG(1, 2))
	vals := make([]int64, 1_000_000)
	for i := range vals {
		mode := 5000.0
		if r.IntN(10) == 0 {
			mode = 200000
		}
		vals[i] = int64(mode * math.Exp(0.1*r.NormFloat64()))
	}
	sorted := slices.Clone(vals)
	slices.Sort(sorted)
	for _, tc := range []struct {
		dt   voi.DType
		prec uint32
	}{{voi.TDgstClust32, 4}, {voi.TDgstClust32, 1}, {voi.TDgstClust64, 8}, {voi.TDgstClust64, 1}} {
		t.Run(fmt.Sprintf("%v,%d", tc.dt, tc.prec), func(t *testing.T) {
			d, err := Build(tc.dt, 20, tc.prec)
			require.NoError(t, err)
			c := trusted.TDigestCache{Accurate: true}
			for _, v := range vals {
				require.NoError(t, updateTrusted(&c, d, tc.dt, voi.IntS64, uint64(v), nil))
			}
			flushTrusted(&c, d, tc.dt)
			var state []accItem
			var fine uint
			if tc.dt == voi.TDgstClust32 {
				ac := accIn[node32](&c)
				state, fine = ac.state, ac.nf+ac.xs
			} else {
				ac := accIn[node64](&c)
				state, fine = ac.state, ac.nf+ac.xs
			}
			require.Greater(t, len(state), 200)
			var cum uint64
			worst := 0.0
			for _, it := range state {
				mid := float64(cum) + float64(it.n())/2
				mean := float64(it.v) / math.Ldexp(1, int(fine))
				below, _ := slices.BinarySearch(sorted, int64(math.Ceil(mean)))
				worst = max(worst, math.Abs(float64(below)-mid)/float64(len(vals)))
				cum += it.n()
			}
			require.Equal(t, uint64(len(vals)), cum)
			require.Less(t, worst, 0.0005, "the worst finer centroid's drift, of the samples")
		})
	}
}

// TestAccurateFineBitsGiveWay: the cache keeps its finer means at up to
// accFine more fractional bits, fewer where the samples' magnitudes need
// them (fineBits): a sample as large as the digest's Q type holds, after
// many small ones or in bytes read back, lowers them, rounding the
// centroids' means, and the digest keeps its invariants and counts.
func TestAccurateFineBitsGiveWay(t *testing.T) {
	require.Equal(t, uint(accFine), fineBits(0))
	require.Equal(t, uint(0), fineBits(ifMaxS64))
	require.Equal(t, uint(1), fineBits(ifMaxS64>>1))
	require.Equal(t, uint(accFine), fineBits(ifMaxS64>>accFine))
	require.Equal(t, uint(accFine-1), fineBits(ifMaxS64>>(accFine-1)))
	for _, tc := range []struct {
		name string
		big  int64 // a sample (TDgstClust64(·,8) holds up to 2^52-1)
		at   int   // where it comes among 20,000 samples
	}{
		{"first", 1<<52 - 1, 0},
		{"after many flushes", 1<<52 - 1, 15_000},
		{"last", 1<<52 - 1, 19_999},
		{"negative, after many flushes", -(1<<52 - 1), 15_000},
		{"2^40, after many flushes", 1 << 40, 15_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(3, 4))
			vals := make([]int64, 20_000)
			for i := range vals {
				vals[i] = r.Int64N(100_000)
			}
			vals[tc.at] = tc.big
			d, ok := accFeed(t, voi.TDgstClust64, 20, vals, 0)
			require.Equal(t, len(vals), len(ok), "samples accepted")
			checkAccurate(t, d, voi.TDgstClust64, vals)

			// The same bytes continued by a fresh cache (read back).
			c := trusted.TDigestCache{Accurate: true}
			for _, v := range vals[:5000] {
				require.NoError(t, updateTrusted(&c, d, voi.TDgstClust64, voi.IntS64, uint64(v), nil))
			}
			flushTrusted(&c, d, voi.TDgstClust64)
			checkAccurate(t, d, voi.TDgstClust64, append(slices.Clone(vals), vals[:5000]...))
		})
	}
}

// TestAccurateQValues: the accurate mode takes a Q VOI's value at its
// worth, rescaled to the digest's precision (truncated toward zero where
// the VOI's has more fractional bits), where the C's mode copies the raw
// fraction bits (Q_QCPYVALQ, reproduced as the C does it: a Q_S32/2 1.5
// becomes 1.125 at precision 4). Where the precisions are equal both
// modes take the same value; values whose integer part the digest's
// means cannot hold are refused in both.
func TestAccurateQValues(t *testing.T) {
	for _, tc := range []struct {
		dt     voi.DType
		prec   uint32
		kind   qmath.Kind
		qprec  int
		x      float64
		want   float64 // the accurate mode's mean
		wantC  float64 // the C mode's
		errSet bool    // both refuse it (voi.ErrOverflow)
	}{
		{voi.TDgstClust32, 4, qmath.S32, 2, 1.5, 1.5, 1.125, false},
		{voi.TDgstClust32, 4, qmath.S32, 2, -1.5, -1.5, -1.125, false},
		{voi.TDgstClust32, 4, qmath.U32, 4, 3.25, 3.25, 3.25, false},
		{voi.TDgstClust32, 4, qmath.S64, 4, -1000.0625, -1000.0625, -1000.0625, false},
		{voi.TDgstClust32, 4, qmath.S64, 8, -1000.03125, -1000, -1000.5, false},           // -1000 - 8/256: the fraction truncated
		{voi.TDgstClust32, 4, qmath.S32, 8, 3.14159, 3.125, math.NaN(), false},            // 3.140625 at 8 bits; the C refuses its raw fraction 36
		{voi.TDgstClust32, 4, qmath.S64, 16, -0.0078125, 0, math.NaN(), false},            // below 1/16, toward zero
		{voi.TDgstClust32, 4, qmath.U64, 32, 1<<24 - 0.5, 1<<24 - 0.5, math.NaN(), false}, // the largest mean TDGSTCLUST32(·,4) holds
		{voi.TDgstClust32, 4, qmath.U64, 32, 1 << 24, 0, 0, true},
		{voi.TDgstClust32, 4, qmath.S64, 8, -1e12, 0, 0, true},
		{voi.TDgstClust64, 16, qmath.U32, 8, 1.5, 1.5, 1 + 128.0/65536, false}, // FORMAT.md's example
		{voi.TDgstClust64, 8, qmath.S64, 8, -12345.6789, -12345.6796875, -12345.6796875, false},
	} {
		name := fmt.Sprintf("%v(%d) %v/%d %v", tc.dt, tc.prec, tc.kind, tc.qprec, tc.x)
		t.Run(name, func(t *testing.T) {
			q, err := qmath.FromFloat(tc.kind, tc.qprec, tc.x)
			require.NoError(t, err)
			vdt := map[qmath.Kind]voi.DType{qmath.S32: voi.QS32, qmath.U32: voi.QU32, qmath.S64: voi.QS64, qmath.U64: voi.QU64}[tc.kind]
			mean := func(d []byte) float64 {
				for c := range Centroids(d, tc.dt) {
					if c.Count > 0 {
						return c.Mean()
					}
				}
				return math.NaN()
			}
			da, err := Build(tc.dt, 10, tc.prec)
			require.NoError(t, err)
			c := trusted.TDigestCache{Accurate: true}
			errA := updateTrusted(&c, da, tc.dt, vdt, q.Raw, nil)
			flushTrusted(&c, da, tc.dt)
			dc, err := Build(tc.dt, 10, tc.prec)
			require.NoError(t, err)
			errC := Update(dc, tc.dt, vdt, q.Raw, nil)
			if tc.errSet {
				require.ErrorIs(t, errA, voi.ErrOverflow)
				require.ErrorIs(t, errC, voi.ErrOverflow)
				n, _ := Count(da, tc.dt)
				require.Zero(t, n, "the refused sample is not counted")
				return
			}
			require.NoError(t, errA)
			require.Equal(t, tc.want, mean(da))
			if math.IsNaN(tc.wantC) {
				require.ErrorIs(t, errC, voi.ErrOverflow, "the C's raw fraction does not fit")
			} else {
				require.NoError(t, errC)
				require.Equal(t, tc.wantC, mean(dc))
			}
		})
	}
}

// TestAccurateUpdateErrors: the accurate mode refuses what it cannot
// take with a sentinel usable with errors.Is, and a refused update leaves
// the digest and what the cache buffered unchanged.
func TestAccurateUpdateErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		dt    voi.DType
		slots uint32
		prep  func(d []byte) []byte // the bytes the update is given
		voiDT voi.DType
		v     uint64
		want  error
	}{
		{"no slots", voi.TDgstClust32, 0, nil, voi.IntU32, 5, voi.ErrInvalid},
		{"bytes cut short", voi.TDgstClust64, 20, func(d []byte) []byte { return d[:Size(voi.TDgstClust64, 0)-1] }, voi.IntU32, 5, voi.ErrInvalid},
		{"a VOI type that cannot feed a digest", voi.TDgstClust32, 20, nil, voi.TDgstClust32, 5, voi.ErrInvalid},
		{"a Q value past the means' range", voi.TDgstClust32, 20, nil, voi.QS64, 0, voi.ErrOverflow},
		{"a sample count that would wrap", voi.TDgstClust32, 20, func(d []byte) []byte {
			storeSmplcnt(d, math.MaxUint32-1, true)
			return d
		}, voi.IntU32, 5, voi.ErrOverflow},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Build(tc.dt, tc.slots, 4)
			require.NoError(t, err)
			v := tc.v
			if tc.voiDT == voi.QS64 {
				q, err := qmath.FromFloat(qmath.S64, 2, 1<<40)
				require.NoError(t, err)
				v = q.Raw
			}
			c := trusted.TDigestCache{Accurate: true}
			// One accepted sample first where the digest can take one.
			if tc.slots > 0 {
				require.NoError(t, updateTrusted(&c, d, tc.dt, voi.IntU32, 7, nil))
			}
			if tc.prep != nil {
				d = tc.prep(d)
			}
			before := slices.Clone(d)
			err = updateTrusted(&c, d, tc.dt, tc.voiDT, v, nil)
			require.ErrorIs(t, err, tc.want)
			require.Equal(t, before, d, "the bytes")
			if ac, ok := c.C.(*accCache[node32]); ok {
				require.LessOrEqual(t, len(ac.buf), 1, "only the accepted sample is buffered")
			}
		})
	}
}
