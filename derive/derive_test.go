package derive_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/derive"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// httpTemplate: latency in microseconds counted by requests, its sum of
// squares, cache hits and lookups.
func httpTemplate(t testing.TB) *tpl.Template {
	tp, err := tpl.NewRegistry().New("HTTP")
	require.NoError(t, err)
	for _, d := range []tpl.VOIDef{
		{ID: 0, Name: "latency_us", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}},
		{ID: 1, Name: "requests", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}},
		{ID: 2, Name: "latency_sq", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}},
		{ID: 3, Name: "hits", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}},
		{ID: 4, Name: "lookups", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}},
	} {
		require.NoError(t, tp.AddVOI(d))
	}
	require.NoError(t, tp.SetVOIMeta(0, tpl.VOIMeta{Unit: "us", Count: "requests"}))
	require.NoError(t, tp.SetDerived([]tpl.Derived{
		{Name: "hit_ratio", Op: tpl.OpRatio, Of: "hits", By: "lookups"},
		{Name: "hit_percent", Op: tpl.OpPercent, Of: "hits", By: "lookups"},
		{Name: "latency_avg", Op: tpl.OpAverage, Of: "latency_us", By: "requests", Unit: "seconds"},
		{Name: "latency_var", Op: tpl.OpVariance, Of: "latency_us", By: "requests", SumSq: "latency_sq"},
		{Name: "request_rate", Op: tpl.OpRate, Of: "requests"},
	}))
	return tp
}

// feed records requests of the given latencies (µs) and lookups (hit or not).
func feed(t testing.TB, b *blob.Blob, lat []uint64, hits []bool) {
	h, err := blob.CountedOf(httpTemplate(t), 0)
	require.NoError(t, err)
	for _, v := range lat {
		require.NoError(t, h.UpdateU64(b, v))
		require.NoError(t, b.UpdateU64(2, v*v))
	}
	for _, hit := range hits {
		require.NoError(t, b.UpdateU64(4, 1))
		if hit {
			require.NoError(t, b.UpdateU64(3, 1))
		}
	}
}

// direct computes the same metrics from the samples themselves.
func direct(lat []uint64, hits []bool, elapsed time.Duration) map[string]float64 {
	var sum, sq, nhit float64
	for _, v := range lat {
		sum += float64(v)
		sq += float64(v * v)
	}
	for _, h := range hits {
		if h {
			nhit++
		}
	}
	n, nl := float64(len(lat)), float64(len(hits))
	mean := sum / 1e6 / n // µs in seconds, as an exporter scales them
	return map[string]float64{
		"hit_ratio":       nhit / nl,
		"hit_percent":     100 * nhit / nl,
		"latency_avg":     mean,
		"latency_var":     sq/1e12/n - mean*mean,
		"request_rate":    n / elapsed.Seconds(),
		"latency_us_mean": mean,
	}
}

func values(vs []derive.Value) map[string]float64 {
	m := map[string]float64{}
	for _, v := range vs {
		m[v.Name] = v.Value
	}
	return m
}

func TestComputeMatchesDirect(t *testing.T) {
	tp := httpTemplate(t)
	lat1 := []uint64{1200, 800, 15000, 430}
	hits1 := []bool{true, false, true, true, false}
	lat2 := []uint64{90, 7000, 2500}
	hits2 := []bool{false, false, true}

	b := blob.New(tp, nil)
	feed(t, b, lat1, hits1)
	one, err := derive.Compute(tp, nil, b, 10*time.Second)
	require.NoError(t, err)
	require.Equal(t, direct(lat1, hits1, 10*time.Second), values(one))
	require.Equal(t, []string{"hit_ratio", "hit_percent", "latency_avg", "latency_var", "request_rate", "latency_us_mean"},
		[]string{one[0].Name, one[1].Name, one[2].Name, one[3].Name, one[4].Name, one[5].Name})
	require.Equal(t, "seconds", one[5].Unit)

	// Between two cumulative readings: the period's own samples.
	prev := b.Clone()
	feed(t, b, lat2, hits2)
	period, err := derive.Compute(tp, prev, b, 5*time.Second)
	require.NoError(t, err)
	require.Equal(t, direct(lat2, hits2, 5*time.Second), values(period))

	// A reversed pair is refused; an empty reading divides by zero.
	_, err = derive.Compute(tp, b, prev, time.Second)
	require.ErrorIs(t, err, derive.ErrWrongOrder)
	require.ErrorIs(t, err, voi.ErrInvalid)
	empty, err := derive.Compute(tp, nil, blob.New(tp, nil), 0)
	require.NoError(t, err)
	for _, v := range empty {
		require.True(t, math.IsNaN(v.Value), v.Name)
	}
	_, err = derive.Compute(nil, nil, b, 0)
	require.ErrorIs(t, err, voi.ErrInvalid)
	other, _ := tpl.NewRegistry().New("OTHER")
	_, err = derive.Compute(other, nil, b, 0)
	require.ErrorIs(t, err, voi.ErrInvalid)
}

// Two VOIs may share a name (the C allows it); a name in the metadata means
// the first of them, as tpl resolves it and blob.CountedOf counts it.
func TestComputeDuplicateNames(t *testing.T) {
	tp, err := tpl.NewRegistry().New("DUP")
	require.NoError(t, err)
	for i, n := range []string{"lat", "n", "n"} {
		require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: int32(i), Name: n, DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}))
	}
	require.NoError(t, tp.SetVOIMeta(0, tpl.VOIMeta{Count: "n"}))
	h, err := blob.CountedOf(tp, 0)
	require.NoError(t, err)
	b := blob.New(tp, nil)
	require.NoError(t, h.UpdateU64(b, 30))
	require.NoError(t, h.UpdateU64(b, 10))
	require.NoError(t, b.UpdateU64(2, 1000)) // the other "n"
	vs, err := derive.Compute(tp, nil, b, 0)
	require.NoError(t, err)
	require.Equal(t, map[string]float64{"lat_mean": 20}, values(vs))
}

// oneSum returns a template of SUM VOIs of the given types, named a, b, ...
func oneSum(t testing.TB, dts ...voi.DType) *tpl.Template {
	t.Helper()
	tp, err := tpl.NewRegistry().New("SUMS")
	require.NoError(t, err)
	for i, dt := range dts {
		require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: int32(i), Name: string(rune('a' + i)), DType: dt, Stats: []tpl.StatSpec{tpl.Sum()}}))
	}
	return tp
}

// Counters near the top of uint64 change by exactly what was added between
// two readings, though float64 cannot tell their values apart.
func TestComputeLargeCounters(t *testing.T) {
	tp := oneSum(t, voi.IntU64, voi.IntU64)
	require.NoError(t, tp.SetDerived([]tpl.Derived{
		{Name: "a_rate", Op: tpl.OpRate, Of: "a"},
		{Name: "a_per_b", Op: tpl.OpRatio, Of: "a", By: "b"},
	}))
	b := blob.New(tp, nil)
	require.NoError(t, b.UpdateU64(0, math.MaxUint64-5000))
	require.NoError(t, b.UpdateU64(1, 1<<62))
	prev := b.Clone()
	require.NoError(t, b.UpdateU64(0, 3000))
	require.NoError(t, b.UpdateU64(1, 1000))
	vs, err := derive.Compute(tp, prev, b, 10*time.Second)
	require.NoError(t, err)
	require.Equal(t, map[string]float64{"a_rate": 300, "a_per_b": 3}, values(vs))
}

// A signed SUM (or one declared a gauge) may fall between two readings: its
// change is negative, not a counter reset.
func TestComputeFallingSums(t *testing.T) {
	tp := oneSum(t, voi.IntS64, voi.IntU64, voi.IntU32, voi.IntS32)
	require.NoError(t, tp.SetVOIMeta(0, tpl.VOIMeta{Count: "b"}))
	require.NoError(t, tp.SetVOIMeta(2, tpl.VOIMeta{Kind: tpl.KindGauge}))
	require.NoError(t, tp.SetVOIMeta(3, tpl.VOIMeta{Kind: tpl.KindCounter}))
	require.NoError(t, tp.SetDerived([]tpl.Derived{
		{Name: "a_rate", Op: tpl.OpRate, Of: "a"},
		{Name: "c_rate", Op: tpl.OpRate, Of: "c"},
	}))
	h, err := blob.CountedOf(tp, 0)
	require.NoError(t, err)
	b := blob.New(tp, nil)
	require.NoError(t, h.UpdateS64(b, 10))
	require.NoError(t, b.UpdateU32(2, 7))
	prev := b.Clone()
	require.NoError(t, h.UpdateS64(b, -15)) // a: 10 -> -5
	require.NoError(t, h.UpdateS64(b, math.MinInt64+20))
	require.NoError(t, b.UpdateU32(2, math.MaxUint32-1)) // c wraps: 7 -> 5
	vs, err := derive.Compute(tp, prev, b, 2*time.Second)
	require.NoError(t, err)
	change := float64(-15 + math.MinInt64 + 20) // of a, over 2 updates in 2 s
	require.Equal(t, map[string]float64{"a_rate": change / 2, "c_rate": -1, "a_mean": change / 2}, values(vs))

	// d, signed, is declared a counter: falling is a reset (TestComputeCounterResetAlone)
	require.NoError(t, tp.SetDerived([]tpl.Derived{{Name: "d_rate", Op: tpl.OpRate, Of: "d"}}))
	require.NoError(t, b.UpdateS32(3, 5))
	prev = b.Clone()
	require.NoError(t, b.UpdateS32(3, -1))
	require.NoError(t, h.UpdateS64(b, 1)) // b, a counter, rises
	vs, err = derive.Compute(tp, prev, b, time.Second)
	require.NoError(t, err)
	require.Equal(t, derive.Value{Name: "d_rate", Op: tpl.OpRate, Value: 4, SinceReset: true}, vs[0])
}

// A Q counter that falls was reset alone, as an integer one: its operand
// is its value in cur; a Q gauge falls.
func TestComputeFallingQ(t *testing.T) {
	tp, err := tpl.NewRegistry().New("Q")
	require.NoError(t, err)
	for i, n := range []string{"q", "g"} {
		require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: int32(i), Name: n, DType: voi.QS64, Prec: 8, Stats: []tpl.StatSpec{tpl.Sum()}}))
	}
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 2, Name: "n", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}))
	require.NoError(t, tp.SetVOIMeta(0, tpl.VOIMeta{Kind: tpl.KindCounter}))
	require.NoError(t, tp.SetDerived([]tpl.Derived{
		{Name: "q_diff", Op: tpl.OpDifference, Of: "q"},
		{Name: "g_diff", Op: tpl.OpDifference, Of: "g"},
	}))
	b := blob.New(tp, nil)
	require.NoError(t, b.UpdateFloat(0, 2.5))
	require.NoError(t, b.UpdateFloat(1, 2.5))
	prev := b.Clone()
	require.NoError(t, b.UpdateFloat(0, -1.5))
	require.NoError(t, b.UpdateFloat(1, -1.5))
	require.NoError(t, b.UpdateU64(2, 1)) // a counter rises
	vs, err := derive.Compute(tp, prev, b, time.Second)
	require.NoError(t, err)
	require.Equal(t, []derive.Value{
		{Name: "q_diff", Op: tpl.OpDifference, Value: 1, SinceReset: true},
		{Name: "g_diff", Op: tpl.OpDifference, Value: -1.5},
	}, vs)
}

// A derived metric's value is in its declared unit: operands with units
// are scaled to their base units and the result converted to the unit
// declared (of the same dimension, or tpl refuses it); operands without
// units are taken as they are, the unit a label (a ratio's ratio or
// percent aside, which says its operands are alike).
func TestComputeInDeclaredUnit(t *testing.T) {
	tp := oneSum(t, voi.IntU64, voi.IntU64, voi.IntU64, voi.IntU64, voi.IntU64, voi.IntU64)
	// a: µs, counted by b; c: KiB, d: bytes; e, f: no units
	require.NoError(t, tp.SetVOIMeta(0, tpl.VOIMeta{Unit: "us", Count: "b"}))
	require.NoError(t, tp.SetVOIMeta(2, tpl.VOIMeta{Unit: "KiB"}))
	require.NoError(t, tp.SetVOIMeta(3, tpl.VOIMeta{Unit: "bytes"}))
	b := blob.New(tp, nil)
	for id, v := range []uint64{1500, 1, 3, 1024, 3, 4} {
		require.NoError(t, b.UpdateU64(int32(id), v))
	}
	for _, c := range []struct {
		d    tpl.Derived
		want float64
	}{
		{tpl.Derived{Op: tpl.OpAverage, Of: "a", By: "b", Unit: "us"}, 1500},
		{tpl.Derived{Op: tpl.OpAverage, Of: "a", By: "b", Unit: "microseconds"}, 1500},
		{tpl.Derived{Op: tpl.OpAverage, Of: "a", By: "b", Unit: "ms"}, 1.5},
		{tpl.Derived{Op: tpl.OpAverage, Of: "a", By: "b", Unit: "seconds"}, 0.0015},
		{tpl.Derived{Op: tpl.OpAverage, Of: "a", By: "b", Unit: "ns"}, 1500000},
		{tpl.Derived{Op: tpl.OpAverage, Of: "a", By: "b"}, 0.0015},                   // the base unit
		{tpl.Derived{Op: tpl.OpAverage, Of: "a", By: "b", Unit: "requests"}, 0.0015}, // a label
		{tpl.Derived{Op: tpl.OpRatio, Of: "a", By: "b", Unit: "ms"}, 1.5},
		{tpl.Derived{Op: tpl.OpRate, Of: "a", Unit: "ms"}, 0.75}, // 1.5 ms in 2 s
		{tpl.Derived{Op: tpl.OpRate, Of: "c", Unit: "bytes"}, 1536},
		{tpl.Derived{Op: tpl.OpDifference, Of: "a", Unit: "ms"}, 1.5},
		{tpl.Derived{Op: tpl.OpDifference, Of: "c", Unit: "kibibytes"}, 3},
		{tpl.Derived{Op: tpl.OpDifference, Of: "c"}, 3072},
		{tpl.Derived{Op: tpl.OpDifference, Of: "e", Unit: "ms"}, 3}, // no units: a label
		{tpl.Derived{Op: tpl.OpRatio, Of: "c", By: "d"}, 3},
		{tpl.Derived{Op: tpl.OpRatio, Of: "c", By: "d", Unit: "percent"}, 300},
		{tpl.Derived{Op: tpl.OpPercent, Of: "c", By: "d"}, 300},
		{tpl.Derived{Op: tpl.OpPercent, Of: "c", By: "d", Unit: "percent"}, 300},
		{tpl.Derived{Op: tpl.OpPercent, Of: "c", By: "d", Unit: "ratio"}, 3},
		{tpl.Derived{Op: tpl.OpPercent, Of: "e", By: "f", Unit: "ratio"}, 0.75},
		{tpl.Derived{Op: tpl.OpRatio, Of: "e", By: "f", Unit: "percent"}, 75},
		{tpl.Derived{Op: tpl.OpRatio, Of: "e", By: "f", Unit: "us"}, 0.75},     // no units: a label
		{tpl.Derived{Op: tpl.OpAverage, Of: "e", By: "b", Unit: "ms"}, 3},      // no units: a label
		{tpl.Derived{Op: tpl.OpRatio, Of: "e", By: "f", Unit: "things"}, 0.75}, // a label
	} {
		c.d.Name = "m"
		require.NoError(t, tp.SetDerived([]tpl.Derived{c.d}), "%+v", c.d)
		vs, err := derive.Compute(tp, nil, b, 2*time.Second)
		require.NoError(t, err)
		require.Equal(t, derive.Value{Name: "m", Op: c.d.Op, Unit: c.d.Unit, Value: c.want}, vs[0], "%+v", c.d)
	}
}

// The reviewer's case: an average of microseconds declared in "us" is in
// microseconds, not in seconds labelled "us".
func TestComputeAverageInMicroseconds(t *testing.T) {
	tp := httpTemplate(t) // latency_us: Unit "us"
	require.NoError(t, tp.SetDerived([]tpl.Derived{{Name: "lat_avg", Op: tpl.OpAverage, Of: "latency_us", By: "requests", Unit: "us"}}))
	b := blob.New(tp, nil)
	require.NoError(t, b.UpdateU64(0, 1500))
	require.NoError(t, b.UpdateU64(1, 1))
	vs, err := derive.Compute(tp, nil, b, 0)
	require.NoError(t, err)
	require.Equal(t, 1500.0, vs[0].Value)
	require.Equal(t, "us", vs[0].Unit)
}

// A difference is a VOI's change between two readings (in one reading,
// its SUM since the reset): negative for a gauge that fell, refused for a
// counter that fell.
func TestComputeDifference(t *testing.T) {
	tp := oneSum(t, voi.IntU64, voi.IntS64)
	require.NoError(t, tp.SetVOIMeta(0, tpl.VOIMeta{Unit: "us"}))
	require.NoError(t, tp.SetDerived([]tpl.Derived{
		{Name: "busy", Op: tpl.OpDifference, Of: "a", Unit: "ms"},
		{Name: "level", Op: tpl.OpDifference, Of: "b"},
	}))
	b := blob.New(tp, nil)
	require.NoError(t, b.UpdateU64(0, 2500))
	require.NoError(t, b.UpdateS64(1, 7))
	vs, err := derive.Compute(tp, nil, b, 0)
	require.NoError(t, err)
	require.Equal(t, map[string]float64{"busy": 2.5, "level": 7}, values(vs))

	prev := b.Clone()
	require.NoError(t, b.UpdateU64(0, 1000))
	require.NoError(t, b.UpdateS64(1, -10))
	vs, err = derive.Compute(tp, prev, b, time.Minute)
	require.NoError(t, err)
	require.Equal(t, map[string]float64{"busy": 1, "level": -10}, values(vs))
	_, err = derive.Compute(tp, b, prev, time.Minute) // the wrong order
	require.ErrorIs(t, err, derive.ErrWrongOrder)
}

// clock is a blob clock the test sets, in seconds since the epoch.
type clock struct{ sec int64 }

func (c *clock) now() int64 { return blob.SBinTime(c.sec, 0) }

// A blob reset between two readings (a restarted process, a snapshot taken
// with reset) shows in its header: the later reading's last reset is after
// the earlier one's. Its counters fall, which was refused ("a counter
// that fell"); the later reading now stands alone, as devstat's Compute
// takes it: every operand is its own since that reset, signed and gauge
// SUMs too, and each value says so. A rate covers the time from the reset
// to when the reading was taken (ComputeAt), or without that time the
// period, as Prometheus's rate() takes a reset.
func TestComputeBlobReset(t *testing.T) {
	tp := oneSum(t, voi.IntU64, voi.IntU64, voi.IntS64)
	require.NoError(t, tp.SetVOIMeta(0, tpl.VOIMeta{Count: "b"}))
	require.NoError(t, tp.SetDerived([]tpl.Derived{
		{Name: "a_rate", Op: tpl.OpRate, Of: "a"},
		{Name: "a_per_b", Op: tpl.OpRatio, Of: "a", By: "b"},
		{Name: "a_diff", Op: tpl.OpDifference, Of: "a"},
		{Name: "c_diff", Op: tpl.OpDifference, Of: "c"},
	}))
	clk := &clock{sec: 1_700_000_000}
	b := blob.New(tp, blob.NewEnv(clk.now, 1))
	require.NoError(t, b.UpdateU64(0, 1000))
	require.NoError(t, b.UpdateU64(1, 10))
	require.NoError(t, b.UpdateS64(2, 50))
	prev := b.Clone()
	clk.sec += 60
	b.Reset() // at +60 s
	require.NoError(t, b.UpdateU64(0, 300))
	require.NoError(t, b.UpdateU64(1, 3))
	require.NoError(t, b.UpdateS64(2, 7))
	at := time.Unix(clk.sec+20, 0) // read 20 s after the reset, 80 s after prev

	want := []derive.Value{
		{Name: "a_rate", Op: tpl.OpRate, Value: 300.0 / 20, SinceReset: true},
		{Name: "a_per_b", Op: tpl.OpRatio, Value: 100, SinceReset: true},
		{Name: "a_diff", Op: tpl.OpDifference, Value: 300, SinceReset: true},
		{Name: "c_diff", Op: tpl.OpDifference, Value: 7, SinceReset: true},
		{Name: "a_mean", Op: tpl.OpAverage, Help: "mean of a", Value: 100, SinceReset: true},
	}
	vs, err := derive.ComputeAt(tp, prev, b, 80*time.Second, at)
	require.NoError(t, err)
	require.Equal(t, want, vs)

	// Without the time of the reading, the rate covers the period.
	vs, err = derive.Compute(tp, prev, b, 80*time.Second)
	require.NoError(t, err)
	want[0].Value = 300.0 / 80
	require.Equal(t, want, vs)

	// A reading time not after the reset gives no rate.
	vs, err = derive.ComputeAt(tp, prev, b, 80*time.Second, time.Unix(clk.sec, 0))
	require.NoError(t, err)
	require.True(t, math.IsNaN(vs[0].Value))

	// One reading: at minus its last reset is the time it covers.
	vs, err = derive.ComputeAt(tp, nil, b, 0, at)
	require.NoError(t, err)
	require.Equal(t, derive.Value{Name: "a_rate", Op: tpl.OpRate, Value: 15}, vs[0])

	// The wrong order: the earlier reading's last reset is the later one's.
	_, err = derive.ComputeAt(tp, b, prev, 80*time.Second, at)
	require.ErrorIs(t, err, derive.ErrWrongOrder)
	require.ErrorIs(t, err, voi.ErrInvalid)
	require.ErrorContains(t, err, "derive: the earlier reading was reset at 2023-11-14T22:14:20Z, after the later one (2023-11-14T22:13:20Z)")
}

// A counter reset alone (blob.ResetVOI, statdef's data=reset) leaves the
// header's last reset as it was: the counter falls while others grow. It
// was refused; now its operand is its value in the later reading (what it
// counted since its reset), over the period, as Prometheus's rate() takes
// a counter that falls, and the values that read it say so. A gauge that
// falls is still a negative change; a pair where counters fell and none
// rose is the wrong order.
func TestComputeCounterResetAlone(t *testing.T) {
	tp := oneSum(t, voi.IntU64, voi.IntU64, voi.IntU32)
	require.NoError(t, tp.SetVOIMeta(2, tpl.VOIMeta{Kind: tpl.KindGauge}))
	require.NoError(t, tp.SetDerived([]tpl.Derived{
		{Name: "a_rate", Op: tpl.OpRate, Of: "a"},
		{Name: "b_rate", Op: tpl.OpRate, Of: "b"},
		{Name: "a_per_b", Op: tpl.OpRatio, Of: "a", By: "b"},
		{Name: "c_diff", Op: tpl.OpDifference, Of: "c"},
	}))
	b := blob.New(tp, nil)
	require.NoError(t, b.UpdateU64(0, 900))
	require.NoError(t, b.UpdateU64(1, 100))
	require.NoError(t, b.UpdateU32(2, 9))
	prev := b.Clone()
	require.NoError(t, b.ResetVOI(0))
	require.NoError(t, b.ResetVOI(2))
	require.NoError(t, b.UpdateU64(0, 40))
	require.NoError(t, b.UpdateU64(1, 20))
	require.NoError(t, b.UpdateU32(2, 4))
	require.Equal(t, prev.Header(), b.Header())

	vs, err := derive.ComputeAt(tp, prev, b, 10*time.Second, time.Now()) // at: only where b stands alone
	require.NoError(t, err)
	require.Equal(t, []derive.Value{
		{Name: "a_rate", Op: tpl.OpRate, Value: 4, SinceReset: true},
		{Name: "b_rate", Op: tpl.OpRate, Value: 2},
		{Name: "a_per_b", Op: tpl.OpRatio, Value: 2, SinceReset: true},
		{Name: "c_diff", Op: tpl.OpDifference, Value: -5}, // a gauge: 9 -> 4
	}, vs)

	// A period given the other way round: every counter that changed fell.
	prev = b.Clone()
	require.NoError(t, b.UpdateU64(0, 1))
	require.NoError(t, b.UpdateU64(1, 1))
	_, err = derive.Compute(tp, b, prev, 10*time.Second)
	require.ErrorIs(t, err, derive.ErrWrongOrder)
	require.ErrorIs(t, err, voi.ErrInvalid)
	require.ErrorContains(t, err, `derive: counter "a" fell and none rose`)
	// So does a period whose only change is a counter reset alone ...
	prev = b.Clone()
	require.NoError(t, b.ResetVOI(1))
	_, err = derive.Compute(tp, prev, b, 10*time.Second)
	require.ErrorIs(t, err, derive.ErrWrongOrder)
	// ... which the later reading alone answers.
	vs, err = derive.Compute(tp, nil, b, 10*time.Second)
	require.NoError(t, err)
	require.Equal(t, 0.0, vs[1].Value)
}

// A template whose every counter was reset alone (statdef's data=reset of
// all its VOIs) and has counted since, less than before, reads as the
// wrong order too: nothing tells it from a reversed pair. One that has
// counted more than before reads as growth.
func TestComputeEveryCounterResetAlone(t *testing.T) {
	tp := oneSum(t, voi.IntU64)
	require.NoError(t, tp.SetDerived([]tpl.Derived{{Name: "a_diff", Op: tpl.OpDifference, Of: "a"}}))
	b := blob.New(tp, nil)
	require.NoError(t, b.UpdateU64(0, 1000))
	prev := b.Clone()
	require.NoError(t, b.ResetVOI(0))
	require.NoError(t, b.UpdateU64(0, 300))
	_, err := derive.Compute(tp, prev, b, time.Second)
	require.ErrorIs(t, err, derive.ErrWrongOrder)
	require.NoError(t, b.UpdateU64(0, 900))
	vs, err := derive.Compute(tp, prev, b, time.Second)
	require.NoError(t, err)
	require.Equal(t, []derive.Value{{Name: "a_diff", Op: tpl.OpDifference, Value: 200}}, vs)
}
