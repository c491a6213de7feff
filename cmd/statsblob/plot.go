package main

import (
	"bufio"
	"fmt"
	"html"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/hist"
	"github.com/statsblob/statsblob/tdigest"
	"github.com/statsblob/statsblob/voi"
)

// plotPercentiles are the rows of plot's percentile table.
var plotPercentiles = []float64{0, 0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999, 1}

// runPlot merges blob files and prints one VOI's percentile table and a
// bar plot of its histogram buckets or t-digest centroids, on the terminal
// and, with -svg, as an SVG file.
func runPlot(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("plot", "plot -voi NAME|ID [-stat tdigest|hist] [-width N] [-svg FILE] [-templates FILE] FILE...",
		"Plot merges the blob files as merge does (files left out are reported on\n"+
			"stderr and make the exit status 1) and prints, for one VOI, a table of\n"+
			"percentiles (p0 to p100, estimated as quantile does) and a bar plot: one\n"+
			"bar per histogram bucket (from the first bucket that holds samples to the\n"+
			"last) or per t-digest centroid (its mean and count), scaled to -width\n"+
			"characters. With -svg the plot is also written to FILE as an SVG image.\n"+
			"A VOI with both statistics uses its t-digest unless -stat hist is given.\n",
		stdout, stderr)
	q := addVOIQuery(fs, "plot")
	width := fs.Int("width", 50, "the longest bar, in `N` characters (1..500)")
	svgFile := fs.String("svg", "", "also write the plot as an SVG image to `FILE`")
	files, code, ok := fs.parse(args, 1)
	if !ok {
		return code
	}
	if *width < 1 || *width > 500 {
		return fs.usageError("-width %d outside 1..500", *width)
	}
	st, label, used, status, ok := q.stat(fs, "plot", files)
	if !ok {
		return status
	}
	n, _ := st.Count()
	if n == 0 {
		fs.fail(fmt.Errorf("VOI %s: its %v holds no samples in the %d merged files", label, st.DType, used))
		return 1
	}
	title := fmt.Sprintf("VOI %s %v of %d files: %d samples", label, st.DType, used, n)
	w := bufio.NewWriter(stdout)
	defer w.Flush()
	fmt.Fprintf(w, "%s\n\n", title)
	if err := writePercentiles(w, st); err != nil {
		w.Flush()
		fs.fail(fmt.Errorf("VOI %s: %w", label, err))
		return 1
	}
	bars := plotBars(st)
	fmt.Fprintln(w)
	writeBars(w, bars, *width)
	if *svgFile != "" {
		if err := os.WriteFile(*svgFile, appendSVG(nil, title, bars), 0o644); err != nil {
			w.Flush()
			fs.fail(err)
			return 1
		}
	}
	return status
}

// percentileName is how plot and quantile name quantile q: p50, p99.9.
func percentileName(q float64) string {
	return "p" + strconv.FormatFloat(q*100, 'f', -1, 64)
}

func formatValue(x float64) string { return strconv.FormatFloat(x, 'g', 7, 64) }

// writePercentiles prints the percentile table of statistic st.
func writePercentiles(w io.Writer, st blob.Stat) error {
	fmt.Fprintf(w, "%-10s %s\n", "percentile", "value")
	for _, q := range plotPercentiles {
		x, err := st.Quantile(q)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%-10s %s\n", percentileName(q), formatValue(x))
	}
	return nil
}

// bar is one bar of a plot: its label and its count.
type bar struct {
	label string
	count uint64
}

// plotBars returns the bars of a histogram (its buckets from the first
// that holds samples to the last) or of a t-digest (its centroids in mean
// order).
func plotBars(st blob.Stat) []bar {
	var bars []bar
	if st.DType.IsTDigest() {
		for c := range tdigest.Centroids(st.Data, st.DType) {
			bars = append(bars, bar{formatValue(c.Mu.Float64()), c.Count})
		}
		return bars
	}
	maxV := voi.LimitMax(st.VOIDType)
	first, last := -1, -1
	for i, b := range hist.Buckets(st.Data, st.DType, st.VOIDType) {
		ub := "max"
		if b.UB != maxV {
			ub = formatValue(hist.Float64(st.VOIDType, b.UB))
		}
		label := "[" + formatValue(hist.Float64(st.VOIDType, b.LB)) + ", " + ub + ")"
		if st.DType == voi.DVHist32 || st.DType == voi.DVHist64 {
			label = formatValue(hist.Float64(st.VOIDType, b.LB))
		}
		bars = append(bars, bar{label, b.Cnt})
		if b.Cnt > 0 {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if first < 0 {
		return nil
	}
	return bars[first : last+1]
}

// writeBars prints bars as text, the longest width characters of █.
func writeBars(w io.Writer, bars []bar, width int) {
	lw, cw := 0, 0
	var most uint64
	for _, b := range bars {
		lw = max(lw, len(b.label))
		cw = max(cw, len(strconv.FormatUint(b.count, 10)))
		most = max(most, b.count)
	}
	for _, b := range bars {
		n := 0
		if most > 0 {
			n = int((b.count*uint64(width) + most/2) / most)
		}
		if n == 0 && b.count > 0 {
			n = 1
		}
		fmt.Fprintf(w, "%*s %*d %s\n", lw, b.label, cw, b.count, strings.Repeat("█", n))
	}
}

// appendSVG appends an SVG bar chart of bars (one column per bar, labels
// under the first, middle and last) with a title.
func appendSVG(dst []byte, title string, bars []bar) []byte {
	const W, H, left, top, bottom = 640, 320, 50, 30, 40
	var most uint64
	for _, b := range bars {
		most = max(most, b.count)
	}
	plotW, plotH := float64(W-left-10), float64(H-top-bottom)
	dst = fmt.Appendf(dst, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n", W, H, W, H)
	dst = fmt.Appendf(dst, `<rect width="%d" height="%d" fill="white"/>`+"\n", W, H)
	dst = fmt.Appendf(dst, `<text x="%d" y="18" font-size="13">%s</text>`+"\n", left, html.EscapeString(title))
	dst = fmt.Appendf(dst, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", left, top+int(plotH), W-10, top+int(plotH))
	dst = fmt.Appendf(dst, `<text x="%d" y="%d" text-anchor="end">%d</text>`+"\n", left-4, top+10, most)
	dst = fmt.Appendf(dst, `<text x="%d" y="%d" text-anchor="end">0</text>`+"\n", left-4, top+int(plotH))
	if len(bars) == 0 || most == 0 {
		return append(dst, "</svg>\n"...)
	}
	bw := plotW / float64(len(bars))
	for i, b := range bars {
		h := plotH * float64(b.count) / float64(most)
		x := float64(left) + float64(i)*bw
		dst = fmt.Appendf(dst, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="steelblue"><title>%s: %d</title></rect>`+"\n",
			x+bw*0.1, float64(top)+plotH-h, bw*0.8, h, html.EscapeString(b.label), b.count)
	}
	for _, i := range []int{0, len(bars) / 2, len(bars) - 1} {
		x := float64(left) + (float64(i)+0.5)*bw
		dst = fmt.Appendf(dst, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", x, H-bottom+16, html.EscapeString(bars[i].label))
	}
	return append(dst, "</svg>\n"...)
}
