package main

import (
	"bufio"
	"fmt"
	"io"
	"os"

	"github.com/statsblob/statsblob/cmd/statsblob/internal/scenario"
)

// runScenarios executes each scenario file in turn; the output of each is
// exactly what the C reference's driver prints (FORMAT.md). It stops at
// the first scenario that fails.
func runScenarios(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("run", "run FILE...",
		"Run executes conformance scenarios (testdata/conformance/FORMAT.md) and\n"+
			"prints exactly what the C reference's driver prints for them. It stops\n"+
			"at the first scenario that fails, with exit status 1.\n",
		stdout, stderr)
	files, code, ok := fs.parse(args, 1)
	if !ok {
		return code
	}
	w := bufio.NewWriter(stdout)
	defer w.Flush()
	for _, name := range files {
		var r io.Reader = os.Stdin
		if name != "-" {
			f, err := os.Open(name)
			if err != nil {
				fs.fail(err)
				return 1
			}
			defer f.Close()
			r = f
		}
		if err := scenario.Run(r, w); err != nil {
			w.Flush()
			fs.fail(fmt.Errorf("%s: %w", displayName(name), err))
			return 1
		}
	}
	return 0
}
