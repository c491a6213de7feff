package main

import (
	"fmt"
	"io"
	"os"
)

// progress reports how far a long read of files has got, on a terminal:
// a line rewritten in place ("\r") at every whole percent.
type progress struct {
	w     io.Writer // nil: no report
	what  string    // "statsblob merge"
	total int
	step  int
}

// minProgressFiles is the fewest files whose reading is reported.
const minProgressFiles = 1000

// newProgress returns the progress report of reading total files for
// command name: on stderr if stderr and stdout are both terminals (so a
// blob written to stdout or a redirected report never gets it), or if
// STATSBLOB_PROGRESS=1 (tests), and only for minProgressFiles files or
// more (any number with STATSBLOB_PROGRESS=1).
func newProgress(name string, total int) *progress {
	p := &progress{what: "statsblob " + name, total: total, step: max(1, total/100)}
	switch {
	case os.Getenv("STATSBLOB_PROGRESS") == "1":
		p.w = os.Stderr
	case total >= minProgressFiles && isTerminal(os.Stdout) && isTerminal(os.Stderr):
		p.w = os.Stderr
	}
	return p
}

// read reports that n of the files have been read.
func (p *progress) read(n int) {
	if p.w == nil || n%p.step != 0 && n != p.total {
		return
	}
	fmt.Fprintf(p.w, "\r%s: read %d of %d files (%d%%)", p.what, n, p.total, n*100/p.total)
	if n == p.total {
		fmt.Fprint(p.w, ", merging\n")
	}
}
