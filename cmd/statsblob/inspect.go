package main

import (
	"bufio"
	"fmt"
	"io"

	"github.com/statsblob/statsblob/voi"
)

// runInspect validates blob files and summarises each: size, template
// hash, VOIs and their statistics with error counts. A damaged file gets a
// precise error and a non-zero exit status.
func runInspect(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("inspect", "inspect FILE...", stderr)
	if !parseFiles(fs, args) {
		return 2
	}
	w := bufio.NewWriter(stdout)
	defer w.Flush()
	status := 0
	for _, name := range fs.Args() {
		b, err := readBlob(name)
		if err != nil {
			w.Flush()
			fmt.Fprintf(stderr, "statsblob inspect: %v\n", err)
			status = 1
			continue
		}
		nstats, errs := 0, 0
		for v := range b.Visits() {
			if v.SType == voi.StatVoiState {
				continue
			}
			nstats++
			errs += int(v.Errs)
		}
		fmt.Fprintf(w, "%s: ok: %d bytes (maxsz %d), template hash %d, %d VOI slots, %d statistics, %d errors counted\n",
			name, b.CurSz(), b.MaxSz(), b.TplHash(), b.NumVOIs(), nstats, errs)
		for v := range b.Visits() {
			if v.SType == voi.StatVoiState {
				continue
			}
			fmt.Fprintf(w, "  voi %d %s: %s %s, %d bytes, errs=%d\n", v.VOIID, v.VOIDType, v.SType, v.DType, v.DSz, v.Errs)
		}
	}
	return status
}
