package peers

import (
	"fmt"
	"io"
	"strings"
	"testing"
)

// Results holds benchmark results by peer name and op name.
type Results map[string]map[string]testing.BenchmarkResult

// Add records the result of peer's op.
func (r Results) Add(peer, op string, res testing.BenchmarkResult) {
	if r[peer] == nil {
		r[peer] = map[string]testing.BenchmarkResult{}
	}
	r[peer][op] = res
}

// WritePerformance writes the update and serialization table in Markdown:
// one row per peer, ns/op of update on each stream and from GOMAXPROCS
// goroutines, the most allocs/op of the single-goroutine updates, and
// ns/op, allocs/op and bytes of serialize; statsblob's snapshots follow
// as notes. Missing results are left blank.
func WritePerformance(w io.Writer, peers []Peer, res Results, procs int) {
	dists := Dists()
	fmt.Fprint(w, "| peer |")
	for _, d := range dists {
		fmt.Fprintf(w, " update ns/op (%s) |", d.Name)
	}
	fmt.Fprintf(w, " update allocs/op | update ns/op (%d goroutines) | serialize ns/op | serialize allocs/op | bytes |\n", procs)
	fmt.Fprintf(w, "|---|%s\n", strings.Repeat("--:|", len(dists)+5))
	for _, p := range peers {
		r := res[p.Name]
		fmt.Fprintf(w, "| %s |", p.Name)
		allocs, most := "", int64(-1)
		for _, d := range dists {
			u, ok := r[OpUpdate+d.Name]
			fmt.Fprintf(w, " %s |", nsPerOp(u, ok))
			if ok && u.AllocsPerOp() > most {
				most = u.AllocsPerOp()
				allocs = fmt.Sprint(most)
			}
		}
		par, ok := r[OpParallel]
		parCell := nsPerOp(par, ok)
		if ok && p.Locked {
			parCell += " †"
		}
		s, ok := r[OpSerialize]
		fmt.Fprintf(w, " %s | %s | %s | %s | %s |\n", allocs, parCell, nsPerOp(s, ok), allocsPerOp(s, ok), metric(s, ok, MetricBytes))
	}
	fmt.Fprintln(w)
	locked := false
	for _, p := range peers {
		r := res[p.Name]
		locked = locked || p.Locked
		notes := []string{p.Config}
		if s, ok := r[OpSnapshot]; ok {
			notes = append(notes, fmt.Sprintf("Blob.Snapshot(false) %s ns/op, %d allocs/op", nsPerOp(s, true), s.AllocsPerOp()))
		}
		if s, ok := r[OpShardedSnapshot]; ok {
			notes = append(notes, fmt.Sprintf("Sharded.Snapshot(false) of %d shards %s ns/op, %d allocs/op", shards(), nsPerOp(s, true), s.AllocsPerOp()))
		}
		var lost []string
		for _, d := range dists {
			if u, ok := r[OpUpdate+d.Name]; ok && u.Extra[MetricLost] > 0 {
				lost = append(lost, fmt.Sprintf("%s %.1f ppm", d.Name, u.Extra[MetricLost]))
			}
		}
		if len(lost) > 0 {
			notes = append(notes, "updates the digest rejected: "+strings.Join(lost, ", "))
		}
		fmt.Fprintf(w, "- %s: %s.\n", p.Name, strings.Join(notes, "; "))
	}
	if locked {
		fmt.Fprintln(w, "- †: the type is not safe for concurrent use; the parallel benchmark locks a sync.Mutex around each update.")
	}
}

// WriteAccuracy writes the accuracy table in Markdown: per stream and
// estimator, the setting, serialized bytes and rank error at Quantiles.
func WriteAccuracy(w io.Writer, rows []AccuracyRow) {
	fmt.Fprint(w, "| stream | peer | setting | bytes |")
	for _, q := range Quantiles {
		fmt.Fprintf(w, " q=%g |", q)
	}
	fmt.Fprintf(w, "\n|%s\n", strings.Repeat("---|", 4+len(Quantiles)))
	for _, r := range rows {
		setting := r.Setting
		if r.Lost > 0 {
			setting += fmt.Sprintf(", %d values rejected", r.Lost)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %d |", r.Dist, r.Peer, setting, r.Bytes)
		for _, e := range r.PPM {
			fmt.Fprintf(w, " %.0f |", e)
		}
		fmt.Fprintln(w)
	}
}

func nsPerOp(r testing.BenchmarkResult, ok bool) string {
	if !ok || r.N == 0 {
		return ""
	}
	ns := float64(r.T.Nanoseconds()) / float64(r.N)
	if ns < 100 {
		return fmt.Sprintf("%.1f", ns)
	}
	return fmt.Sprintf("%.0f", ns)
}

func allocsPerOp(r testing.BenchmarkResult, ok bool) string {
	if !ok {
		return ""
	}
	return fmt.Sprint(r.AllocsPerOp())
}

func metric(r testing.BenchmarkResult, ok bool, name string) string {
	if v, has := r.Extra[name]; ok && has {
		return fmt.Sprintf("%.0f", v)
	}
	return ""
}
