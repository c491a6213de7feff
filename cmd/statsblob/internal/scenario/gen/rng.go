package gen

// rng is the generator's own deterministic random source: SplitMix64
// (Steele, Lea, Flood 2014). Its stream is fixed by this file, so a seed
// gives the same scenario on every Go release (math/rand's streams are not
// promised to stay the same).
type rng struct{ s uint64 }

func newRNG(seed uint64) *rng { return &rng{s: seed ^ 0x5DEECE66D1CE4E5B} }

func (r *rng) u64() uint64 {
	r.s += 0x9E3779B97F4A7C15
	z := r.s
	z = (z ^ z>>30) * 0xBF58476D1CE4E5B9
	z = (z ^ z>>27) * 0x94D049BB133111EB
	return z ^ z>>31
}

// intn returns a number in [0, n); n must be > 0. The modulo bias is below
// 2^-40 for the small n the generator uses.
func (r *rng) intn(n int) int { return int(r.u64() % uint64(n)) }

// between returns a number in [lo, hi].
func (r *rng) between(lo, hi int) int { return lo + r.intn(hi-lo+1) }

// oneIn reports true with probability 1/n.
func (r *rng) oneIn(n int) bool { return r.intn(n) == 0 }

// pct reports true with probability p/100.
func (r *rng) pct(p int) bool { return r.intn(100) < p }

// pick returns one of the strings.
func pick[T any](r *rng, xs ...T) T { return xs[r.intn(len(xs))] }

// weighted returns an index into w, drawn with the given weights.
func (r *rng) weighted(w []int) int {
	total := 0
	for _, x := range w {
		total += x
	}
	n := r.intn(total)
	for i, x := range w {
		if n < x {
			return i
		}
		n -= x
	}
	return len(w) - 1
}

// bitsn returns a random number of at most n bits (n in 0..64).
func (r *rng) bitsn(n int) uint64 {
	if n <= 0 {
		return 0
	}
	return r.u64() >> (64 - n)
}

// logU returns a number spread over magnitudes: n random bits for n drawn
// in [0, maxBits].
func (r *rng) logU(maxBits int) uint64 { return r.bitsn(r.between(0, maxBits)) }
