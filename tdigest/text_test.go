package tdigest_test

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/qmath"
	"github.com/statsblob/statsblob/tdigest"
)

// TestAppendMeanMatchesQ holds the centroid mean formatter to qmath's text
// of the same Q, for every control value, both signs, and values from the
// edges of each kind's range.
func TestAppendMeanMatchesQ(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	edges := []uint64{0, 1, 7, 8, 15, 16, 1 << 27, 1<<31 - 1, 1 << 31, 1<<32 - 1, 1 << 59, 1<<63 - 1, 1 << 63, 1<<64 - 1}
	for i := range 20000 {
		raw := r.Uint64()
		if i < len(edges)*8 {
			raw = edges[i/8]&^7 | uint64(i%8)
		}
		switch i % 3 {
		case 1:
			raw &= 0xffff // small magnitudes
		case 2:
			raw = raw&^(1<<63) | (raw&1)<<63
		}
		for _, is32 := range []bool{true, false} {
			kind, v := qmath.S64, raw
			if is32 {
				kind, v = qmath.S32, uint64(uint32(raw))
			}
			want := string(qmath.Q{Raw: v, Kind: kind}.AppendText([]byte("x")))
			require.Equal(t, want, string(tdigest.AppendMean([]byte("x"), v, is32)), "raw %#x, 32-bit %v", v, is32)
		}
	}
}
