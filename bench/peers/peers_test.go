package peers_test

import (
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/statsblob/statsblob/bench"
	"github.com/statsblob/statsblob/bench/peers"
)

func TestRankErrorPPM(t *testing.T) {
	sorted := []uint64{1, 2, 2, 2, 3, 4, 5, 6, 7, 8} // n = 10: 1 rank = 100000 ppm
	f := func(q, v, want float64) {
		t.Helper()
		if got := peers.RankErrorPPM(sorted, q, v); math.Abs(got-want) > 1e-6 {
			t.Errorf("RankErrorPPM(q=%v, v=%v) = %v, want %v", q, v, got, want)
		}
	}
	f(0.2, 2, 0)        // ranks 1..4 hold the value 2
	f(0.4, 2, 0)        //
	f(0.5, 2, 100000)   // one rank above the last 2
	f(0.0, 1, 0)        //
	f(0.0, 3, 400000)   // 3 sits at rank 4
	f(0.45, 2.5, 50000) // a gap between ranks 4 and 4: rank 4.5 is half a rank off
	f(1, 8, 0)          //
	f(1, 9, 0)          // beyond the maximum: rank 10
	f(0.9, 100, 100000) //
	f(0.1, 0, 100000)   // below the minimum: rank 0
}

func TestLognormalRing(t *testing.T) {
	r := peers.LognormalRing()
	if len(r) != bench.RingSize {
		t.Fatalf("%d values", len(r))
	}
	if !slices.Equal(r[:8], peers.LognormalRing()[:8]) {
		t.Fatal("the ring is not shared")
	}
	var sum, sum2 float64
	for _, v := range r {
		l := math.Log(float64(max(v, 1)))
		sum += l
		sum2 += l * l
	}
	n := float64(len(r))
	mean, sd := sum/n, math.Sqrt(sum2/n-(sum/n)*(sum/n))
	if math.Abs(mean-math.Log(peers.LognormalMedian)) > 0.02 || math.Abs(sd-1) > 0.02 {
		t.Fatalf("log values: mean %v (want ln %d), sd %v (want 1)", mean, peers.LognormalMedian, sd)
	}
}

func TestPeersOps(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range peers.Peers() {
		if seen[p.Name] || strings.Contains(p.Name, "/") {
			t.Errorf("peer name %q repeated or with a slash", p.Name)
		}
		seen[p.Name] = true
		ops := map[string]bool{}
		for _, op := range p.Ops {
			ops[op.Name] = true
		}
		for _, d := range peers.Dists() {
			if !ops[peers.OpUpdate+d.Name] {
				t.Errorf("%s: no %s%s", p.Name, peers.OpUpdate, d.Name)
			}
		}
		if !ops[peers.OpSerialize] || !ops[peers.OpParallel] {
			t.Errorf("%s: ops %v", p.Name, ops)
		}
	}
}

// TestPeersAccuracyReport prints the accuracy table (Markdown): rank error
// in ppm at q = 0.5, 0.9, 0.99, 0.999 of each digest and sketch, tuned to
// the statsblob blob's size, on each stream. It is a report, not a check:
// run it with STATSBLOB_ACCURACY=1 go test -run TestPeersAccuracyReport -v.
func TestPeersAccuracyReport(t *testing.T) {
	if os.Getenv("STATSBLOB_ACCURACY") == "" {
		t.Skip("accuracy report: set STATSBLOB_ACCURACY=1")
	}
	rows := peers.Accuracy()
	var sb strings.Builder
	peers.WriteAccuracy(&sb, rows)
	t.Logf("rank error in ppm of %d samples, against exact quantiles:\n%s", bench.RingSize, sb.String())
	target := 0
	for _, r := range rows {
		if r.Peer == "statsblob-tdigest" {
			target = r.Bytes
		} else if r.Bytes > target && r.Peer != "hdr" { // hdr has no setting below 1 digit
			t.Errorf("%s on %s: %d bytes, statsblob %d", r.Peer, r.Dist, r.Bytes, target)
		}
		for i, e := range r.PPM {
			if math.IsNaN(e) || e < 0 || e > 1e6 {
				t.Errorf("%s on %s at q=%v: %v ppm", r.Peer, r.Dist, peers.Quantiles[i], e)
			}
		}
	}
}
