package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/voi"
)

// runQuantile merges blob files and prints quantile estimates of one VOI
// from its t-digest or histogram.
func runQuantile(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("quantile", "quantile -voi NAME|ID [-q LIST] [-stat tdigest|hist] [-templates FILE] FILE...",
		"Quantile merges the blob files as merge does (blob.MergeAll; files left out\n"+
			"are reported on stderr and make the exit status 1) and prints, for each\n"+
			"quantile q of -q, one line \"q<TAB>estimate\" from the VOI's t-digest or\n"+
			"histogram: the library's answer (blob.Stat.Quantile), bounded by the VOI's\n"+
			"MIN and MAX when it keeps them (q 0 and 1 are then MIN and MAX for a\n"+
			"t-digest), an integer from an integer VOI's t-digest. A VOI with both\n"+
			"uses its t-digest unless -stat hist is given.\n"+
			"The VOI is given by id, or by name with -templates (the VOI names of the\n"+
			"blobs' template).\n",
		stdout, stderr)
	q := addVOIQuery(fs, "query")
	qArg := fs.String("q", "0.5,0.9,0.99", "the quantiles to print, a comma-separated `LIST` of numbers in [0, 1] or percentiles (p50, p99.9)")
	files, code, ok := fs.parse(args, 1)
	if !ok {
		return code
	}
	qs, err := parseQuantiles(*qArg)
	if err != nil {
		return fs.usageError("-q %q: %v", *qArg, err)
	}
	st, label, used, status, ok := q.stat(fs, "quantile", files)
	if !ok {
		return status
	}
	w := bufio.NewWriter(stdout)
	defer w.Flush()
	for _, q := range qs {
		v, err := st.Quantile(q)
		if errors.Is(err, voi.ErrEmpty) {
			w.Flush()
			fs.fail(fmt.Errorf("VOI %s: its %v holds no samples in the %d merged files", label, st.DType, used))
			return 1
		}
		if err != nil {
			w.Flush()
			fs.fail(fmt.Errorf("VOI %s: %v quantile %g: %w", label, st.DType, q, err))
			return 1
		}
		fmt.Fprintf(w, "%s\t%s\n", strconv.FormatFloat(q, 'g', -1, 64), strconv.FormatFloat(v, 'f', -1, 64))
	}
	return status
}

// resolveVOI returns the id of the VOI arg names (an id, or a name of the
// template of hash in ts) and how messages call it: "4", or "4 (TCP_RTT)"
// with templates.
func resolveVOI(arg string, ts *templates, hash uint32) (int32, string, error) {
	n, numErr := strconv.ParseInt(arg, 10, 32)
	if ts == nil {
		return int32(n), arg, numErr // numErr != nil: excluded by the caller
	}
	t, err := ts.byHash(hash)
	if err != nil {
		return 0, "", err
	}
	var names []string
	for _, d := range t.VOIs() {
		if d.Name == arg {
			return d.ID, fmt.Sprintf("%d (%s)", d.ID, d.Name), nil
		}
		names = append(names, d.Name)
	}
	if numErr == nil {
		if name, ok := t.VOIName(int32(n)); ok && name != "" {
			return int32(n), fmt.Sprintf("%d (%s)", n, name), nil
		}
		return int32(n), arg, nil
	}
	return 0, "", fmt.Errorf("template %s has no VOI named %q (its VOIs: %s)", t.Spec(), arg, strings.Join(names, ", "))
}

// parseQuantiles parses a comma-separated list of quantiles, each a
// number in [0, 1] or a percentile (see parseQuantile).
func parseQuantiles(s string) ([]float64, error) {
	var qs []float64
	for _, f := range strings.Split(s, ",") {
		q, err := parseQuantile(strings.TrimSpace(f))
		if err != nil {
			return nil, err
		}
		qs = append(qs, q)
	}
	return qs, nil
}

// parseQuantile parses one quantile: a number in [0, 1] ("0.99") or a
// percentile "pP" or "P%" with P in [0, 100] ("p99", "p99.9", "99.9%"),
// which is P/100 rounded to the nearest float64 (p99.9 is 0.999).
func parseQuantile(f string) (float64, error) {
	bad := fmt.Errorf("%q is not a quantile (a number in [0, 1], or a percentile such as p99 or 99.9%%)", f)
	pct, isPct := strings.CutPrefix(f, "p")
	if !isPct {
		pct, isPct = strings.CutSuffix(f, "%")
	}
	if isPct {
		// Parse P as a decimal and scale by 10^-2 in the decimal text, so
		// that p99.9 is exactly the float64 nearest 0.999.
		digits, dots := 0, 0
		for _, c := range pct {
			switch {
			case c >= '0' && c <= '9':
				digits++
			case c == '.':
				dots++
			default:
				return 0, bad
			}
		}
		if digits == 0 || dots > 1 {
			return 0, bad
		}
		whole, frac, _ := strings.Cut(pct, ".")
		whole = strings.TrimLeft(whole, "0")
		for len(whole) < 2 {
			whole = "0" + whole
		}
		f = whole[:len(whole)-2] + "." + whole[len(whole)-2:] + frac
	}
	q, err := strconv.ParseFloat(f, 64)
	if err != nil || math.IsNaN(q) || q < 0 || q > 1 {
		return 0, bad
	}
	return q, nil
}

// queryStat finds the statistic of VOI id to query: a t-digest or a
// histogram (want, or the t-digest if it has both).
func queryStat(b *blob.Blob, id int32, want voi.SType) (blob.Stat, error) {
	var ids []string
	var have []voi.SType
	found := false
	for vid, st := range b.Stats() {
		if s := strconv.Itoa(int(vid)); !slices.Contains(ids, s) {
			ids = append(ids, s)
		}
		if vid == id {
			found = true
			have = append(have, st.Type)
		}
	}
	if !found {
		return blob.Stat{}, fmt.Errorf("not in the blobs (their VOI ids: %s)", strings.Join(ids, ", "))
	}
	order := []voi.SType{voi.TDgst, voi.Hist}
	if want >= 0 {
		order = []voi.SType{want}
	}
	for _, t := range order {
		if !slices.Contains(have, t) {
			continue
		}
		return b.Fetch(id, t)
	}
	keeps := make([]string, len(have))
	for i, t := range have {
		keeps[i] = t.String()
	}
	if want >= 0 {
		return blob.Stat{}, fmt.Errorf("no %v statistic (it keeps %s)", want, strings.Join(keeps, ", "))
	}
	return blob.Stat{}, fmt.Errorf("no t-digest or histogram to query (it keeps %s)", strings.Join(keeps, ", "))
}
