package main

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/statsblob/statsblob/cmd/statsblob/internal/scenario/gen"
)

// seedRange is an inclusive range of generator seeds, "A:B" or "A".
type seedRange struct{ from, to uint64 }

func parseSeedRange(s string) (seedRange, error) {
	a, b, isRange := strings.Cut(s, ":")
	from, err := strconv.ParseUint(a, 10, 64)
	if err != nil {
		return seedRange{}, fmt.Errorf("seed %q is not a decimal number", a)
	}
	to := from
	if isRange {
		if to, err = strconv.ParseUint(b, 10, 64); err != nil {
			return seedRange{}, fmt.Errorf("seed %q is not a decimal number", b)
		}
	}
	if to < from {
		return seedRange{}, fmt.Errorf("empty seed range %s", s)
	}
	return seedRange{from, to}, nil
}

func (r seedRange) String() string { return fmt.Sprintf("%d:%d", r.from, r.to) }

func (r seedRange) count() uint64 { return r.to - r.from + 1 }

// runGen prints generated scenarios or the generator's coverage.
func runGen(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("gen", "gen [-n N] [-coverage] [-seeds RANGE] [SEED]",
		"Gen prints the conformance scenario (testdata/conformance/FORMAT.md) the\n"+
			"scenario generator makes from SEED: random, valid by construction (section\n"+
			"13), the same for a seed on every machine. With -seeds it prints the\n"+
			"scenarios of a range of seeds, each after a comment line naming its seed.\n"+
			"\n"+
			"With -coverage it prints instead the coverage of the scenarios of SEED or\n"+
			"-seeds: how often they write each stat spec on VOIs of each data type, how\n"+
			"often each command that meets statistics meets each kind on each data type,\n"+
			"and how often each other command variant and syntax form occurs; then the\n"+
			"cells the rules allow that no scenario hits. The exit status is then 1 if\n"+
			"an allowed cell is not hit.\n",
		stdout, stderr)
	n := fs.Int("n", 0, "write about `N` commands per scenario (0: the seed chooses, from a dozen to a thousand)")
	cover := fs.Bool("coverage", false, "print the coverage table instead of scenarios")
	seeds := fs.String("seeds", "", "the seeds `RANGE`, A:B (inclusive) or A")
	pos, code, ok := fs.parse(args, 0)
	if !ok {
		return code
	}
	var r seedRange
	var err error
	switch {
	case len(pos) > 1:
		return fs.usageError("unexpected argument %q", pos[1])
	case len(pos) == 1 && *seeds != "":
		return fs.usageError("give SEED or -seeds, not both")
	case len(pos) == 1:
		r, err = parseSeedRange(pos[0])
		if err == nil && r.from != r.to {
			err = fmt.Errorf("SEED %q is a range: use -seeds", pos[0])
		}
	case *seeds != "":
		r, err = parseSeedRange(*seeds)
	default:
		return fs.usageError("missing SEED")
	}
	if err != nil {
		return fs.usageError("%v", err)
	}
	if *n < 0 {
		return fs.usageError("-n %d: want N >= 0", *n)
	}
	opt := gen.Options{Commands: *n}
	w := bufio.NewWriter(stdout)
	defer w.Flush()
	if *cover {
		hits, cmds := gen.Coverage(r.from, r.to, opt)
		fmt.Fprintf(w, "scenario generator coverage (version %d), seeds %s: %d scenarios, %d commands\n",
			gen.Version, r, r.count(), cmds)
		missing, unknown := gen.WriteCoverage(w, hits)
		if len(missing)+len(unknown) > 0 {
			return 1
		}
		return 0
	}
	for s := r.from; ; s++ {
		if r.from != r.to {
			fmt.Fprintf(w, "# statsblob gen %d (generator version %d)\n", s, gen.Version)
		}
		io.WriteString(w, gen.Generate(s, opt).Text())
		if s == r.to {
			break
		}
	}
	return 0
}
