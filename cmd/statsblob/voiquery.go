package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/voi"
)

// voiQuery is what quantile and plot share: the flags that pick a VOI's
// t-digest or histogram (-voi, -stat, -templates), and the merge of the
// files that it is read from.
type voiQuery struct {
	voiArg, statArg, tfile *string
}

// addVOIQuery registers the flags; verb says what the command does with
// the VOI ("query", "plot").
func addVOIQuery(fs *flagSet, verb string) *voiQuery {
	return &voiQuery{
		voiArg:  fs.String("voi", "", "the VOI to "+verb+", by `NAME|ID` (required; a name needs -templates)"),
		statArg: fs.String("stat", "", "which statistic to "+verb+", `tdigest|hist` (any case; default: the t-digest if the VOI has one)"),
		tfile:   fs.String("templates", "", "templates `FILE` for VOI names (as for render)"),
	}
}

// stat checks the flags, merges files (as merge does) and returns the
// statistic to read, the VOI's label, how many files were merged and the
// exit status so far (1 if a file was left out). ok false means the
// command is over with status code (a usage error or an input it could
// not use, reported on stderr).
func (q *voiQuery) stat(fs *flagSet, cmd string, files []string) (st blob.Stat, label string, used, code int, ok bool) {
	if *q.voiArg == "" {
		return st, "", 0, fs.usageError("-voi NAME|ID is required"), false
	}
	want := voi.SType(-1)
	switch strings.ToLower(*q.statArg) {
	case "":
	case "tdigest":
		want = voi.TDgst
	case "hist":
		want = voi.Hist
	default:
		return st, "", 0, fs.usageError("-stat %q: want tdigest or hist", *q.statArg), false
	}
	var ts *templates
	if *q.tfile != "" {
		var err error
		if ts, err = readTemplates(*q.tfile); err != nil {
			fs.fail(err)
			return st, "", 0, 1, false
		}
	}
	if _, err := strconv.ParseInt(*q.voiArg, 10, 32); err != nil && ts == nil {
		return st, "", 0, fs.usageError("-voi %q: a VOI name needs -templates FILE (or give the VOI's id)", *q.voiArg), false
	}
	m, used, _, errs := mergeFiles(cmd, files, nil)
	for _, err := range errs {
		fs.fail(err)
	}
	if m == nil {
		return st, "", 0, 1, false
	}
	if len(errs) > 0 {
		code = 1
	}
	id, label, err := resolveVOI(*q.voiArg, ts, m.TplHash())
	if err != nil {
		fs.fail(err)
		return st, "", 0, 1, false
	}
	if st, err = queryStat(m, id, want); err != nil {
		fs.fail(fmt.Errorf("VOI %s: %w", label, err))
		return st, "", 0, 1, false
	}
	return st, label, used, code, true
}
