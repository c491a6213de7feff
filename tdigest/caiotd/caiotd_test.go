package caiotd_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
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
// rejected (EAGAIN: no room after four compressions; since defect 7 the
// size bound's quantile no longer fails with ERANGE).
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
			if !errors.Is(err, voi.ErrAgain) {
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
	// caio's centroids merge into the digest's 64 slots as tdigest.MergeAll
	// merges (make accuracy measures how well).
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
