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
			"without its extension; \"-\", standard input, is device \"-\") or a directory\n"+
			"of them (one device per file; hidden files are skipped, and a file that is\n"+
			"not a blob, or a second file of one device, is reported and left out). With\n"+
			"NEW alone, each blob is one window (a snapshot taken with reset, or a\n"+
			"collector's closed window). With OLD, the two are cumulative readings of the\n"+
			"same devices, OLD the earlier, and the figures are those of the time between\n"+
			"them; a device missing from OLD, or reset between the readings (NEW's last\n"+
			"reset is after OLD's: a restarted driver), shows NEW's own figures since its\n"+
			"reset, and stderr says so (counters that fall without a reset, readings given\n"+
			"in the wrong order, are an error for that device); latency quantiles\n"+
			"then come from the histograms' difference, within a bucket (a factor of 2),\n"+
			"and qmax, a maximum that no difference gives, is NEW's: the deepest queue\n"+
			"since the device's blob was last reset, not only between the readings.\n"+
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
	status := 0
	report := func(err error) {
		fs.fail(err)
		status = 1
	}
	cur, err := readDevices(pos[len(pos)-1], report)
	if err != nil {
		fs.fail(err)
		return 1
	}
	var old reading
	if len(pos) == 2 {
		if old, err = readDevices(pos[0], report); err != nil {
			fs.fail(err)
			return 1
		}
	}
	if len(cur.devs) == 0 {
		return status // every file reported
	}
	names := make([]string, 0, len(cur.devs))
	for n := range cur.devs {
		names = append(names, n)
	}
	slices.Sort(names)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	io.WriteString(tw, "device\ttps\tKB/t\tMB/s\t%busy\tr/s\tw/s\tms/r\tms/w\tqmax\tp50ms\tp99ms\t\n")
	for _, n := range names {
		var prev *blob.Blob
		if old.devs != nil {
			if prev = old.devs[n]; prev == nil {
				if old.unusable[n] { // reported with its file
					status = 1
					continue
				}
				fmt.Fprintf(stderr, "statsblob iostat: device %s: not in %s: figures since its last reset\n", n, pos[0])
			}
		}
		s, err := devstat.Compute(prev, cur.devs[n])
		if err != nil {
			report(fmt.Errorf("device %s: %w", n, err))
			continue
		}
		if s.SinceReset {
			fmt.Fprintf(stderr, "statsblob iostat: device %s: reset between the readings: figures since its reset\n", n)
		}
		fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%.2f\t%.1f\t%.2f\t%.2f\t%.3f\t%.3f\t%d\t%.3f\t%.3f\t\n", n,
			s.TPS, s.KBPerTransfer, s.MBPerSec, s.BusyPercent,
			s.OpsPerSec(devstat.Read), s.OpsPerSec(devstat.Write), s.MsPerOp(devstat.Read), s.MsPerOp(devstat.Write),
			s.MaxOutstanding, s.LatencyP50.Seconds()*1e3, s.LatencyP99.Seconds()*1e3)
	}
	tw.Flush()
	return status
}

// reading is one reading of devices: blobs by device name, and the
// devices whose files could not be used (already reported).
type reading struct {
	devs     map[string]*blob.Blob
	unusable map[string]bool
}

// readDevices reads one reading of devices: a blob file ("-": standard
// input, device "-"), or a directory of blob files, keyed by device name
// (the file's name without extension). In a directory, hidden files (a
// writer's temporary files) are skipped, links are followed, and each
// file that cannot be used, or that names a device another file names
// too, is reported and left out. The error is for a path that gives no
// files at all.
func readDevices(path string, report func(error)) (reading, error) {
	r := reading{devs: map[string]*blob.Blob{}, unusable: map[string]bool{}}
	files := []string{path}
	if path != "-" {
		st, err := os.Stat(path)
		if err != nil {
			return r, err
		}
		if st.IsDir() {
			ents, err := os.ReadDir(path)
			if err != nil {
				return r, err
			}
			files = files[:0]
			for _, e := range ents {
				f := filepath.Join(path, e.Name())
				if strings.HasPrefix(e.Name(), ".") {
					continue
				}
				if st, err := os.Stat(f); err != nil || st.Mode().IsRegular() {
					files = append(files, f) // a broken link is reported as it is read
				}
			}
			if len(files) == 0 {
				return r, fmt.Errorf("%s: no blob files", path)
			}
		}
	}
	from := map[string]string{} // device name: its file
	for _, f := range files {
		name := "-"
		if f != "-" {
			name = strings.TrimSuffix(filepath.Base(f), filepath.Ext(f))
		}
		if other, dup := from[name]; dup {
			report(fmt.Errorf("device %s: two readings, %s and %s", name, other, f))
			delete(r.devs, name)
			r.unusable[name] = true
			continue
		}
		from[name] = f
		b, err := readBlob(f)
		if err != nil {
			report(err)
			r.unusable[name] = true
			continue
		}
		r.devs[name] = b
	}
	return r, nil
}
