// Package stream is the value stream of the conformance scenarios
// (testdata/conformance/FORMAT.md section 9): a xorshift64 generator and
// the distributions that map its values. The conformance runner, the
// golden replays of hist and tdigest, the benchmarks, the demo and tests
// draw from it, so a value sequence is defined once.
//
// It sits at the floor of the package map (README.md): it imports only
// internal/literal.
package stream

import (
	"fmt"
	"math"
	"strings"

	"github.com/statsblob/statsblob/internal/literal"
)

// Seed is where a scenario's stream starts (and the benchmark rings').
const Seed = 0x9E3779B97F4A7C15

// Stream is the xorshift64 value stream (shifts 13, 7, 17). Its zero value
// stays at zero; start it with a non-zero seed: s := Stream(Seed).
type Stream uint64

// Next advances the stream and returns its new state.
func (s *Stream) Next() uint64 {
	x := uint64(*s)
	x ^= x << 13
	x ^= x >> 7
	x ^= x << 17
	*s = Stream(x)
	return x
}

// Unit advances the stream and returns a uniform float in (0, 1).
func (s *Stream) Unit() float64 { return (float64(s.Next()>>11) + 0.5) / (1 << 53) }

// Lognormal advances the stream twice and returns exp(mu + sigma·N(0,1))
// (Box–Muller, the cosine half).
func (s *Stream) Lognormal(mu, sigma float64) float64 {
	n := math.Sqrt(-2*math.Log(s.Unit())) * math.Cos(2*math.Pi*s.Unit())
	return math.Exp(mu + sigma*n)
}

// Dist maps a stream value to an update value.
type Dist func(x uint64) uint64

// Uniform maps a stream value to 0..999 ("uniform").
func Uniform(x uint64) uint64 { return x % 1000 }

// Logish maps a stream value to a log-spread value: 10 bits shifted by
// 0..15, divided by 16 ("logish").
func Logish(x uint64) uint64 { return (((x >> 32) & 1023) << ((x >> 16) & 15)) >> 4 }

// Signed maps a stream value to -500..499 as a 64-bit pattern ("signed").
func Signed(x uint64) uint64 { return x%1000 - 500 }

// Mod returns the distribution x mod k ("mod:K"); k must not be 0.
func Mod(k uint64) Dist { return func(x uint64) uint64 { return x % k } }

// ParseDist returns the distribution a scenario names: "uniform",
// "logish", "signed" or "mod:K" with K a non-zero INT literal. Other names
// give an error wrapping literal.ErrSyntax.
func ParseDist(name string) (Dist, error) {
	switch name {
	case "uniform":
		return Uniform, nil
	case "logish":
		return Logish, nil
	case "signed":
		return Signed, nil
	}
	if ks, ok := strings.CutPrefix(name, "mod:"); ok {
		if k, err := literal.Int(ks); err == nil && k != 0 {
			return Mod(k), nil
		}
	}
	return nil, fmt.Errorf("%w: distribution %q", literal.ErrSyntax, name)
}

// Ring returns n values of dist drawn from the stream that starts at seed.
func Ring(seed uint64, n int, dist Dist) []uint64 {
	r := make([]uint64, n)
	s := Stream(seed)
	for i := range r {
		r[i] = dist(s.Next())
	}
	return r
}
