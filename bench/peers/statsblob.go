package peers

import (
	"fmt"
	"testing"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/hist"
	"github.com/statsblob/statsblob/tdigest"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// The statsblob digest: the C reference's tdgst64_50 size (50 centroid
// slots; FreeBSD's size bound keeps 20 to 30 of them in use on these
// streams, whatever the slot count). Precision 8, not the C case's 4:
// with 4 fractional bits the uniform ring's p90 has ten times the rank
// error; with 16 the digest starts rejecting logish samples past 2^21 of
// them (ERANGE).
const (
	TDigestCentroids = 50
	TDigestPrec      = 8
)

// histSpec is CRHIST64_LIN(0, 990, 10): 100 buckets of width 10, the last
// one open-ended (the C reference's crhist64_lin100 case).
var histSpec = hist.Spec{DType: voi.CRHist64, Scheme: hist.Lin, LB: 0, UB: 990, StepInc: 10}

// template returns a one-VOI template (VOI 0, INT_U64) keeping stat.
func template(name string, stat tpl.StatSpec) *tpl.Template {
	t, err := tpl.NewRegistry().New(name)
	if err != nil {
		panic(err) // a fresh registry takes any valid name
	}
	if err := t.AddVOI(tpl.VOIDef{ID: 0, Name: "v", DType: voi.IntU64, Stats: []tpl.StatSpec{stat}}); err != nil {
		panic(fmt.Sprintf("peers: template %s: %v", name, err))
	}
	return t
}

func tdigestTemplate() *tpl.Template {
	return template("tdigest", tpl.TDigest(voi.TDgstClust64, TDigestCentroids, TDigestPrec))
}

func histTemplate() *tpl.Template { return template("hist", tpl.Histogram(histSpec)) }

// fixedClock keeps the blobs' timestamps (and so their bytes) reproducible.
func fixedClock() int64 { return blob.SBinTime(1000, 0) }

// newBlob returns a blob of t with a fixed clock and random() seeded with
// 1, as the C reference's benchmarks run.
func newBlob(t *tpl.Template) *blob.Blob { return blob.New(t, blob.NewEnv(fixedClock, 1)) }

// fillBlob adds the ring's values and returns how many updates failed.
func fillBlob(bl *blob.Blob, ring []uint64) int {
	lost := 0
	for _, v := range ring {
		if bl.UpdateU64(0, v) != nil {
			lost++
		}
	}
	return lost
}

func statsblobTDigestPeer() Peer {
	return statsblobPeer("statsblob-tdigest",
		fmt.Sprintf("TDGSTCLUST64, %d centroids, prec %d; parallel: Sharded", TDigestCentroids, TDigestPrec),
		tdigestTemplate)
}

func statsblobHistPeer() Peer {
	return statsblobPeer("statsblob-hist", "CRHIST64_LIN(0,990,10); parallel: Sharded", histTemplate)
}

func statsblobPeer(name, config string, tmpl func() *tpl.Template) Peer {
	update := func(b *testing.B, ring []uint64) {
		bl := newBlob(tmpl())
		fillBlob(bl, ring)
		lost := 0
		start(b)
		for i := 0; i < b.N; i++ {
			if bl.UpdateU64(0, ring[i&ringMask]) != nil {
				lost++
			}
		}
		b.ReportMetric(float64(lost)/float64(b.N)*1e6, MetricLost)
	}
	par := func(b *testing.B, ring []uint64) {
		s := blob.NewSharded(tmpl(), shards(), fixedClock)
		for _, v := range ring {
			_ = s.UpdateU64(0, v)
		}
		parallel(b, ring, func(v uint64) { _ = s.UpdateU64(0, v) })
	}
	serialize := func(b *testing.B, ring []uint64) {
		bl := newBlob(tmpl())
		fillBlob(bl, ring)
		buf := make([]byte, 0, bl.CurSz())
		start(b)
		for i := 0; i < b.N; i++ {
			buf, _ = bl.AppendBinary(buf[:0])
		}
		b.ReportMetric(float64(len(buf)), MetricBytes)
	}
	snapshot := func(b *testing.B) {
		bl := newBlob(tmpl())
		fillBlob(bl, LognormalRing())
		var snap *blob.Blob
		start(b)
		for i := 0; i < b.N; i++ {
			snap = bl.Snapshot(false)
		}
		b.ReportMetric(float64(snap.CurSz()), MetricBytes)
	}
	shardedSnapshot := func(b *testing.B) {
		s := blob.NewSharded(tmpl(), shards(), fixedClock)
		for _, v := range LognormalRing() {
			_ = s.UpdateU64(0, v)
		}
		var snap *blob.Blob
		start(b)
		for i := 0; i < b.N; i++ {
			snap, _ = s.Snapshot(false)
		}
		b.ReportMetric(float64(snap.CurSz()), MetricBytes)
	}
	return Peer{
		Name:   name,
		Config: config,
		Ops: append(ops(update, par, serialize),
			Op{OpSnapshot, snapshot}, Op{OpShardedSnapshot, shardedSnapshot}),
	}
}

// statsblobSketch is the statsblob digest of vals for the accuracy table.
func statsblobSketch(vals []uint64) Sketch {
	bl := newBlob(tdigestTemplate())
	lost := fillBlob(bl, vals)
	st, err := bl.Fetch(0, voi.TDgst)
	if err != nil {
		panic(err) // the template has the statistic
	}
	info, _ := tdigest.ReadInfo(st.Data, voi.TDgstClust64)
	return Sketch{
		Setting: fmt.Sprintf("%d centroids (%d in use)", TDigestCentroids, info.CurNodes),
		Bytes:   bl.CurSz(),
		Lost:    lost,
		Quantile: func(q float64) float64 {
			v, _ := tdigest.Quantile(st.Data, voi.TDgstClust64, q)
			return v
		},
	}
}
