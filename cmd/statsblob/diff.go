package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/statsblob/statsblob/cmd/statsblob/internal/scenario"
	"github.com/statsblob/statsblob/cmd/statsblob/internal/scenario/gen"
)

// runDiff runs generated scenarios through a C reference build and through
// the Go runner and reports where their outputs differ.
func runDiff(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("diff", "diff -cref PATH [-seeds RANGE] [-n N] [-j N] [-timeout DURATION] [-shrink N] [-keep DIR] [-goldens FILE]",
		"Diff runs the scenario of every seed of -seeds (see 'statsblob gen') through\n"+
			"the C reference build PATH (\"PATH FILE.scn\" must print the scenario's output,\n"+
			"as testdata/conformance/FORMAT.md specifies) and through this program's\n"+
			"runner, and reports each seed whose outputs differ: the first differing\n"+
			"output line of both and the scenario line that produced it. It then shrinks\n"+
			"the first differing scenarios by deleting lines while the first difference\n"+
			"stays in the same command, and prints what is left. A C run that fails or\n"+
			"times out, and a scenario the Go runner refuses, count as differences.\n"+
			"\n"+
			"The last line sums up: seeds, scenarios, commands, differences. The exit\n"+
			"status is 1 if any seed differs. With -goldens the digests of the C's\n"+
			"outputs are written to FILE (the format TestGeneratedGoldens reads).\n",
		stdout, stderr)
	cref := fs.String("cref", "", "the C reference build, run as \"`PATH` FILE.scn\" (required)")
	seeds := fs.String("seeds", "1:1000", "the seeds `RANGE`, A:B (inclusive) or A")
	n := fs.Int("n", 0, "write about `N` commands per scenario (0: the seed chooses)")
	jobs := fs.Int("j", 2, "run `N` scenarios at a time")
	timeout := fs.Duration("timeout", time.Minute, "give up on one C run after `DURATION`")
	shrinkN := fs.Int("shrink", 3, "shrink the first `N` differing scenarios (0: none)")
	keep := fs.String("keep", "", "write each differing scenario, both outputs and the shrunk scenario to `DIR`")
	goldens := fs.String("goldens", "", "write the digests of the C's outputs to `FILE`")
	pos, code, ok := fs.parse(args, 0)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return fs.usageError("unexpected argument %q", pos[0])
	}
	if *cref == "" {
		return fs.usageError("-cref PATH is required")
	}
	r, err := parseSeedRange(*seeds)
	if err != nil {
		return fs.usageError("-seeds: %v", err)
	}
	if *jobs < 1 || *n < 0 || *shrinkN < 0 || *timeout <= 0 {
		return fs.usageError("-j and -timeout must be positive, -n and -shrink 0 or more")
	}
	if _, err := os.Stat(*cref); err != nil {
		fs.fail(err)
		return 1
	}
	tmp, err := os.MkdirTemp("", "statsblob-diff")
	if err != nil {
		fs.fail(err)
		return 1
	}
	defer os.RemoveAll(tmp)
	if *keep != "" {
		if err := os.MkdirAll(*keep, 0o755); err != nil {
			fs.fail(err)
			return 1
		}
	}

	d := &differ{cref: *cref, timeout: *timeout, tmp: tmp, opt: gen.Options{Commands: *n}}
	w := bufio.NewWriter(stdout)
	defer w.Flush()
	start := time.Now()
	var (
		ndiff, cFail, timeouts, goFail, shrunk int
		commands, outBytes                     int
		digests                                []gen.Digest
	)
	d.run(r, *jobs, func(res *diffResult) {
		commands += len(gen.Commands(res.lines))
		outBytes += len(res.cOut)
		if *goldens != "" && res.cErr == nil {
			digests = append(digests, gen.DigestOf(res.seed, res.lines, res.cOut))
		}
		if res.same() {
			return
		}
		ndiff++
		switch {
		case res.cErr != nil:
			cFail++
			if errors.Is(res.cErr, context.DeadlineExceeded) {
				timeouts++
			}
		case res.goErr != nil:
			goFail++
		}
		res.report(w)
		if *keep != "" {
			res.keep(*keep, fs)
		}
		if shrunk < *shrinkN && res.cErr == nil && res.goErr == nil {
			shrunk++
			lines := d.shrink(res)
			fmt.Fprintf(w, "  shrunk to %d of %d lines:\n", len(lines), len(res.lines))
			for _, l := range lines {
				fmt.Fprintf(w, "    %s\n", l)
			}
			if *keep != "" {
				writeKept(filepath.Join(*keep, fmt.Sprintf("seed-%d.min.scn", res.seed)), []byte(strings.Join(lines, "\n")+"\n"), fs)
			}
		}
		w.Flush()
	})
	fmt.Fprintf(w, "diff: seeds %s (generator version %d, C reference %s): %d scenarios, %d commands, %d bytes of C output, %s; %d differ (%d C failures, %d of them timeouts, %d refused by the Go runner)\n",
		r, gen.Version, *cref, r.count(), commands, outBytes, time.Since(start).Round(time.Second), ndiff, cFail, timeouts, goFail)
	if *goldens != "" {
		if cFail > 0 {
			fs.fail(fmt.Errorf("%s not written: %d C runs failed", *goldens, cFail))
			return 1
		}
		var b bytes.Buffer
		fmt.Fprintf(&b, "%s\n# C reference outputs of seeds %s (scenarios: statsblob gen SEED)\n", gen.DigestHeader(), r)
		for _, dg := range digests {
			fmt.Fprintln(&b, dg)
		}
		if err := os.WriteFile(*goldens, b.Bytes(), 0o644); err != nil {
			fs.fail(err)
			return 1
		}
	}
	if ndiff > 0 {
		return 1
	}
	return 0
}

// differ runs scenarios through the C and the Go runner.
type differ struct {
	cref    string
	timeout time.Duration
	tmp     string
	opt     gen.Options
	mu      sync.Mutex
	nfile   int
}

// diffResult is one scenario run both ways.
type diffResult struct {
	seed        uint64
	lines       []string
	cOut, goOut []byte
	cErr, goErr error
}

func (r *diffResult) same() bool {
	return r.cErr == nil && r.goErr == nil && bytes.Equal(r.cOut, r.goOut)
}

// run runs the seeds of r with jobs workers and calls report for each
// result, in seed order.
func (d *differ) run(r seedRange, jobs int, report func(*diffResult)) {
	// A fixed pool fed in seed order; finished results wait in a bounded
	// map until every earlier seed has been reported.
	results := make(map[uint64]*diffResult)
	var mu sync.Mutex
	cond := sync.NewCond(&mu)
	seeds := make(chan uint64)
	var wg sync.WaitGroup
	for range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s := range seeds {
				res := d.one(s)
				mu.Lock()
				results[s] = res
				cond.Broadcast()
				mu.Unlock()
			}
		}()
	}
	go func() {
		for s := r.from; ; s++ {
			mu.Lock()
			for len(results) > 8*jobs {
				cond.Wait()
			}
			mu.Unlock()
			seeds <- s
			if s == r.to {
				break
			}
		}
		close(seeds)
	}()
	for s := r.from; ; s++ {
		mu.Lock()
		for results[s] == nil {
			cond.Wait()
		}
		res := results[s]
		delete(results, s)
		cond.Broadcast()
		mu.Unlock()
		report(res)
		if s == r.to {
			break
		}
	}
	wg.Wait()
}

// one runs the scenario of a seed both ways.
func (d *differ) one(seed uint64) *diffResult {
	sc := gen.Generate(seed, d.opt)
	res := &diffResult{seed: seed, lines: sc.Lines}
	res.cOut, res.cErr, res.goOut, res.goErr = d.runBoth(sc.Lines)
	return res
}

// runBoth runs scenario lines through the C and the Go runner.
func (d *differ) runBoth(lines []string) (cOut []byte, cErr error, goOut []byte, goErr error) {
	text := []byte(strings.Join(lines, "\n") + "\n")
	cOut, cErr = d.runC(text)
	goOut, goErr = runGoScenario(text)
	return
}

// runC runs the C reference on a scenario text.
func (d *differ) runC(text []byte) ([]byte, error) {
	d.mu.Lock()
	d.nfile++
	name := filepath.Join(d.tmp, fmt.Sprintf("s%d.scn", d.nfile))
	d.mu.Unlock()
	if err := os.WriteFile(name, text, 0o644); err != nil {
		return nil, err
	}
	defer os.Remove(name)
	ctx, cancel := context.WithTimeout(context.Background(), d.timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, d.cref, name)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		return out.Bytes(), fmt.Errorf("timed out after %v: %w", d.timeout, ctx.Err())
	}
	if err != nil {
		msg, _, _ := strings.Cut(strings.TrimSpace(errb.String()), "\n")
		return out.Bytes(), fmt.Errorf("%v: %s", err, msg)
	}
	return out.Bytes(), nil
}

// runGoScenario runs a scenario through the Go runner; a panic is an error.
func runGoScenario(text []byte) (out []byte, err error) {
	var b bytes.Buffer
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
		out = b.Bytes()
	}()
	err = scenario.Run(bytes.NewReader(text), &b)
	return
}

// firstDiff locates the first difference of two outputs of a scenario:
// the output line (1-based) and both texts of it, and the index in lines
// of the command whose output block differs first (-1 if none is found).
func firstDiff(lines []string, c, g []byte) (outLine int, cl, gl string, cmd int) {
	cs, gs := strings.Split(string(c), "\n"), strings.Split(string(g), "\n")
	for i := range max(len(cs), len(gs)) {
		var a, b string
		if i < len(cs) {
			a = cs[i]
		}
		if i < len(gs) {
			b = gs[i]
		}
		if a != b || i >= len(cs) || i >= len(gs) {
			outLine, cl, gl = i+1, a, b
			break
		}
	}
	cb, gb := gen.Blocks(lines, c), gen.Blocks(lines, g)
	cmd = -1
	for _, i := range gen.Commands(lines) {
		x, okx := cb[i]
		y, oky := gb[i]
		if okx != oky || !bytes.Equal(x, y) {
			cmd = i
			break
		}
	}
	return
}

// report prints a differing seed.
func (r *diffResult) report(w io.Writer) {
	switch {
	case r.cErr != nil:
		fmt.Fprintf(w, "seed %d: the C reference failed: %v\n", r.seed, r.cErr)
		return
	case r.goErr != nil:
		fmt.Fprintf(w, "seed %d: the Go runner refused the scenario: %v\n", r.seed, r.goErr)
	}
	ol, cl, gl, cmd := firstDiff(r.lines, r.cOut, r.goOut)
	where := "no command found"
	if cmd >= 0 {
		where = fmt.Sprintf("scenario line %d: %s", cmd+1, strings.Join(gen.Tokens(r.lines[cmd]), " "))
	}
	fmt.Fprintf(w, "seed %d: output line %d differs (%s)\n  C:  %s\n  Go: %s\n", r.seed, ol, where, clip(cl), clip(gl))
}

func clip(s string) string {
	if len(s) > 300 {
		return s[:300] + fmt.Sprintf("... (%d bytes)", len(s))
	}
	return s
}

// keep writes a differing seed's scenario and outputs to dir.
func (r *diffResult) keep(dir string, fs *flagSet) {
	base := filepath.Join(dir, fmt.Sprintf("seed-%d", r.seed))
	writeKept(base+".scn", []byte(strings.Join(r.lines, "\n")+"\n"), fs)
	writeKept(base+".c.out", r.cOut, fs)
	writeKept(base+".go.out", r.goOut, fs)
}

func writeKept(name string, p []byte, fs *flagSet) {
	if err := os.WriteFile(name, p, 0o644); err != nil {
		fs.fail(err)
	}
}

// shrinkRuns bounds the runs one shrink may make.
const shrinkRuns = 3000

// shrink deletes lines of a differing scenario while the outputs still
// differ first in a command of the same name (and both runs succeed), and
// returns the shortest scenario found.
func (d *differ) shrink(res *diffResult) []string {
	_, _, _, cmd := firstDiff(res.lines, res.cOut, res.goOut)
	if cmd < 0 {
		return res.lines
	}
	name := gen.Tokens(res.lines[cmd])[0]
	runs := 0
	fails := func(lines []string) bool {
		runs++
		c, cErr, g, gErr := d.runBoth(lines)
		if cErr != nil || gErr != nil || bytes.Equal(c, g) {
			return false
		}
		_, _, _, i := firstDiff(lines, c, g)
		return i >= 0 && gen.Tokens(lines[i])[0] == name
	}
	// Lines after the differing command cannot matter.
	lines := append([]string(nil), res.lines[:cmd+1]...)
	var kept []string
	for _, l := range lines {
		if len(gen.Tokens(l)) > 0 {
			kept = append(kept, l)
		}
	}
	lines = kept
	if !fails(lines) {
		lines = res.lines
	}
	for chunk := len(lines) / 2; chunk >= 1 && runs < shrinkRuns; {
		removed := false
		for i := 0; i < len(lines) && runs < shrinkRuns; {
			end := min(i+chunk, len(lines))
			cand := append(append([]string(nil), lines[:i]...), lines[end:]...)
			if len(cand) > 0 && fails(cand) {
				lines, removed = cand, true
				continue
			}
			i = end
		}
		if !removed {
			chunk /= 2
		}
	}
	return lines
}
