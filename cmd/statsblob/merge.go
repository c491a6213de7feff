package main

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// runMerge aggregates blob files of one template into one blob file, in
// the canonical order of blob.MergeAll.
func runMerge(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("merge", "merge -o OUT [-templates FILE] FILE...",
		"Merge adds up blob files of one template (blob.MergeAll, in a canonical\n"+
			"order that does not depend on the order of the files) and writes the result\n"+
			"to OUT, through a temporary file renamed into place; \"-o -\" writes it to\n"+
			"standard output.\n\n"+
			"Files that cannot be read, or that do not fit the others (another template,\n"+
			"other histogram bounds: the largest group of compatible files is merged),\n"+
			"are reported on stderr, one line per file, and left out; the others are\n"+
			"still merged and written, and the exit status is 1.\n\n"+
			"Where a statistic of the merge would overflow its fixed width (an INT_U32\n"+
			"SUM past 2^32-1, a 32-bit histogram counter), no file is left out: the\n"+
			"files are added up in the template's wide form (tpl.Widen: 64-bit integer\n"+
			"VOIs and counters, TDGSTCLUST64 digests with more slots; blob.Fold), and OUT\n"+
			"is a blob of that wide template, whose hash differs from the files'; with\n"+
			"-templates, the wide template takes the files' template's name (and so the\n"+
			"hash statsblob-collector's aggregates have), else it is named \"wide\". What\n"+
			"would pass even 64 bits saturates, is counted in the statistic's errors and\n"+
			"reported, and the exit status is 1.\n",
		stdout, stderr)
	out := fs.String("o", "", "write the merged blob to `OUT` (required; - for standard output)")
	tfile := fs.String("templates", "", "templates `FILE` naming the files' template, for the name of its wide form")
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
	var ts *templates
	if *tfile != "" {
		var err error
		if ts, err = readTemplates(*tfile); err != nil {
			fs.fail(err)
			return 1
		}
	}
	widen := func(b *blob.Blob) (*tpl.Template, error) {
		if ts != nil {
			if t, err := ts.byHash(b.TplHash()); err == nil {
				return tpl.Widen(t)
			}
		}
		return tpl.WidenLayout("wide", b.Bytes())
	}
	m, used, widened, errs := mergeFiles("merge", files, widen)
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
	if widened {
		fmt.Fprintf(summary, "merged %d of %d files into %s (%d bytes, widened: template hash %d)\n", used, len(files), outName, m.CurSz(), m.TplHash())
		if len(errs) > 0 {
			return 1
		}
		return 0
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
// number of files merged, and the errors. With widen (which returns the
// wide form of a blob's template), files whose merge would overflow are not
// left out: the compatible files are folded into the wide form of their
// template instead (see widenMerge).
func mergeFiles(cmd string, files []string, widen func(*blob.Blob) (*tpl.Template, error)) (m *blob.Blob, used int, widened bool, errs []error) {
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
		return nil, 0, false, errs
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
	if widen != nil && slices.ContainsFunc(left, func(ie *blob.InputError) bool { return ie.Like < 0 && errors.Is(ie.Err, voi.ErrOverflow) }) {
		var unlike []*blob.InputError
		for _, ie := range left {
			if ie.Like >= 0 {
				unlike = append(unlike, ie)
			}
		}
		w, err := widenMerge(blobs, unlike, widen)
		if w != nil {
			m, left, widened = w, unlike, true
		}
		if err != nil {
			errs = append(errs, err)
		}
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
	return m, merged, widened, errs
}

// widenMerge adds up the blobs but those of unlike (the inputs MergeAll
// found incompatible) in the wide form of their template (widen,
// blob.Fold), so that no statistic's overflow leaves an input out; the
// header is that of the first blob in MergeAll's canonical order. A
// statistic that saturates even there is an error (the blob is still
// returned with it, in errs' place, as an error of the merge).
func widenMerge(blobs []*blob.Blob, unlike []*blob.InputError, widen func(*blob.Blob) (*tpl.Template, error)) (*blob.Blob, error) {
	skip := map[int]bool{}
	for _, ie := range unlike {
		skip[ie.Index] = true
	}
	var group []*blob.Blob
	for i, b := range blobs {
		if !skip[i] {
			group = append(group, b)
		}
	}
	first := 0
	for i, b := range group {
		f := group[first]
		if c := cmp.Compare(b.Header().CreatedRaw, f.Header().CreatedRaw); c < 0 || c == 0 && bytes.Compare(b.Bytes(), f.Bytes()) < 0 {
			first = i
		}
	}
	group[0], group[first] = group[first], group[0]
	w, err := widen(group[0])
	if err != nil {
		return nil, fmt.Errorf("widen: %w", err)
	}
	acc, err := blob.Widen(w, group[0], blob.NewEnv(nil, 1))
	if err != nil {
		return nil, err
	}
	sat, err := blob.Fold(acc, group[1:]...)
	if err != nil {
		return nil, err
	}
	if sat > 0 {
		return acc, fmt.Errorf("%d statistics saturated even at 64 bits (counted in their errors): %w", sat, voi.ErrOverflow)
	}
	return acc, nil
}
