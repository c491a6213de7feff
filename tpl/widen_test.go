package tpl_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/hist"
	"github.com/statsblob/statsblob/internal/abi"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// statData returns the data of statistic st of VOI id in template bytes.
func statData(b []byte, id int, st voi.SType) (voi.DType, []byte) {
	v := abi.ReadVOI(b, abi.VOIAt(id))
	s := abi.ReadStat(b, int(v.StatsOff)+int(st)*abi.StatSize)
	return s.DType, b[s.DataOff : int(s.DataOff)+int(s.DSz)]
}

func TestWiden(t *testing.T) {
	r := tpl.NewRegistry()
	n, err := r.New("web")
	require.NoError(t, err)
	defs := []tpl.VOIDef{
		{ID: 0, Name: "lat", DType: voi.IntU32, Stats: []tpl.StatSpec{tpl.Sum(), tpl.Max(), tpl.Min(),
			tpl.Histogram(hist.Spec{DType: voi.DRHist32, Scheme: hist.Exp, LB: 1, UB: 1 << 20, StepBase: 2, StepExp: 0, Flags: hist.UBoundInf}),
			tpl.TDigest(voi.TDgstClust32, 20, 4)}},
		{ID: 1, Name: "diff", DType: voi.IntS32, Stats: []tpl.StatSpec{tpl.Sum(),
			tpl.Histogram(hist.Spec{DType: voi.CRHist32, Scheme: hist.Lin, LB: uint64(0xFFFFFFFF_FFFFFF9C), UB: 100, StepInc: 50, Flags: hist.LBoundInf | hist.UBoundInf})}},
		{ID: 3, Name: "q", DType: voi.QS32, Prec: 8, Stats: []tpl.StatSpec{tpl.Sum(), tpl.TDigest(voi.TDgstClust32, 10, 8)}},
		{ID: 4, Name: "big", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum(), tpl.Histogram(hist.Spec{DType: voi.DVHist32, Scheme: hist.Usr, Buckets: []hist.Bound{{LB: 1, UB: 1}, {LB: 5, UB: 5}}}), tpl.TDigest(voi.TDgstClust64, 50, 16)}},
	}
	for _, d := range defs {
		require.NoError(t, n.AddVOI(d))
	}
	w, err := tpl.Widen(n)
	require.NoError(t, err)
	require.Equal(t, "web", w.Name())
	require.NotEqual(t, n.Hash(), w.Hash())
	wd := w.VOIs()
	require.Len(t, wd, 4)
	wantDT := []voi.DType{voi.IntU64, voi.IntS64, voi.QS32, voi.IntU64}
	for i, d := range wd {
		require.Equal(t, defs[i].Name, d.Name)
		require.Equal(t, wantDT[i], d.DType, d.Name)
	}
	require.Equal(t, tpl.TDigest(voi.TDgstClust64, 20*tpl.WideSlots, 4), wd[0].Stats[4])
	require.Equal(t, tpl.TDigest(voi.TDgstClust64, 10*tpl.WideSlots, 8), wd[2].Stats[1])
	require.Equal(t, tpl.TDigest(voi.TDgstClust64, 50*tpl.WideSlots, 16), wd[3].Stats[2])

	// Every histogram has the narrow one's buckets, bounds extended to
	// 64 bits, with 64-bit counters.
	nb, wb := n.Bytes(), w.Bytes()
	for _, c := range []struct {
		id            int
		vdt           voi.DType
		narrow, wide  voi.DType
		signed        bool
		firstLB, topB uint64
	}{
		{0, voi.IntU32, voi.DRHist32, voi.DRHist64, false, 1, 0xFFFFFFFF},
		{1, voi.IntS32, voi.CRHist32, voi.CRHist64, true, 0xFFFFFFFF_80000000, 100},
		{4, voi.IntU64, voi.DVHist32, voi.DVHist64, false, 1, 5},
	} {
		ndt, nd := statData(nb, c.id, voi.Hist)
		wdt, wdata := statData(wb, c.id, voi.Hist)
		require.Equal(t, c.narrow, ndt)
		require.Equal(t, c.wide, wdt)
		k := hist.NumBuckets(ndt, len(nd))
		require.Equal(t, k, hist.NumBuckets(wdt, len(wdata)))
		for i := range k {
			nlb, nub, _ := hist.Bucket(nd, ndt, c.vdt, i)
			wlb, wub, _ := hist.Bucket(wdata, wdt, tpl.WideDType(c.vdt), i)
			ext := func(u uint64) uint64 {
				if c.vdt == voi.IntU64 {
					return u
				}
				if c.signed {
					return uint64(int64(int32(uint32(u))))
				}
				return uint64(uint32(u))
			}
			require.Equal(t, ext(nlb), wlb, "VOI %d bucket %d", c.id, i)
			if c.narrow != voi.CRHist32 || i < k-1 { // a CR histogram's last bucket ends at its VOI type's maximum
				require.Equal(t, ext(nub), wub, "VOI %d bucket %d", c.id, i)
			}
		}
		lb, _, _ := hist.Bucket(wdata, wdt, tpl.WideDType(c.vdt), 0)
		require.Equal(t, c.firstLB, lb)
		_, ub, _ := hist.Bucket(wdata, wdt, tpl.WideDType(c.vdt), k-1)
		if c.id != 1 {
			require.Equal(t, c.topB, ub)
		}
	}

	// Digests too large for WideSlots times the slots get fewer: 2,700
	// TDGSTCLUST64 slots take 64,832 bytes, 5,400 would not fit.
	big, err := r.New("big")
	require.NoError(t, err)
	require.NoError(t, big.AddVOI(tpl.VOIDef{ID: 0, Name: "x", DType: voi.IntU32, Stats: []tpl.StatSpec{tpl.TDigest(voi.TDgstClust32, 2700, 4)}}))
	wbig, err := tpl.Widen(big)
	require.NoError(t, err)
	require.Equal(t, tpl.TDigest(voi.TDgstClust64, 2700, 4), wbig.VOIs()[0].Stats[0])

	empty, err := r.New("empty")
	require.NoError(t, err)
	_, err = tpl.Widen(empty)
	require.ErrorIs(t, err, voi.ErrInvalid)
	_, err = tpl.Widen(nil)
	require.ErrorIs(t, err, voi.ErrInvalid)
}
