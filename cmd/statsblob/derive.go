package main

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/derive"
)

// runDerive prints a blob's derived metrics, as its template declares them.
func runDerive(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("derive", "derive -templates FILE [-elapsed DURATION] [-at TIME] [OLD] NEW",
		"Derive prints the derived metrics the blob's template declares (ratio,\n"+
			"percent, average, variance, rate, difference: the templates file's\n"+
			"version 2 metadata), each in its declared unit, and the mean of every VOI\n"+
			"with a declared count, computed from NEW alone or, with OLD (an earlier\n"+
			"cumulative reading of the same blob), from the period between them: a\n"+
			"difference is a VOI's change from OLD to NEW. Rates need -elapsed, the\n"+
			"time NEW (or the period) covers; a metric without a value (no count, no\n"+
			"time) prints NaN.\n"+
			"\n"+
			"A blob reset between OLD and NEW (a restarted process: NEW's last reset is\n"+
			"after OLD's) makes NEW stand alone: its figures since that reset, rates over\n"+
			"the time from the reset to -at (when NEW was read; without it, -elapsed), as\n"+
			"iostat takes a device reset; a counter that fell from OLD to NEW alone (a VOI\n"+
			"reset: statdef's data=reset) counts from its reset. stderr says so (naming\n"+
			"the metrics a counter's reset changed). OLD and NEW given in the wrong order\n"+
			"are an error.\n"+
			"\n"+
			"Example:\n"+
			"  statsblob derive -templates templates.json -elapsed 5m old.blob new.blob\n",
		stdout, stderr)
	tfile := fs.String("templates", "", "templates `FILE` (one template's JSON or an array of them)")
	elapsed := fs.Duration("elapsed", 0, "time NEW (or OLD to NEW) covers, for rates (`DURATION`, e.g. 10s)")
	atFlag := fs.String("at", "", "when NEW was read (`TIME`, RFC 3339, on the blob's clock): where NEW stands alone, rates cover TIME minus its last reset")
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
	var at time.Time
	if *atFlag != "" {
		var err error
		if at, err = time.Parse(time.RFC3339Nano, *atFlag); err != nil {
			return fs.usageError("-at %q is not an RFC 3339 time (2026-11-27T12:00:00Z)", *atFlag)
		}
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
	vs, err := derive.ComputeAt(t, prev, cur, *elapsed, at)
	if err != nil {
		fs.fail(err)
		return 1
	}
	if prev != nil {
		resetNote(stderr, pos, prev, cur, vs, !at.IsZero())
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

// resetNote says on stderr, as iostat does, that a reset between the
// readings pos (OLD, NEW) changed the figures: the blob's (NEW stands
// alone), or counters' of their own (the metrics that read them).
func resetNote(stderr io.Writer, pos []string, prev, cur *blob.Blob, vs []derive.Value, at bool) {
	if p, c := prev.Header(), cur.Header(); c.LastResetRaw > p.LastResetRaw {
		over := "-elapsed (-at gives the time since the reset)"
		if at {
			over = "-at minus the reset"
		}
		fmt.Fprintf(stderr, "statsblob derive: %s was reset at %s, after %s: figures since its reset, rates over %s\n",
			pos[1], c.LastReset.UTC().Format(time.RFC3339Nano), pos[0], over)
		return
	}
	var names []string
	for _, v := range vs {
		if v.SinceReset {
			names = append(names, v.Name)
		}
	}
	if len(names) > 0 {
		fmt.Fprintf(stderr, "statsblob derive: a counter fell from %s to %s, reset on its own: figures of %s since that reset\n",
			pos[0], pos[1], strings.Join(names, ", "))
	}
}
