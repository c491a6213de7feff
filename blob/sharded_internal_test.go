package blob

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/bsdrand"
	"github.com/statsblob/statsblob/internal/accuracy"
	"github.com/statsblob/statsblob/tdigest"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// shardedTemplate has one INT_U32 VOI with MAX, MIN and a t-digest of g.
func shardedTemplate(t testing.TB, g accuracy.Geometry) *tpl.Template {
	t.Helper()
	tp, err := tpl.NewRegistry().New(fmt.Sprintf("SHARDED_%v_%d", g.DType, g.Slots))
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "lat", DType: voi.IntU32,
		Stats: []tpl.StatSpec{tpl.Max(), tpl.Min(), tpl.TDigest(g.DType, g.Slots, g.Prec)}}))
	return tp
}

// feedShards sends n samples of dist to the shards of s in turn (as
// writers on as many processors would spread them) and to one blob, and
// returns all the samples and each shard's, sorted.
func feedShards(t testing.TB, s *Sharded, single *Blob, dist accuracy.Dist, n int, seed uint64) ([]float64, [][]float64) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 7))
	base := 0.0
	if dist.Base != nil {
		base = dist.Base(r)
	}
	samples := make([]float64, 0, n)
	per := make([][]float64, len(s.shards))
	for i := range n {
		v := dist.Sample(r, base)
		k := i % len(s.shards)
		require.NoError(t, s.shards[k].b.UpdateU32(0, v))
		require.NoError(t, single.UpdateU32(0, v))
		samples = append(samples, float64(v))
		per[k] = append(per[k], float64(v))
	}
	slices.Sort(samples)
	for _, p := range per {
		slices.Sort(p)
	}
	return samples, per
}

// TestShardedSnapshotAccuracy feeds 5·10^4 samples of the stream
// (200 + Exp(3000)) and of one connection's RTTs to Sharded blobs of 1, 2
// and 8 shards in turn, and to one blob with shard 0's random source.
// The snapshot holds exactly the samples; with one shard its digest is the
// single blob's, byte for byte. With more, its tails (p99, p99.9) are
// within 1% of rank for a 20-slot digest and 0.3% for a 50-slot one. Its
// middle (p50, p90) is limited by the shards' own C digests, which the C's
// clustering leaves off by up to 9% (20 slots) and 2.4% (50 slots) there,
// against their own samples, in our runs; one blob fed all the samples is
// off by up to 5.9% and 0.8% (README, Accuracy). So the middle is
// asserted against them: no worse than the worst shard's own error (the
// merge adds none of its own beyond its inputs'), and no more than 2
// points (20 slots) or 0.5 points (50 slots) of rank worse than the single
// blob's (measured at seeds 1 to 3: at most 1.15 points worse at 20
// slots, never worse at 50).
func TestShardedSnapshotAccuracy(t *testing.T) {
	n := 50_000 // 10^5 with STATSBLOB_LONG=1
	if os.Getenv("STATSBLOB_LONG") != "" {
		n = 100_000
	}
	for _, g := range []accuracy.Geometry{accuracy.Small, accuracy.Large} {
		tp := shardedTemplate(t, g)
		tail, margin := 0.01, 0.02
		if g.Slots == 50 {
			tail, margin = 0.003, 0.005
		}
		for _, dn := range []string{"exp", "conn-rtt"} {
			for _, k := range []int{1, 2, 8} {
				t.Run(fmt.Sprintf("%v/%s/%d shards", g.DType, dn, k), func(t *testing.T) {
					s := NewSharded(tp, k, nil)
					single := New(tp, &Env{Rand: bsdrand.New(1)})
					samples, per := feedShards(t, s, single, accuracy.DistByName(dn), n, 1)
					// Each shard's own error at p50 and p90, against its samples.
					shardMid := 0.0
					for i := range s.shards {
						st, err := s.shards[i].b.Fetch(0, voi.TDgst)
						require.NoError(t, err)
						shardMid = max(shardMid, accuracy.Max(accuracy.Errors(per[i], st.Data, st.DType)[:2]))
					}
					snap, err := s.Snapshot(false)
					require.NoError(t, err)
					require.NoError(t, Validate(snap.Bytes()))
					st, err := snap.Fetch(0, voi.TDgst)
					require.NoError(t, err)
					c, err := tdigest.Count(st.Data, st.DType)
					require.NoError(t, err)
					require.Equal(t, uint64(n), c)
					ss, err := single.Fetch(0, voi.TDgst)
					require.NoError(t, err)
					es, e1 := accuracy.Errors(samples, ss.Data, ss.DType), accuracy.Errors(samples, st.Data, st.DType)
					t.Logf("rank errors %% at p50/p90/p99/p99.9: single blob %.2f, snapshot %.2f; worst shard at p50/p90 %.2f",
						pcts(es), pcts(e1), 100*shardMid)
					if k == 1 {
						require.Equal(t, ss.Data, st.Data)
						return
					}
					require.LessOrEqual(t, max(e1[2], e1[3]), tail)
					mid := max(e1[0], e1[1])
					require.LessOrEqual(t, mid, shardMid)
					require.LessOrEqual(t, mid, max(es[0], es[1])+margin)
				})
			}
		}
	}
}

func pcts(e []float64) []float64 {
	out := make([]float64, len(e))
	for i, v := range e {
		out[i] = 100 * v
	}
	return out
}
