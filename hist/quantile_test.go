package hist

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/statsblob/statsblob/voi"
)

func TestQuantileCDFExact(t *testing.T) {
	type probe struct {
		q, x   float64 // Quantile(q) == x
		cdfAt  float64 // CDF(cdfAt) == cdf
		cdf    float64
		noCDF  bool
		noQuan bool
	}
	f := func(name string, data []byte, hdt, dt voi.DType, ps ...probe) {
		t.Helper()
		for _, p := range ps {
			if !p.noQuan {
				if got, err := Quantile(data, hdt, dt, p.q); err != nil || math.Abs(got-p.x) > 1e-9 {
					t.Errorf("%s: Quantile(%g) = %g, %v; want %g", name, p.q, got, err, p.x)
				}
			}
			if !p.noCDF {
				if got, err := CDF(data, hdt, dt, p.cdfAt); err != nil || math.Abs(got-p.cdf) > 1e-12 {
					t.Errorf("%s: CDF(%g) = %g, %v; want %g", name, p.cdfAt, got, err, p.cdf)
				}
			}
		}
	}
	// CRHIST64_LIN(0,30,10): [0,10) 10, [10,20) 10, [20,30) 0, [30,max) 0;
	// oob 7 is ignored.
	lin := histData(voi.CRHist64, 7, [3]uint64{0, 0, 10}, [3]uint64{10, 0, 10}, [3]uint64{20, 0, 0}, [3]uint64{30, 0, 0})
	f("lin", lin, voi.CRHist64, voi.IntU64,
		probe{q: 0, x: 0, cdfAt: -1, cdf: 0},
		probe{q: 0.25, x: 5, cdfAt: 5, cdf: 0.25},
		probe{q: 0.5, x: 10, cdfAt: 10, cdf: 0.5},
		probe{q: 0.75, x: 15, cdfAt: 15, cdf: 0.75},
		probe{q: 1, x: 20, cdfAt: 1e30, cdf: 1})
	// The open-ended last bucket is a point mass at its lower bound.
	lin2 := histData(voi.CRHist64, 0, [3]uint64{0, 0, 10}, [3]uint64{10, 0, 10}, [3]uint64{20, 0, 0}, [3]uint64{30, 0, 5})
	f("lin open top", lin2, voi.CRHist64, voi.IntU64,
		probe{q: 0.8, x: 20, cdfAt: 29.99, cdf: 0.8},
		probe{q: 0.81, x: 30, cdfAt: 30, cdf: 1},
		probe{q: 1, x: 30, cdfAt: 20, cdf: 0.8})
	// Signed lbinf bucket: mass at its finite upper bound (0).
	lbinf := histData(voi.CRHist32, 0, [3]uint64{0x80000000, 0, 2}, [3]uint64{0, 0, 2}, [3]uint64{10, 0, 0}, [3]uint64{0xFFFFFFFFFFFFFFEC, 0, 0})
	f("lbinf", lbinf, voi.CRHist32, voi.IntS32,
		probe{q: 0, x: 0, cdfAt: -1e9, cdf: 0},
		probe{q: 0.5, x: 0, cdfAt: 0, cdf: 0.5},
		probe{q: 0.75, x: 5, cdfAt: 5, cdf: 0.75})
	// DVHIST: point masses.
	dv := histData(voi.DVHist32, 3, [3]uint64{1, 0, 3}, [3]uint64{2, 0, 1}, [3]uint64{4, 0, 0})
	f("dv", dv, voi.DVHist32, voi.IntU32,
		probe{q: 0, x: 1, cdfAt: 0.5, cdf: 0},
		probe{q: 0.5, x: 1, cdfAt: 1, cdf: 0.75},
		probe{q: 0.8, x: 2, cdfAt: 1.5, cdf: 0.75},
		probe{q: 1, x: 2, cdfAt: 4, cdf: 1})
	// Overlapping DR buckets add up: [0,10) 10 and [5,15) 10.
	dr := histData(voi.DRHist64, 0, [3]uint64{0, 10, 10}, [3]uint64{5, 15, 10})
	f("dr overlap", dr, voi.DRHist64, voi.IntS64,
		probe{q: 0.25, x: 5, cdfAt: 5, cdf: 0.25},
		probe{q: 0.5, x: 7.5, cdfAt: 7.5, cdf: 0.5},
		probe{q: 0.9, x: 13, cdfAt: 13, cdf: 0.9},
		probe{q: 1, x: 15, cdfAt: 10, cdf: 0.75})
	// Unsorted CR lower bounds: [20,0) is inverted (a point at 20), [0,10)
	// uniform, [10,max) a point at 10.
	usr := histData(voi.CRHist64, 0, [3]uint64{20, 0, 2}, [3]uint64{0, 0, 2}, [3]uint64{10, 0, 4})
	f("usr unsorted", usr, voi.CRHist64, voi.IntU64,
		probe{q: 0.125, x: 5, cdfAt: 5, cdf: 0.125},
		probe{q: 0.5, x: 10, cdfAt: 10, cdf: 0.75},
		probe{q: 0.9, x: 20, cdfAt: 19, cdf: 0.75},
		probe{q: 0, x: 0, cdfAt: 20, cdf: 1})
	// Q_S32 with 8 fractional bits: [1.5, 2.5) holds 4.
	q := func(ifv int64) uint64 { return qraw(voi.QS32, 3, ifv) }
	qh := histData(voi.DRHist32, 0, [3]uint64{q(384), q(640), 4})
	f("q", qh, voi.DRHist32, voi.QS32,
		probe{q: 0.5, x: 2, cdfAt: 1.75, cdf: 0.25},
		probe{q: 1, x: 2.5, cdfAt: 2.5, cdf: 1})
}

func TestQuantileErrors(t *testing.T) {
	data := histData(voi.CRHist64, 5, [3]uint64{0, 0, 0}, [3]uint64{10, 0, 0})
	if _, err := Quantile(data, voi.CRHist64, voi.IntU64, 0.5); !errors.Is(err, ErrEmpty) || !errors.Is(err, voi.ErrNotFound) {
		t.Errorf("empty: %v", err)
	}
	if _, err := CDF(data, voi.CRHist64, voi.IntU64, 1); !errors.Is(err, ErrEmpty) {
		t.Errorf("empty CDF: %v", err)
	}
	data = histData(voi.CRHist64, 0, [3]uint64{0, 0, 1})
	for _, q := range []float64{-0.001, 1.001, math.NaN(), math.Inf(1)} {
		if _, err := Quantile(data, voi.CRHist64, voi.IntU64, q); !errors.Is(err, voi.ErrInvalid) {
			t.Errorf("Quantile(%g): %v", q, err)
		}
	}
	if _, err := CDF(data, voi.CRHist64, voi.IntU64, math.NaN()); !errors.Is(err, voi.ErrInvalid) {
		t.Errorf("CDF(NaN): %v", err)
	}
	if _, err := Quantile(data, voi.IntU64, voi.IntU64, 0.5); !errors.Is(err, voi.ErrInvalid) {
		t.Errorf("not a histogram: %v", err)
	}
	if _, err := CDF(data, voi.CRHist64, voi.TDgstClust32, 0.5); !errors.Is(err, voi.ErrInvalid) {
		t.Errorf("VOI type: %v", err)
	}
}

func TestFloat64(t *testing.T) {
	f := func(dt voi.DType, v uint64, want float64) {
		t.Helper()
		if got := Float64(dt, v); got != want {
			t.Errorf("Float64(%v, %#x) = %g, want %g", dt, v, got, want)
		}
	}
	f(voi.IntS32, 0xFFFFFFFF, -1)
	f(voi.IntS32, 0x12345678FFFFFFFE, -2) // the high half is not the value's
	f(voi.IntU32, 0xFFFFFFFFFFFFFFFF, math.MaxUint32)
	f(voi.IntS64, 1<<63, math.MinInt64)
	f(voi.IntULong, 1<<63, 1<<63)
	f(voi.QS32, qraw(voi.QS32, 3, -384), -1.5)
	f(voi.QU64, qraw(voi.QU64, 4, 3<<16|1<<15), 3.5)
	f(voi.TDgstClust32, 1, 0)
}

// TestQuantileWalkMatchesSweep holds the bucket walk used for ordered
// layouts to the general breakpoint sweep, and checks that CDF inverts
// Quantile, on random histograms.
func TestQuantileWalkMatchesSweep(t *testing.T) {
	s := specGen{rand.New(rand.NewPCG(7, 8))}
	walked := 0
	for range 3000 {
		dt := numericTypes[s.r.IntN(len(numericTypes))]
		sp := s.spec(dt)
		data, err := sp.Build(dt)
		if err != nil {
			continue
		}
		near := bounds(data, sp.DType, dt)
		for range 50 {
			Update(data, sp.DType, dt, s.value(dt, near, near[0]&7))
		}
		g, _ := geomOf(sp.DType)
		if Count(data, sp.DType) == 0 {
			continue
		}
		total := float64(Count(data, sp.DType))
		prev := math.Inf(-1)
		for _, q := range []float64{0, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 1} {
			x, err := Quantile(data, sp.DType, dt, q)
			if err != nil {
				t.Fatal(err)
			}
			if x < prev {
				t.Fatalf("%+v: Quantile(%g) = %g < %g", sp, q, x, prev)
			}
			prev = x
			if w, ok := walkQuantile(data, g, dt, q, q*total); ok {
				walked++
				sw := sweepQuantile(data, g, dt, q, q*total)
				if math.Abs(w-sw) > 1e-9*math.Max(1, math.Abs(w)) {
					t.Fatalf("%+v on %v: q=%g walk %g, sweep %g", sp, dt, q, w, sw)
				}
			}
			// Bucket widths can be below float64 resolution: probe just
			// above x.
			c, err := CDF(data, sp.DType, dt, x+math.Max(math.Abs(x), 1)*1e-12)
			if err != nil || c < q-1e-6 {
				t.Fatalf("%+v on %v: CDF(Quantile(%g) = %g) = %g, %v", sp, dt, q, x, c, err)
			}
		}
	}
	if walked == 0 {
		t.Error("no ordered layout")
	}
}

func TestBucketsIterator(t *testing.T) {
	data := histData(voi.CRHist32, 9, [3]uint64{5, 0, 1}, [3]uint64{15, 0, 2}, [3]uint64{25, 0, 3})
	var got []BucketInfo
	for i, b := range Buckets(data, voi.CRHist32, voi.IntU32) {
		if i != len(got) {
			t.Fatalf("index %d", i)
		}
		got = append(got, b)
	}
	want := []BucketInfo{{5, 15, 1}, {15, 25, 2}, {25, 0xFFFFFFFF, 3}}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("bucket %d: %v, want %v", i, got[i], want[i])
		}
	}
	if c := Count(data, voi.CRHist32); c != 6 {
		t.Errorf("Count = %d", c)
	}
	if o := OOB(data, voi.CRHist32); o != 9 {
		t.Errorf("OOB = %d", o)
	}
	sum := 0
	allocs := testing.AllocsPerRun(100, func() {
		for _, b := range Buckets(data, voi.CRHist32, voi.IntU32) {
			sum += int(b.Cnt)
		}
	})
	if allocs != 0 {
		t.Errorf("ranging over Buckets allocates %v times", allocs)
	}
	Reset(data, voi.CRHist32)
	if c, o := Count(data, voi.CRHist32), OOB(data, voi.CRHist32); c != 0 || o != 0 {
		t.Errorf("after Reset: count %d oob %d", c, o)
	}
	if lb, _, _ := Bucket(data, voi.CRHist32, voi.IntU32, 2); lb != 25 {
		t.Errorf("Reset changed a bound: %d", lb)
	}
}

func TestNumBuckets(t *testing.T) {
	f := func(hdt voi.DType, dsz, want int) {
		t.Helper()
		if got := NumBuckets(hdt, dsz); got != want {
			t.Errorf("NumBuckets(%v, %d) = %d, want %d", hdt, dsz, got, want)
		}
	}
	f(voi.CRHist32, 104, 6)
	f(voi.DRHist64, 8+24*3, 3)
	f(voi.DVHist64, 8+16*2+15, 2)
	f(voi.CRHist64, 7, 0)
	f(voi.IntU64, 104, 0)
	if DataSize(voi.DRHist32, 4) != 104 || DataSize(voi.IntS32, 4) != 0 {
		t.Error("DataSize")
	}
}
