package main

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"strconv"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// runInspect validates blob files and summarises each: size, template
// hash, VOIs and their statistics with error counts. A damaged file gets
// one line on stderr naming it and the reason, the other files are still
// inspected, and the exit status is 1.
func runInspect(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("inspect", "inspect [-templates FILE] FILE...",
		"Inspect validates each blob file as a collector would (blob.FromBytes) and\n"+
			"prints its size, template hash and statistics: per VOI its data type and\n"+
			"per statistic its type, data type, size, error count and value (SUM, MAX,\n"+
			"MIN; \"not updated\" before the first update) or sample count (histograms,\n"+
			"t-digests). With -templates, the template and VOIs are named too.\n"+
			"A file that is not a valid blob is reported on stderr, one line per file;\n"+
			"the others are still inspected and the exit status is 1.\n",
		stdout, stderr)
	tfile := fs.String("templates", "", "templates `FILE` for template and VOI names (as for render)")
	files, code, ok := fs.parse(args, 1)
	if !ok {
		return code
	}
	var ts *templates
	if *tfile != "" {
		var err error
		if ts, err = readTemplates(*tfile); err != nil {
			fs.fail(err)
			return 1
		}
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
		var t *tpl.Template
		tname := ""
		if ts != nil {
			if t, err = ts.byHash(b.TplHash()); err != nil {
				w.Flush()
				fs.fail(fmt.Errorf("%s: %w", displayName(name), err))
				status = 1
				continue
			}
			tname = " (" + t.Spec() + ")"
		}
		fmt.Fprintf(w, "%s: ok: %d bytes (maxsz %d), template hash %d%s, %d VOI slots, %d statistics, %d errors counted\n",
			displayName(name), b.CurSz(), b.MaxSz(), b.TplHash(), tname, b.NumVOIs(), nstats, errs)
		cur := int32(-1)
		for id, s := range b.Stats() {
			if id != cur {
				cur = id
				label := ""
				if t != nil {
					if n, ok := t.VOIName(id); ok {
						label = fmt.Sprintf(" %q", n)
					}
				}
				fmt.Fprintf(w, "  voi %d%s %v\n", id, label, s.VOIDType)
			}
			fmt.Fprintf(w, "    %-5v %-12v %5d bytes, errs=%d: %s\n", s.Type, s.DType, len(s.Data), s.Errs, statSummary(s))
		}
	}
	return status
}

// statSummary is what inspect says of a statistic's data: the value of a
// SUM, MAX or MIN, the sample count of a histogram or t-digest.
func statSummary(s blob.Stat) string {
	if n, err := s.Count(); err == nil {
		return strconv.FormatUint(n, 10) + " samples"
	}
	if !s.Valid {
		return "not updated"
	}
	if s.DType.IsInt() && len(s.Data) >= s.DType.Size() { // exact, also beyond 2^53
		switch s.DType {
		case voi.IntS32:
			return strconv.FormatInt(int64(int32(binary.LittleEndian.Uint32(s.Data))), 10)
		case voi.IntU32:
			return strconv.FormatUint(uint64(binary.LittleEndian.Uint32(s.Data)), 10)
		case voi.IntS64, voi.IntSLong:
			return strconv.FormatInt(int64(binary.LittleEndian.Uint64(s.Data)), 10)
		default:
			return strconv.FormatUint(binary.LittleEndian.Uint64(s.Data), 10)
		}
	}
	v, err := s.Value()
	if err != nil {
		return err.Error()
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}
