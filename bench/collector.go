package bench

import (
	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/bsdrand"
	"github.com/statsblob/statsblob/hist"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// CollectorConns is the number of connections of the collector benchmarks'
// fleet (about what the demo samples: 2,025 of 5,000).
const CollectorConns = 2000

// CollectorSeed is where the fleet's value stream starts (the demo's
// default seed).
const CollectorSeed = 1

// LargeName is the template of the collector benchmarks' large blobs: one
// VOI "latency" (IntU64) with SUM, MAX, MIN, a 1,000-bucket CRHIST64 and a
// 300-centroid TDGSTCLUST64, 23,368 bytes.
const LargeName = "LARGE"

// LargeFleet returns n blobs of the LARGE template, each fed 2,000 values
// of the logish ring from its own place in it, and the registry holding
// the template.
func LargeFleet(n int) (*Fleet, error) {
	reg := tpl.NewRegistry()
	t, err := reg.New(LargeName)
	if err != nil {
		return nil, err
	}
	if err := t.AddVOI(tpl.VOIDef{ID: 0, Name: "latency", DType: voi.IntU64, Stats: []tpl.StatSpec{
		tpl.Sum(), tpl.Max(), tpl.Min(),
		tpl.Histogram(hist.Spec{DType: voi.CRHist64, Scheme: hist.Lin, LB: 0, UB: 100000, StepInc: 100}),
		tpl.TDigest(voi.TDgstClust64, 300, 8),
	}}); err != nil {
		return nil, err
	}
	f := &Fleet{Registry: reg}
	clock := blob.SBinTime(1000, 0)
	env := &blob.Env{Rand: bsdrand.New(1), Clock: func() int64 { return clock }}
	for c := range n {
		b := blob.New(t, env)
		for i := range 2000 {
			_ = b.UpdateU64(0, logishRing[(c*7919+i)&(RingSize-1)]>>6)
		}
		clock += 1 << 28
		f.Wire = append(f.Wire, append([]byte(nil), b.Bytes()...))
	}
	return f, nil
}
