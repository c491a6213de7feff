package main

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// runRecord makes a blob of a template from values read from a file or
// standard input, so that blobs can be made without writing Go.
func runRecord(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("record", "record -templates FILE -tpl NAME -voi NAME|ID [-col N|NAME] [-append] -o OUT [FILE]",
		"Record makes a blob of template -tpl (from the templates file -templates)\n"+
			"and updates VOI -voi with each value read from FILE (standard input if\n"+
			"FILE is missing or \"-\"): one value per line (blank lines and lines that\n"+
			"start with # are skipped), or, with -col, the values of one column of a\n"+
			"CSV file, by number (1 is the first) or by the name in its header line.\n"+
			"Values are numbers of the VOI's type: integers for integer VOIs, any\n"+
			"number for Q VOIs (rounded to the VOI's precision). The blob is written\n"+
			"to OUT (\"-o -\": standard output) and a summary to stderr. With -append\n"+
			"the values are added to the blob already in OUT (of the same template),\n"+
			"so that one blob can take the values of several VOIs, one run each. A VOI\n"+
			"whose metadata declares a count (\"count\" in the templates file) has\n"+
			"each recorded value counted in that VOI's SUM, as blob.CountedOf does.\n\n"+
			"A value that is not a number of the VOI's type, or that a statistic\n"+
			"refuses, is reported on stderr with its line and left out; the others\n"+
			"are still recorded and the exit status is 1.\n",
		stdout, stderr)
	tfile := fs.String("templates", "", "templates `FILE` holding the template (required)")
	tname := fs.String("tpl", "", "the template's `NAME` (required)")
	voiArg := fs.String("voi", "", "the VOI to update, by `NAME|ID` (required)")
	colArg := fs.String("col", "", "read CSV and take the values of column `N|NAME` (a number from 1, or a header name)")
	out := fs.String("o", "", "write the blob to `OUT` (required; - for standard output)")
	appendTo := fs.Bool("append", false, "add the values to the blob in OUT instead of a new blob")
	pos, code, ok := fs.parse(args, 0)
	if !ok {
		return code
	}
	switch {
	case *tfile == "" || *tname == "" || *voiArg == "" || *out == "":
		return fs.usageError("-templates, -tpl, -voi and -o are required")
	case len(pos) > 1:
		return fs.usageError("one input FILE at most, got %d", len(pos))
	case *appendTo && *out == "-":
		return fs.usageError("-append needs a file OUT, not -")
	}
	in := "-"
	if len(pos) == 1 {
		in = pos[0]
	}
	ts, err := readTemplates(*tfile)
	if err != nil {
		fs.fail(err)
		return 1
	}
	var t *tpl.Template
	var names []string
	for _, c := range ts.list {
		if c.Name() == *tname {
			t = c
		}
		names = append(names, c.Name())
	}
	if t == nil {
		fs.fail(fmt.Errorf("templates file %s has no template %q (%s)", ts.file, *tname, holds(names)))
		return 1
	}
	id, label, err := resolveVOI(*voiArg, ts, t.Hash())
	if err != nil {
		fs.fail(err)
		return 1
	}
	var dt voi.DType
	for _, d := range t.VOIs() {
		if d.ID == id {
			dt = d.DType
		}
	}
	if dt == 0 {
		fs.fail(fmt.Errorf("template %s has no VOI %s", t.Spec(), label))
		return 1
	}
	var count *blob.Counted // the handle that counts id's updates, if its metadata declares a count
	if m, _ := t.VOIMeta(id); m.Count != "" {
		h, err := blob.CountedOf(t, id)
		if err != nil {
			fs.fail(err)
			return 1
		}
		count = &h
	}

	var r io.Reader = os.Stdin
	if in != "-" {
		f, err := os.Open(in)
		if err != nil {
			fs.fail(err)
			return 1
		}
		defer f.Close()
		r = f
	}
	b := blob.New(t, blob.NewEnv(nil, 1))
	if *appendTo {
		if b, err = readBlob(*out); err != nil {
			fs.fail(err)
			return 1
		}
		if err := b.CheckTemplate(t); err != nil {
			fs.fail(fmt.Errorf("%s: %w", *out, err))
			return 1
		}
		b.SetEnv(blob.NewEnv(nil, 1))
	}
	n, errs := recordValues(b, id, dt, count, r, *colArg, displayName(in))
	for _, err := range errs {
		fs.fail(err)
	}
	if n < 0 {
		return 1
	}
	status := 0
	if len(errs) > 0 {
		status = 1
	}
	outName := *out
	if *out == "-" {
		outName = "<stdout>"
		if _, err := stdout.Write(b.Bytes()); err != nil {
			fs.fail(err)
			return 1
		}
	} else if err := writeFileAtomic(*out, b.Bytes()); err != nil {
		fs.fail(err)
		return 1
	}
	fmt.Fprintf(stderr, "recorded %d values of VOI %s of %s into %s (%d bytes)\n", n, label, t.Spec(), outName, b.CurSz())
	return status
}

// recordValues updates VOI id (of type dt) of b with each value of r (one
// per line, or column col of CSV), through count if it is not nil (which
// counts each), and returns how many it recorded (-1 if r
// could not be read as asked) and an error per value left out.
func recordValues(b *blob.Blob, id int32, dt voi.DType, count *blob.Counted, r io.Reader, col, name string) (int, []error) {
	var errs []error
	n := 0
	update := func(line int, s string) {
		if err := updateText(b, id, dt, count, s); err != nil {
			errs = append(errs, fmt.Errorf("%s:%d: %q: %w", name, line, s, err))
			return
		}
		n++
	}
	if col == "" {
		sc := bufio.NewScanner(r)
		for line := 1; sc.Scan(); line++ {
			s := strings.TrimSpace(sc.Text())
			if s == "" || strings.HasPrefix(s, "#") {
				continue
			}
			update(line, s)
		}
		if err := sc.Err(); err != nil {
			return -1, append(errs, fmt.Errorf("%s: %w", name, err))
		}
		return n, errs
	}
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	k, err := strconv.Atoi(col)
	byName := err != nil
	if !byName && k < 1 {
		return -1, []error{fmt.Errorf("-col %d: columns count from 1", k)}
	}
	k--
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return -1, append(errs, fmt.Errorf("%s: %w", name, err))
		}
		line, _ := cr.FieldPos(0)
		if byName {
			k = -1
			for i, h := range rec {
				if strings.TrimSpace(h) == col {
					k = i
				}
			}
			if k < 0 {
				return -1, []error{fmt.Errorf("%s: the header line has no column %q (it has %s)", name, col, strings.Join(rec, ", "))}
			}
			byName = false
			continue
		}
		if k >= len(rec) {
			errs = append(errs, fmt.Errorf("%s:%d: no column %d (the line has %d)", name, line, k+1, len(rec)))
			continue
		}
		update(line, strings.TrimSpace(rec[k]))
	}
	return n, errs
}

// updateText updates VOI id of type dt with the number s, through count
// (which counts it, blob.Counted's rule) unless that is nil.
func updateText(b *blob.Blob, id int32, dt voi.DType, count *blob.Counted, s string) error {
	if dt.IsQ() {
		x, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return fmt.Errorf("not a number")
		}
		if count != nil {
			return count.UpdateFloat(b, x)
		}
		return b.UpdateFloat(id, x)
	}
	bits := 32
	if !dt.Is32() {
		bits = 64
	}
	var v uint64
	if dt.Signed() {
		i, err := strconv.ParseInt(s, 10, bits)
		if err != nil {
			return intError(err, dt)
		}
		v = uint64(i)
	} else {
		u, err := strconv.ParseUint(s, 10, bits)
		if err != nil {
			return intError(err, dt)
		}
		v = u
	}
	if count != nil {
		return count.Update(b, dt, v)
	}
	return b.Update(id, dt, v, false)
}

// intError says why strconv refused a value of an integer VOI of type dt.
func intError(err error, dt voi.DType) error {
	if errors.Is(err, strconv.ErrRange) {
		return fmt.Errorf("out of the range of %v", dt)
	}
	return fmt.Errorf("not an integer of %v", dt)
}
