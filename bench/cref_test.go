package bench_test

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/bench"
	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/internal/stream"
	"github.com/statsblob/statsblob/internal/tcpstats"
	"github.com/statsblob/statsblob/voi"
)

// BenchmarkCref runs the Go twins of the C reference's benchmark cases;
// sub-benchmark names are the C's case names.
func BenchmarkCref(b *testing.B) {
	for _, c := range bench.Cases() {
		b.Run(c.Name, c.Bench)
	}
}

func TestRings(t *testing.T) {
	// The first values of the stream from 0x9E3779B97F4A7C15, as the C
	// harness fills its rings.
	s := bench.Stream(bench.StreamSeed)
	x := s.Next()
	if bench.UniformRing()[0] != x%1000 || bench.LogishRing()[0] != stream.Logish(x) {
		t.Fatal("rings do not start with the stream's first value")
	}
	if len(bench.UniformRing()) != bench.RingSize {
		t.Fatal("ring size")
	}
}

func TestTCPDefaultOpsSucceed(t *testing.T) {
	// The fixed C reference accepts every tcp_default update (CREF_BENCH:
	// "every update succeeds"); so must we.
	bl, err := bench.NewTCPDefault()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100000; i++ {
		if err := bench.TCPDefaultOp(bl, i); err != nil {
			t.Fatalf("operation %d: %v", i, err)
		}
	}
}

// BenchmarkTCPDefaultVOI splits tcp_default by VOI: after 10^5 operations
// of the case, only VOI k's operations (i*10+k), so each sub-benchmark
// times one VOI's typed update on a warm blob. (A C driver gets the same
// split by timing tcp_default's operation i*10+k after the same warm-up.)
func BenchmarkTCPDefaultVOI(b *testing.B) {
	for k := range 10 {
		b.Run(fmt.Sprint(k), func(b *testing.B) {
			bl, err := bench.NewTCPDefault()
			if err != nil {
				b.Fatal(err)
			}
			for i := range 100000 {
				_ = bench.TCPDefaultOp(bl, i)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				_ = bench.TCPDefaultOp(bl, i*10+k)
			}
		})
	}
}

func TestFleets(t *testing.T) {
	f, err := bench.TCPFleet(50, bench.CollectorSeed)
	require.NoError(t, err)
	require.Len(t, f.Wire, 50)
	for i, w := range f.Wire {
		require.Equal(t, 1656, len(w))
		bl, err := blob.FromBytes(w, nil)
		require.NoError(t, err)
		// The blob's RTT extremes are those of the samples returned.
		max, err := bl.FetchU32(tcpstats.RTT, voi.Max)
		require.NoError(t, err)
		min, err := bl.FetchU32(tcpstats.RTT, voi.Min)
		require.NoError(t, err)
		require.Equal(t, uint32(slices.Max(f.RTTs[i])), max, "connection %d", i)
		require.Equal(t, uint32(slices.Min(f.RTTs[i])), min, "connection %d", i)
		require.GreaterOrEqual(t, len(f.RTTs[i]), 20)
	}
	l, err := bench.LargeFleet(2)
	require.NoError(t, err)
	require.Equal(t, 23368, len(l.Wire[0]))
	_, err = blob.FromBytes(l.Wire[1], nil)
	require.NoError(t, err)
	require.False(t, bytes.Equal(l.Wire[0], l.Wire[1]))
}
