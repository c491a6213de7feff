package main

import (
	"fmt"
	"io"
	"os"

	"github.com/statsblob/statsblob/blob"
)

// runMerge aggregates blob files of one template into one blob file, in
// the canonical order of blob.MergeAll.
func runMerge(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("merge", "merge -o OUT FILE...", stderr)
	out := fs.String("o", "", "output blob file (required)")
	if !parseFiles(fs, args) {
		return 2
	}
	if *out == "" {
		fs.Usage()
		return 2
	}
	var blobs []*blob.Blob
	for _, name := range fs.Args() {
		b, err := readBlob(name)
		if err != nil {
			fmt.Fprintf(stderr, "statsblob merge: %v\n", err)
			return 1
		}
		blobs = append(blobs, b)
	}
	m, err := blob.MergeAll(blob.NewEnv(nil, 1), blobs...)
	if m == nil {
		fmt.Fprintf(stderr, "statsblob merge: %v\n", err)
		return 1
	}
	if err != nil {
		fmt.Fprintf(stderr, "statsblob merge: warning: %v (counted in the merged blob)\n", err)
	}
	if err := os.WriteFile(*out, m.Bytes(), 0o644); err != nil {
		fmt.Fprintf(stderr, "statsblob merge: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "merged %d blobs into %s (%d bytes)\n", len(blobs), *out, m.CurSz())
	return 0
}
