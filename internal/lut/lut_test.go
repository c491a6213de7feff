package lut_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/internal/lut"
)

func TestCounters(t *testing.T) {
	var none lut.Counters
	off, ok := none.Counter(5)
	require.False(t, ok)
	require.Zero(t, off)
	require.Zero(t, none.Bytes())

	// Keys 10, 11, 12 in the window, then above, then below; a signed
	// 32-bit order flips the sign bit.
	c := lut.Counters{T: []uint16{16, 32, 48, 64, 8}, Mask: 0xFFFFFFFF, Flip: 1 << 31, Lo: 1<<31 + 10}
	for v, want := range map[uint64]int{10: 16, 11: 32, 12: 48, 13: 64, 1 << 30: 64, 9: 8, 0: 8, 0xFFFFFFFF: 8, 0x1_0000_000A: 16} {
		off, ok := c.Counter(v)
		require.True(t, ok)
		require.Equal(t, want, off, "v %#x", v)
	}
	require.Equal(t, 10, c.Bytes())
}
