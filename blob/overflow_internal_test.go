package blob

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/hist"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// TestOverflowPolicy is the package documentation's Overflow section, on
// the example: an INT_U32 SUM given MaxUint32-10 and then 100, and
// a CRHIST32 counter past 2^32-1, through every path.
func TestOverflowPolicy(t *testing.T) {
	tp, err := tpl.NewRegistry().New("OVF")
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "bytes", DType: voi.IntU32, Stats: []tpl.StatSpec{tpl.Sum(),
		tpl.Histogram(hist.Spec{DType: voi.CRHist32, Scheme: hist.Usr, Buckets: []hist.Bound{{LB: 0}}})}}))
	sum := func(b *Blob) (uint32, uint8) {
		st, err := b.Fetch(0, voi.Sum)
		require.NoError(t, err)
		v, _ := b.FetchU32(0, voi.Sum)
		return v, st.Errs
	}
	mk := func(vs ...uint32) *Blob {
		b := New(tp, nil)
		for _, v := range vs {
			require.NoError(t, b.UpdateU32(0, v))
		}
		return b
	}
	setCount := func(b *Blob, c uint32) { // the histogram's one bucket
		st, _ := b.Fetch(0, voi.Hist)
		g, _ := hist.GeometryOf(voi.CRHist32)
		st.Data[g.Header+g.CountOff] = byte(c)
		st.Data[g.Header+g.CountOff+1] = byte(c >> 8)
		st.Data[g.Header+g.CountOff+2] = byte(c >> 16)
		st.Data[g.Header+g.CountOff+3] = byte(c >> 24)
	}

	// The update: the C's wrap, no error.
	one := mk(math.MaxUint32-10, 100)
	v, errs := sum(one)
	require.Equal(t, uint32(89), v)
	require.Zero(t, errs)

	big, small := mk(math.MaxUint32-10), mk(100)
	setCount(big, math.MaxUint32)

	// Merge refuses, changing nothing.
	before := append([]byte(nil), big.Bytes()...)
	require.ErrorIs(t, Merge(big, small), voi.ErrOverflow)
	require.Equal(t, before, big.Bytes())

	// MergeAll leaves the input out and says so.
	out, err := MergeAll(nil, big, small)
	var ie *InputError
	require.ErrorAs(t, err, &ie)
	require.ErrorIs(t, err, voi.ErrOverflow)
	v, _ = sum(out)
	require.True(t, v == math.MaxUint32-10 || v == 100)

	// A Sharded snapshot saturates and counts.
	sh := NewSharded(tp, 2, nil)
	sh.shards[0].b = big.Clone()
	sh.shards[1].b = small.Clone()
	snap, err := sh.Snapshot(false)
	require.ErrorIs(t, err, voi.ErrOverflow)
	v, errs = sum(snap)
	require.Equal(t, uint32(math.MaxUint32), v)
	require.Equal(t, uint8(1), errs)
	hs, _ := snap.Fetch(0, voi.Hist)
	require.Equal(t, uint64(math.MaxUint32), hist.BucketCount(hs.Data, voi.CRHist32, 0))
	require.Equal(t, uint8(1), hs.Errs)

	// Fold into the narrow form: the same as the snapshot.
	acc := big.Clone()
	sat, err := Fold(acc, small)
	require.NoError(t, err)
	require.Equal(t, 2, sat)
	require.Equal(t, snap.Bytes()[64:], acc.Bytes()[64:])

	// Fold into the wide form: exact.
	w, err := tpl.Widen(tp)
	require.NoError(t, err)
	wide, err := Widen(w, big, nil)
	require.NoError(t, err)
	sat, err = Fold(wide, small)
	require.NoError(t, err)
	require.Zero(t, sat)
	u, err := wide.FetchU64(0, voi.Sum)
	require.NoError(t, err)
	require.Equal(t, uint64(math.MaxUint32)+90, u)
	ws, _ := wide.Fetch(0, voi.Hist)
	require.Equal(t, uint64(math.MaxUint32)+1, hist.BucketCount(ws.Data, voi.CRHist64, 0))
}
