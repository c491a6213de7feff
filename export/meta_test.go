package export_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/export"
	"github.com/statsblob/statsblob/export/internal/fixture"
	"github.com/statsblob/statsblob/hist"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

func rttBlob(t *testing.T) (*tpl.Template, *blob.Blob) {
	tp, err := tpl.NewRegistry().New("T")
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "rtt_us", DType: voi.IntU32, Stats: []tpl.StatSpec{tpl.Sum(), tpl.Max(), tpl.Min(), tpl.TDigest(voi.TDgstClust64, 50, 8)}}))
	b := blob.New(tp, blob.NewEnv(func() int64 { return blob.SBinTime(1_700_000_000, 0) }, 1))
	for _, v := range []uint32{1000, 2000, 4000, 8000} {
		require.NoError(t, b.UpdateU32(0, v))
	}
	return tp, b
}

type point struct {
	name, unit string
	kind       export.Kind
	value      float64
}

func points(t *testing.T, opts export.Options, tp *tpl.Template, b *blob.Blob) ([]point, []export.Metric) {
	m, err := export.NewMapper(opts)
	require.NoError(t, err)
	ms, err := m.Append(nil, export.Named{Blob: b, Template: tp})
	require.NoError(t, err)
	var out []point
	for _, mt := range ms {
		v := mt.Value
		if mt.Summary != nil {
			v = mt.Summary.Sum
		}
		out = append(out, point{mt.Name, mt.Unit, mt.Kind, v})
	}
	return out, ms
}

func TestUnitsFromMetadataAndOverride(t *testing.T) {
	tp, b := rttBlob(t)
	q := export.Options{Quantiles: []float64{1}, NativeHistogram: true}

	// No metadata: the name is the VOI's, values as they are.
	got, _ := points(t, q, tp, b)
	require.Equal(t, []point{
		{"t_rtt_us", "", export.KindCounter, 15000},
		{"t_rtt_us_max", "", export.KindGauge, 8000},
		{"t_rtt_us_min", "", export.KindGauge, 1000},
		{"t_rtt_us_tdigest", "", export.KindSummary, 15000},
		{"t_rtt_us_tdigest_native", "", export.KindExpHistogram, 0},
	}, got)

	// Metadata: microseconds export as seconds; the unit replaces the
	// name's "_us".
	require.NoError(t, tp.SetVOIMeta(0, tpl.VOIMeta{Unit: "microseconds"}))
	got, ms := points(t, q, tp, b)
	require.Equal(t, []point{
		{"t_rtt_seconds", "seconds", export.KindCounter, 0.015},
		{"t_rtt_seconds_max", "seconds", export.KindGauge, 0.008},
		{"t_rtt_seconds_min", "seconds", export.KindGauge, 0.001},
		{"t_rtt_seconds_tdigest", "seconds", export.KindSummary, 0.015},
		{"t_rtt_seconds_tdigest_native", "seconds", export.KindExpHistogram, 0},
	}, got)
	require.Equal(t, 0.008, ms[3].Summary.Quantiles[0].Value)
	e := ms[4].Exp
	require.Equal(t, uint64(4), e.Count)
	require.Equal(t, 0.015, e.Sum)
	require.Equal(t, []float64{0.001, 0.008}, []float64{e.Min, e.Max})
	// Each sample lands in the bucket (base^i, base^(i+1)] that holds it in seconds.
	var n uint64
	for _, c := range e.Positive.Counts {
		n += c
	}
	require.Equal(t, uint64(4), n)
	// The smallest sample, 0.001 s, is in the first bucket: (base^o, base^(o+1)].
	bound := func(i int32) float64 { return math.Exp2(math.Ldexp(float64(i), -int(e.Scale))) }
	require.Less(t, bound(e.Positive.Offset), 0.001)
	require.GreaterOrEqual(t, bound(e.Positive.Offset+1), 0.001)

	// The flag's unit replaces the template's, values unscaled.
	got, _ = points(t, export.Options{Quantiles: []float64{1}, Units: map[string]string{"rtt_us": "microseconds"}}, tp, b)
	require.Equal(t, []point{
		{"t_rtt_microseconds", "microseconds", export.KindCounter, 15000},
		{"t_rtt_microseconds_max", "microseconds", export.KindGauge, 8000},
		{"t_rtt_microseconds_min", "microseconds", export.KindGauge, 1000},
		{"t_rtt_microseconds_tdigest", "microseconds", export.KindSummary, 15000},
	}, got)
}

// The bucket labels of a histogram exported as counters are in the
// exported unit, as its bounds would be (meta.go: every value in the VOI's
// units is scaled): a DRHIST with a gap on latency_us, unit "us", exports
// bucket="[0.005,0.01)" on s_latency_seconds_hist. The labels used to keep
// the VOI's microseconds, [5000,10000), on a metric named in seconds.
// Options.Units exports unscaled, and so are the labels.
func TestBucketLabelsScaled(t *testing.T) {
	tp, err := tpl.NewRegistry().New("S")
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "latency_us", DType: voi.IntU32, Stats: []tpl.StatSpec{tpl.Sum(),
		fixture.Usr(voi.DRHist32, 0, hist.Bound{LB: 0, UB: 1000}, hist.Bound{LB: 5000, UB: 10000})}}))
	require.NoError(t, tp.SetVOIMeta(0, tpl.VOIMeta{Unit: "us"}))
	b := blob.New(tp, blob.NewEnv(nil, 1))
	for _, v := range []uint32{10, 6000, 7000} {
		require.NoError(t, b.UpdateU32(0, v))
	}
	buckets := func(opts export.Options) map[string]float64 {
		m, err := export.NewMapper(opts)
		require.NoError(t, err)
		ms, err := m.Append(nil, export.Named{Blob: b, Template: tp})
		require.NoError(t, err)
		got := map[string]float64{}
		for _, mt := range ms {
			for _, l := range mt.Labels {
				if l.Name == export.LabelBucket {
					got[mt.Name+" "+l.Value] = mt.Value
				}
			}
		}
		return got
	}
	require.Equal(t, map[string]float64{"s_latency_seconds_hist [0,0.001)": 1, "s_latency_seconds_hist [0.005,0.01)": 2},
		buckets(export.Options{}))
	require.Equal(t, map[string]float64{"s_latency_microseconds_hist [0,1000)": 1, "s_latency_microseconds_hist [5000,10000)": 2},
		buckets(export.Options{Units: map[string]string{"latency_us": "us"}}))
}

// A derived metric's name, unit and value agree: an average of a VOI in
// microseconds declared in "us" is named and valued in microseconds (it
// was named _microseconds and valued in seconds), one declared in "ms" in
// milliseconds, one without a unit in the base unit, unnamed.
func TestDerivedUnitsAgree(t *testing.T) {
	tp, err := tpl.NewRegistry().New("H")
	require.NoError(t, err)
	for id, name := range []string{"latency_us", "requests", "hits", "lookups"} {
		require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: int32(id), Name: name, DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}))
	}
	require.NoError(t, tp.SetVOIMeta(0, tpl.VOIMeta{Unit: "us"}))
	require.NoError(t, tp.SetDerived([]tpl.Derived{
		{Name: "lat_avg", Op: tpl.OpAverage, Of: "latency_us", By: "requests", Unit: "us"},
		{Name: "lat_avg_ms", Op: tpl.OpAverage, Of: "latency_us", By: "requests", Unit: "ms"},
		{Name: "lat_avg_base", Op: tpl.OpAverage, Of: "latency_us", By: "requests"},
		{Name: "hit", Op: tpl.OpRatio, Of: "hits", By: "lookups", Unit: "percent"},
		{Name: "hit_pct", Op: tpl.OpPercent, Of: "hits", By: "lookups", Unit: "percent"},
	}))
	b := blob.New(tp, blob.NewEnv(func() int64 { return blob.SBinTime(1_700_000_000, 0) }, 1))
	for id, v := range []uint64{3000, 2, 3, 4} {
		require.NoError(t, b.UpdateU64(int32(id), v))
	}
	derived := func(opts export.Options) []point {
		got, _ := points(t, opts, tp, b)
		return got[len(got)-5:]
	}
	require.Equal(t, []point{
		{"h_lat_avg_microseconds", "microseconds", export.KindGauge, 1500},
		{"h_lat_avg_ms_milliseconds", "milliseconds", export.KindGauge, 1.5},
		{"h_lat_avg_base", "", export.KindGauge, 0.0015},
		{"h_hit_percent", "percent", export.KindGauge, 75},
		{"h_hit_pct", "percent", export.KindGauge, 75},
	}, derived(export.Options{}))
	require.Equal(t, []point{
		{"h.lat_avg", "us", export.KindGauge, 1500},
		{"h.lat_avg_ms", "ms", export.KindGauge, 1.5},
		{"h.lat_avg_base", "", export.KindGauge, 0.0015},
		{"h.hit", "%", export.KindGauge, 75},
		{"h.hit_pct", "%", export.KindGauge, 75},
	}, derived(export.Options{Convention: export.OpenTelemetry}))
}

// A difference, like a rate, needs two readings: of a cumulative blob it
// would be its SUM again, and is not exported.
func TestDerivedDifferenceNotExported(t *testing.T) {
	tp, err := tpl.NewRegistry().New("D")
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "busy_us", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}))
	require.NoError(t, tp.SetVOIMeta(0, tpl.VOIMeta{Unit: "us"}))
	require.NoError(t, tp.SetDerived([]tpl.Derived{
		{Name: "busy", Op: tpl.OpDifference, Of: "busy_us", Unit: "ms"},
		{Name: "busy_rate", Op: tpl.OpRate, Of: "busy_us"},
	}))
	b := blob.New(tp, blob.NewEnv(func() int64 { return blob.SBinTime(1_700_000_000, 0) }, 1))
	require.NoError(t, b.UpdateU64(0, 2500))
	got, _ := points(t, export.Options{}, tp, b)
	require.Equal(t, []point{{"d_busy_seconds", "seconds", export.KindCounter, 0.0025}}, got)
}
