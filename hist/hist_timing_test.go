//go:build go1.24

package hist_test

import (
	"testing"

	"github.com/statsblob/statsblob/hist"
	"github.com/statsblob/statsblob/internal/stream"
	"github.com/statsblob/statsblob/voi"
)

// ring fills a 65536-value ring from the conformance value stream mapped
// by f, as the C benchmark cases do (FORMAT.md section 14).
func ring(f stream.Dist) *[1 << 16]uint64 {
	return (*[1 << 16]uint64)(stream.Ring(stream.Seed, 1<<16, f))
}

var (
	uniform = ring(stream.Uniform)
	signed  = ring(stream.Signed)
)

type benchCase struct {
	name  string
	spec  hist.Spec
	voiDT voi.DType
	vals  *[1 << 16]uint64
	mod   uint64 // values are taken modulo mod when non-zero
}

func usr(vals ...uint64) []hist.Bound {
	b := make([]hist.Bound, len(vals))
	for i, v := range vals {
		b[i] = hist.Bound{LB: v, UB: v}
	}
	return b
}

var benchCases = []benchCase{
	// The C reference's crhist64_lin100 case: 100 linear buckets.
	{"CRHIST64_LIN(0,990,10)", hist.Spec{DType: voi.CRHist64, Scheme: hist.Lin, UB: 990, StepInc: 10}, voi.IntU64, uniform, 0},
	// The C reference's dvhist64 case: 16 values, 20% out of band.
	{"DVHIST64_USR(0..15)", hist.Spec{DType: voi.DVHist64, Scheme: hist.Usr, Buckets: usr(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)}, voi.IntU64, uniform, 20},
	{"CRHIST32_LIN(-500,490,10,lbinf+ubinf)", hist.Spec{DType: voi.CRHist32, Scheme: hist.Lin, LB: uint64(1<<64 - 500), UB: 490, StepInc: 10, Flags: hist.LBoundInf | hist.UBoundInf}, voi.IntS32, signed, 0},
	{"CRHIST64_EXP(1,1000,2,0)", hist.Spec{DType: voi.CRHist64, Scheme: hist.Exp, LB: 1, UB: 1000, StepBase: 2}, voi.IntU64, uniform, 0},
	{"DRHIST64_USR(sorted,50)", hist.Spec{DType: voi.DRHist64, Scheme: hist.Usr, Buckets: drBuckets(50)}, voi.IntU64, uniform, 0},
	{"CRHIST32_USR(unsorted,16)", hist.Spec{DType: voi.CRHist32, Scheme: hist.Usr, Buckets: usr(500, 0, 100, 900, 200, 300, 50, 400, 600, 700, 800, 950, 150, 250, 350, 450)}, voi.IntU32, uniform, 0},
	// Q_U64 with 16 fractional bits: 100 linear buckets of 10.
	{"CRHIST64_LIN_Q_U64", hist.Spec{DType: voi.CRHist64, Scheme: hist.Lin, LB: 4, UB: 990<<19 | 4, StepInc: 10}, voi.QU64, ring(func(x uint64) uint64 { return (x%1000)<<19 | 4 }), 0},
}

func drBuckets(n int) []hist.Bound {
	b := make([]hist.Bound, n)
	for i := range b {
		b[i] = hist.Bound{LB: uint64(i * 20), UB: uint64(i*20 + 15)}
	}
	return b
}

// BenchmarkHistUpdate times one histogram update: "layout" through a
// Layout made once from the data (the fast path), "scan" through Update
// (the C's backward scan).
func BenchmarkHistUpdate(b *testing.B) {
	for _, c := range benchCases {
		data, err := c.spec.Build(c.voiDT)
		if err != nil {
			b.Fatalf("%s: %v", c.name, err)
		}
		l, err := hist.NewLayout(data, c.spec.DType, c.voiDT)
		if err != nil {
			b.Fatal(err)
		}
		vals := *c.vals
		if c.mod != 0 {
			for i := range vals {
				vals[i] %= c.mod
			}
		}
		b.Run(c.name+"/layout", func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				l.Update(data, vals[i&0xFFFF])
				i++
			}
		})
		b.Run(c.name+"/scan", func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				hist.Update(data, c.spec.DType, c.voiDT, vals[i&0xFFFF])
				i++
			}
		})
	}
}

// BenchmarkHistUpdateParallel runs the fast path on per-goroutine
// histograms, as blobs of one template do.
func BenchmarkHistUpdateParallel(b *testing.B) {
	c := benchCases[0]
	tmpl, _ := c.spec.Build(c.voiDT)
	l, _ := hist.NewLayout(tmpl, c.spec.DType, c.voiDT)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		data := append([]byte(nil), tmpl...)
		i := 0
		for pb.Next() {
			l.Update(data, uniform[i&0xFFFF])
			i++
		}
	})
}

func BenchmarkQuantile(b *testing.B) {
	c := benchCases[0]
	data, _ := c.spec.Build(c.voiDT)
	for _, v := range uniform {
		hist.Update(data, c.spec.DType, c.voiDT, v)
	}
	b.ReportAllocs()
	for b.Loop() {
		hist.Quantile(data, c.spec.DType, c.voiDT, 0.99)
	}
}
