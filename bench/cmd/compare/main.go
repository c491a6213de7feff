// Command compare runs the Go twins of the C reference's benchmark cases
// and prints them beside the C's figures: case, C ns/op, Go ns/op, Go/C
// ratio, target ratio, allocations per op.
//
//	go run ./bench/cmd/compare                     # C figures from bench/cref-figures.txt
//	go run ./bench/cmd/compare -c my-cref.txt      # figures of your own C build
//	go run ./bench/cmd/compare -benchtime 3s -run 'sum|tcp'
//
// A C figures file holds lines "BENCH <case> ns/op=<x> ..." (what the C
// harness prints); other lines are ignored. See bench/README.md.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"text/tabwriter"

	"github.com/statsblob/statsblob/bench"
)

// targets are the Go/C ratios the project commits to (issue 6).
var targets = map[string]float64{
	"sum": 0.7, "summaxmin": 0.7, "dvhist64": 0.7, "tcp_default": 0.7,
	"crhist64_lin100": 0.2, "tdgst64_50": 1.0, "clone_prealloc": 1.0,
	"tostr_json": 0.3, "tostr_freeform": 0.3,
}

func main() {
	testing.Init()
	cfile := flag.String("c", "", "C figures file (default: bench/cref-figures.txt next to this command's module)")
	benchtime := flag.String("benchtime", "1s", "time per case, as go test's -benchtime")
	run := flag.String("run", "", "regexp selecting cases")
	flag.Parse()
	if err := flag.Set("test.benchtime", *benchtime); err != nil {
		fmt.Fprintln(os.Stderr, "compare:", err)
		os.Exit(2)
	}
	sel, err := regexp.Compile(*run)
	if err != nil {
		fmt.Fprintln(os.Stderr, "compare:", err)
		os.Exit(2)
	}
	path := *cfile
	if path == "" {
		path = filepath.Join("bench", "cref-figures.txt")
	}
	cref, err := readFigures(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "compare:", err)
		os.Exit(1)
	}

	fmt.Printf("# %s %s/%s, %d CPUs, C figures from %s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), path)
	w := tabwriter.NewWriter(os.Stdout, 0, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "case\tC ns/op\tGo ns/op\tGo/C\ttarget\tallocs/op\t")
	for _, c := range bench.Cases() {
		if !sel.MatchString(c.Name) {
			continue
		}
		r := testing.Benchmark(c.Bench)
		goNs := float64(r.T.Nanoseconds()) / float64(r.N)
		cNs, ok := cref[c.Name]
		ratio, target := "-", "-"
		if ok && cNs > 0 {
			ratio = fmt.Sprintf("%.2f", goNs/cNs)
		}
		if t, ok := targets[c.Name]; ok {
			target = fmt.Sprintf("<= %.1f", t)
		}
		cs := "-"
		if ok {
			cs = strconv.FormatFloat(cNs, 'f', -1, 64)
		}
		fmt.Fprintf(w, "%s\t%s\t%.2f\t%s\t%s\t%d\t\n", c.Name, cs, goNs, ratio, target, r.AllocsPerOp())
	}
	w.Flush()
}

// readFigures reads "BENCH <case> ns/op=<x>" lines.
func readFigures(path string) (map[string]float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m := map[string]float64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 3 || fields[0] != "BENCH" {
			continue
		}
		for _, kv := range fields[2:] {
			if v, ok := strings.CutPrefix(kv, "ns/op="); ok {
				x, err := strconv.ParseFloat(v, 64)
				if err != nil {
					return nil, fmt.Errorf("%s: %q: %w", path, sc.Text(), err)
				}
				m[fields[1]] = x
			}
		}
	}
	return m, sc.Err()
}
