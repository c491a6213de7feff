package accuracy

import (
	"math"
	"math/rand/v2"
	"slices"

	"github.com/statsblob/statsblob/tdigest"
)

// Stream is one of the sample streams of the accuracy targets (issue 20):
// Draw returns n samples (non-negative integers, as an INT_U32 VOI holds)
// drawn from r, in the order they are fed. A single digest is fed one
// Gen; each blob of a fleet one Draw (NewStreamFleet).
type Stream struct {
	Name string
	Draw func(r *rand.Rand, n int) []uint32
}

// Gen returns n samples of s drawn with seed.
func (s Stream) Gen(n int, seed uint64) []uint32 {
	return s.Draw(rand.New(rand.NewPCG(seed, 0x57e4)), n)
}

// Streams are the six streams the accurate mode's targets are stated on:
// latencies in µs with a lognormal shape (median 1 ms, σ = 1), a Pareto
// tail (α = 1.1 from 1 ms), a bimodal mix (90% near 5 ms, 10% near
// 200 ms, each lognormal with σ = 0.1), a discrete Zipf law over the
// integers 1..8 (P(k) ∝ 1/k), the lognormal samples in ascending order (a
// batch replayed sorted; in a fleet, each blob's batch), and a uniform law
// over 0..10^6.
var Streams = []Stream{
	{"lognormal", draw(func(r *rand.Rand) uint32 { return clampU32(lognormal(r, math.Log(1000), 1)) })},
	{"pareto", draw(func(r *rand.Rand) uint32 { return clampU32(1000 / math.Pow(1-r.Float64(), 1/1.1)) })},
	{"bimodal", draw(func(r *rand.Rand) uint32 {
		if r.IntN(10) == 0 {
			return clampU32(200000 * lognormal(r, 0, 0.1))
		}
		return clampU32(5000 * lognormal(r, 0, 0.1))
	})},
	{"zipf", draw(func(r *rand.Rand) uint32 {
		// P(k) ∝ 1/k over 1..8, by inversion.
		u := r.Float64() * zipfH8
		for k := 1; ; k++ {
			if u -= 1 / float64(k); u < 0 || k == 8 {
				return uint32(k)
			}
		}
	})},
	{"sorted", func(r *rand.Rand, n int) []uint32 {
		s := draw(func(r *rand.Rand) uint32 { return clampU32(lognormal(r, math.Log(1000), 1)) })(r, n)
		slices.Sort(s)
		return s
	}},
	{"uniform", draw(func(r *rand.Rand) uint32 { return uint32(r.IntN(1_000_001)) })},
}

// zipfH8 is the harmonic number H_8.
const zipfH8 = 1 + 1.0/2 + 1.0/3 + 1.0/4 + 1.0/5 + 1.0/6 + 1.0/7 + 1.0/8

// draw returns a Draw of n independent draws of sample.
func draw(sample func(r *rand.Rand) uint32) func(r *rand.Rand, n int) []uint32 {
	return func(r *rand.Rand, n int) []uint32 {
		out := make([]uint32, n)
		for i := range out {
			out[i] = sample(r)
		}
		return out
	}
}

// StreamByName returns the Stream of that name.
func StreamByName(name string) Stream {
	for _, s := range Streams {
		if s.Name == name {
			return s
		}
	}
	panic("accuracy: no stream " + name)
}

// FleetSize draws a fleet blob's sample count for issue 20's fleets: 50 to
// 500.
func FleetSize(r *rand.Rand) int { return 50 + r.IntN(451) }

// NewStreamFleet returns n digests of geometry g, blob i fed a batch of
// size(r) samples of s, all seeded by seed, in the C's clustering.
func NewStreamFleet(g Geometry, s Stream, n int, size func(r *rand.Rand) int, seed uint64) Fleet {
	return NewStreamFleetMode(g, tdigest.C, s, n, size, seed)
}

// NewStreamFleetMode is NewStreamFleet with the digests fed in mode m:
// the same samples whatever the mode.
func NewStreamFleetMode(g Geometry, m tdigest.Mode, s Stream, n int, size func(r *rand.Rand) int, seed uint64) Fleet {
	r := rand.New(rand.NewPCG(seed, 0xf1ee7))
	return newFleetMode(g, m, n, seed, func() []uint32 { return s.Draw(r, size(r)) })
}
