// Command tdmodes prints the t-digest modes table of bench/README.md
// (`make accuracy`): the worst rank error over p50, p90, p99 and p99.9
// and over seeds of statsblob's t-digest in the C's clustering and in
// the accurate mode, beside caio/go-tdigest, influxdata/tdigest, DDSketch
// and HdrHistogram each at the largest setting whose serialization fits
// in the statsblob digest's bytes, on the six streams of the targets;
// then the ratio of the accurate mode to the better of caio and influx
// (the target: no cell above 1.25, geometric mean at most 1).
//
//	go run ./cmd/tdmodes                 # 10^3, 10^5 and 10^6 samples, 2 seeds
//	go run ./cmd/tdmodes -long           # and 10^7 (tens of minutes)
//	go run ./cmd/tdmodes -dtype 64       # TDGSTCLUST64(·,8)
//	go run ./cmd/tdmodes -streams sorted,uniform -sizes 10000000 -seeds 1
//	go run ./cmd/tdmodes -fleets         # merged fleets beside caio's and influx's merges
//	go run ./cmd/tdmodes -centroids      # the accurate mode beside caio and influx at equal centroids
//	go run ./cmd/tdmodes -mean -seeds 100 -sizes 1000  # the mean over seeds of each cell's worst error
package main

import (
	"flag"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/statsblob/statsblob/bench/peers"
	"github.com/statsblob/statsblob/internal/accuracy"
	"github.com/statsblob/statsblob/tdigest"
	"github.com/statsblob/statsblob/voi"
)

func main() {
	long := flag.Bool("long", false, "also 10^7 samples")
	dtype := flag.Int("dtype", 32, "32 for TDGSTCLUST32(·,4), 64 for TDGSTCLUST64(·,8)")
	seeds := flag.Int("seeds", 2, "seeds per cell")
	only := flag.String("streams", "", "comma-separated `NAMES` of the streams to measure (default: all six)")
	sizesFlag := flag.String("sizes", "", "comma-separated sample `COUNTS` (default: 10^3, 10^5, 10^6, and 10^7 with -long)")
	fleets := flag.Bool("fleets", false, "the merged-fleet table instead: fleets of -blobs TDGSTCLUST64(50 and 100, 8) blobs of each stream in each mode")
	blobs := flag.Int("blobs", 2000, "blobs per fleet (with -fleets)")
	mean := flag.Bool("mean", false, "each cell the mean over the seeds of the worst rank error over the quantiles, instead of the worst over the seeds")
	centroids := flag.Bool("centroids", false, "the equal-centroids table instead: the accurate mode beside caio and influx keeping no more centroids than the digest has slots, whatever their bytes")
	flag.Parse()
	streams := accuracy.Streams
	if *only != "" {
		streams = nil
		for _, name := range strings.Split(*only, ",") {
			i := slices.IndexFunc(accuracy.Streams, func(s accuracy.Stream) bool { return s.Name == name })
			if i < 0 {
				fmt.Fprintf(os.Stderr, "tdmodes: no stream %q\n", name)
				os.Exit(2)
			}
			streams = append(streams, accuracy.Streams[i])
		}
	}
	if *fleets {
		if *mean {
			fmt.Fprintln(os.Stderr, "tdmodes: -mean applies to the modes and -centroids tables, not -fleets")
			os.Exit(2)
		}
		printFleets(streams, *blobs, *seeds)
		return
	}
	dt := voi.TDgstClust32
	if *dtype == 64 {
		dt = voi.TDgstClust64
	}
	sizes := []int{1_000, 100_000, 1_000_000}
	if *long {
		sizes = append(sizes, 10_000_000)
	}
	if *sizesFlag != "" {
		sizes = nil
		for _, f := range strings.Split(*sizesFlag, ",") {
			n, err := strconv.Atoi(f)
			if err != nil || n <= 0 {
				fmt.Fprintf(os.Stderr, "tdmodes: bad sample count %q\n", f)
				os.Exit(2)
			}
			sizes = append(sizes, n)
		}
	}
	if *centroids {
		printCentroids(streams, dt, sizes, *seeds, *mean)
		return
	}
	over, modes := "and", peers.TDigestModesOf
	if *mean {
		over, modes = "averaged over", peers.TDigestModesMean
	}
	fmt.Printf("Worst rank error (%% of samples) over p50, p90, p99, p99.9 %s seeds 1..%d; %v digests (an IntU32 VOI's, answered by blob.Stat.Quantile: integers); peers at equal bytes, answered by their own quantile functions; the last column with the peers' answers rounded to integers too.\n\n", over, *seeds, dt)
	fmt.Println("| stream | slots | samples | bytes | C mode | accurate | caio | influx | DDSketch | HDR | accurate / best t-digest peer | the same, peers rounded |")
	fmt.Println("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
	var sum [2]summary
	modes(streams, dt, []uint32{20, 50, 100}, sizes, *seeds, func(c peers.ModeCell) {
		r, rr := c.Ratio(), c.RatioRounded()
		sum[0].add(r)
		sum[1].add(rr)
		fmt.Printf("| %s | %d | %d | %d | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %.2f | %.2f |\n", c.Stream, c.Slots, c.Samples, c.Bytes,
			100*c.C, 100*c.Accurate, 100*c.Caio, 100*c.Influx, 100*c.DDSketch, 100*c.HDR, r, rr)
		os.Stdout.Sync()
	})
	fmt.Printf("\nAccurate mode against the better of caio and influx: %v.\n", sum[0])
	fmt.Printf("The same with the peers' answers rounded to integers: %v.\n", sum[1])
}

// printCentroids prints the equal-centroids table (peers.TDigestEqualCentroids).
func printCentroids(streams []accuracy.Stream, dt voi.DType, sizes []int, seeds int, mean bool) {
	over, cells := "and", peers.TDigestEqualCentroids
	if mean {
		over, cells = "averaged over", peers.TDigestEqualCentroidsMean
	}
	fmt.Printf("Worst rank error (%% of samples) over p50, p90, p99, p99.9 %s seeds 1..%d; %v digests in the accurate mode (an IntU32 VOI's, answered by blob.Stat.Quantile); caio/go-tdigest and influxdata/tdigest at the largest compression that keeps no more centroids than the digest has slots, whatever their bytes, answered by their own quantile functions.\n\n", over, seeds, dt)
	fmt.Println("| stream | slots | samples | accurate | caio | its centroids, bytes | influx | its centroids, bytes | accurate / better peer |")
	fmt.Println("|---|--:|--:|--:|--:|--:|--:|--:|--:|")
	var sum summary
	cells(streams, dt, []uint32{20, 50, 100}, sizes, seeds, func(c peers.CentroidCell) {
		r := c.Ratio()
		sum.add(r)
		fmt.Printf("| %s | %d | %d | %.3f | %.3f | %d, %d | %.3f | %d, %d | %.2f |\n", c.Stream, c.Slots, c.Samples,
			100*c.Accurate, 100*c.Caio, c.CaioMax, c.CaioBytes, 100*c.Influx, c.InfluxMax, c.InfBytes, r)
		os.Stdout.Sync()
	})
	fmt.Printf("\nAccurate mode against the better of caio and influx at equal centroids: %v.\n", sum)
}

// printFleets prints the merged-fleet table (peers.FleetModes).
func printFleets(streams []accuracy.Stream, blobs, seeds int) {
	fmt.Printf("Worst rank error (%% of samples) over p50, p90, p99, p99.9 and seeds 1..%d of fleets of %d blobs of 50 to 500 samples, each blob's TDGSTCLUST64(slots,8) digest fed in the mode shown; MergeAll in one step and in two levels (groups of 8, then the groups), the digests' own estimates (tdigest.Quantile); caio/go-tdigest and influxdata/tdigest merging the same digests' centroids at equal bytes. The ratio is the worse merge's over the better peer's (errors under 0.01%% count as 0.01%%).\n\n", seeds, blobs)
	fmt.Println("| stream | mode | slots | bytes | one merge | two levels | caio | influx | ratio |")
	fmt.Println("|---|---|--:|--:|--:|--:|--:|--:|--:|")
	var sum [2]summary
	peers.FleetModes(streams, []tdigest.Mode{tdigest.C, tdigest.Accurate}, []uint32{50, 100}, blobs, seeds, func(c peers.FleetCell) {
		r := c.Ratio()
		sum[c.Mode].add(r)
		fmt.Printf("| %s | %v | %d | %d | %.3f | %.3f | %.3f | %.3f | %.2f |\n", c.Stream, c.Mode, c.Slots, c.Bytes,
			100*c.One, 100*c.Two, 100*c.Caio, 100*c.Influx, r)
		os.Stdout.Sync()
	})
	fmt.Printf("\nC mode against the better of caio and influx: %v.\n", sum[tdigest.C])
	fmt.Printf("Accurate mode: %v.\n", sum[tdigest.Accurate])
}

// summary is the geometric mean, the count above 1.25 and the worst of
// ratios.
type summary struct {
	logSum  float64
	n, over int
	worst   float64
}

func (s *summary) add(r float64) {
	s.logSum += math.Log(r)
	s.n++
	if r > 1.25 {
		s.over++
	}
	s.worst = max(s.worst, r)
}

func (s summary) String() string {
	return fmt.Sprintf("geometric mean of the ratios %.2f over %d cells, %d cells above 1.25, worst %.2f", math.Exp(s.logSum/float64(s.n)), s.n, s.over, s.worst)
}
