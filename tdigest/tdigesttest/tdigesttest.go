// Package tdigesttest holds checks of in-blob t-digests shared by the fuzz
// tests of several packages (like net/http/httptest, it is for tests only).
package tdigesttest

import (
	"errors"
	"math"
	"testing"

	"github.com/statsblob/statsblob/tdigest"
	"github.com/statsblob/statsblob/voi"
)

// CheckQueries fails t unless the digest data (of a VOI of type dt), which
// tdigest.Validate accepts, answers every query within its domain: Count
// equals smplcnt without error; on an empty digest the queries fail with
// ErrEmpty; otherwise quantiles lie between the least and greatest centroid
// mean and do not decrease with q, the CDF lies in [0, 1], does not decrease
// with x, is 0 below the least mean and 1 at the greatest (bounded: below
// and at the bounds), and the mean lies between the extremes.
func CheckQueries(t testing.TB, data []byte, dt voi.DType) {
	t.Helper()
	info, err := tdigest.ReadInfo(data, dt)
	if err != nil {
		t.Fatal(err)
	}
	n, err := tdigest.Count(data, dt)
	if err != nil || n != info.SmplCnt {
		t.Fatalf("Count = %d, %v; smplcnt %d", n, err, info.SmplCnt)
	}
	if n == 0 {
		if _, err := tdigest.Quantile(data, dt, 0.5); !errors.Is(err, tdigest.ErrEmpty) {
			t.Fatalf("Quantile of an empty digest: %v", err)
		}
		return
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for c := range tdigest.Centroids(data, dt) {
		lo, hi = min(lo, c.Mean()), max(hi, c.Mean())
	}
	prev := math.Inf(-1)
	for _, q := range []float64{0, 0.001, 0.1, 0.5, 0.9, 0.99, 0.999, 1} {
		v, err := tdigest.Quantile(data, dt, q)
		if err != nil || v < lo || v > hi || v < prev {
			t.Fatalf("Quantile(%v) = %v, %v; means in [%v, %v], previous %v", q, v, err, lo, hi, prev)
		}
		prev = v
		if v, err := tdigest.QuantileBounded(data, dt, q, lo-1, hi+1); err != nil || v < lo-1 || v > hi+1 {
			t.Fatalf("QuantileBounded(%v) = %v, %v; means in [%v, %v]", q, v, err, lo, hi)
		}
	}
	prev = 0
	for _, x := range []float64{lo - 1, lo, lo + (hi-lo)/3, (lo + hi) / 2, hi, hi + 1} {
		p, err := tdigest.CDF(data, dt, x)
		if err != nil || !(p >= 0 && p <= 1) || p < prev {
			t.Fatalf("CDF(%v) = %v, %v; previous %v", x, p, err, prev)
		}
		if x < lo && p != 0 || x >= hi && p != 1 {
			t.Fatalf("CDF(%v) = %v; means in [%v, %v]", x, p, lo, hi)
		}
		prev = p
	}
	prev = 0
	// Bounds a step outside the means, the step large enough to move
	// them at their magnitude (1 is below the spacing of float64s past
	// 2^53).
	d := max(1, 1e-9*max(math.Abs(lo), math.Abs(hi)))
	for _, x := range []float64{lo - 2*d, lo - d, lo - d/2, lo, (lo + hi) / 2, hi, hi + d/2, hi + d} {
		p, err := tdigest.CDFBounded(data, dt, x, lo-d, hi+d)
		if err != nil || !(p >= 0 && p <= 1) || p < prev {
			t.Fatalf("CDFBounded(%v) = %v, %v; previous %v", x, p, err, prev)
		}
		if x <= lo-d && p != 0 || x >= hi+d && p != 1 {
			t.Fatalf("CDFBounded(%v) = %v; bounds [%v, %v]", x, p, lo-d, hi+d)
		}
		prev = p
	}
	if m, err := tdigest.Mean(data, dt); err != nil || m < lo || m > hi {
		t.Fatalf("Mean = %v, %v; means in [%v, %v]", m, err, lo, hi)
	}
}
