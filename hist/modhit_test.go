package hist

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// bruteHit is firstHit by walking the rotation for one full period.
func bruteHit(a, b, m, l, r uint64) (uint64, bool) {
	v := b % m
	for x := uint64(0); x <= m; x++ {
		if l <= v && v <= r {
			return x, true
		}
		v = (v + a) % m
	}
	return 0, false
}

func TestFirstHit(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		m := uint64(1 + r.IntN(300))
		if r.IntN(4) == 0 {
			m = 1 << r.IntN(9)
		}
		l := r.Uint64N(m)
		hi := l + r.Uint64N(m-l)
		if r.IntN(3) == 0 {
			hi = l
		}
		a, b := r.Uint64N(2*m), r.Uint64N(2*m)
		want, wok := bruteHit(a, b, m, l, hi)
		got, ok := firstHit(a, b, m, l, hi)
		require.Equal(t, wok, ok, "a=%d b=%d m=%d [%d,%d]", a, b, m, l, hi)
		if ok {
			require.Equal(t, want, got, "a=%d b=%d m=%d [%d,%d]", a, b, m, l, hi)
		}
	}
	// Large moduli: the answer is checked, and minimal against a window
	// walked back from it.
	for range 2000 {
		m := uint64(1) << (30 + r.IntN(32))
		a, b := r.Uint64N(m), r.Uint64N(m)
		l := r.Uint64N(m)
		hi := min(m-1, l+r.Uint64N(1<<r.IntN(40)))
		x, ok := firstHit(a, b, m, l, hi)
		if !ok {
			require.Zero(t, a%2, "an odd rotation of 2^k visits every residue")
			continue
		}
		v := (a*x + b) & (m - 1)
		require.True(t, l <= v && v <= hi, "a=%d b=%d m=%d [%d,%d] x=%d", a, b, m, l, hi, x)
		for y := x - min(x, 2000); y < x; y++ {
			v := (a*y + b) & (m - 1)
			require.False(t, l <= v && v <= hi, "earlier hit %d < %d", y, x)
		}
	}
}
