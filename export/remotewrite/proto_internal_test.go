package remotewrite

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Encoding then decoding gives the series back, whatever the lengths
// (lengths past 127 bytes move the body for a longer length prefix).
func FuzzRequestRoundTrip(f *testing.F) {
	f.Add("a", "b", 1.5, int64(1700000000000), uint64(3), int32(-1), 2, int32(4))
	f.Add(strings.Repeat("x", 200), "", math.Inf(-1), int64(-5), uint64(0), int32(8), 300, int32(-4))
	f.Fuzz(func(t *testing.T, name, value string, v float64, ts int64, c uint64, off int32, n int, schema int32) {
		n = min(max(n, 0), 1000)
		counts := make([]uint64, n)
		for i := range counts {
			counts[i] = c + uint64(i%7)
		}
		if n == 0 {
			counts = nil
		}
		want := []series{
			{labels: []label{{"__name__", name}, {"x", value}}, samples: []sample{{v, ts}, {-v, ts + 1}}},
			{labels: []label{{"__name__", value}}, histograms: []nativeHist{{count: c, sum: v, schema: schema, zeroCount: c / 2,
				zeroThresh: 0, posOffset: off, pos: counts, negOffset: -off, neg: counts, ts: ts}}},
		}
		got, _, err := decodeRequest(appendRequest(nil, want, nil))
		require.NoError(t, err)
		require.Len(t, got, 2)
		if math.IsNaN(v) { // NaN != NaN: compare the bits
			require.Equal(t, math.Float64bits(v), math.Float64bits(got[0].samples[0].value))
			got[0].samples[0].value, got[0].samples[1].value, got[1].histograms[0].sum = 0, 0, 0
			want[0].samples[0].value, want[0].samples[1].value, want[1].histograms[0].sum = 0, 0, 0
		}
		if len(counts) == 0 {
			got[1].histograms[0].posOffset, got[1].histograms[0].negOffset = off, -off
		}
		require.Equal(t, want, got)
	})
}
