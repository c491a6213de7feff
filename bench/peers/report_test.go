package peers_test

import (
	"strings"
	"testing"
	"time"

	"github.com/statsblob/statsblob/bench/peers"
)

// cells checks that every table line of md has want cells.
func cells(t *testing.T, md string, want int) int {
	t.Helper()
	rows := 0
	for _, line := range strings.Split(md, "\n") {
		if !strings.HasPrefix(line, "|") {
			continue
		}
		rows++
		if n := strings.Count(line, "|") - 1; n != want {
			t.Errorf("%d cells, want %d: %s", n, want, line)
		}
	}
	return rows
}

func TestWritePerformance(t *testing.T) {
	all := peers.Peers()
	res := peers.Results{}
	for _, p := range all {
		for _, op := range p.Ops {
			res.Add(p.Name, op.Name, testing.BenchmarkResult{N: 10, T: 1234 * time.Nanosecond, Extra: map[string]float64{peers.MetricBytes: 99}})
		}
	}
	var sb strings.Builder
	peers.WritePerformance(&sb, all, res, 2)
	md := sb.String()
	if rows := cells(t, md, 9); rows != len(all)+2 {
		t.Errorf("%d table lines, want %d:\n%s", rows, len(all)+2, md)
	}
	if !strings.Contains(md, "| caio | 123 | 123 | 123 | 0 | 123 † | 123 | 0 | 99 |") {
		t.Errorf("no caio row as expected:\n%s", md)
	}
	sb.Reset()
	peers.WritePerformance(&sb, all, peers.Results{}, 2) // nothing measured: blank cells
	cells(t, sb.String(), 9)
}

func TestWriteAccuracy(t *testing.T) {
	rows := []peers.AccuracyRow{{Dist: "uniform", Peer: "x", Sketch: peers.Sketch{Setting: "s", Bytes: 10, Lost: 2}, PPM: []float64{1, 2, 3, 4}}}
	var sb strings.Builder
	peers.WriteAccuracy(&sb, rows)
	cells(t, sb.String(), 8)
	if !strings.Contains(sb.String(), "| uniform | x | s, 2 values rejected | 10 | 1 | 2 | 3 | 4 |") {
		t.Errorf("row:\n%s", sb.String())
	}
}
