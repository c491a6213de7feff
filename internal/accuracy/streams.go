package accuracy

import (
	"math"
	"math/rand/v2"
	"slices"
)

// FleetStream draws the samples of one blob of a fleet: n values
// (non-negative integers, as an INT_U32 VOI holds) in the order the blob
// is fed them. (Streams are the same six laws for single digests, with
// the parameters their targets were measured on; the two should become one.)
type FleetStream struct {
	Name  string
	Batch func(r *rand.Rand, n int) []uint32
}

// draw returns a Batch of n independent draws of sample.
func draw(sample func(r *rand.Rand) uint32) func(r *rand.Rand, n int) []uint32 {
	return func(r *rand.Rand, n int) []uint32 {
		out := make([]uint32, n)
		for i := range out {
			out[i] = sample(r)
		}
		return out
	}
}

// FleetStreams are issue 20's six streams, every blob drawing from the same
// distribution: lognormal (median 1,000, σ = 1), Pareto (α = 1.1 from
// 1,000), bimodal (90 % around 5,000 and 10 % around 200,000, each
// lognormal with σ = 0.2), a discrete Zipf over 1..10 (s = 1.2), the
// lognormal fed to each blob as an ascending sorted batch, and uniform
// over 0..99,999.
var FleetStreams = []FleetStream{
	{"lognormal", draw(func(r *rand.Rand) uint32 { return clampU32(lognormal(r, math.Log(1000), 1)) })},
	{"pareto", draw(func(r *rand.Rand) uint32 { return clampU32(1000 / math.Pow(1-r.Float64(), 1/1.1)) })},
	{"bimodal", draw(func(r *rand.Rand) uint32 {
		if r.IntN(10) == 0 {
			return clampU32(lognormal(r, math.Log(200000), 0.2))
		}
		return clampU32(lognormal(r, math.Log(5000), 0.2))
	})},
	{"zipf", func(r *rand.Rand, n int) []uint32 {
		z := rand.NewZipf(r, 1.2, 1, 9)
		out := make([]uint32, n)
		for i := range out {
			out[i] = uint32(z.Uint64()) + 1
		}
		return out
	}},
	{"sorted", func(r *rand.Rand, n int) []uint32 {
		out := make([]uint32, n)
		for i := range out {
			out[i] = clampU32(lognormal(r, math.Log(1000), 1))
		}
		slices.Sort(out)
		return out
	}},
	{"uniform", draw(func(r *rand.Rand) uint32 { return uint32(r.IntN(100000)) })},
}

// FleetStreamByName returns the FleetStream of that name.
func FleetStreamByName(name string) FleetStream {
	for _, s := range FleetStreams {
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
// size(r) samples of s, all seeded by seed.
func NewStreamFleet(g Geometry, s FleetStream, n int, size func(r *rand.Rand) int, seed uint64) Fleet {
	r := rand.New(rand.NewPCG(seed, 0xf1ee7))
	return newFleet(g, n, seed, func() []uint32 { return s.Batch(r, size(r)) })
}
