// Command compare runs the Go twins of the C reference's benchmark cases
// and prints them beside the C's figures: case, C ns/op, Go ns/op, Go/C
// ratio, target ratio, allocations per op.
//
//	go run ./bench/cmd/compare                     # C figures from bench/cref-figures.txt
//	go run ./bench/cmd/compare -c my-cref.txt      # figures of your own C build
//	go run ./bench/cmd/compare -cref ./cref -rounds 5
//	go run ./bench/cmd/compare -benchtime 3s -run 'sum|tcp'
//
// A C figures file holds lines "BENCH <case> ns/op=<x> ..." (what the C
// harness prints); other lines are ignored. With -cref, compare runs your
// C reference build itself ("PATH bench CASE", FORMAT.md section 14),
// alternating with the Go twin, rounds times per case, and prints the
// medians and the median and range of the per-round ratios: on a shared
// machine only ratios measured in the same minutes mean anything. See
// bench/README.md.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
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
	cref := flag.String("cref", "", "C reference binary to run alternately with the Go twins (\"PATH bench CASE\")")
	rounds := flag.Int("rounds", 3, "with -cref: C and Go runs per case")
	benchtime := flag.String("benchtime", "1s", "time per case, as go test's -benchtime")
	run := flag.String("run", "", "regexp selecting cases")
	flag.Parse()
	if err := flag.Set("test.benchtime", *benchtime); err != nil {
		fail(2, err)
	}
	sel, err := regexp.Compile(*run)
	if err != nil {
		fail(2, err)
	}
	if *cref != "" {
		if *rounds < 1 {
			fail(2, fmt.Errorf("-rounds %d", *rounds))
		}
		alternate(*cref, *rounds, sel)
		return
	}
	path := *cfile
	if path == "" {
		path = filepath.Join("bench", "cref-figures.txt")
	}
	f, err := os.Open(path)
	if err != nil {
		fail(1, err)
	}
	figures, err := readFigures(f)
	f.Close()
	if err != nil {
		fail(1, fmt.Errorf("%s: %w", path, err))
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
		cNs, ok := figures[c.Name]
		ratio, cs := "-", "-"
		if ok && cNs > 0 {
			ratio = fmt.Sprintf("%.2f", goNs/cNs)
		}
		if ok {
			cs = strconv.FormatFloat(cNs, 'f', -1, 64)
		}
		fmt.Fprintf(w, "%s\t%s\t%.2f\t%s\t%s\t%d\t\n", c.Name, cs, goNs, ratio, target(c.Name), r.AllocsPerOp())
	}
	w.Flush()
}

// alternate runs each selected case rounds times as C, then Go, and prints
// medians and ratios.
func alternate(cref string, rounds int, sel *regexp.Regexp) {
	fmt.Printf("# %s %s/%s, %d CPUs, C: %s, %d alternating rounds per case\n", runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), cref, rounds)
	w := tabwriter.NewWriter(os.Stdout, 0, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "case\tC ns/op\tGo ns/op\tGo/C\tGo/C range\ttarget\tallocs/op\t")
	for _, c := range bench.Cases() {
		if !sel.MatchString(c.Name) {
			continue
		}
		var cs, gs, rs []float64
		var allocs int64
		for range rounds {
			cNs, err := runCref(cref, c.Name)
			if err != nil {
				fail(1, err)
			}
			r := testing.Benchmark(c.Bench)
			goNs := float64(r.T.Nanoseconds()) / float64(r.N)
			allocs = r.AllocsPerOp()
			cs, gs, rs = append(cs, cNs), append(gs, goNs), append(rs, goNs/cNs)
		}
		fmt.Fprintf(w, "%s\t%.2f\t%.2f\t%.2f\t%.2f-%.2f\t%s\t%d\t\n", c.Name, median(cs), median(gs), median(rs),
			slices.Min(rs), slices.Max(rs), target(c.Name), allocs)
	}
	w.Flush()
}

// runCref runs "cref bench name" and returns its ns/op.
func runCref(cref, name string) (float64, error) {
	var out bytes.Buffer
	cmd := exec.Command(cref, "bench", name)
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("%s bench %s: %w", cref, name, err)
	}
	m, err := readFigures(&out)
	if err != nil {
		return 0, fmt.Errorf("%s bench %s: %w", cref, name, err)
	}
	ns, ok := m[name]
	if !ok || ns <= 0 {
		return 0, fmt.Errorf("%s bench %s: no BENCH %s line with ns/op", cref, name, name)
	}
	return ns, nil
}

func target(name string) string {
	if t, ok := targets[name]; ok {
		return fmt.Sprintf("<= %.1f", t)
	}
	return "-"
}

func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func fail(code int, err error) {
	fmt.Fprintln(os.Stderr, "compare:", err)
	os.Exit(code)
}

// readFigures reads "BENCH <case> ns/op=<x>" lines.
func readFigures(r io.Reader) (map[string]float64, error) {
	m := map[string]float64{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 3 || fields[0] != "BENCH" {
			continue
		}
		for _, kv := range fields[2:] {
			if v, ok := strings.CutPrefix(kv, "ns/op="); ok {
				x, err := strconv.ParseFloat(v, 64)
				if err != nil {
					return nil, fmt.Errorf("%q: %w", sc.Text(), err)
				}
				m[fields[1]] = x
			}
		}
	}
	return m, sc.Err()
}
