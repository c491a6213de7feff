// Command accuracy prints the t-digest accuracy tables of bench/README.md
// (`make accuracy`): rank errors against the exact samples at p50, p90,
// p99 and p99.9 of single blobs, of merged fleets of connection blobs and
// of issue 20's six streams, and of Sharded snapshots, beside caio/go-tdigest at equal bytes (and, for
// fleets, at equal centroids), and the samples the digests lost (none
// may be).
//
//	go run ./bench/cmd/accuracy          # 10^4..10^6 samples, fleets of 100..10,000 blobs
//	go run ./bench/cmd/accuracy -long    # and 10^7 samples (several minutes)
package main

import (
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strings"

	"github.com/statsblob/statsblob/bsdrand"
	"github.com/statsblob/statsblob/internal/accuracy"
	"github.com/statsblob/statsblob/internal/trusted"
	"github.com/statsblob/statsblob/tdigest"
	"github.com/statsblob/statsblob/voi"
)

func main() {
	long := flag.Bool("long", false, "also 10^7 samples per blob")
	only := flag.String("only", "", "print only the table whose name contains this (single, fleet, streams, sharded, snapshots)")
	flag.Parse()
	w := os.Stdout
	sizes := []int{10_000, 100_000, 1_000_000}
	if *long {
		sizes = append(sizes, 10_000_000)
	}
	if strings.Contains("single", *only) {
		single(w, sizes)
	}
	if strings.Contains("fleet", *only) {
		fleets(w, []int{100, 1000, 10000})
	}
	if strings.Contains("streams", *only) {
		streamFleets(w, 2000, []uint64{1, 2, 3})
	}
	if strings.Contains("sharded", *only) {
		sharded(w, []int{100_000, 1_000_000})
	}
	if strings.Contains("snapshots", *only) {
		total := 1_000_000
		if *long {
			total = 10_000_000
		}
		snapshots(w, total)
	}
}

// geometries are the digests of the single-blob table: compressions 20,
// 50 and 100 in both widths.
var geometries = []accuracy.Geometry{
	{DType: voi.TDgstClust32, Slots: 20, Prec: 4},
	{DType: voi.TDgstClust32, Slots: 50, Prec: 4},
	{DType: voi.TDgstClust32, Slots: 100, Prec: 4},
	{DType: voi.TDgstClust64, Slots: 20, Prec: 8},
	{DType: voi.TDgstClust64, Slots: 50, Prec: 8},
	{DType: voi.TDgstClust64, Slots: 100, Prec: 8},
}

func name(g accuracy.Geometry) string {
	return fmt.Sprintf("%v(%d,%d)", g.DType, g.Slots, g.Prec)
}

// pct formats rank errors in percent.
func pct(errs []float64) string {
	s := make([]string, len(errs))
	for i, e := range errs {
		s[i] = fmt.Sprintf("%.2f", 100*e)
	}
	return strings.Join(s, " | ")
}

func single(w io.Writer, sizes []int) {
	fmt.Fprintln(w, "#### Single blobs")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "One blob's digest fed every sample through the C's update and in the accurate mode (rank error in %, at p50 | p90 | p99 | p99.9); caio/go-tdigest fed the same samples at the largest compression whose serialization is no larger than the blob's digest. (bench/peers' `go run ./cmd/tdmodes` adds influxdata/tdigest, DDSketch and HDR on the six streams of the targets.)")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| stream | digest | samples | bytes | lost | C: p50 | p90 | p99 | p99.9 | accurate: p50 | p90 | p99 | p99.9 | caio compr. | caio bytes | p50 | p90 | p99 | p99.9 |")
	fmt.Fprintln(w, "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
	for _, dn := range []string{"exp", "lognormal"} {
		for _, g := range geometries {
			for _, n := range sizes {
				f := accuracy.Feed(g, accuracy.DistByName(dn), n, 1)
				d := f.Digests[0]
				vals := unsorted(dn, n)
				u := make([]uint32, n)
				for i, v := range vals {
					u[i] = uint32(v)
				}
				fa := accuracy.FeedMode(g, tdigest.Accurate, u, 1)
				td, c := accuracy.CaioFedBytes(vals, len(d))
				fmt.Fprintf(w, "| %s | %s | %d | %d | %d | %s | %s | %.1f | %d | %s |\n", dn, name(g), n, len(d), f.Lost+fa.Lost,
					pct(accuracy.Errors(f.Sorted, d, g.DType)), pct(accuracy.Errors(fa.Sorted, fa.Digests[0], g.DType)),
					c, accuracy.Bytes(td), pct(accuracy.CaioErrors(f.Sorted, td)))
			}
		}
	}
	fmt.Fprintln(w)
}

// unsorted returns the samples accuracy.Feed feeds for (dist, n, seed 1),
// in their order.
func unsorted(dn string, n int) []float64 {
	dist := accuracy.DistByName(dn)
	r := rand.New(rand.NewPCG(1, 0x5eed))
	base := 0.0
	if dist.Base != nil {
		base = dist.Base(r)
	}
	out := make([]float64, n)
	for i := range out {
		out[i] = float64(dist.Sample(r, base))
	}
	return out
}

func fleets(w io.Writer, counts []int) {
	fmt.Fprintln(w, "#### Merged fleets")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Fleets of blobs of 20 to 419 samples each (conn-rtt: each connection's RTTs around its own typical RTT, as in the demo; exp: 200 + Exp(3000) in every blob), merged with tdigest.MergeAll in one step and in two levels (groups of 8, then the groups: the largest of its four errors); caio/go-tdigest merging the same digests at equal bytes and at equal centroids (the largest of its four errors). Rank error in %.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| stream | digest | blobs | samples | lost | p50 | p90 | p99 | p99.9 | two levels | caio compr. | caio bytes | p50 | p90 | p99 | p99.9 | caio, equal centroids |")
	fmt.Fprintln(w, "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
	for _, dn := range []string{"conn-rtt", "exp"} {
		for _, g := range []accuracy.Geometry{accuracy.Small, accuracy.Large, {DType: voi.TDgstClust64, Slots: 100, Prec: 8}} {
			for _, n := range counts {
				f := accuracy.NewFleet(g, accuracy.DistByName(dn), n, accuracy.BlobSize, 1)
				one, two := mergeLevels(g, f.Digests)
				tb, cb := accuracy.CaioMergedBytes(f.Digests, g.DType, len(one))
				tc, _ := accuracy.CaioMerged(f.Digests, g.DType, int(g.Slots))
				fmt.Fprintf(w, "| %s | %s | %d | %d | %d | %s | %.2f | %.1f | %d | %s | %.2f |\n", dn, name(g), n, len(f.Sorted), f.Lost,
					pct(accuracy.Errors(f.Sorted, one, g.DType)), 100*accuracy.Max(accuracy.Errors(f.Sorted, two, g.DType)),
					cb, accuracy.Bytes(tb), pct(accuracy.CaioErrors(f.Sorted, tb)), 100*accuracy.Max(accuracy.CaioErrors(f.Sorted, tc)))
			}
		}
	}
	fmt.Fprintln(w)
}

// streamFleets prints the merged fleets of issue 20's six streams
// (accuracy.Streams) beside caio at equal bytes: n blobs of 50 to 500
// samples per fleet, TDGSTCLUST64 of 50 and 100 slots, one merge and two
// levels, one row per seed.
func streamFleets(w io.Writer, n int, seeds []uint64) {
	fmt.Fprintln(w, "#### Merged fleets on six streams")
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Fleets of %d blobs of 50 to 500 samples each, every blob drawing from one stream (sorted: each blob's lognormal batch fed in ascending order) into a digest in the C's clustering or the accurate mode (the same samples), merged with tdigest.MergeAll in one step (p50 | p90 | p99 | p99.9) and in two levels (groups of 8, then the groups: the largest of its four errors); caio/go-tdigest merging the same digests into at most the digest's bytes (the largest of its four errors), and the ratio of the merge's worst (one step or two levels) to caio's. Rank error in %%.\n", n)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| stream | digest | mode | seed | samples | lost | p50 | p90 | p99 | p99.9 | two levels | caio bytes | caio | ratio |")
	fmt.Fprintln(w, "|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
	for _, st := range accuracy.Streams {
		for _, slots := range []uint32{50, 100} {
			g := accuracy.Geometry{DType: voi.TDgstClust64, Slots: slots, Prec: 8}
			for _, m := range []tdigest.Mode{tdigest.C, tdigest.Accurate} {
				for _, seed := range seeds {
					f := accuracy.NewStreamFleetMode(g, m, st, n, accuracy.FleetSize, seed)
					one, two := mergeLevels(g, f.Digests)
					td, _ := accuracy.CaioMergedBytes(f.Digests, g.DType, len(one))
					e1 := accuracy.Errors(f.Sorted, one, g.DType)
					e2 := accuracy.Max(accuracy.Errors(f.Sorted, two, g.DType))
					ec := accuracy.Max(accuracy.CaioErrors(f.Sorted, td))
					fmt.Fprintf(w, "| %s | %s | %v | %d | %d | %d | %s | %.2f | %d | %.2f | %.2f |\n", st.Name, name(g), m, seed, len(f.Sorted), f.Lost,
						pct(e1), 100*e2, accuracy.Bytes(td), 100*ec, max(accuracy.Max(e1), e2, 1e-4)/max(ec, 1e-4))
				}
			}
		}
	}
	fmt.Fprintln(w)
}

func sharded(w io.Writer, sizes []int) {
	fmt.Fprintln(w, "#### Sharded snapshots")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "n samples sent to the shards of a blob.Sharded in turn (each shard's digest fed by the C's update, drawing from its own random source, or in the accurate mode), the snapshot merging the shards' digests in one step, beside one blob fed the same samples (the snapshot of one shard). Rank error in %.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| stream | digest | mode | samples | one blob: p50 | p90 | p99 | p99.9 | 2 shards: p50 | p90 | p99 | p99.9 | 8 shards: p50 | p90 | p99 | p99.9 |")
	fmt.Fprintln(w, "|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
	for _, dn := range []string{"exp", "conn-rtt"} {
		for _, g := range []accuracy.Geometry{accuracy.Small, accuracy.Large} {
			for _, n := range sizes {
				samples := unsorted(dn, n)
				sorted := slices.Clone(samples)
				slices.Sort(sorted)
				for _, m := range []tdigest.Mode{tdigest.C, tdigest.Accurate} {
					row := fmt.Sprintf("| %s | %s | %v | %d", dn, name(g), m, n)
					for _, k := range []int{1, 2, 8} {
						row += " | " + pct(accuracy.Errors(sorted, shardedSnapshot(g, m, samples, k), g.DType))
					}
					fmt.Fprintln(w, row+" |")
				}
			}
		}
	}
	fmt.Fprintln(w)
}

// shardedSnapshot is the t-digest of a blob.Sharded snapshot of k shards
// in mode m fed the samples in turn: shard i's digest draws from random(3)
// seeded with i+1, and the snapshot merges the others into shard 0's.
func shardedSnapshot(g accuracy.Geometry, m tdigest.Mode, samples []float64, k int) []byte {
	shards := make([][]byte, k)
	envs := make([]*tdigest.Env, k)
	caches := make([]trusted.TDigestCache, k) // the update cache blobs use, for speed
	for i := range shards {
		shards[i] = g.Build()
		envs[i] = &tdigest.Env{Rand: bsdrand.New(uint32(i + 1))}
		caches[i].Accurate = m == tdigest.Accurate
	}
	for i, v := range samples {
		_ = trusted.TDigestUpdate(&caches[i%k], shards[i%k], g.DType, voi.IntU32, uint64(v), envs[i%k].Rand)
	}
	for i := range shards {
		trusted.TDigestFlush(&caches[i], shards[i], g.DType)
	}
	must(tdigest.MergeAll(shards[0], g.DType, shards[1:]...))
	return shards[0]
}

func snapshots(w io.Writer, total int) {
	fmt.Fprintln(w, "#### Snapshots of a long-lived blob")
	fmt.Fprintln(w)
	fmt.Fprintf(w, "%d samples kept as one blob, or as a blob snapshotted and reset every 10^4 or 10^5 samples with the snapshots merged by tdigest.MergeAll. Rank error in %%.\n", total)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| stream | digest | one blob: p50 | p90 | p99 | p99.9 | 10^5 per snapshot: p50 | p90 | p99 | p99.9 | 10^4 per snapshot: p50 | p90 | p99 | p99.9 |")
	fmt.Fprintln(w, "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
	for _, dn := range []string{"exp", "lognormal"} {
		samples := unsorted(dn, total)
		sorted := slices.Clone(samples)
		slices.Sort(sorted)
		for _, g := range []accuracy.Geometry{accuracy.Small, accuracy.Large, {DType: voi.TDgstClust64, Slots: 100, Prec: 8}} {
			row := fmt.Sprintf("| %s | %s", dn, name(g))
			for _, per := range []int{total, 100_000, 10_000} {
				row += " | " + pct(accuracy.Errors(sorted, snapshotted(g, samples, per), g.DType))
			}
			fmt.Fprintln(w, row+" |")
		}
	}
	fmt.Fprintln(w)
}

// snapshotted is the merge of the snapshots of one blob (one random
// source) fed the samples and snapshotted and reset every per samples.
func snapshotted(g accuracy.Geometry, samples []float64, per int) []byte {
	env := &tdigest.Env{Rand: bsdrand.New(1)}
	var c trusted.TDigestCache // the update cache blobs use, for speed
	var snaps [][]byte
	d := g.Build()
	for i, v := range samples {
		_ = trusted.TDigestUpdate(&c, d, g.DType, voi.IntU32, uint64(v), env.Rand)
		if (i+1)%per == 0 || i+1 == len(samples) {
			snaps = append(snaps, slices.Clone(d))
			tdigest.Reset(d, g.DType)
			c.Invalidate()
		}
	}
	out := g.Build()
	must(tdigest.MergeAll(out, g.DType, snaps...))
	return out
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

// mergeLevels merges the digests of a fleet in one step (one) and in two
// levels, groups of 8 first (two).
func mergeLevels(g accuracy.Geometry, digests [][]byte) (one, two []byte) {
	one = g.Build()
	must(tdigest.MergeAll(one, g.DType, digests...))
	two, err := accuracy.MergeTwoLevels(g, digests)
	must(err)
	return one, two
}
