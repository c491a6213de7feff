package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/voi"
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
			"are reported on stderr, one line per file, and left out; the others are\n"+
			"still merged and written, and the exit status is 1. So is a statistic whose\n"+
			"merge overflowed (it is counted in the merged blob's error counts).\n",
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
	m, used, errs := mergeFiles(files)
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
// that cannot be read, or whose blobs cannot merge with the largest group
// of mutually compatible blobs (a trial merge gives voi.ErrInvalid:
// another template, layout or histogram bounds), are left out, each with
// an error naming it. It returns the merged blob (nil if no file could be
// used), the number of files merged, and the errors: those of the files
// left out, then MergeAll's (an overflow counted in the merged blob).
func mergeFiles(files []string) (*blob.Blob, int, []error) {
	var errs []error
	type input struct {
		name string
		b    *blob.Blob
	}
	var groups [][]input // groups of blobs that merge with their first
	for _, name := range files {
		b, err := readBlob(name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		in := input{name, b}
		placed := false
		for i, g := range groups {
			if compatible(g[0].b, b) == nil {
				groups[i] = append(g, in)
				placed = true
				break
			}
		}
		if !placed {
			groups = append(groups, []input{in})
		}
	}
	if len(groups) == 0 {
		return nil, 0, errs
	}
	best := 0
	for i, g := range groups {
		if len(g) > len(groups[best]) {
			best = i
		}
	}
	ref := groups[best][0]
	blobs := make([]*blob.Blob, 0, len(files))
	for _, in := range groups[best] {
		blobs = append(blobs, in.b)
	}
	nbest := len(blobs)
	for i, g := range groups {
		if i == best {
			continue
		}
		for _, in := range g {
			if err := compatible(ref.b, in.b); err != nil {
				errs = append(errs, fmt.Errorf("%s: not merged: %w (the %d files merged are like %s)",
					displayName(in.name), err, nbest, displayName(ref.name)))
				continue
			}
			blobs = append(blobs, in.b)
		}
	}
	m, err := blob.MergeAll(blob.NewEnv(nil, 1), blobs...)
	if err != nil {
		if m == nil {
			return nil, 0, append(errs, err)
		}
		if errors.Is(err, voi.ErrOverflow) {
			err = fmt.Errorf("%w (counted in the merged blob's error counts)", err)
		}
		errs = append(errs, fmt.Errorf("merge of %d files: %w", len(blobs), err))
	}
	return m, len(blobs), errs
}

// compatible reports whether src merges into a blob like dst: nil, or the
// voi.ErrInvalid error of a trial merge into a copy of dst (other errors,
// overflows, are not incompatibilities).
func compatible(dst, src *blob.Blob) error {
	trial := dst.Clone()
	trial.SetEnv(blob.NewEnv(nil, 1))
	if err := blob.Merge(trial, src); errors.Is(err, voi.ErrInvalid) {
		return err
	}
	return nil
}
