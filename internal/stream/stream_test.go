package stream_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/internal/literal"
	"github.com/statsblob/statsblob/internal/stream"
)

// TestStream: the first values of xorshift64 (13, 7, 17) from 1 and from
// Seed, computed by hand from the shifts.
func TestStream(t *testing.T) {
	s := stream.Stream(1)
	x := uint64(1)
	x ^= x << 13 // 0x2001
	x ^= x >> 7  // 0x2001 ^ 0x40 = 0x2041
	x ^= x << 17 // 0x2041 ^ 0x40820000 = 0x40822041
	require.Equal(t, uint64(0x40822041), x)
	require.Equal(t, x, s.Next())
	require.Equal(t, stream.Stream(0x40822041), s)

	var z stream.Stream
	require.Zero(t, z.Next(), "the zero stream stays at zero")

	r := stream.Ring(stream.Seed, 3, stream.Uniform)
	s = stream.Stream(stream.Seed)
	for i := range r {
		require.Equal(t, s.Next()%1000, r[i])
	}
}

func TestDists(t *testing.T) {
	const x = 0x0123_4567_89AB_CDEF
	for _, c := range []struct {
		name string
		want uint64
	}{
		{"uniform", x % 1000},
		{"logish", ((x >> 32 & 1023) << (x >> 16 & 15)) >> 4},
		{"signed", x%1000 - 500},
		{"mod:7", x % 7},
		{"mod:0x10", x % 16},
	} {
		d, err := stream.ParseDist(c.name)
		require.NoError(t, err, c.name)
		require.Equal(t, c.want, d(x), c.name)
	}
	require.Equal(t, uint64(1<<64-500), stream.Signed(0))
	for _, bad := range []string{"", "normal", "mod:", "mod:0", "mod:x"} {
		_, err := stream.ParseDist(bad)
		require.ErrorIs(t, err, literal.ErrSyntax, bad)
	}
}

func TestUnitAndLognormal(t *testing.T) {
	s := stream.Stream(stream.Seed)
	for range 10000 {
		u := s.Unit()
		require.True(t, u > 0 && u < 1, "%g", u)
	}
	s = stream.Stream(stream.Seed)
	c := s
	u1, u2 := c.Unit(), c.Unit()
	want := math.Exp(3 + 0.5*math.Sqrt(-2*math.Log(u1))*math.Cos(2*math.Pi*u2))
	require.Equal(t, want, s.Lognormal(3, 0.5))
	require.Equal(t, c, s, "Lognormal draws two values")
}
