package main

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"text/tabwriter"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/derive"
)

// runDerive prints a blob's derived metrics, as its template declares them.
func runDerive(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("derive", "derive -templates FILE [-elapsed DURATION] [OLD] NEW",
		"Derive prints the derived metrics the blob's template declares (ratio,\n"+
			"percent, average, variance, rate, difference: the templates file's\n"+
			"version 2 metadata), each in its declared unit, and the mean of every VOI\n"+
			"with a declared count, computed from NEW alone or, with OLD (an earlier\n"+
			"cumulative reading of the same blob), from the period between them: a\n"+
			"difference is a VOI's change from OLD to NEW. Rates need -elapsed, the\n"+
			"time NEW (or the period) covers; a metric without a value (no count, no\n"+
			"time) prints NaN.\n"+
			"\n"+
			"Example:\n"+
			"  statsblob derive -templates templates.json -elapsed 5m old.blob new.blob\n",
		stdout, stderr)
	tfile := fs.String("templates", "", "templates `FILE` (one template's JSON or an array of them)")
	elapsed := fs.Duration("elapsed", 0, "time NEW (or OLD to NEW) covers, for rates (`DURATION`, e.g. 10s)")
	pos, code, ok := fs.parse(args, 1)
	if !ok {
		return code
	}
	if len(pos) > 2 {
		return fs.usageError("want [OLD] NEW, got %d arguments", len(pos))
	}
	if *elapsed < 0 {
		return fs.usageError("-elapsed %v is negative", *elapsed)
	}
	if *tfile == "" {
		return fs.usageError("-templates is required: derived metrics are declared there")
	}
	ts, err := readTemplates(*tfile)
	if err != nil {
		fs.fail(err)
		return 1
	}
	var bs []*blob.Blob
	for _, name := range pos {
		b, err := readBlob(name)
		if err != nil {
			fs.fail(err)
			return 1
		}
		bs = append(bs, b)
	}
	cur := bs[len(bs)-1]
	var prev *blob.Blob
	if len(bs) == 2 {
		prev = bs[0]
	}
	t, err := ts.byHash(cur.TplHash())
	if err != nil {
		fs.fail(err)
		return 1
	}
	vs, err := derive.Compute(t, prev, cur, *elapsed)
	if err != nil {
		fs.fail(err)
		return 1
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "metric\top\tvalue\tunit\n")
	for _, v := range vs {
		s := strconv.FormatFloat(v.Value, 'g', -1, 64)
		if math.IsNaN(v.Value) {
			s = "NaN"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", v.Name, v.Op, s, v.Unit)
	}
	tw.Flush()
	return 0
}
