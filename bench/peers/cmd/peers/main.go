// Command peers runs the peer comparison of statsblob and prints its two
// tables in Markdown, ready for bench/README.md: update, parallel update
// and serialization cost with serialized bytes per library, and quantile
// rank error per digest or sketch and stream.
//
//	go run ./cmd/peers [-benchtime 1s] [-count 1] [-accuracy=false] [-perf=false]
//
// With -count n each benchmark runs n times and the table shows its
// fastest run, the one least disturbed by the rest of a shared machine.
// Progress goes to stderr, the tables to stdout.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/statsblob/statsblob/bench"
	"github.com/statsblob/statsblob/bench/peers"
)

func main() {
	testing.Init() // registers -test.benchtime, which testing.Benchmark reads
	benchtime := flag.String("benchtime", "1s", "time (or Nx count) per benchmark, as go test -benchtime")
	count := flag.Int("count", 1, "runs per benchmark; the table shows the fastest")
	perf := flag.Bool("perf", true, "run the benchmarks and print the cost table")
	accuracy := flag.Bool("accuracy", true, "print the accuracy table")
	flag.Parse()
	if err := flag.Set("test.benchtime", *benchtime); err != nil {
		fmt.Fprintln(os.Stderr, "peers:", err)
		os.Exit(2)
	}

	procs := runtime.GOMAXPROCS(0)
	fmt.Printf("Measured %s with `go run ./cmd/peers -benchtime %s -count %d` (in bench/peers): %s, %s/%s, %s, GOMAXPROCS=%d.\n\n",
		time.Now().UTC().Format("2006-01-02"), *benchtime, *count, runtime.Version(), runtime.GOOS, runtime.GOARCH, cpuModel(), procs)

	if *perf {
		all := peers.Peers()
		res := peers.Results{}
		// Rounds over every benchmark rather than repeats of one, so that
		// a burst of load elsewhere spoils one run of several benchmarks
		// instead of every run of one.
		for round := range max(*count, 1) {
			for _, p := range all {
				for _, op := range p.Ops {
					r := testing.Benchmark(op.Bench)
					fmt.Fprintf(os.Stderr, "round %d: %s/%s %s\n", round+1, p.Name, op.Name, r.String())
					if best, ok := res[p.Name][op.Name]; !ok || nsPerOp(r) < nsPerOp(best) {
						res.Add(p.Name, op.Name, r)
					}
				}
			}
		}
		fmt.Printf("Update and serialization: ns/op of one value added (one goroutine; the structure has seen the ring once), "+
			"and of the wire form of %d lognormal values.\n\n", bench.RingSize)
		peers.WritePerformance(os.Stdout, all, res, procs)
		fmt.Println()
	}
	if *accuracy {
		fmt.Fprintln(os.Stderr, "accuracy ...")
		fmt.Printf("Accuracy: rank error in ppm of %d values against exact quantiles; caio, DDSketch and HDR at their finest setting "+
			"whose serialization fits in the statsblob blob's bytes.\n\n", bench.RingSize)
		peers.WriteAccuracy(os.Stdout, peers.Accuracy())
	}
}

func nsPerOp(r testing.BenchmarkResult) float64 { return float64(r.T) / float64(r.N) }

// cpuModel returns the first "model name" of /proc/cpuinfo, or "cpu
// unknown".
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "cpu unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "cpu unknown"
}
