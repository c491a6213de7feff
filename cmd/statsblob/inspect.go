package main

import (
	"bufio"
	"fmt"
	"io"
)

// runInspect validates blob files and summarises each: size, template
// hash, VOIs and their statistics with error counts. A damaged file gets
// one line on stderr naming it and the reason, the other files are still
// inspected, and the exit status is 1.
func runInspect(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("inspect", "inspect FILE...",
		"Inspect validates each blob file as a collector would (blob.FromBytes) and\n"+
			"prints its size, template hash and statistics with their error counts.\n"+
			"A file that is not a valid blob is reported on stderr, one line per file;\n"+
			"the others are still inspected and the exit status is 1.\n",
		stdout, stderr)
	files, code, ok := fs.parse(args, 1)
	if !ok {
		return code
	}
	w := bufio.NewWriter(stdout)
	defer w.Flush()
	status := 0
	for _, name := range files {
		b, err := readBlob(name)
		if err != nil {
			w.Flush()
			fs.fail(err)
			status = 1
			continue
		}
		nstats, errs := 0, 0
		for _, s := range b.Stats() {
			nstats++
			errs += int(s.Errs)
		}
		fmt.Fprintf(w, "%s: ok: %d bytes (maxsz %d), template hash %d, %d VOI slots, %d statistics, %d errors counted\n",
			displayName(name), b.CurSz(), b.MaxSz(), b.TplHash(), b.NumVOIs(), nstats, errs)
		for id, s := range b.Stats() {
			fmt.Fprintf(w, "  voi %d %s: %s %s, %d bytes, errs=%d\n", id, s.VOIDType, s.Type, s.DType, len(s.Data), s.Errs)
		}
	}
	return status
}
