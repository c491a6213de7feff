package blob_test

import (
	"crypto/sha256"
	"encoding/hex"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/internal/tcpstats"
	"github.com/statsblob/statsblob/tdigest"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// foldFingerprint is the SHA-256 of TestFoldFingerprint's outputs, taken
// before the merge's hot loops were reworked for the collector: Fold and
// MergeAll must keep giving these bytes.
// (Changed on purpose 2026-11-28: runs of equal samples stay whole and
// pinned, and centroids of two samples are not spread; see coalesce.
// Again 2026-11-28: the accurate cache keeps its means at 32 more
// fractional bits, see accFine; the accurate-mode inputs' bytes moved.
// Again 2026-11-28: a merge gives a centroid that shares its mean with a
// neighbour a one-sample part, as a run's (tdigest's splitCentroids), and
// the accurate mode matches runs of consecutive integers (exactRuns).)
const foldFingerprint = "1d1d702eb9c52926aa609d239d5099efd0b3f2138ac15c2797888c64251379be"

// fpTemplate has an INT_U64 VOI with MIN, MAX and two t-digests of mode m
// (of type dt with slots, and TDGSTCLUST32 of 8 slots), and an INT_S32
// VOI with a SUM and a t-digest of dt with 3 slots.
func fpTemplate(t testing.TB, m tdigest.Mode, dt voi.DType, slots, prec uint32) *tpl.Template {
	t.Helper()
	tp, err := tpl.NewRegistry().New("FP")
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "lat", DType: voi.IntU64, Stats: []tpl.StatSpec{
		tpl.Min(), tpl.Max(),
		tpl.TDigestOf(tpl.TDigestSpec{DType: dt, NCtds: slots, Prec: prec, Mode: m}),
		tpl.TDigestOf(tpl.TDigestSpec{DType: voi.TDgstClust32, NCtds: 8, Prec: 2, Mode: m}),
	}}))
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 1, Name: "diff", DType: voi.IntS32, Stats: []tpl.StatSpec{
		tpl.Sum(), tpl.TDigestOf(tpl.TDigestSpec{DType: dt, NCtds: 3, Prec: prec, Mode: m}),
	}}))
	return tp
}

// fpConn feeds a TCP_DEFAULT blob one connection's updates in the manner
// of tcpsim.SimulateConn, in integer arithmetic only (tcpsim's lognormal
// draws use math.Log, Cos and Exp, whose last bits differ between
// platforms).
func fpConn(b *blob.Blob, r *rand.Rand) {
	pkts := 20 + r.IntN(400)
	base := uint64(8000 + r.IntN(60000)) // µs
	wnd := uint64(65535)
	for i := range pkts {
		sz := uint64(200 + r.IntN(1249))
		_ = b.UpdateU64(tcpstats.TxPB, sz)
		if r.IntN(50) == 0 {
			_ = b.UpdateU32(tcpstats.RetxPB, uint32(sz))
			_ = b.UpdateU32(tcpstats.CSig, uint32(1)<<r.IntN(4))
		}
		wnd = wnd*7/8 + r.Uint64N(32768)
		_ = b.UpdateULong(tcpstats.FrWin, wnd)
		_ = b.UpdateULong(tcpstats.LcWin, wnd/2)
		_ = b.UpdateU32(tcpstats.RTT, uint32(base*uint64(600+r.IntN(300)+r.IntN(300)+r.IntN(300))/1000))
		if i%10 == 9 {
			_ = b.UpdateU32(tcpstats.GPut, uint32(r.IntN(2000)+r.IntN(2000)<<r.IntN(4)))
			_ = b.UpdateS32(tcpstats.CalcFrWinDiff, int32(r.IntN(2000))-1000)
			_ = b.UpdateS32(tcpstats.GPutND, int32(r.IntN(400)+r.IntN(400))-400)
		}
		_ = b.UpdateU32(tcpstats.AckLen, uint32(1+r.IntN(3)))
	}
}

// TestFoldFingerprint: blob.Fold into wide aggregates (tpl.Widen) in
// batches and levels, as the collector folds, and blob.MergeAll give the
// bytes they gave when the fingerprint was taken: TCP_DEFAULT fleets and
// fleets of C-mode and accurate-mode digests of both widths.
func TestFoldFingerprint(t *testing.T) {
	h := sha256.New()
	clock := func() int64 { return 1_700_000_000_000_000_000 }
	r := rand.New(rand.NewPCG(20, 22))
	fold := func(tp *tpl.Template, fleet []*blob.Blob) {
		w, err := tpl.Widen(tp)
		require.NoError(t, err)
		batch := 1 + r.IntN(40)
		var levels []*blob.Blob
		for k := 0; k < len(fleet); k += batch {
			agg := blob.New(w, blob.NewEnv(clock, 1))
			_, err := blob.Fold(agg, fleet[k:min(len(fleet), k+batch)]...)
			require.NoError(t, err)
			h.Write(agg.Bytes())
			levels = append(levels, agg)
		}
		for len(levels) > 1 { // a binary counter's merges of levels
			_, err := blob.Fold(levels[0], levels[1])
			require.NoError(t, err)
			h.Write(levels[0].Bytes())
			levels = append(levels[2:], levels[0])
		}
		m, err := blob.MergeAll(blob.NewEnv(clock, 1), fleet...)
		require.NoError(t, err)
		h.Write(m.Bytes())
	}
	tp, err := tcpstats.New(tpl.NewRegistry())
	require.NoError(t, err)
	for _, n := range []int{1, 3, 40, 300} {
		fleet := make([]*blob.Blob, n)
		for i := range fleet {
			b := blob.New(tp, blob.NewEnv(clock, uint32(i+1)))
			fpConn(b, r)
			fleet[i], err = blob.FromBytes(b.Bytes(), nil)
			require.NoError(t, err)
		}
		fold(tp, fleet)
	}
	for i := range 24 {
		m := []tdigest.Mode{tdigest.C, tdigest.Accurate}[i%2]
		dt := []voi.DType{voi.TDgstClust32, voi.TDgstClust64}[i/2%2]
		slots := []uint32{5, 20, 50}[i/4%3]
		prec := []uint32{1, 4}[i/12]
		tp := fpTemplate(t, m, dt, slots, prec)
		fleet := make([]*blob.Blob, 1+r.IntN(120))
		for j := range fleet {
			b := blob.New(tp, blob.NewEnv(clock, r.Uint32()))
			base := r.Uint64N(2000)
			norm := func(sd int64) int64 { // about normal: the sum of 4 uniforms
				return (r.Int64N(sd) + r.Int64N(sd) + r.Int64N(sd) + r.Int64N(sd)) - 2*sd
			}
			for k := range r.IntN(400) {
				// Integer arithmetic and single correctly rounded float
				// operations: the same samples on every platform.
				var v uint64
				switch i % 5 {
				case 0: // lognormal-like
					v = uint64(math.Ldexp(1+r.Float64(), int(10+norm(3))))
				case 1: // ascending
					v = base + uint64(3*k)
				case 2: // bimodal
					v = uint64(5000 + norm(200))
					if r.IntN(10) == 0 {
						v = uint64(200000 + norm(5000))
					}
				case 3: // Zipf-like
					v = uint64(1 / (1 - float64(0.95*r.Float64())))
				default: // Pareto, alpha 1
					v = uint64(min(100/(1-r.Float64()), 1e7))
				}
				// (A C-mode digest of few slots may refuse a sample, as
				// the C's does: its error is counted in the blob.)
				_ = b.UpdateU64(0, v)
				_ = b.UpdateS32(1, int32(norm(1000)))
			}
			fleet[j], err = blob.FromBytes(b.Bytes(), nil) // as a collector receives it
			require.NoError(t, err)
		}
		fold(tp, fleet)
	}
	require.Equal(t, foldFingerprint, hex.EncodeToString(h.Sum(nil)), "the bytes of Fold or MergeAll changed")
}
