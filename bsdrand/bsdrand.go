// Package bsdrand is the BSD random(3) additive-feedback generator (TYPE_3:
// 31 words of state, separation 3) with srandom(3) seeding, as glibc and
// FreeBSD's libc implement it.
//
// The C reference draws from random() when a t-digest adds or compresses and
// when a dice roll has no seed. A conformance run shares one Source between
// both, so it sees exactly the sequence the C sees. A Source is not safe for
// concurrent use; give each goroutine its own or guard it.
package bsdrand

const (
	degree = 31 // words of state (TYPE_3)
	sep    = 3  // separation between the front and rear taps
)

// Source is one random(3) generator. Its zero value is not seeded; use New or
// Seed before the first Int31. A Source is a plain value: copying it copies
// the generator's position.
type Source struct {
	r     [degree]uint32
	f, b  uint8
	calls uint64
}

// New returns a Source seeded with seed, like srandom(seed).
func New(seed uint32) *Source {
	s := new(Source)
	s.Seed(seed)
	return s
}

// Seed restarts the generator as srandom(seed) does. A seed of 0 is treated
// as 1. The call counter is not touched (see ResetCalls): the C engine
// reseeds the generator itself, and callers that count draws count across
// such reseeds.
func (s *Source) Seed(seed uint32) {
	if seed == 0 {
		seed = 1
	}
	s.r[0] = seed
	for i := 1; i < degree; i++ {
		// Park–Miller "minimal standard" step in signed 32-bit arithmetic
		// (Schrage's method), exactly as srandom computes it.
		prev := int32(s.r[i-1])
		hi, lo := prev/127773, prev%127773
		w := 16807*lo - 2836*hi
		if w < 0 {
			w += 2147483647
		}
		s.r[i] = uint32(w)
	}
	s.f, s.b = sep, 0
	for i := 0; i < 10*degree; i++ {
		s.next()
	}
}

func (s *Source) next() int32 {
	s.r[s.f] += s.r[s.b]
	v := int32(s.r[s.f] >> 1)
	s.f++
	if s.f == degree {
		s.f = 0
	}
	s.b++
	if s.b == degree {
		s.b = 0
	}
	return v
}

// Int31 returns the next value, in [0, 2^31-1], like random().
func (s *Source) Int31() int32 {
	s.calls++
	return s.next()
}

// Calls reports how many values Int31 returned since the Source was made or
// ResetCalls was last called.
func (s *Source) Calls() uint64 { return s.calls }

// ResetCalls zeroes the call counter.
func (s *Source) ResetCalls() { s.calls = 0 }
