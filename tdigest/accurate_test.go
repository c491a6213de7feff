package tdigest_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/internal/accuracy"
	"github.com/statsblob/statsblob/tdigest"
	"github.com/statsblob/statsblob/voi"
)

// TestAccurateBounds asserts the accurate mode's worst rank error over
// p50, p90, p99 and p99.9 on each stream of the targets, 10^5 samples, at
// 20 and 50 slots of TDGSTCLUST32(·,4), for seed 1 (seeds 1 to 3 with
// STATSBLOB_LONG=1): at most the stated bound, and better than the C's
// clustering of the same samples (at 20 slots; at 50 too in the long run),
// or as good on uniform samples. Zipf's integers are answered as
// blob.Stat.Quantile answers an integer VOI, rounded to the nearest
// integer: exactly (see exactRuns).
// (make accuracy prints the full tables, beside the peers.)
func TestAccurateBounds(t *testing.T) {
	// bounds[stream] = {20 slots, 50 slots}, in rank (0.01 = 1%): about a
	// quarter over the worst of seeds 1 to 3 with the fitted values
	// (fitKnots; without them lognormal at 20 slots was off by 0.40-0.43%).
	bounds := map[string][2]float64{
		"lognormal": {0.0028, 0.0005},
		"pareto":    {0.0038, 0.0007},
		"bimodal":   {0.0013, 0.0012},
		"zipf":      {0, 0},
		"sorted":    {0.0028, 0.0003},
		"uniform":   {0.0006, 0.0005},
	}
	for _, st := range accuracy.Streams {
		for si, slots := range []uint32{20, 50} {
			g := accuracy.Geometry{DType: voi.TDgstClust32, Slots: slots, Prec: 4}
			for seed := range uint64(sweep(3, 1)) {
				seed++
				s := st.Gen(100_000, seed)
				fa := accuracy.FeedMode(g, tdigest.Accurate, s, seed)
				require.Zero(t, fa.Lost)
				errors := accuracy.Errors
				if st.Name == "zipf" {
					errors = accuracy.IntErrors
				}
				ea := accuracy.Max(errors(fa.Sorted, fa.Digests[0], g.DType))
				t.Logf("%s %d slots seed %d: accurate %.4f%%", st.Name, slots, seed, 100*ea)
				assert.LessOrEqual(t, ea, bounds[st.Name][si], "%s, %d slots, seed %d", st.Name, slots, seed)
				if slots == 20 || long() {
					fc := accuracy.FeedMode(g, tdigest.C, s, seed)
					ec := accuracy.Max(errors(fc.Sorted, fc.Digests[0], g.DType))
					t.Logf("%s %d slots seed %d: C %.4f%%", st.Name, slots, seed, 100*ec)
					// (On uniform samples at 50 slots the C's is as good:
					// within 0.02 point of rank either way.)
					assert.Less(t, ea, ec+0.0002, "%s, %d slots, seed %d", st.Name, slots, seed)
				}
			}
		}
	}
}

// sweep is n with STATSBLOB_LONG=1 (see long), else short.
func sweep(n, short int) int {
	if long() {
		return n
	}
	return short
}

// TestAccurateModeEdgeAtScale: 10^7 samples of the bimodal stream into
// a 20-slot digest, whose modes' extreme samples lie alone beside the
// stretch between them: the groups keep off the stretch to the end (when
// a group of the finer centroids straddled it at 5.5·10^6 samples, p99
// was off by 0.49% of rank; influx at equal bytes 0.10%).
func TestAccurateModeEdgeAtScale(t *testing.T) {
	if raceEnabled || testing.Short() {
		t.Skip("10^7 updates")
	}
	g := accuracy.Geometry{DType: voi.TDgstClust32, Slots: 20, Prec: 4}
	s := accuracy.StreamByName("bimodal").Gen(10_000_000, 1)
	f := accuracy.FeedMode(g, tdigest.Accurate, s, 1)
	errs := accuracy.Errors(f.Sorted, f.Digests[0], g.DType)
	t.Logf("p50..p99.9: %v", errs)
	require.LessOrEqual(t, accuracy.Max(errs[1:]), 0.001, "p90..p99.9")
	require.LessOrEqual(t, errs[0], 0.002, "p50")
}
