package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/devstat"
)

// runIostat prints iostat's figures per device from devstat blobs.
func runIostat(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("iostat", "iostat [OLD] NEW",
		"Iostat prints, per device, what iostat(8) shows of the devices' devstat\n"+
			"blobs (package devstat's stock template): transactions per second, KB per\n"+
			"transaction, MB/s, %busy, reads and writes per second, ms per read and per\n"+
			"write, the deepest queue, and latency p50 and p99 in ms.\n"+
			"\n"+
			"NEW and OLD are each a blob file (one device, named by the file's name\n"+
			"without its extension) or a directory of them (one device per file). With\n"+
			"NEW alone, each blob is one window (a snapshot taken with reset, or a\n"+
			"collector's closed window). With OLD, the two are cumulative readings of the\n"+
			"same devices, OLD the earlier, and the figures are those of the time between\n"+
			"them (devices missing from OLD are skipped and reported); latency quantiles\n"+
			"then come from the histograms' difference, within a bucket (a factor of 2).\n"+
			"\n"+
			"Example:\n"+
			"  statsblob iostat readings/0900 readings/0905\n",
		stdout, stderr)
	pos, code, ok := fs.parse(args, 1)
	if !ok {
		return code
	}
	if len(pos) > 2 {
		return fs.usageError("want [OLD] NEW, got %d arguments", len(pos))
	}
	cur, err := readDevices(pos[len(pos)-1])
	if err != nil {
		fs.fail(err)
		return 1
	}
	var old map[string]*blob.Blob
	if len(pos) == 2 {
		if old, err = readDevices(pos[0]); err != nil {
			fs.fail(err)
			return 1
		}
	}
	names := make([]string, 0, len(cur))
	for n := range cur {
		names = append(names, n)
	}
	slices.Sort(names)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	io.WriteString(tw, "device\ttps\tKB/t\tMB/s\t%busy\tr/s\tw/s\tms/r\tms/w\tqmax\tp50ms\tp99ms\t\n")
	status := 0
	for _, n := range names {
		var prev *blob.Blob
		if old != nil {
			if prev = old[n]; prev == nil {
				fs.fail(fmt.Errorf("device %s: not in %s", n, pos[0]))
				status = 1
				continue
			}
		}
		s, err := devstat.Compute(prev, cur[n])
		if err != nil {
			fs.fail(fmt.Errorf("device %s: %w", n, err))
			status = 1
			continue
		}
		fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%.2f\t%.1f\t%.2f\t%.2f\t%.3f\t%.3f\t%d\t%.3f\t%.3f\t\n", n,
			s.TPS, s.KBPerTransfer, s.MBPerSec, s.BusyPercent,
			s.OpsPerSec(devstat.Read), s.OpsPerSec(devstat.Write), s.MsPerOp(devstat.Read), s.MsPerOp(devstat.Write),
			s.MaxOutstanding, s.LatencyP50.Seconds()*1e3, s.LatencyP99.Seconds()*1e3)
	}
	tw.Flush()
	return status
}

// readDevices reads one reading of devices: a blob file, or a directory of
// blob files, keyed by device name (the file's name without extension).
func readDevices(path string) (map[string]*blob.Blob, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	files := []string{path}
	if st.IsDir() {
		ents, err := os.ReadDir(path)
		if err != nil {
			return nil, err
		}
		files = files[:0]
		for _, e := range ents {
			if e.Type().IsRegular() {
				files = append(files, filepath.Join(path, e.Name()))
			}
		}
	}
	devs := make(map[string]*blob.Blob, len(files))
	for _, f := range files {
		b, err := readBlob(f)
		if err != nil {
			return nil, err
		}
		name := strings.TrimSuffix(filepath.Base(f), filepath.Ext(f))
		devs[name] = b
	}
	if len(devs) == 0 {
		return nil, fmt.Errorf("%s: no blob files", path)
	}
	return devs, nil
}
