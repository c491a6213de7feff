package peers

import (
	"math"
	"sync"

	"github.com/statsblob/statsblob/bench"
)

// LognormalSeed is where the xorshift64 stream of the lognormal ring
// starts (bench.StreamSeed's ring is the uniform and logish rings').
const LognormalSeed = 0x2545F4914F6CDD1D

// LognormalMedian is the median of the lognormal ring's values; their
// logarithm has standard deviation 1 (a latency in µs with a 1 ms median:
// p99 ≈ 10 ms, p99.9 ≈ 22 ms).
const LognormalMedian = 1000

// Lognormal maps two stream values to a lognormal value rounded to an
// integer, by the Box–Muller transform (the cosine half). It is
// deterministic for a given platform's math.Log, math.Cos and math.Exp.
func Lognormal(x, y uint64) uint64 {
	u1 := (float64(x>>11) + 1) / (1 << 53) // (0, 1]: no log(0)
	u2 := float64(y>>11) / (1 << 53)
	z := math.Sqrt(-2*math.Log(u1)) * math.Cos(2*math.Pi*u2)
	return uint64(math.Round(LognormalMedian * math.Exp(z)))
}

// LognormalRing returns the ring of Lognormal values (shared; read-only),
// bench.RingSize of them like the other rings.
var LognormalRing = sync.OnceValue(func() []uint64 {
	r := make([]uint64, bench.RingSize)
	s := bench.Stream(LognormalSeed)
	for i := range r {
		r[i] = Lognormal(s.Next(), s.Next())
	}
	return r
})

// Dist is a value stream the peers are measured on.
type Dist struct {
	Name string
	Ring func() []uint64 // bench.RingSize values, shared, read-only
}

// Dists returns the three streams: bench.UniformRing (0..999),
// bench.LogishRing (0..2095104, spread over 16 octaves) and LognormalRing.
func Dists() []Dist {
	return []Dist{
		{"uniform", bench.UniformRing},
		{"logish", bench.LogishRing},
		{"lognormal", LognormalRing},
	}
}
