package blob_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/hist"
	"github.com/statsblob/statsblob/qmath"
	"github.com/statsblob/statsblob/tdigest"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

func TestHeader(t *testing.T) {
	bl := blob.New(manpage(t), fixedEnv())
	require.Equal(t, blob.Header{
		ABI: 1, Endian: 1, MaxSz: 136, CurSz: 136, TplHash: 1055273817, NumVOIs: 3,
		Created: time.Unix(1000, 0), LastReset: time.Unix(1000, 0),
		CreatedRaw: 1000 << 32, LastResetRaw: 1000 << 32,
	}, bl.Header())

	bl.SetEnv(blob.NewEnv(func() int64 { return blob.SBinTime(1234, 500_000_000) }, 1))
	bl.Reset()
	h := bl.Header()
	require.Equal(t, time.Unix(1000, 0), h.Created)
	require.Equal(t, time.Unix(1234, 500_000_000), h.LastReset)
	require.Equal(t, blob.SBinTime(1234, 500_000_000), h.LastResetRaw)
	require.Equal(t, 234500*time.Millisecond, h.LastReset.Sub(h.Created))
	require.Equal(t, 1234500*time.Millisecond, blob.Duration(h.LastResetRaw))
}

// TestSBinTimeRoundTrip: Time and Duration invert SBinTime to the
// nanosecond, as FreeBSD's sbttons inverts nstosbt.
func TestSBinTimeRoundTrip(t *testing.T) {
	for _, sec := range []int64{0, 1, 1000, 1_700_000_000, -1, -86400} {
		for ns := int64(0); ns < 1e9; ns += 7919 {
			sbt := blob.SBinTime(sec, ns)
			require.Equal(t, time.Unix(sec, ns), blob.Time(sbt), "%d s %d ns", sec, ns)
			require.Equal(t, time.Duration(sec*1e9+ns), blob.Duration(sbt), "%d s %d ns", sec, ns)
		}
		ns := int64(999_999_999)
		require.Equal(t, time.Unix(sec, ns), blob.Time(blob.SBinTime(sec, ns)))
		require.Equal(t, blob.SBinTime(sec, ns), blob.SBinTimeOf(time.Unix(sec, ns)))
	}
}

func TestVOIsAndStats(t *testing.T) {
	bl := blob.New(manpage(t), fixedEnv()) // VOI 0 S64 rel MIN; VOI 2 U32 SUM MAX
	require.NoError(t, bl.UpdateRelS64(0, 5))
	require.NoError(t, bl.UpdateU32(2, 7))
	require.NoError(t, bl.UpdateU32(2, 3))

	type voiSeen struct {
		id int32
		dt voi.DType
	}
	var vois []voiSeen
	for id, dt := range bl.VOIs() {
		vois = append(vois, voiSeen{id, dt})
	}
	require.Equal(t, []voiSeen{{0, voi.IntS64}, {2, voi.IntU32}}, vois)

	type statSeen struct {
		id    int32
		st    voi.SType
		dt    voi.DType
		value float64
		valid bool
	}
	var stats []statSeen
	for id, s := range bl.Stats() {
		require.Equal(t, id, s.VOI)
		v, err := s.Value()
		require.NoError(t, err)
		stats = append(stats, statSeen{id, s.Type, s.DType, v, s.Valid})
	}
	require.Equal(t, []statSeen{
		{0, voi.Min, voi.IntS64, 5, true},
		{2, voi.Sum, voi.IntU32, 10, true},
		{2, voi.Max, voi.IntU32, 7, true},
	}, stats)

	n := 0
	for range bl.Stats() {
		n++
		break
	}
	require.Equal(t, 1, n)
	for range bl.VOIs() {
		n++
		break
	}
	require.Equal(t, 2, n)
}

// latency builds a template whose VOI 0 (INT_U64) keeps MAX, MIN, a
// histogram of ten 100-wide buckets and a t-digest; VOI 1 (INT_U32) a
// histogram only; VOI 2 (INT_U64) a SUM only; VOI 3 (INT_U64) a histogram
// and a t-digest.
func latency(t testing.TB) *tpl.Template {
	t.Helper()
	tp, err := tpl.NewRegistry().New("LAT")
	require.NoError(t, err)
	h := tpl.Histogram(hist.Spec{DType: voi.CRHist64, Scheme: hist.Lin, LB: 0, UB: 1000, StepInc: 100})
	h32 := tpl.Histogram(hist.Spec{DType: voi.CRHist32, Scheme: hist.Lin, LB: 0, UB: 1000, StepInc: 100})
	td := tpl.TDigest(voi.TDgstClust64, 32, 16)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "rtt", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Max(), tpl.Min(), h, td}}))
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 1, Name: "size", DType: voi.IntU32, Stats: []tpl.StatSpec{h32}}))
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 2, Name: "bytes", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}))
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 3, Name: "idle", DType: voi.IntU64, Stats: []tpl.StatSpec{h, td}}))
	return tp
}

func TestQuantileAndCDF(t *testing.T) {
	bl := blob.New(latency(t), fixedEnv())
	for i := uint64(1); i <= 500; i++ {
		v := (i * 7919) % 1000
		require.NoError(t, bl.UpdateU64(0, v))
		require.NoError(t, bl.UpdateU32(1, uint32(v)))
	}
	td, err := bl.Fetch(0, voi.TDgst)
	require.NoError(t, err)
	h, err := bl.Fetch(1, voi.Hist)
	require.NoError(t, err)
	mn, _ := bl.FetchU64(0, voi.Min)
	mx, _ := bl.FetchU64(0, voi.Max)
	for _, q := range []float64{0, 0.001, 0.25, 0.5, 0.99, 1} {
		// VOI 0: the digest, reaching towards MIN and MAX; an integer
		// VOI's answer is the nearest integer.
		want, err := tdigest.QuantileBounded(td.Data, td.DType, q, float64(mn), float64(mx))
		require.NoError(t, err)
		want = math.Round(want)
		got, err := bl.Quantile(0, q)
		require.NoError(t, err)
		require.Equal(t, want, got, "q %g", q)
		// The statistic gives the blob's answer.
		got, err = td.Quantile(q)
		require.NoError(t, err)
		require.Equal(t, want, got, "q %g", q)
		// VOI 1: the histogram.
		want, err = hist.Quantile(h.Data, h.DType, voi.IntU32, q)
		require.NoError(t, err)
		got, err = bl.Quantile(1, q)
		require.NoError(t, err)
		require.Equal(t, want, got, "q %g", q)
	}
	for _, x := range []float64{-1, 0, 250, 250.7, 999, 5000} {
		// At floor(x)+1/2: the fraction at most floor(x).
		want, err := tdigest.CDFBounded(td.Data, td.DType, math.Floor(x)+0.5, float64(mn), float64(mx))
		require.NoError(t, err)
		got, err := bl.CDF(0, x)
		require.NoError(t, err)
		require.Equal(t, want, got, "x %g", x)
		want, err = hist.CDF(h.Data, h.DType, voi.IntU32, x)
		require.NoError(t, err)
		got, err = bl.CDF(1, x)
		require.NoError(t, err)
		require.Equal(t, want, got, "x %g", x)
	}
	n, err := td.Count()
	require.NoError(t, err)
	require.Equal(t, uint64(500), n)
	n, err = h.Count()
	require.NoError(t, err)
	require.Equal(t, uint64(500), n)

	// The values are 500 distinct multiples of 7919 mod 1000: their exact
	// median is near 500; both estimates land in the middle bucket.
	p50, _ := bl.Quantile(0, 0.5)
	require.InDelta(t, 500, p50, 100)
	p50, _ = bl.Quantile(1, 0.5)
	require.InDelta(t, 500, p50, 100)
}

// TestQuantileBoundedByMinMax merges a fleet of blobs whose VOI 0 keeps
// MIN, MAX, a histogram and a 32-slot t-digest and checks that every
// answer lies within the samples: Q(0) and Q(1) of the digest are MIN and
// MAX, the histogram's are clamped to them, the CDF is 0 below MIN and 1
// at MAX, Stat and Blob answer alike, and every merged centroid's mean
// lies in [MIN, MAX] (the merge spreads centroids only as far as MIN and
// MAX).
func TestQuantileBoundedByMinMax(t *testing.T) {
	tp := latency(t)
	r := rand.New(rand.NewPCG(7, 7))
	lo, hi := uint64(math.MaxUint64), uint64(0)
	var blobs []*blob.Blob
	for range 60 {
		bl := blob.New(tp, fixedEnv())
		for range 20 + r.IntN(200) {
			v := 1000 + uint64(math.Exp(r.NormFloat64()+5))
			lo, hi = min(lo, v), max(hi, v)
			require.NoError(t, bl.UpdateU64(0, v))
		}
		blobs = append(blobs, bl)
	}
	all, err := blob.MergeAll(nil, blobs...)
	require.NoError(t, err)
	mn, _ := all.FetchU64(0, voi.Min)
	mx, _ := all.FetchU64(0, voi.Max)
	require.Equal(t, []uint64{lo, hi}, []uint64{mn, mx})
	td, err := all.Fetch(0, voi.TDgst)
	require.NoError(t, err)
	for c := range tdigest.Centroids(td.Data, td.DType) {
		require.True(t, c.Mean() >= float64(lo) && c.Mean() <= float64(hi), "centroid %v outside [%d, %d]", c.Mean(), lo, hi)
	}
	h, err := all.Fetch(0, voi.Hist)
	require.NoError(t, err)
	for _, c := range []struct {
		q, want float64
	}{{0, float64(lo)}, {1, float64(hi)}} {
		got, err := all.Quantile(0, c.q)
		require.NoError(t, err)
		require.Equal(t, c.want, got, "q %g", c.q)
		got, err = td.Quantile(c.q)
		require.NoError(t, err)
		require.Equal(t, c.want, got, "q %g", c.q)
	}
	// The histogram's buckets end at 1000: its open last bucket's samples
	// sit at 1000 unless MIN clamps them.
	hq, err := hist.Quantile(h.Data, h.DType, voi.IntU64, 0.5)
	require.NoError(t, err)
	require.Equal(t, 1000.0, hq)
	got, err := h.Quantile(0.5)
	require.NoError(t, err)
	require.Equal(t, float64(lo), got)
	for _, s := range []blob.Stat{td, h} {
		p, err := s.CDF(float64(lo) - 0.5)
		require.NoError(t, err)
		require.Zero(t, p, "%v", s.Type)
		p, err = s.CDF(float64(hi))
		require.NoError(t, err)
		require.Equal(t, 1.0, p, "%v", s.Type)
	}
}

func TestQuantileErrors(t *testing.T) {
	bl := blob.New(latency(t), fixedEnv())
	require.NoError(t, bl.UpdateU64(0, 5))
	before := append([]byte(nil), bl.Bytes()...)
	for _, c := range []struct {
		name string
		call func() (float64, error)
		want []error
		msg  string
	}{
		{"no distribution", func() (float64, error) { return bl.Quantile(2, 0.5) }, []error{voi.ErrNotFound},
			"blob: quantile of VOI 2: it keeps neither a t-digest nor a histogram: not found"},
		{"beyond the blob", func() (float64, error) { return bl.Quantile(9, 0.5) }, []error{voi.ErrNotFound},
			"blob: quantile of VOI 9: no such VOI: not found"},
		{"negative id", func() (float64, error) { return bl.CDF(-1, 0) }, []error{voi.ErrNotFound},
			"blob: CDF of VOI -1: no such VOI: not found"},
		{"empty digest", func() (float64, error) { return bl.Quantile(3, 0.5) }, []error{voi.ErrEmpty, voi.ErrNotFound},
			"blob: quantile of VOI 3 TDGST: no samples: not found"},
		{"empty histogram", func() (float64, error) { return bl.CDF(1, 3) }, []error{voi.ErrEmpty, voi.ErrNotFound},
			"blob: CDF of VOI 1 HIST: no samples: not found"},
		{"q above 1", func() (float64, error) { return bl.Quantile(0, 1.5) }, []error{voi.ErrInvalid},
			"blob: quantile of VOI 0 TDGST: tdigest: quantile outside [0, 1]: invalid argument"},
		{"NaN x", func() (float64, error) { return bl.CDF(0, math.NaN()) }, []error{voi.ErrInvalid},
			"blob: CDF of VOI 0 TDGST: tdigest: NaN or infinite value: invalid argument"},
		{"quantile of a SUM", func() (float64, error) { s, _ := bl.Fetch(2, voi.Sum); return s.Quantile(0.5) }, []error{voi.ErrTypeMismatch},
			"blob: quantile of VOI 2 SUM: wrong data type"},
		{"count of a MAX", func() (float64, error) {
			s, _ := bl.Fetch(0, voi.Max)
			n, err := s.Count()
			return float64(n), err
		}, []error{voi.ErrTypeMismatch},
			"blob: count of VOI 0 MAX: it is neither a histogram nor a t-digest: wrong data type"},
		{"value of a histogram", func() (float64, error) { s, _ := bl.Fetch(0, voi.Hist); return s.Value() }, []error{voi.ErrTypeMismatch},
			"blob: value of VOI 0 HIST: it is not a number: wrong data type"},
	} {
		x, err := c.call()
		require.Zero(t, x, c.name)
		for _, w := range c.want {
			require.ErrorIs(t, err, w, c.name)
		}
		require.EqualError(t, err, c.msg, c.name)
		require.Equal(t, before, bl.Bytes(), c.name)
	}
}

// qtemplate has Q VOIs: 0 Q_S64 at 16 fractional bits with SUM, MAX, MIN;
// 1 Q_U32 at 8 bits with SUM; 2 Q_S64 with a histogram of 8-bit bounds
// only; 3 Q_S64 with a 16-bit t-digest only; 4 INT_U64.
func qtemplate(t testing.TB) *tpl.Template {
	t.Helper()
	tp, err := tpl.NewRegistry().New("Q")
	require.NoError(t, err)
	b8 := func(iv int64) uint64 { return qmath.Ini(qmath.S64, iv, 8).Raw }
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "s", DType: voi.QS64, Prec: 16, Stats: []tpl.StatSpec{tpl.Sum(), tpl.Max(), tpl.Min()}}))
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 1, Name: "u", DType: voi.QU32, Prec: 8, Stats: []tpl.StatSpec{tpl.Sum()}}))
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 2, Name: "h", DType: voi.QS64, Stats: []tpl.StatSpec{tpl.Histogram(hist.Spec{
		DType: voi.CRHist64, Scheme: hist.Usr, Buckets: []hist.Bound{{LB: b8(0)}, {LB: b8(1)}, {LB: b8(2)}}})}}))
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 3, Name: "d", DType: voi.QS64, Stats: []tpl.StatSpec{tpl.TDigest(voi.TDgstClust64, 8, 16)}}))
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 4, Name: "i", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}))
	return tp
}

// TestUpdateFloat: a float update is the Q update of the value at the
// VOI's precision.
func TestUpdateFloat(t *testing.T) {
	tp := qtemplate(t)
	f := func(id int32, x float64, k qmath.Kind, prec int, iv int64) {
		t.Helper()
		got, want := blob.New(tp, fixedEnv()), blob.New(tp, fixedEnv())
		require.NoError(t, got.UpdateFloat(id, x))
		require.NoError(t, want.UpdateQ(id, qmath.Ini(k, iv, prec)))
		require.Equal(t, want.Bytes(), got.Bytes(), "VOI %d x %g", id, x)
	}
	f(0, 3, qmath.S64, 16, 3)
	f(0, -7, qmath.S64, 16, -7)
	f(1, 200, qmath.U32, 8, 200)
	f(2, 1, qmath.S64, 8, 1)    // the histogram's precision
	f(3, -2, qmath.S64, 16, -2) // the digest's precision
	f(3, 9, qmath.S64, 16, 9)

	bl := blob.New(tp, fixedEnv())
	for _, x := range []float64{1.5, -0.25, 2.125} {
		require.NoError(t, bl.UpdateFloat(0, x))
	}
	for st, want := range map[voi.SType]float64{voi.Sum: 3.375, voi.Max: 2.125, voi.Min: -0.25} {
		s, err := bl.Fetch(0, st)
		require.NoError(t, err)
		v, err := s.Value()
		require.NoError(t, err)
		require.Equal(t, want, v, "%v", st)
	}
	require.Zero(t, testing.AllocsPerRun(100, func() { _ = bl.UpdateFloat(0, 0.5) }))
}

func TestUpdateFloatErrors(t *testing.T) {
	bl := blob.New(qtemplate(t), fixedEnv())
	require.NoError(t, bl.UpdateFloat(0, 1))
	before := append([]byte(nil), bl.Bytes()...)
	for _, c := range []struct {
		id   int32
		x    float64
		want error
		msg  string
	}{
		{4, 1, voi.ErrInvalid, "blob: float update of VOI 4: the VOI is INT_U64, not a Q type: invalid argument"},
		{5, 1, voi.ErrInvalid, "blob: float update of VOI 5: no such VOI: invalid argument"},
		{-1, 1, voi.ErrInvalid, "blob: float update of VOI -1: no such VOI: invalid argument"},
		{0, math.NaN(), voi.ErrInvalid, "blob: float update of VOI 0: NaN does not fit Q_S64 with 16 fractional bits: invalid argument"},
		{0, math.Inf(-1), voi.ErrInvalid, "blob: float update of VOI 0: -Inf does not fit Q_S64 with 16 fractional bits: invalid argument"},
		{0, 1 << 44, voi.ErrOverflow, "blob: float update of VOI 0: 1.7592186044416e+13 does not fit Q_S64 with 16 fractional bits: value does not fit its type"},
		{1, -1, voi.ErrInvalid, "blob: float update of VOI 1: -1 does not fit Q_U32 with 8 fractional bits: invalid argument"},
		{1, 1 << 21, voi.ErrOverflow, "blob: float update of VOI 1: 2.097152e+06 does not fit Q_U32 with 8 fractional bits: value does not fit its type"},
	} {
		err := bl.UpdateFloat(c.id, c.x)
		require.ErrorIs(t, err, c.want, c.msg)
		require.EqualError(t, err, c.msg)
		var ve *blob.VOIError
		require.ErrorAs(t, err, &ve, "a refusal, as the typed updates' (blob.Counted does not count it)")
		require.Equal(t, before, bl.Bytes(), c.msg)
	}
	// Just inside the range: S64 at 16 bits has 43 integer bits.
	require.NoError(t, bl.UpdateFloat(0, 1<<43-1))
	require.False(t, errors.Is(bl.UpdateFloat(1, 1<<21-1), voi.ErrOverflow))
}
