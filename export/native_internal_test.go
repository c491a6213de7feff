package export

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/tdigest"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// TestExpFromDigestOneWalk: the native histogram of a t-digest, its bucket
// counts read from one ascending walk (blob.Stat.CDFs), is the one a
// query per bucket bound gave (expFromDigestRef, the code it replaced), on
// signed and unsigned, integer and Q-number VOIs, with and without MIN and
// MAX, at fixed and automatic scales.
func TestExpFromDigestOneWalk(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 9))
	for i := range 200 {
		dt := []voi.DType{voi.IntS64, voi.IntU32, voi.QS64}[r.IntN(3)]
		tp, err := tpl.NewRegistry().New("T")
		require.NoError(t, err)
		stats := []tpl.StatSpec{tpl.TDigestOf(tpl.TDigestSpec{DType: voi.TDgstClust64, NCtds: uint32(5 + r.IntN(60)), Prec: 8, Mode: tdigest.Mode(r.IntN(2))})}
		if r.IntN(2) == 0 {
			stats = append(stats, tpl.StatSpec{Type: voi.Min}, tpl.StatSpec{Type: voi.Max})
		}
		require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "v", DType: dt, Prec: 8, Stats: stats}))
		bl := blob.New(tp, blob.NewEnv(nil, uint32(i+1)))
		spread := math.Exp(r.Float64() * 12)
		for range 1 + r.IntN(3000) {
			x := spread * r.NormFloat64()
			switch dt {
			case voi.IntU32:
				require.NoError(t, bl.UpdateU32(0, uint32(math.Abs(x))))
			case voi.IntS64:
				require.NoError(t, bl.UpdateS64(0, int64(x)))
			default:
				require.NoError(t, bl.UpdateFloat(0, x))
			}
		}
		st, err := bl.Fetch(0, voi.TDgst)
		require.NoError(t, err)
		cnt, err := st.Count()
		require.NoError(t, err)
		scale := int32(r.IntN(9) - 4)
		if r.IntN(2) == 0 {
			scale = 0 // the resolving scale
		}
		lo, hi := math.NaN(), math.NaN() // MIN and MAX, as the mapper passes them
		if mn, err := bl.Fetch(0, voi.Min); err == nil {
			mx, err := bl.Fetch(0, voi.Max)
			require.NoError(t, err)
			lo, hi = numeric(&mn), numeric(&mx)
		}
		want, err := expFromDigestRef(&st, scale, cnt, 1.5, 1e-3, lo, hi)
		require.NoError(t, err)
		got, err := expFromDigest(&st, scale, cnt, 1.5, 1e-3, lo, hi)
		require.NoError(t, err)
		require.Equal(t, want, got, "case %d: %v", i, dt)
		n := got.ZeroCount
		for _, c := range append(slices.Clone(got.Positive.Counts), got.Negative.Counts...) {
			n += c
		}
		require.Equal(t, cnt, n, "case %d: %v: the buckets hold every sample", i, dt)
	}
}

// BenchmarkExpFromDigest: a 100-slot accurate digest's native histogram
// at its resolving scale, from one walk and from a query per bucket bound.
func BenchmarkExpFromDigest(b *testing.B) {
	tp, err := tpl.NewRegistry().New("B")
	require.NoError(b, err)
	require.NoError(b, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "v", DType: voi.IntU32, Stats: []tpl.StatSpec{
		tpl.TDigestOf(tpl.TDigestSpec{DType: voi.TDgstClust64, NCtds: 100, Prec: 8, Mode: tdigest.Accurate}),
	}}))
	bl := blob.New(tp, blob.NewEnv(nil, 1))
	r := rand.New(rand.NewPCG(1, 2))
	for range 100_000 {
		require.NoError(b, bl.UpdateU32(0, uint32(math.Exp(7+r.NormFloat64()))))
	}
	st, err := bl.Fetch(0, voi.TDgst)
	require.NoError(b, err)
	cnt, err := st.Count()
	require.NoError(b, err)
	for _, c := range []struct {
		name string
		f    func(*blob.Stat, int32, uint64, float64, float64, float64, float64) (*ExpHistogramPoint, error)
	}{{"one walk", expFromDigest}, {"query per bound", expFromDigestRef}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := c.f(&st, 0, cnt, 0, 1e-6, math.NaN(), math.NaN()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// expFromDigestRef is expFromDigest's counts as they were before
// blob.Stat.CDFs: a query of the digest per bucket bound.
func expFromDigestRef(s *blob.Stat, scale int32, cnt uint64, sum, us, lo, hi float64) (*ExpHistogramPoint, error) {
	e := &ExpHistogramPoint{Scale: scale, Count: cnt, Sum: sum}
	if cnt == 0 {
		return e, nil
	}
	posLo, posHi, negLo, negHi, scale := expSpan(s, scale, us, lo, hi)
	e.Scale = scale
	var cdfErr error
	n := float64(cnt)
	cum := func(x float64) uint64 { // x in the VOI's units
		f, err := s.CDF(x)
		if err != nil && cdfErr == nil {
			cdfErr = err
		}
		return uint64(math.Round(min(max(f, 0), 1) * n))
	}
	zeroBelow := cum(math.Nextafter(0, math.Inf(-1)))
	zero := cum(0)
	e.ZeroCount = zero - zeroBelow
	if posLo > 0 {
		lo, hi := expIndex(posLo, scale), expIndex(posHi, scale)
		e.Positive.Offset = int32(lo)
		prev := zero
		for j := lo; j <= hi; j++ {
			c := cnt
			if j < hi {
				c = cum(expBound(j+1, scale) / us)
			}
			e.Positive.Counts = append(e.Positive.Counts, c-prev)
			prev = c
		}
	}
	if negLo > 0 {
		lo, hi := expIndex(negLo, scale), expIndex(negHi, scale)
		e.Negative.Offset = int32(lo)
		e.Negative.Counts = make([]uint64, hi-lo+1)
		upper := zeroBelow
		for i := lo; i <= hi; i++ {
			var c uint64
			if i < hi {
				c = cum(math.Nextafter(-expBound(i+1, scale)/us, math.Inf(-1))) // [-base^(i+1), -base^i)
			}
			e.Negative.Counts[i-lo] = upper - c
			upper = c
		}
	}
	return e, cdfErr
}
