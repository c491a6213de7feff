package tdigest

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/voi"
)

// fitState feeds n samples of draw to an accurate digest of TDGSTCLUST32
// (slots, 4), clamped to its range, and returns its cache after the last flush: c.state holds the
// finer centroids fit groups.
func fitState(t *testing.T, slots uint32, n int, draw func() float64) *accCache[node32] {
	t.Helper()
	d, err := Build(voi.TDgstClust32, slots, 4)
	require.NoError(t, err)
	c := new(accCache[node32])
	require.True(t, c.init(d))
	for range n {
		require.NoError(t, c.update(d, voi.IntU32, uint64(min(draw(), 1<<24-1))))
	}
	c.flush(d, true)
	return c
}

// TestFit: fit's grouping is never worse than partition's by its own
// measure (knotError), and is better on the smooth streams; a greedy
// pass at a tolerance keeps every finer centroid within it (the cone and
// the look-ahead to the next knot are what guarantee that: a pass that
// broke either would overshoot); a tolerance too small for the slots
// gives nil.
func TestFit(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		name   string
		draw   func() float64
		better bool // fit must improve on partition
	}{
		{"lognormal", func() float64 { return 1000 * math.Exp(r.NormFloat64()) }, true},
		{"pareto", func() float64 { return 1000 / math.Pow(1-r.Float64(), 1/1.1) }, true},
		{"uniform", func() float64 { return float64(r.IntN(1_000_001)) }, false},
		{"bimodal", func() float64 {
			if r.IntN(10) == 0 {
				return 200000 * math.Exp(0.1*r.NormFloat64())
			}
			return 5000 * math.Exp(0.1*r.NormFloat64())
		}, false},
	} {
		for _, slots := range []uint32{8, 20, 50} {
			c := fitState(t, slots, 100_000, tc.draw)
			items := c.state
			var total uint64
			for _, it := range items {
				total += it.n()
			}
			part := append([]int32(nil), c.partition(items, total, c.maxn, true)...)
			got := c.fit(items, c.maxn, append([]int32(nil), part...))
			require.LessOrEqual(t, len(got)-1, c.maxn, "%s/%d", tc.name, slots)
			require.Equal(t, int32(0), got[0])
			require.Equal(t, int32(len(items)), got[len(got)-1])
			ep, ef := c.knotError(items, part), c.knotError(items, got)
			t.Logf("%s/%d: partition %.0f, fit %.0f samples", tc.name, slots, ep, ef)
			require.LessOrEqual(t, ef, ep, "%s/%d", tc.name, slots)
			if tc.better {
				require.Less(t, ef, 0.8*ep, "%s/%d", tc.name, slots)
			}
			forced := append([]int32(nil), c.modeEdges(items, c.maxn)...)
			for _, tol := range []float64{ep, ep / 2, ep / 4} {
				cuts := c.fitPass(items, forced, tol, len(items))
				require.NotNil(t, cuts)
				require.LessOrEqual(t, c.knotError(items, cuts), tol*(1+1e-9), "%s/%d at %.0f", tc.name, slots, tol)
			}
			require.Nil(t, c.fitPass(items, forced, ep/1000, c.maxn), "%s/%d", tc.name, slots)
		}
	}
}

// TestFitAtViews: a full buffer's flush writes the bytes grouped by
// partition alone; the next view rewrites them from the same finer
// centroids with fit (same sample count and compcnt, other groups), and a
// view after that changes nothing; a flush for a merge writes partition's
// groups again, and a view fits them again.
func TestFitAtViews(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	d, err := Build(voi.TDgstClust32, 20, 4)
	require.NoError(t, err)
	c := new(accCache[node32])
	require.True(t, c.init(d))
	for range 4 * cap(c.buf) { // ends on a full buffer's flush
		require.NoError(t, c.update(d, voi.IntU32, uint64(1000*math.Exp(r.NormFloat64()))))
	}
	require.Empty(t, c.buf)
	require.False(t, c.fitted)
	before := append([]byte(nil), d...)
	infoBefore, err := ReadInfo(d, voi.TDgstClust32)
	require.NoError(t, err)

	c.flush(d, true)
	require.True(t, c.fitted)
	require.NotEqual(t, before, d, "the view did not refit the bytes")
	info, err := ReadInfo(d, voi.TDgstClust32)
	require.NoError(t, err)
	require.Equal(t, infoBefore.SmplCnt, info.SmplCnt)
	require.Equal(t, infoBefore.CompCnt, info.CompCnt)
	require.NoError(t, Validate(d, voi.TDgstClust32))

	after := append([]byte(nil), d...)
	c.flush(d, true)
	require.Equal(t, after, d)

	// A flush for a merge gives partition's groups back, and the next
	// view the fitted ones.
	c.flush(d, false)
	require.False(t, c.fitted)
	require.Equal(t, before, d)
	c.flush(d, true)
	require.Equal(t, after, d)
}
