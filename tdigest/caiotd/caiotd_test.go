package caiotd_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"sort"
	"testing"

	caio "github.com/caio/go-tdigest/v4"

	"github.com/statsblob/statsblob/bsdrand"
	"github.com/statsblob/statsblob/tdigest"
	"github.com/statsblob/statsblob/tdigest/caiotd"
	"github.com/statsblob/statsblob/voi"
)

const prec = 16 // fractional bits of the digests' means and of the Q samples

// qS64 returns the raw Q_S64 with 16 fractional bits nearest to v.
func qS64(v float64) uint64 {
	f := math.Round(math.Ldexp(v, prec))
	raw := uint64(math.Abs(f))<<3 | uint64(qmathCtrl16)
	if f < 0 {
		raw |= 1 << 63
	}
	return raw
}

const qmathCtrl16 = 4 // Q_CTRLINI(16)

// fill returns a digest of vals and the number of samples the C's add
// rejected (ERANGE: the size bound's quantile underflows 16 fractional
// bits next to two single-sample centroids of equal mean once there are
// more than 65537 samples; EAGAIN: no room after four compressions).
func fill(t testing.TB, nctds uint32, vals []float64) ([]byte, int) {
	t.Helper()
	d, err := tdigest.Build(voi.TDgstClust64, nctds, prec)
	if err != nil {
		t.Fatal(err)
	}
	env := &tdigest.Env{Rand: bsdrand.New(1)}
	lost := 0
	for _, v := range vals {
		if err := tdigest.Update(d, voi.TDgstClust64, voi.QS64, qS64(v), env); err != nil {
			if !errors.Is(err, voi.ErrRange) && !errors.Is(err, voi.ErrAgain) {
				t.Fatalf("Update(%v): %v", v, err)
			}
			lost++
		}
	}
	return d, lost
}

func TestToCaioExact(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	var vals []float64
	for range 5000 {
		vals = append(vals, r.NormFloat64()*100)
	}
	d, _ := fill(t, 40, vals)
	td, err := caiotd.ToCaio(d, voi.TDgstClust64, 100)
	if err != nil {
		t.Fatal(err)
	}
	var ours []tdigest.Centroid
	for c := range tdigest.Centroids(d, voi.TDgstClust64) {
		ours = append(ours, c)
	}
	i := 0
	td.ForEachCentroid(func(mean float64, count uint64) bool {
		if i >= len(ours) || ours[i].Mean() != mean || ours[i].Count != count {
			t.Fatalf("centroid %d: caio %v×%d, ours %+v", i, mean, count, ours[i])
		}
		i++
		return true
	})
	if i != len(ours) || td.Count() != 5000 || td.Compression() != 100 {
		t.Fatalf("%d of %d centroids, count %d, compression %v", i, len(ours), td.Count(), td.Compression())
	}
	if _, err := caiotd.ToCaio(d, voi.TDgstClust64, 0.5); !errors.Is(err, voi.ErrInvalid) {
		t.Fatalf("compression 0.5: %v", err)
	}
	if _, err := caiotd.ToCaio(d[:40], voi.TDgstClust64, 100); !errors.Is(err, voi.ErrInvalid) {
		t.Fatalf("short digest: %v", err)
	}
}

func TestFromCaio(t *testing.T) {
	td, _ := caio.New(caio.Compression(50), caio.LocalRandomNumberGenerator(1))
	for i := range 10000 {
		_ = td.Add(float64(i % 1000))
	}
	d, _ := tdigest.Build(voi.TDgstClust64, 64, prec)
	if err := caiotd.FromCaio(d, voi.TDgstClust64, td); err != nil {
		t.Fatal(err)
	}
	if err := tdigest.Validate(d, voi.TDgstClust64); err != nil {
		t.Fatal(err)
	}
	if n, _ := tdigest.Count(d, voi.TDgstClust64); n != 10000 {
		t.Fatalf("%d samples", n)
	}
	// The C's size bound lets the middle centroids hold a large share of
	// the samples (see TestAccuracyReport); the median is a few percent of
	// rank off.
	med, _ := tdigest.Quantile(d, voi.TDgstClust64, 0.5)
	if p, _ := tdigest.CDF(d, voi.TDgstClust64, med); math.Abs(med-499.5) > 50 || math.Abs(p-0.5) > 1e-9 {
		t.Fatalf("median %v (CDF %v), caio's %v", med, p, td.Quantile(0.5))
	}
}

func ExampleToCaio() {
	d, _ := tdigest.Build(voi.TDgstClust64, 8, 4)
	env := &tdigest.Env{Rand: bsdrand.New(1)}
	for _, v := range []uint64{10, 20, 20, 30, 40} {
		_ = tdigest.Update(d, voi.TDgstClust64, voi.IntU64, v, env)
	}
	td, _ := caiotd.ToCaio(d, voi.TDgstClust64, 100)
	td.ForEachCentroid(func(mean float64, count uint64) bool {
		fmt.Println(mean, count)
		return true
	})
	fmt.Println(td.Count(), "samples")
	// Output:
	// 10 1
	// 20 1
	// 25 2
	// 40 1
	// 5 samples
}

// rankErrPPM returns how far, in parts per million of the sample count,
// the estimate v lies from rank q among the sorted samples.
func rankErrPPM(sorted []float64, q, v float64) float64 {
	lo := sort.SearchFloat64s(sorted, v)
	hi := sort.Search(len(sorted), func(i int) bool { return sorted[i] > v })
	n := float64(len(sorted))
	rank := q * n
	switch {
	case rank < float64(lo):
		return (float64(lo) - rank) / n * 1e6
	case rank > float64(hi):
		return (rank - float64(hi)) / n * 1e6
	}
	return 0
}

// caioAtSize returns a caio digest of vals whose serialization is about
// size bytes (the compression found by bisection), and its size.
func caioAtSize(vals []float64, size int) (*caio.TDigest, float64, int) {
	build := func(c float64) (*caio.TDigest, int) {
		td, _ := caio.New(caio.Compression(c), caio.LocalRandomNumberGenerator(1))
		for _, v := range vals {
			_ = td.Add(v)
		}
		_ = td.Compress()
		b, _ := td.AsBytes()
		return td, len(b)
	}
	lo, hi := 1.0, 2000.0
	for range 24 {
		mid := (lo + hi) / 2
		if _, n := build(mid); n > size {
			hi = mid
		} else {
			lo = mid
		}
	}
	td, n := build(lo)
	return td, lo, n
}

// TestAccuracyReport prints the rank error (ppm of the sample count) of
// the statsblob digest (TDGSTCLUST64 with 16 fractional bits) and of caio's
// at about the same serialized size, for 10^5 samples of four
// distributions. Run with -v; skipped with -short.
// TestAccuracyReport prints rank errors against exact quantiles; it is a
// report, run with `make accuracy` (STATSBLOB_ACCURACY=1).
func TestAccuracyReport(t *testing.T) {
	if os.Getenv("STATSBLOB_ACCURACY") == "" {
		t.Skip("accuracy report: set STATSBLOB_ACCURACY=1 (make accuracy)")
	}
	const n = 100000
	qs := []float64{0.5, 0.9, 0.99, 0.999}
	dists := []struct {
		name string
		gen  func(r *rand.Rand) float64
	}{
		{"uniform", func(r *rand.Rand) float64 { return r.Float64() * 1000 }},
		{"normal", func(r *rand.Rand) float64 { return r.NormFloat64()*100 + 1000 }},
		{"lognormal", func(r *rand.Rand) float64 { return math.Exp(r.NormFloat64()) * 100 }},
		{"pareto", func(r *rand.Rand) float64 { return 10 / math.Pow(1-r.Float64(), 1/1.5) }},
	}
	t.Logf("%-9s %5s %6s %5s %-28s  %6s %6s  %s", "dist", "ctds", "bytes", "lost", "  statsblob ppm @ q=.5/.9/.99/.999", "compr", "bytes", "caio ppm")
	for _, dist := range dists {
		r := rand.New(rand.NewPCG(42, 42))
		vals := make([]float64, n)
		for i := range vals {
			vals[i] = math.Round(dist.gen(r)*65536) / 65536 // exactly representable in the Q samples
		}
		sorted := append([]float64(nil), vals...)
		sort.Float64s(sorted)
		for _, nctds := range []uint32{32, 64, 128} {
			d, lost := fill(t, nctds, vals)
			td, comp, cbytes := caioAtSize(vals, len(d))
			var ours, theirs string
			for _, q := range qs {
				v, err := tdigest.Quantile(d, voi.TDgstClust64, q)
				if err != nil {
					t.Fatal(err)
				}
				ours += fmt.Sprintf("%7.0f", rankErrPPM(sorted, q, v))
				theirs += fmt.Sprintf("%7.0f", rankErrPPM(sorted, q, td.Quantile(q)))
			}
			t.Logf("%-9s %5d %6d %5d %-28s  %6.1f %6d  %s", dist.name, nctds, len(d), lost, ours, comp, cbytes, theirs)
		}
	}
}
