package tdigest_test

import (
	"bytes"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/bsdrand"
	"github.com/statsblob/statsblob/internal/accuracy"
	"github.com/statsblob/statsblob/tdigest"
	"github.com/statsblob/statsblob/voi"
)

// long reports whether the long versions of the accuracy tests run
// (STATSBLOB_LONG=1; `make accuracy` prints the full tables).
func long() bool { return os.Getenv("STATSBLOB_LONG") != "" }

// digestOf returns a digest of geometry (dt, slots, prec) fed vals.
func digestOf(t testing.TB, dt voi.DType, slots, prec uint32, seed uint32, vals ...uint64) []byte {
	t.Helper()
	d := mustBuild(t, dt, slots, prec)
	env := &tdigest.Env{Rand: bsdrand.New(seed)}
	for _, v := range vals {
		require.NoError(t, tdigest.Update(d, dt, voi.IntU64, v, env))
	}
	return d
}

func count(t testing.TB, d []byte, dt voi.DType) uint64 {
	t.Helper()
	n, err := tdigest.Count(d, dt)
	require.NoError(t, err)
	return n
}

func centroids(d []byte, dt voi.DType) [][2]float64 {
	var cs [][2]float64
	for c := range tdigest.Centroids(d, dt) {
		cs = append(cs, [2]float64{c.Mean(), float64(c.Count)})
	}
	return cs
}

// randomDigests returns n digests of geometry (dt, slots, 8) fed from a
// long-tailed stream, blob i with 1 to 600 samples.
func randomDigests(t testing.TB, dt voi.DType, slots uint32, n int, seed uint64) [][]byte {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 1))
	ds := make([][]byte, n)
	for i := range ds {
		vals := make([]uint64, 1+r.IntN(600))
		for j := range vals {
			vals[j] = 200 + uint64(r.ExpFloat64()*3000)
		}
		d := mustBuild(t, dt, slots, 8)
		env := &tdigest.Env{Rand: bsdrand.New(uint32(i + 1))}
		for _, v := range vals {
			// A digest of few slots may refuse a sample (EAGAIN), as the C's.
			if err := tdigest.Update(d, dt, voi.IntU64, v, env); err != nil {
				require.ErrorIs(t, err, voi.ErrAgain)
			}
		}
		ds[i] = d
	}
	return ds
}

// TestMergeAllCountsAndValidity: a merge holds exactly the inputs'
// samples, in a digest Validate accepts, of dst's geometry, with smplcnt
// the sum and compcnt the sum of the inputs'.
func TestMergeAllCountsAndValidity(t *testing.T) {
	for _, c := range []struct {
		name  string
		dt    voi.DType
		slots uint32
		n     int
	}{
		{"32-bit 20 slots, 2 inputs", voi.TDgstClust32, 20, 2},
		{"32-bit 20 slots, 300 inputs", voi.TDgstClust32, 20, 300},
		{"64-bit 50 slots, 8 inputs", voi.TDgstClust64, 50, 8},
		{"64-bit 3 slots, 40 inputs", voi.TDgstClust64, 3, 40},
		{"64-bit 1 slot, 5 inputs", voi.TDgstClust64, 1, 5},
	} {
		t.Run(c.name, func(t *testing.T) {
			ds := randomDigests(t, c.dt, c.slots, c.n, 1)
			var want uint64
			var comp uint32
			for _, d := range ds {
				want += count(t, d, c.dt)
				info, err := tdigest.ReadInfo(d, c.dt)
				require.NoError(t, err)
				comp += info.CompCnt
			}
			dst := bytes.Clone(ds[0])
			require.NoError(t, tdigest.MergeAll(dst, c.dt, ds[1:]...))
			require.NoError(t, tdigest.Validate(dst, c.dt))
			require.Equal(t, want, count(t, dst, c.dt))
			info, err := tdigest.ReadInfo(dst, c.dt)
			require.NoError(t, err)
			require.Equal(t, want, info.SmplCnt)
			require.Equal(t, comp, info.CompCnt)
			require.Equal(t, int16(c.slots), info.MaxNodes)
			require.LessOrEqual(t, info.CurNodes, int16(c.slots))
			require.Len(t, dst, len(ds[0]))
			// The merged digest takes updates as the C's does.
			env := &tdigest.Env{Rand: bsdrand.New(3)}
			added := uint64(0)
			for v := range uint64(2000) {
				if err := tdigest.Update(dst, c.dt, voi.IntU64, v*37%5000, env); err == nil {
					added++
				} else {
					require.ErrorIs(t, err, voi.ErrAgain)
				}
			}
			require.NoError(t, tdigest.Validate(dst, c.dt))
			require.Equal(t, want+added, count(t, dst, c.dt))
			require.Greater(t, added, uint64(1000))
		})
	}
}

// TestMergeOrderIndependent: Merge(a, b) and Merge(b, a) give the same
// bytes, and so does MergeAll for any order of its inputs and any choice
// of which input is the destination.
func TestMergeOrderIndependent(t *testing.T) {
	for _, dt := range []voi.DType{voi.TDgstClust32, voi.TDgstClust64} {
		ds := randomDigests(t, dt, 20, 12, 2)
		ab, ba := bytes.Clone(ds[0]), bytes.Clone(ds[1])
		require.NoError(t, tdigest.MergeAll(ab, dt, ds[1]))
		require.NoError(t, tdigest.MergeAll(ba, dt, ds[0]))
		require.Equal(t, ab, ba, "%v: Merge(a, b) != Merge(b, a)", dt)

		ref := mustBuild(t, dt, 20, 8)
		require.NoError(t, tdigest.MergeAll(ref, dt, ds...))
		r := rand.New(rand.NewPCG(5, 5))
		for range 6 {
			perm := slices.Clone(ds)
			r.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
			dst := bytes.Clone(perm[0])
			require.NoError(t, tdigest.MergeAll(dst, dt, perm[1:]...))
			require.Equal(t, ref, dst, "%v: MergeAll depends on the order", dt)
		}
	}
}

// TestMergeIntoEmpty: merging into an empty digest of the same geometry
// gives the source's bytes; merging an empty digest changes nothing.
func TestMergeIntoEmpty(t *testing.T) {
	for _, dt := range []voi.DType{voi.TDgstClust32, voi.TDgstClust64} {
		src := randomDigests(t, dt, 20, 1, 3)[0]
		for _, d := range [][]byte{mustBuild(t, dt, 20, 8), digestOf(t, dt, 20, 8, 1, 5, 6, 7)} {
			tdigest.Reset(d, dt) // an emptied digest keeps stale bytes in its free slots
			require.NoError(t, tdigest.MergeAll(d, dt, src))
			require.Equal(t, src, d)
		}
		dst := bytes.Clone(src)
		require.NoError(t, tdigest.MergeAll(dst, dt, mustBuild(t, dt, 20, 8), mustBuild(t, dt, 7, 4)))
		require.Equal(t, src, dst)
	}
}

// TestMergeKeepsSamplesThatFit: single samples from all inputs that fit
// dst's slots are kept as they are; heavier centroids are spread and
// regrouped, and their mean is kept within rounding.
func TestMergeKeepsSamplesThatFit(t *testing.T) {
	dt := voi.TDgstClust64
	a := digestOf(t, dt, 10, 8, 1, 1, 5, 9)
	b := digestOf(t, dt, 10, 8, 2, 2, 3, 100)
	require.NoError(t, tdigest.MergeAll(a, dt, b))
	require.Equal(t, [][2]float64{{1, 1}, {2, 1}, {3, 1}, {5, 1}, {9, 1}, {100, 1}}, centroids(a, dt))

	c := digestOf(t, dt, 3, 8, 1, 10, 10, 20, 20, 30, 30, 40, 41) // compressed: heavier centroids
	d := digestOf(t, dt, 3, 8, 2, 1000, 1001, 1002, 1003)
	require.NoError(t, tdigest.MergeAll(c, dt, d))
	require.NoError(t, tdigest.Validate(c, dt))
	require.Equal(t, uint64(12), count(t, c, dt))
	m, err := tdigest.Mean(c, dt)
	require.NoError(t, err)
	require.InDelta(t, float64(10+10+20+20+30+30+40+41+1000+1001+1002+1003)/12, m, 0.01)
}

// TestMergeGeometries: sources of other slot counts and precisions merge
// into dst's geometry without error; means are truncated to dst's
// precision or clamped to its range.
func TestMergeGeometries(t *testing.T) {
	dt := voi.TDgstClust64
	dst := digestOf(t, dt, 8, 4, 1, 1, 2, 3)
	fine := mustBuild(t, dt, 30, 32)
	require.NoError(t, tdigest.MergeWeighted(fine, dt, []float64{1.03125, 7.5}, []uint64{3, 2}))
	require.NoError(t, tdigest.MergeAll(dst, dt, fine))
	require.NoError(t, tdigest.Validate(dst, dt))
	require.Equal(t, uint64(8), count(t, dst, dt))
	require.Equal(t, uint(4), tdigest.ReadCentroid(dst, dt, 0).Mu.NFBits())

	// 2^50 with 4 fractional bits does not fit 48 fractional bits (60
	// bits in all): clamped to the largest mean, 2^12 - 2^-48.
	big := digestOf(t, dt, 4, 4, 1, 1<<50)
	small := digestOf(t, dt, 4, 48, 1, 1)
	require.NoError(t, tdigest.MergeAll(small, dt, big))
	require.NoError(t, tdigest.Validate(small, dt))
	require.Equal(t, [][2]float64{{1, 1}, {math.Ldexp(1<<60-1, -48), 1}}, centroids(small, dt))
	require.Equal(t, uint64(1<<60-1)<<3|uint64(tdigest.ReadCentroid(small, dt, 0).Mu.Raw&7), tdigest.ReadCentroid(small, dt, 1).Mu.Raw)
}

// TestMergeOverflow: only a sample count past the destination's counter
// fails a merge, with voi.ErrOverflow and dst unchanged.
func TestMergeOverflow(t *testing.T) {
	dt := voi.TDgstClust32
	heavy := mustBuild(t, dt, 4, 4)
	require.NoError(t, tdigest.MergeWeighted(heavy, dt, []float64{1, 2, 3}, []uint64{1 << 30, 1 << 30, 1<<31 - 2}))
	require.Equal(t, uint64(1<<32-2), count(t, heavy, dt))
	one := digestOf(t, dt, 4, 4, 1, 5)
	require.NoError(t, tdigest.MergeAll(bytes.Clone(heavy), dt, one), "2^32-1 samples fit")

	two := digestOf(t, dt, 4, 4, 1, 5, 6)
	before := bytes.Clone(heavy)
	err := tdigest.MergeAll(heavy, dt, two)
	require.ErrorIs(t, err, voi.ErrOverflow)
	require.ErrorContains(t, err, "more than 4294967295 samples")
	require.Equal(t, before, heavy)

	// One slot cannot hold 2^31 samples of a TDGSTCLUST32 (its counts are
	// int32).
	tiny := mustBuild(t, dt, 1, 4)
	require.EqualError(t, tdigest.MergeWeighted(tiny, dt, []float64{1}, []uint64{1, 2}),
		"tdigest: MergeWeighted: 1 values, 2 weights: invalid argument")
	// A weight no centroid can count is refused, whatever the digest holds
	// (before, 2^63 into a TDGSTCLUST64 that held a sample lost 2^63
	// samples and left invalid bytes); the other values are added.
	for _, c := range []struct {
		dt voi.DType
		w  uint64
	}{{voi.TDgstClust32, 1 << 31}, {voi.TDgstClust64, 1 << 63}} {
		d := mustBuild(t, c.dt, 4, 4)
		require.NoError(t, tdigest.MergeWeighted(d, c.dt, []float64{100}, []uint64{1}))
		require.ErrorIs(t, tdigest.MergeWeighted(d, c.dt, []float64{5, 7}, []uint64{c.w, 2}), voi.ErrOverflow)
		require.NoError(t, tdigest.Validate(d, c.dt))
		n, err := tdigest.Count(d, c.dt)
		require.NoError(t, err)
		require.Equal(t, uint64(3), n, "%v", c.dt)
	}
	require.NoError(t, tdigest.MergeWeighted(tiny, dt, []float64{1}, []uint64{1<<31 - 1}))
	before = bytes.Clone(tiny)
	err = tdigest.MergeAll(tiny, dt, one)
	require.ErrorIs(t, err, voi.ErrOverflow)
	require.Equal(t, before, tiny)
}

// TestMergeErrors: a corrupt input or a destination without slots fails
// with voi.ErrInvalid and changes nothing.
func TestMergeErrors(t *testing.T) {
	for _, dt := range []voi.DType{voi.TDgstClust32, voi.TDgstClust64} {
		a := digestOf(t, dt, 10, 4, 1, 1, 2, 3)
		b := digestOf(t, dt, 10, 4, 2, 7, 8, 9)
		bad := bytes.Clone(b)
		bad[len(bad)-10] ^= 0xff
		bad[tdigest.Size(dt, 0)+6] = 7 // node 0's color
		before := bytes.Clone(a)
		err := tdigest.MergeAll(a, dt, b, bad)
		require.ErrorIs(t, err, voi.ErrInvalid)
		require.ErrorContains(t, err, "merge source 1")
		require.Equal(t, before, a)
		err = tdigest.MergeAll(bad, dt, a)
		require.ErrorIs(t, err, voi.ErrInvalid)
		require.ErrorContains(t, err, "merge destination")
		none := mustBuild(t, dt, 0, 4)
		require.ErrorIs(t, tdigest.MergeAll(none, dt, a), voi.ErrInvalid)
	}
}

// TestMergeFleetAccuracy merges fleets of per-connection digests (the
// demo's connection RTTs, and streams shared by all blobs) and checks the
// rank error against the exact samples at p50, p90, p99 and p99.9: at
// most 1% for a 20-slot digest, 0.3% for a 50-slot one, for one merge of
// all digests and for a two-level merge (groups of 8, then the groups),
// and no larger than that of caio/go-tdigest merging the same digests
// into as many centroids. The default run uses 300 blobs per fleet (caio
// for the connection fleet only); STATSBLOB_LONG=1 2000 blobs and caio
// for all.
func TestMergeFleetAccuracy(t *testing.T) {
	blobs := 300
	if long() {
		blobs = 2000
	}
	for _, g := range []accuracy.Geometry{accuracy.Small, accuracy.Large} {
		for _, dist := range accuracy.Dists {
			bound := map[uint32]float64{20: 0.01, 50: 0.003}[g.Slots]
			t.Run(dist.Name+"/"+g.DType.String(), func(t *testing.T) {
				f := accuracy.NewFleet(g, dist, blobs, accuracy.BlobSize, 1)
				require.Zero(t, f.Lost)
				one := g.Build()
				require.NoError(t, tdigest.MergeAll(one, g.DType, f.Digests...))
				require.Equal(t, uint64(len(f.Sorted)), count(t, one, g.DType))
				two := mergeTwoLevels(t, g, f.Digests)
				require.Equal(t, uint64(len(f.Sorted)), count(t, two, g.DType))
				e1, e2 := accuracy.Errors(f.Sorted, one, g.DType), accuracy.Errors(f.Sorted, two, g.DType)
				t.Logf("rank errors %% at p50/p90/p99/p99.9: one merge %.3f, two levels %.3f", pcts(e1), pcts(e2))
				require.LessOrEqual(t, accuracy.Max(e1), bound)
				require.LessOrEqual(t, accuracy.Max(e2), bound)
				if dist.Name == "conn-rtt" || long() {
					td, _ := accuracy.CaioMerged(f.Digests, g.DType, int(g.Slots))
					ec := accuracy.CaioErrors(f.Sorted, td)
					t.Logf("caio at %d centroids: %.3f", g.Slots, pcts(ec))
					require.LessOrEqual(t, accuracy.Max(e1), accuracy.Max(ec))
				}
			})
		}
	}
}

// TestMergeFleetVsCaio is issue 20's target for merged fleets of digests
// fed in either mode (C and Accurate: the same samples), against caio/go-tdigest merging the same digests into as many
// bytes as the destination's (accuracy.CaioMergedBytes): on the six
// streams of accuracy.Streams, TDGSTCLUST64 digests of 50 and 100 slots,
// blobs of 50 to 500 samples, one merge of all digests and a two-level
// merge (groups of 8, then the groups), the worst rank error over p50,
// p90, p99, p99.9 and the seeds is in no cell worse than 1.25 times
// caio's, and the geometric mean of the ratios is at most 1. Errors below
// 0.01% count as 0.01%. The default run uses 300 blobs per fleet on one
// seed; STATSBLOB_LONG=1 2,000 blobs on seeds 1 to 8 (`make accuracy`
// prints the table per seed). Seed by seed a cell can exceed the bound
// where caio's error is small by chance: bimodal at 50 slots, seed 8,
// 0.12% against caio's 0.08%, while its worst over the seeds is 0.19%
// against 0.48%.
//
// Fleets of accurate-mode digests merge to lower errors still (over the
// 8 seeds of 2,000 blobs, at most 0.085 %; Zipf exact, its runs of equal
// samples kept whole and pinned), but caio, merging the same well-placed
// centroids into its more numerous ones, comes closer: the worst over the
// seeds is within 1.25 times caio's in every cell (at most 1.22, Pareto
// at 100 slots; before runs were kept whole, 1.41 there and 1.18 on
// Zipf), and the geometric mean over both modes' 48 cells is 0.38 (0.49
// before). So the long run asserts 1.25 for both modes. On one seed of 300
// blobs caio can be much closer than the merge where both errors are tiny
// (Pareto at 100 slots: 0.040 % against 0.021 %), so the default run
// asserts accurateFleetBound per cell for them, and the geometric mean
// over both modes.
func TestMergeFleetVsCaio(t *testing.T) {
	if raceEnabled {
		t.Skip("single-goroutine arithmetic, 30 s under the race detector: run without -race")
	}
	blobs, seeds := 300, []uint64{1}
	if long() {
		blobs, seeds = 2000, []uint64{1, 2, 3, 4, 5, 6, 7, 8}
	}
	const floor = 1e-4
	var logSum float64
	var cells int
	for _, mode := range []tdigest.Mode{tdigest.C, tdigest.Accurate} {
		for _, st := range accuracy.Streams {
			for _, slots := range []uint32{50, 100} {
				g := accuracy.Geometry{DType: voi.TDgstClust64, Slots: slots, Prec: 8}
				var worst [2]float64 // over the quantiles and seeds: one merge, two levels
				worstCaio := 0.0
				for _, seed := range seeds {
					f := accuracy.NewStreamFleetMode(g, mode, st, blobs, accuracy.FleetSize, seed)
					require.Zero(t, f.Lost)
					one := g.Build()
					require.NoError(t, tdigest.MergeAll(one, g.DType, f.Digests...))
					two := mergeTwoLevels(t, g, f.Digests)
					td, _ := accuracy.CaioMergedBytes(f.Digests, g.DType, len(one))
					ec := accuracy.Max(accuracy.CaioErrors(f.Sorted, td))
					worstCaio = max(worstCaio, ec)
					for level, d := range [][]byte{one, two} {
						e := accuracy.Errors(f.Sorted, d, g.DType)
						worst[level] = max(worst[level], accuracy.Max(e))
						t.Logf("%v %s %d slots seed %d level %d: %.3f%%, caio %.3f%% (%d bytes)",
							mode, st.Name, slots, seed, level+1, pcts(e), 100*ec, accuracy.Bytes(td))
					}
				}
				for level, w := range worst {
					r := max(w, floor) / max(worstCaio, floor)
					t.Logf("%v %s %d slots level %d: worst %.3f%%, caio's %.3f%%: ratio %.2f", mode, st.Name, slots, level+1, 100*w, 100*worstCaio, r)
					if mode == tdigest.C || long() {
						require.LessOrEqual(t, r, 1.25, "%v %s %d slots level %d", mode, st.Name, slots, level+1)
					} else {
						require.LessOrEqual(t, w, accurateFleetBound, "%v %s %d slots level %d", mode, st.Name, slots, level+1)
					}
					logSum += math.Log(r)
					cells++
				}
			}
		}
	}
	gm := math.Exp(logSum / float64(cells))
	t.Logf("geometric mean of the ratios: %.3f", gm)
	require.LessOrEqual(t, gm, 1.0)
}

// TestMergeKeepsModesApart merges, in groups of 8 and then the groups,
// 20-slot digests of a fleet whose blobs are fast (RTT around 2,000) or,
// 15% of them, slow (around 200,000): the fleets on which the merge put a
// centroid into the empty stretch between the modes and p90 1.3-1.5% of
// the samples off, before combine kept groups from straddling mode gaps.
func TestMergeKeepsModesApart(t *testing.T) {
	g := accuracy.Small
	for _, seed := range []uint64{6, 16} {
		f := accuracy.NewFleet(g, accuracy.DistByName("bimodal"), 300, accuracy.BlobSize, seed)
		require.Zero(t, f.Lost)
		two := mergeTwoLevels(t, g, f.Digests)
		require.Equal(t, uint64(len(f.Sorted)), count(t, two, g.DType))
		e := accuracy.Errors(f.Sorted, two, g.DType)
		t.Logf("seed %d: rank errors %% at p50/p90/p99/p99.9 %.3f", seed, pcts(e))
		require.LessOrEqual(t, accuracy.Max(e), 0.01, "seed %d", seed)
	}
}

// accurateFleetBound bounds the worst rank error of merged fleets of
// accurate-mode digests (TestMergeFleetVsCaio): twice the worst of the
// default run (Pareto at 50 slots, 0.075 %; it was 0.003 while Zipf's
// merges were 0.19 % off).
const accurateFleetBound = 0.0015

// mergeTwoLevels is accuracy.MergeTwoLevels, which must not fail.
func mergeTwoLevels(t *testing.T, g accuracy.Geometry, digests [][]byte) []byte {
	t.Helper()
	two, err := accuracy.MergeTwoLevels(g, digests)
	require.NoError(t, err)
	return two
}

func pcts(e []float64) []float64 {
	out := make([]float64, len(e))
	for i, v := range e {
		out[i] = 100 * v
	}
	return out
}

// BenchmarkMergeAll times MergeAll of a fleet of 1000 connection digests
// (accuracy's conn-rtt and Pareto streams) into one, per merge.
func BenchmarkMergeAll(b *testing.B) {
	for _, g := range []accuracy.Geometry{accuracy.Small, accuracy.Large} {
		for _, name := range []string{"conn-rtt", "pareto"} {
			f := accuracy.NewFleet(g, accuracy.DistByName(name), 1000, accuracy.BlobSize, 1)
			dst := g.Build()
			b.Run(name+"/"+g.DType.String(), func(b *testing.B) {
				b.ReportAllocs()
				for range b.N { // not b.Loop: this file builds with go1.23 (make minver)
					if err := tdigest.MergeAll(dst, g.DType, f.Digests...); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
	// Accurate digests of eight integers: long runs of equal means.
	g := accuracy.Geometry{DType: voi.TDgstClust64, Slots: 50, Prec: 8}
	f := accuracy.NewStreamFleetMode(g, tdigest.Accurate, accuracy.StreamByName("zipf"), 1000, accuracy.FleetSize, 1)
	empty, dst := g.Build(), g.Build()
	b.Run("zipf-accurate/"+g.DType.String(), func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			copy(dst, empty)
			if err := tdigest.MergeAll(dst, g.DType, f.Digests...); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestMergeKeepsDiscreteExact: accurate digests of a few integers (a
// discrete Zipf law over 1..8, each run of equal samples split by its
// writer) merged in one step and in two levels answer every quantile
// exactly, as each digest does: runs of equal means stay whole and
// pinned through merges and merges of merges. At 50 and 100 slots the
// writers pin both sides of every run; at 20 they cannot (8 runs need 22
// slots) and match the runs' neighbouring pieces instead (exactRuns),
// whose shared means tell the merge the runs all the same: merged into
// 80 slots, as a collector's wide template, they are exact, also when no
// blob of the fleet pins a run (blobs of 1,500 to 4,500 samples). (Merged into
// 20 slots the merge pins the heaviest runs, and p90, between the runs of
// 6 and 7, is up to 1.3% of rank off; it was 4.6% before the writers
// split every run, when a merge spread the runs they had kept whole.)
func TestMergeKeepsDiscreteExact(t *testing.T) {
	zipf := accuracy.StreamByName("zipf")
	big := func(r *rand.Rand) int { return 1500 + r.IntN(3001) }
	for si, slots := range []uint32{20, 20, 50, 100} {
		for seed := range uint64(sweep(3, 1)) {
			seed++
			g := accuracy.Geometry{DType: voi.TDgstClust64, Slots: slots, Prec: 8}
			f := accuracy.NewStreamFleetMode(g, tdigest.Accurate, zipf, 2000, accuracy.FleetSize, seed)
			if si == 1 {
				// Blobs of 1,500 to 4,500 samples, every one matched: no
				// run pinned anywhere in the fleet.
				f = accuracy.NewStreamFleetMode(g, tdigest.Accurate, zipf, 200, big, seed)
			}
			if slots == 20 {
				// Runs matched, not pinned (see exactRuns): merged into
				// four times the slots, as a collector's wide template.
				g.Slots *= 4
			}
			one := g.Build()
			require.NoError(t, tdigest.MergeAll(one, g.DType, f.Digests...))
			two := mergeTwoLevels(t, g, f.Digests)
			for _, d := range [][]byte{one, two} {
				require.Equal(t, uint64(len(f.Sorted)), count(t, d, g.DType))
				for _, q := range []float64{0, 0.1, 0.3, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 0.999, 1} {
					v, err := tdigest.Quantile(d, g.DType, q)
					require.NoError(t, err)
					require.Zero(t, accuracy.RankError(f.Sorted, q, v), "%d slots, seed %d, q %v: %v", slots, seed, q, v)
				}
			}
		}
	}
}
