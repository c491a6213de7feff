package main

import (
	"bufio"
	"fmt"
	"io"
	"os"

	"github.com/statsblob/statsblob/internal/scenario"
)

// runScenarios executes each scenario file in turn; the output of each is
// exactly what the C reference's driver prints (FORMAT.md).
func runScenarios(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("run", "run FILE...", stderr)
	if !parseFiles(fs, args) {
		return 2
	}
	w := bufio.NewWriter(stdout)
	defer w.Flush()
	for _, name := range fs.Args() {
		f, err := os.Open(name)
		if err != nil {
			fmt.Fprintf(stderr, "statsblob run: %v\n", err)
			return 1
		}
		err = scenario.Run(f, w)
		f.Close()
		if err != nil {
			w.Flush()
			fmt.Fprintf(stderr, "statsblob run: %s: %v\n", name, err)
			return 1
		}
	}
	return 0
}
