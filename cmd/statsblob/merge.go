package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/statsblob/statsblob/blob"
)

// runMerge aggregates blob files of one template into one blob file, in
// the canonical order of blob.MergeAll.
func runMerge(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("merge", "merge -o OUT FILE...",
		"Merge adds up blob files of one template (blob.MergeAll, in a canonical\n"+
			"order that does not depend on the order of the files) and writes the result\n"+
			"to OUT, through a temporary file renamed into place; \"-o -\" writes it to\n"+
			"standard output.\n\n"+
			"Files that cannot be read, or that do not fit the others (another template,\n"+
			"other histogram bounds: the largest group of compatible files is merged),\n"+
			"and files whose merge would overflow a statistic (merges are all or nothing),\n"+
			"are reported on stderr, one line per file, and left out; the others are\n"+
			"still merged and written, and the exit status is 1.\n",
		stdout, stderr)
	out := fs.String("o", "", "write the merged blob to `OUT` (required; - for standard output)")
	files, code, ok := fs.parse(args, 1)
	if !ok {
		return code
	}
	if *out == "" {
		return fs.usageError("-o OUT is required")
	}
	if *out != "-" {
		if oi, err := os.Stat(*out); err == nil {
			for _, name := range files {
				if fi, err := os.Stat(name); err == nil && os.SameFile(oi, fi) {
					return fs.usageError("output %s is also an input", *out)
				}
			}
		}
	}
	m, used, errs := mergeFiles("merge", files)
	for _, err := range errs {
		fs.fail(err)
	}
	if m == nil {
		return 1
	}
	summary, outName := stdout, *out
	if *out == "-" {
		summary, outName = stderr, "<stdout>"
		if _, err := stdout.Write(m.Bytes()); err != nil {
			fs.fail(err)
			return 1
		}
	} else if err := writeFileAtomic(*out, m.Bytes()); err != nil {
		fs.fail(err)
		return 1
	}
	if len(errs) > 0 {
		fmt.Fprintf(summary, "merged %d of %d files into %s (%d bytes)\n", used, len(files), outName, m.CurSz())
		return 1
	}
	fmt.Fprintf(summary, "merged %d blobs into %s (%d bytes)\n", used, outName, m.CurSz())
	return 0
}

// mergeFiles reads blob files and merges them with blob.MergeAll. Files
// that cannot be read, and those MergeAll leaves out (another template,
// layout or histogram bounds than the largest group of compatible blobs,
// or a merge that would overflow), are left out, each with an error naming
// it. It returns the merged blob (nil if no file could be used), the
// number of files merged, and the errors.
func mergeFiles(cmd string, files []string) (*blob.Blob, int, []error) {
	var errs []error
	var names []string
	var blobs []*blob.Blob
	pr := newProgress(cmd, len(files))
	for i, name := range files {
		pr.read(i + 1)
		b, err := readBlob(name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		names, blobs = append(names, name), append(blobs, b)
	}
	if len(blobs) == 0 {
		return nil, 0, errs
	}
	m, err := blob.MergeAll(blob.NewEnv(nil, 1), blobs...)
	var left []*blob.InputError
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			var ie *blob.InputError
			if errors.As(e, &ie) {
				left = append(left, ie)
			} else {
				errs = append(errs, e)
			}
		}
	} else if err != nil {
		errs = append(errs, err)
	}
	merged := len(blobs) - len(left)
	for _, ie := range left {
		if ie.Like >= 0 {
			errs = append(errs, fmt.Errorf("%s: not merged: %w (the %d files merged are like %s)",
				displayName(names[ie.Index]), ie.Err, merged, displayName(names[ie.Like])))
		} else {
			errs = append(errs, fmt.Errorf("%s: not merged: %w", displayName(names[ie.Index]), ie.Err))
		}
	}
	return m, merged, errs
}
