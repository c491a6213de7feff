package blob_test

import (
	"errors"
	"fmt"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/hist"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// rttTemplate has VOI 0 "bytes" (INT_U64: SUM) and VOI 1 "rtt" (INT_U32:
// MAX, MIN, a histogram of 50 µs buckets up to 500, a t-digest).
func rttTemplate() *tpl.Template {
	t, _ := tpl.NewRegistry().New("RTT")
	_ = t.AddVOI(tpl.VOIDef{ID: 0, Name: "bytes", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}})
	_ = t.AddVOI(tpl.VOIDef{ID: 1, Name: "rtt", DType: voi.IntU32, Stats: []tpl.StatSpec{
		tpl.Max(), tpl.Min(),
		tpl.Histogram(hist.Spec{DType: voi.CRHist32, Scheme: hist.Lin, LB: 0, UB: 500, StepInc: 50}),
		tpl.TDigest(voi.TDgstClust32, 16, 4)}})
	return t
}

func ExampleBlob_Header() {
	env := blob.NewEnv(func() int64 { return blob.SBinTime(1700000000, 0) }, 1)
	b := blob.New(rttTemplate(), env)
	h := b.Header()
	fmt.Println(h.CurSz, "bytes,", h.NumVOIs, "VOIs, created", h.Created.UTC().Format("2006-01-02 15:04:05"))
	// Output: 588 bytes, 2 VOIs, created 2023-11-14 22:13:20
}

func ExampleBlob_Stats() {
	b := blob.New(rttTemplate(), nil)
	for _, rtt := range []uint32{120, 80, 300} {
		_ = b.UpdateU64(0, 1448)
		_ = b.UpdateU32(1, rtt)
	}
	for id, s := range b.Stats() {
		if v, err := s.Value(); err == nil {
			fmt.Println(id, s.Type, v)
			continue
		}
		n, _ := s.Count()
		fmt.Println(id, s.Type, n, "samples")
	}
	// Output:
	// 0 SUM 4344
	// 1 MAX 300
	// 1 MIN 80
	// 1 HIST 3 samples
	// 1 TDGST 3 samples
}

func ExampleBlob_VOIs() {
	b := blob.New(rttTemplate(), nil)
	for id, dt := range b.VOIs() {
		fmt.Println(id, dt)
	}
	// Output:
	// 0 INT_U64
	// 1 INT_U32
}

func ExampleBlob_Quantile() {
	b := blob.New(rttTemplate(), nil)
	for i := range uint32(1000) {
		_ = b.UpdateU32(1, 100+i%200) // 100 .. 299 µs
	}
	p50, _ := b.Quantile(1, 0.5) // from the t-digest, between MIN and MAX
	below, _ := b.CDF(1, 150)
	fmt.Printf("p50 %.0f, CDF(150) %.2f\n", p50, below)

	// The VOI keeps MIN and MAX: they bound every answer, so Q(0) and
	// Q(1) are the true extremes.
	q0, _ := b.Quantile(1, 0)
	q1, _ := b.Quantile(1, 1)
	fmt.Printf("Q(0) %.0f, Q(1) %.0f\n", q0, q1)

	h, _ := b.Fetch(1, voi.Hist) // or ask the histogram
	hp50, _ := h.Quantile(0.5)
	fmt.Printf("histogram p50 %.0f\n", hp50)

	_, err := b.Quantile(0, 0.5)
	fmt.Println(errors.Is(err, voi.ErrNotFound), err)
	// Output:
	// p50 200, CDF(150) 0.24
	// Q(0) 100, Q(1) 299
	// histogram p50 200
	// true blob: quantile of VOI 0: it keeps neither a t-digest nor a histogram: not found
}

func ExampleStat_CDFs() {
	b := blob.New(rttTemplate(), nil)
	for i := range uint32(1000) {
		_ = b.UpdateU32(1, 100+i%200) // 100 .. 299 µs
	}
	td, _ := b.Fetch(1, voi.TDgst)
	// The fractions at or below each bound, in one walk of the digest
	// (what Stat.CDF answers one bound at a time; the samples give 0,
	// 0.255, 0.505, 0.755 and 1).
	ps, _ := td.CDFs(nil, []float64{99, 150, 200, 250, 299})
	fmt.Printf("%.3f\n", ps)
	// Output:
	// [0.000 0.241 0.503 0.774 1.000]
}

func ExampleBlob_UpdateFloat() {
	t, _ := tpl.NewRegistry().New("LOAD")
	_ = t.AddVOI(tpl.VOIDef{ID: 0, Name: "load", DType: voi.QS64, Prec: 8, Stats: []tpl.StatSpec{tpl.Sum(), tpl.Max()}})
	b := blob.New(t, nil)
	for _, x := range []float64{0.5, 1.25, 0.3} { // 0.3 rounds to 77/256
		_ = b.UpdateFloat(0, x)
	}
	s, _ := b.Fetch(0, voi.Sum)
	sum, _ := s.Value()
	fmt.Println(sum)
	fmt.Println(b.UpdateFloat(0, 1e300))
	// Output:
	// 2.05078125
	// blob: float update of VOI 0: 1e+300 does not fit Q_S64 with 8 fractional bits: value does not fit its type
}
