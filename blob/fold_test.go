package blob_test

import (
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/hist"
	"github.com/statsblob/statsblob/internal/tcpstats"
	"github.com/statsblob/statsblob/tdigest"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// narrowTpl has 32-bit fields of every kind: integer SUM/MAX/MIN, 32-bit
// histogram counters with infinite buckets, a TDGSTCLUST32.
func narrowTpl(t testing.TB) *tpl.Template {
	t.Helper()
	tp, err := tpl.NewRegistry().New("NARROW")
	require.NoError(t, err)
	defs := []tpl.VOIDef{
		{ID: 0, Name: "u32", DType: voi.IntU32, Stats: []tpl.StatSpec{tpl.Sum(), tpl.Max(), tpl.Min(),
			tpl.Histogram(hist.Spec{DType: voi.CRHist32, Scheme: hist.Lin, LB: 0, UB: 1000, StepInc: 100, Flags: hist.UBoundInf}),
			tpl.TDigest(voi.TDgstClust32, 20, 4)}},
		{ID: 1, Name: "s32", DType: voi.IntS32, Stats: []tpl.StatSpec{tpl.Sum(), tpl.Max(), tpl.Min(),
			tpl.Histogram(hist.Spec{DType: voi.DRHist32, Scheme: hist.Usr, Buckets: []hist.Bound{{LB: uint64(1<<64 - 500), UB: 0}, {LB: 0, UB: 500}}})}},
		{ID: 2, Name: "never", DType: voi.IntS32, Stats: []tpl.StatSpec{tpl.Max(), tpl.Min()}},
		{ID: 4, Name: "u64", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum(), tpl.Histogram(hist.Spec{DType: voi.DVHist32, Scheme: hist.Usr, Buckets: []hist.Bound{{LB: 1, UB: 1}, {LB: 2, UB: 2}}})}},
	}
	for _, d := range defs {
		require.NoError(t, tp.AddVOI(d))
	}
	return tp
}

func feedNarrow(t testing.TB, bl *blob.Blob, r *rand.Rand, n int) {
	t.Helper()
	for range n {
		x := r.Uint32N(1200)
		require.NoError(t, bl.UpdateU32(0, x))
		require.NoError(t, bl.UpdateS32(1, int32(x)-600))
		require.NoError(t, bl.UpdateU64(4, uint64(x%3)))
	}
}

// requireWideEqual checks that wide holds exactly narrow's statistics.
func requireWideEqual(t *testing.T, narrow, wide *blob.Blob) {
	t.Helper()
	for id, ns := range narrow.Stats() {
		ws, err := wide.Fetch(id, ns.Type)
		require.NoError(t, err)
		require.Equal(t, ns.Errs, ws.Errs, "VOI %d %v", id, ns.Type)
		require.Equal(t, ns.Valid, ws.Valid, "VOI %d %v", id, ns.Type)
		switch ns.Type {
		case voi.Sum, voi.Max, voi.Min:
			want := func(v uint64) uint64 { return v }
			var nv uint64
			if len(ns.Data) == 4 {
				nv = uint64(binary.LittleEndian.Uint32(ns.Data))
				if ns.VOIDType == voi.IntS32 {
					nv = uint64(int64(int32(nv)))
				}
			} else {
				nv = binary.LittleEndian.Uint64(ns.Data)
			}
			if !ns.Valid && ns.Type != voi.Sum {
				nv = voi.Initial(ns.Type, ws.DType, 0) // never updated: the wide type's initial value
			}
			require.Equal(t, want(nv), binary.LittleEndian.Uint64(ws.Data), "VOI %d %v", id, ns.Type)
		case voi.Hist:
			require.Equal(t, hist.OOB(ns.Data, ns.DType), hist.OOB(ws.Data, ws.DType))
			for i := range hist.NumBuckets(ns.DType, len(ns.Data)) {
				require.Equal(t, hist.BucketCount(ns.Data, ns.DType, i), hist.BucketCount(ws.Data, ws.DType, i), "VOI %d bucket %d", id, i)
			}
		case voi.TDgst:
			require.Equal(t, voi.TDgstClust64, ws.DType)
			var nc, wc [][2]float64
			for c := range tdigest.Centroids(ns.Data, ns.DType) {
				nc = append(nc, [2]float64{c.Mean(), float64(c.Count)})
			}
			for c := range tdigest.Centroids(ws.Data, ws.DType) {
				wc = append(wc, [2]float64{c.Mean(), float64(c.Count)})
			}
			require.Equal(t, nc, wc, "VOI %d", id)
		}
	}
}

func TestWidenIsExact(t *testing.T) {
	for _, mk := range []func(testing.TB) *tpl.Template{narrowTpl, mixed, func(tb testing.TB) *tpl.Template {
		tp, err := tcpstats.New(tpl.NewRegistry())
		require.NoError(tb, err)
		return tp
	}} {
		n := mk(t)
		w, err := tpl.Widen(n)
		require.NoError(t, err)
		b := blob.New(n, blob.NewEnv(nil, 1))
		if n.Name() == "NARROW" {
			feedNarrow(t, b, rand.New(rand.NewPCG(1, 1)), 3000)
		} else if n.Name() == "MIXED" {
			feed(t, b, []uint64{1, 5, 999, 12345, 7})
		} else {
			require.NoError(t, b.UpdateU32(tcpstats.RTT, 3000))
			require.NoError(t, b.UpdateS32(tcpstats.CalcFrWinDiff, -5))
			require.NoError(t, b.UpdateU32(tcpstats.AckLen, 50))
		}
		wb, err := blob.Widen(w, b, nil)
		require.NoError(t, err, n.Name())
		require.NoError(t, wb.CheckTemplate(w))
		requireWideEqual(t, b, wb)
		// The wide blob is a valid blob of the wide template.
		_, err = blob.FromBytes(wb.Bytes(), nil)
		require.NoError(t, err)
	}
}

func TestFoldOverflowPolicy(t *testing.T) {
	n := narrowTpl(t)
	w, err := tpl.Widen(n)
	require.NoError(t, err)
	big := blob.New(n, nil)
	// (The TDGSTCLUST32(20,4) refuses the value, its means' range ending
	// at 2^27, and counts an error; SUM, MAX and MIN take it.)
	require.ErrorIs(t, big.UpdateU32(0, math.MaxUint32-10), voi.ErrOverflow)
	small := blob.New(n, nil)
	require.NoError(t, small.UpdateU32(0, 100))
	require.NoError(t, small.UpdateS32(1, -7))

	// In the wide form an INT_U32 SUM past 2^32 keeps counting exactly.
	acc := blob.New(w, nil)
	sat, err := blob.Fold(acc, big, small)
	require.NoError(t, err)
	require.Zero(t, sat)
	sum, err := acc.FetchU64(0, voi.Sum)
	require.NoError(t, err)
	require.Equal(t, uint64(math.MaxUint32)+90, sum)
	mx, err := acc.FetchU64(0, voi.Max)
	require.NoError(t, err)
	require.Equal(t, uint64(math.MaxUint32-10), mx)
	s, err := acc.FetchS64(1, voi.Sum)
	require.NoError(t, err)
	require.Equal(t, int64(-7), s)
	st, err := acc.Fetch(0, voi.TDgst)
	require.NoError(t, err)
	cnt, err := tdigest.Count(st.Data, st.DType)
	require.NoError(t, err)
	require.Equal(t, uint64(1), cnt)

	// Folded into the narrow form, the SUM saturates and counts an error;
	// the other statistics fold.
	nacc := blob.New(n, nil)
	sat, err = blob.Fold(nacc, big, small)
	require.NoError(t, err)
	require.Equal(t, 1, sat)
	s32, err := nacc.FetchU32(0, voi.Sum)
	require.NoError(t, err)
	require.Equal(t, uint32(math.MaxUint32), s32)
	fs, err := nacc.Fetch(0, voi.Sum)
	require.NoError(t, err)
	require.Equal(t, uint8(1), fs.Errs)
	ss, err := nacc.FetchS32(1, voi.Sum)
	require.NoError(t, err)
	require.Equal(t, int32(-7), ss)

	// Even 64 bits: a SUM that would pass 2^64-1 saturates there and
	// counts an error, in both directions for a signed one.
	for range 2 {
		b := blob.New(n, nil)
		require.NoError(t, b.UpdateU64(4, math.MaxUint64-1))
		require.NoError(t, b.UpdateS32(1, math.MinInt32))
		for range 3 {
			_, err = blob.Fold(acc, b)
			require.NoError(t, err)
		}
	}
	u, err := acc.FetchU64(4, voi.Sum)
	require.NoError(t, err)
	require.Equal(t, uint64(math.MaxUint64), u)
	fu, err := acc.Fetch(4, voi.Sum)
	require.NoError(t, err)
	require.Equal(t, uint8(5), fu.Errs)
	s, err = acc.FetchS64(1, voi.Sum)
	require.NoError(t, err)
	require.Equal(t, int64(-7)+6*math.MinInt32, s) // far from the limit: exact

	// A blob of another template folds into neither; nothing changes.
	before := append([]byte(nil), acc.Bytes()...)
	other := blob.New(mixed(t), nil)
	_, err = blob.Fold(acc, small, other)
	require.ErrorIs(t, err, voi.ErrInvalid)
	require.Equal(t, before, acc.Bytes())
	// Nor does a wide blob into a narrow one.
	_, err = blob.Fold(nacc, acc)
	require.ErrorIs(t, err, voi.ErrInvalid)
}

func TestFoldEqualsMergeAll(t *testing.T) {
	// Folding blobs of one template into a blob of it gives MergeAll's
	// statistics but t-digests (whose one-step merge Fold also does).
	n := narrowTpl(t)
	r := rand.New(rand.NewPCG(3, 4))
	var bs []*blob.Blob
	for range 20 {
		b := blob.New(n, blob.NewEnv(nil, 1))
		feedNarrow(t, b, r, 50)
		bs = append(bs, b)
	}
	all, err := blob.MergeAll(nil, bs...)
	require.NoError(t, err)
	acc := bs[0].Clone()
	sat, err := blob.Fold(acc, bs[1:]...)
	require.NoError(t, err)
	require.Zero(t, sat)
	require.Equal(t, statBytes(all), statBytes(acc))
	st, _ := acc.Fetch(0, voi.TDgst)
	cnt, err := tdigest.Count(st.Data, st.DType)
	require.NoError(t, err)
	require.Equal(t, uint64(20*50), cnt)
}

// FuzzWiden: for any bytes FromBytes accepts, tpl.WidenLayout derives a
// wide template (or refuses with ErrTooBig/ErrInvalid, never panicking),
// Widen converts the blob to it, and every statistic holds the same
// counts and values; folding the blob twice into the wide blob doubles
// the counts.
func FuzzWiden(f *testing.F) {
	f.Add(unhex(f, manpageHex))
	for _, tp := range []*tpl.Template{narrowTpl(f), mixed(f)} {
		b := blob.New(tp, blob.NewEnv(nil, 1))
		if tp.Name() == "NARROW" {
			feedNarrow(f, b, rand.New(rand.NewPCG(1, 1)), 100)
		} else {
			feed(f, b, []uint64{1, 5, 999, 12345, 7})
		}
		f.Add(append([]byte(nil), b.Bytes()...))
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		b, err := blob.FromBytes(p, nil)
		if err != nil {
			return
		}
		w, err := tpl.WidenLayout("w", b.Bytes())
		if err != nil {
			require.True(t, errors.Is(err, voi.ErrTooBig) || errors.Is(err, voi.ErrInvalid), "%v", err)
			return
		}
		wb, err := blob.Widen(w, b, nil)
		require.NoError(t, err)
		_, err = blob.FromBytes(wb.Bytes(), nil)
		require.NoError(t, err, "a valid blob")
		twice := wb.Clone()
		_, err = blob.Fold(twice, b)
		require.NoError(t, err)
		for id, ns := range b.Stats() {
			ws, err := wb.Fetch(id, ns.Type)
			require.NoError(t, err)
			ts, err := twice.Fetch(id, ns.Type)
			require.NoError(t, err)
			switch ns.Type {
			case voi.Hist:
				for i := range hist.NumBuckets(ns.DType, len(ns.Data)) {
					c := hist.BucketCount(ns.Data, ns.DType, i)
					require.Equal(t, c, hist.BucketCount(ws.Data, ws.DType, i))
					require.Equal(t, 2*c, hist.BucketCount(ts.Data, ts.DType, i))
				}
			case voi.TDgst:
				nc, err1 := tdigest.Count(ns.Data, ns.DType)
				wc, err2 := tdigest.Count(ws.Data, ws.DType)
				tc, err3 := tdigest.Count(ts.Data, ts.DType)
				require.NoError(t, errors.Join(err1, err2, err3))
				require.Equal(t, nc, wc)
				if nc < 1<<31 { // twice fits a TDGSTCLUST64's centroids
					require.Equal(t, 2*nc, tc)
				}
			case voi.Sum:
				if ns.DType.IsInt() && ns.Errs == 0 {
					nv := widened(ns)
					require.Equal(t, nv, widened(ws))
				}
			}
		}
	})
}

// widened returns an integer statistic's value extended to 64 bits.
func widened(s blob.Stat) uint64 {
	if len(s.Data) == 4 {
		v := uint64(binary.LittleEndian.Uint32(s.Data))
		if s.DType == voi.IntS32 {
			v = uint64(int64(int32(v)))
		}
		return v
	}
	return binary.LittleEndian.Uint64(s.Data)
}
