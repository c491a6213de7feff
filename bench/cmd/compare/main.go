// Command compare runs the Go twins of the C reference's benchmark cases
// and prints them beside the C's figures: case, C ns/op, Go ns/op, Go/C
// ratio, target ratio, allocations per op.
//
//	go run ./bench/cmd/compare                     # C figures from bench/cref-figures.txt
//	go run ./bench/cmd/compare -c my-cref.txt      # figures of your own C build
//	go run ./bench/cmd/compare -cref ./cref -rounds 5
//	go run ./bench/cmd/compare -benchtime 3s -run 'sum|tcp'
//	go run ./bench/cmd/compare -cref ./cref -rounds 5 -cputime
//
// The Go twins run with GOMAXPROCS 1 (-cpu), as the C cases run on one
// thread, each in a process of its own, as the C harness runs its cases.
//
// A C figures file holds lines "BENCH <case> ns/op=<x> ..." (what the C
// harness prints); other lines are ignored. With -cref, compare runs your
// C reference build itself ("PATH bench CASE", FORMAT.md section 14),
// alternating with the Go twin, rounds times per case, and prints the
// medians and the median and range of the per-round ratios: on a shared
// machine only ratios measured in the same minutes mean anything. With
// -cputime the times are CPU time per operation (the C harness's
// cpu_ns/op; for Go, the process's user and system time over a second run
// of the twin with the iteration count of the first, setup included),
// which a machine with more runnable threads than cores inflates less
// than wall time. See bench/README.md.
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
	"syscall"
	"testing"
	"text/tabwriter"

	"github.com/statsblob/statsblob/bench"
)

// targets are the Go/C ratios the project commits to (issues 6 and 16).
var targets = map[string]float64{
	"sum": 0.7, "summaxmin": 0.7, "dvhist64": 0.7, "tcp_default": 0.7,
	"crhist64_lin100": 0.2, "tdgst64_50": 1.0, "clone_prealloc": 1.0,
	"tostr_json": 0.2, "tostr_freeform": 0.2, // issue 16 (0.3 in issue 6)
	"snapshot": 3.0, "snapshot_into": 1.0, // issue 16
}

func main() {
	testing.Init()
	cfile := flag.String("c", "", "C figures file (default: bench/cref-figures.txt next to this command's module)")
	cref := flag.String("cref", "", "C reference binary to run alternately with the Go twins (\"PATH bench CASE\")")
	rounds := flag.Int("rounds", 3, "with -cref: C and Go runs per case")
	benchtime := flag.String("benchtime", "1s", "time per case, as go test's -benchtime")
	run := flag.String("run", "", "regexp selecting cases")
	cpu := flag.Int("cpu", 1, "GOMAXPROCS for the Go twins (the C cases run on one thread)")
	one := flag.String("one", "", "run only this Go twin and print its BENCH line (used by compare itself)")
	flag.BoolVar(&cpuTime, "cputime", false, "compare CPU time per operation instead of wall time (with -cref)")
	flag.Parse()
	runtime.GOMAXPROCS(*cpu)
	if *one != "" {
		runOne(*one)
		return
	}
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

	fmt.Printf("# %s %s/%s, %d CPUs, GOMAXPROCS %d, C figures from %s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.GOMAXPROCS(0), path)
	w := tabwriter.NewWriter(os.Stdout, 0, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "case\tC ns/op\tGo ns/op\tGo/C\ttarget\tallocs/op\t")
	for _, c := range bench.Cases() {
		if !sel.MatchString(c.Name) {
			continue
		}
		r := goBench(c)
		goNs := r.ns
		cNs, ok := figures[c.CName()]
		ratio, cs := "-", "-"
		if ok && cNs > 0 {
			ratio = fmt.Sprintf("%.2f", goNs/cNs)
		}
		if ok {
			cs = strconv.FormatFloat(cNs, 'f', -1, 64)
		}
		fmt.Fprintf(w, "%s\t%s\t%.2f\t%s\t%s\t%d\t\n", c.Name, cs, goNs, ratio, target(c.Name), r.allocs)
	}
	w.Flush()
}

// alternate runs each selected case rounds times as C, then Go, and prints
// medians and ratios.
func alternate(cref string, rounds int, sel *regexp.Regexp) {
	what := "wall time"
	if cpuTime {
		what = "CPU time"
	}
	fmt.Printf("# %s %s/%s, %d CPUs, GOMAXPROCS %d, C: %s, %d alternating rounds per case, %s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.GOMAXPROCS(0), cref, rounds, what)
	w := tabwriter.NewWriter(os.Stdout, 0, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "case\tC ns/op\tGo ns/op\tGo/C\tGo/C range\ttarget\tallocs/op\t")
	for _, c := range bench.Cases() {
		if !sel.MatchString(c.Name) {
			continue
		}
		var cs, gs, rs []float64
		var allocs int64
		for range rounds {
			cNs, err := runCref(cref, c.CName())
			if err != nil {
				fail(1, err)
			}
			r := goBench(c)
			goNs := r.ns
			allocs = r.allocs
			cs, gs, rs = append(cs, cNs), append(gs, goNs), append(rs, goNs/cNs)
		}
		fmt.Fprintf(w, "%s\t%.2f\t%.2f\t%.2f\t%.2f-%.2f\t%s\t%d\t\n", c.Name, median(cs), median(gs), median(rs),
			slices.Min(rs), slices.Max(rs), target(c.Name), allocs)
	}
	w.Flush()
}

// cpuTime selects CPU time (-cputime).
var cpuTime bool

// goResult is a Go twin's time and allocations per operation.
type goResult struct {
	ns     float64
	allocs int64
}

// goBench runs a Go twin in a process of its own (this command with -one),
// as the C harness runs each case: in one process the cases that run later
// pay for the heap and caches the earlier ones left (rendering measured
// 20-30% slower after the snapshot case).
func goBench(c bench.Case) goResult {
	self, err := os.Executable()
	if err != nil {
		fail(1, err)
	}
	var out bytes.Buffer
	cmd := exec.Command(self, "-one", c.Name, "-benchtime", flag.Lookup("test.benchtime").Value.String(),
		"-cpu", strconv.Itoa(runtime.GOMAXPROCS(0)), "-cputime="+strconv.FormatBool(cpuTime))
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	if err := cmd.Run(); err != nil {
		fail(1, fmt.Errorf("the Go twin %s: %w", c.Name, err))
	}
	var r goResult
	key := "ns/op="
	if cpuTime {
		key = "cpu_ns/op="
	}
	for _, f := range strings.Fields(out.String()) {
		if v, ok := strings.CutPrefix(f, key); ok {
			r.ns, err = strconv.ParseFloat(v, 64)
		} else if v, ok := strings.CutPrefix(f, "allocs/op="); ok {
			r.allocs, err = strconv.ParseInt(v, 10, 64)
		}
		if err != nil {
			fail(1, fmt.Errorf("the Go twin %s: %q: %w", c.Name, out.String(), err))
		}
	}
	if r.ns <= 0 {
		fail(1, fmt.Errorf("the Go twin %s: no result in %q", c.Name, out.String()))
	}
	return r
}

// runOne runs the Go twin name in this process and prints its BENCH line:
// wall time per op, and with -cputime also the process's CPU time per op
// over a second run of the iteration count the first one chose.
func runOne(name string) {
	for _, c := range bench.Cases() {
		if c.Name == name {
			r := testing.Benchmark(c.Bench)
			cpu := ""
			if cpuTime {
				if err := flag.Set("test.benchtime", fmt.Sprintf("%dx", r.N)); err != nil {
					fail(2, err)
				}
				t0 := processCPU()
				testing.Benchmark(c.Bench)
				cpu = fmt.Sprintf(" cpu_ns/op=%.4f", float64(processCPU()-t0)/float64(r.N))
			}
			fmt.Printf("BENCH %s n=%d ns/op=%.4f allocs/op=%d%s\n", name, r.N, float64(r.T.Nanoseconds())/float64(r.N), r.AllocsPerOp(), cpu)
			return
		}
	}
	fail(2, fmt.Errorf("no case %q", name))
}

// processCPU returns the process's user and system CPU time in ns.
func processCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		fail(1, err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
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
		key := "ns/op="
		if cpuTime {
			key = "cpu_ns/op="
		}
		for _, kv := range fields[2:] {
			if v, ok := strings.CutPrefix(kv, key); ok {
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
