package e2e_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/proto"
)

// otlpSink is the OTLP/HTTP receiver the OpenTelemetry Collector exports
// to: it keeps, per metric name and point attributes, the latest point.
type otlpSink struct {
	*httptest.Server
	mu       sync.Mutex
	requests int
	metrics  map[string]*metricpb.Metric // name -> metric as last received
	points   map[string]pointAt          // name + attributes -> latest point
	resource map[string]string
}

type pointAt struct {
	metric *metricpb.Metric // the metric it came in, its one point being this one
	time   uint64
}

func attrKey(kvs []*commonpb.KeyValue) string {
	var ps []string
	for _, kv := range kvs {
		ps = append(ps, kv.Key+"="+kv.Value.GetStringValue())
	}
	slices.Sort(ps)
	return strings.Join(ps, ",")
}

func newOTLPSink(t *testing.T) *otlpSink {
	t.Helper()
	s := &otlpSink{metrics: map[string]*metricpb.Metric{}, points: map[string]pointAt{}, resource: map[string]string{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = zr
		}
		raw, err := io.ReadAll(body)
		req := &colmetricpb.ExportMetricsServiceRequest{}
		if err == nil {
			err = proto.Unmarshal(raw, req)
		}
		if err != nil || r.URL.Path != "/v1/metrics" {
			http.Error(w, fmt.Sprint("bad request: ", err), http.StatusBadRequest)
			return
		}
		s.add(req)
		out, _ := proto.Marshal(&colmetricpb.ExportMetricsServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(s.Close)
	return s
}

// add splits every metric into one per point and keeps the latest.
func (s *otlpSink) add(req *colmetricpb.ExportMetricsServiceRequest) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests++
	for _, rm := range req.ResourceMetrics {
		for _, kv := range rm.Resource.GetAttributes() {
			s.resource[kv.Key] = kv.Value.GetStringValue()
		}
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				s.metrics[m.Name] = m
				each := func(attrs []*commonpb.KeyValue, tm uint64, one *metricpb.Metric) {
					k := m.Name + "{" + attrKey(attrs) + "}"
					if p, ok := s.points[k]; !ok || tm >= p.time {
						s.points[k] = pointAt{one, tm}
					}
				}
				shell := func() *metricpb.Metric {
					return &metricpb.Metric{Name: m.Name, Unit: m.Unit, Description: m.Description}
				}
				switch d := m.Data.(type) {
				case *metricpb.Metric_Sum:
					for _, p := range d.Sum.DataPoints {
						one := shell()
						one.Data = &metricpb.Metric_Sum{Sum: &metricpb.Sum{AggregationTemporality: d.Sum.AggregationTemporality,
							IsMonotonic: d.Sum.IsMonotonic, DataPoints: []*metricpb.NumberDataPoint{p}}}
						each(p.Attributes, p.TimeUnixNano, one)
					}
				case *metricpb.Metric_Gauge:
					for _, p := range d.Gauge.DataPoints {
						one := shell()
						one.Data = &metricpb.Metric_Gauge{Gauge: &metricpb.Gauge{DataPoints: []*metricpb.NumberDataPoint{p}}}
						each(p.Attributes, p.TimeUnixNano, one)
					}
				case *metricpb.Metric_Histogram:
					for _, p := range d.Histogram.DataPoints {
						one := shell()
						one.Data = &metricpb.Metric_Histogram{Histogram: &metricpb.Histogram{
							AggregationTemporality: d.Histogram.AggregationTemporality, DataPoints: []*metricpb.HistogramDataPoint{p}}}
						each(p.Attributes, p.TimeUnixNano, one)
					}
				case *metricpb.Metric_ExponentialHistogram:
					for _, p := range d.ExponentialHistogram.DataPoints {
						one := shell()
						one.Data = &metricpb.Metric_ExponentialHistogram{ExponentialHistogram: &metricpb.ExponentialHistogram{
							AggregationTemporality: d.ExponentialHistogram.AggregationTemporality, DataPoints: []*metricpb.ExponentialHistogramDataPoint{p}}}
						each(p.Attributes, p.TimeUnixNano, one)
					}
				case *metricpb.Metric_Summary:
					for _, p := range d.Summary.DataPoints {
						one := shell()
						one.Data = &metricpb.Metric_Summary{Summary: &metricpb.Summary{DataPoints: []*metricpb.SummaryDataPoint{p}}}
						each(p.Attributes, p.TimeUnixNano, one)
					}
				}
			}
		}
	}
}

// point returns the latest point of name with the attributes attrs
// ("host=h0,src=otel"), nil if none arrived.
func (s *otlpSink) point(name, attrs string) *metricpb.Metric {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.points[name+"{"+attrs+"}"].metric
}

// names returns the names of the metrics received whose points carry the
// attribute src=src.
func (s *otlpSink) names(src string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for k, p := range s.points {
		if strings.Contains(k, "src="+src) && !slices.Contains(out, p.metric.Name) {
			out = append(out, p.metric.Name)
		}
	}
	sort.Strings(out)
	return out
}

// otelcolBinary returns the OpenTelemetry Collector make e2e built
// ($OTELCOL), or builds it (export/e2e/otelcol, its own module).
func otelcolBinary(t *testing.T, ctx context.Context, dir string) string {
	t.Helper()
	if bin := os.Getenv("OTELCOL"); bin != "" {
		return bin
	}
	bin := filepath.Join(dir, "otelcol")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, ".")
	build.Dir = filepath.Join(repoRoot(t), "export", "e2e", "otelcol")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)
	return bin
}

// startOtelcol runs the collector: OTLP/HTTP in on addr, out with the
// otlp_http exporter to sink.
func startOtelcol(t *testing.T, ctx context.Context, bin, dir, addr, sink string) {
	t.Helper()
	cfg := fmt.Sprintf(`receivers:
  otlp:
    protocols:
      http:
        endpoint: %s
exporters:
  otlp_http:
    metrics_endpoint: %s/v1/metrics
    compression: none
    encoding: proto
service:
  telemetry:
    logs:
      level: warn
    metrics:
      level: none
  pipelines:
    metrics:
      receivers: [otlp]
      exporters: [otlp_http]
`, addr, sink)
	cfile := filepath.Join(dir, "otelcol.yaml")
	require.NoError(t, os.WriteFile(cfile, []byte(cfg), 0o644))
	var log bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, "--config="+cfile)
	cmd.Stdout, cmd.Stderr = &log, &log
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() })
	require.Eventually(t, func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	}, 60*time.Second, 100*time.Millisecond, "otelcol listening; log:\n%s", &log)
}

// expQuantile reads the q-quantile off an exponential histogram: the bucket
// holding rank q*count, and the value at the rank's place in it
// (interpolated linearly in the log of the value, as Prometheus does).
func expQuantile(p *metricpb.ExponentialHistogramDataPoint, q float64) (v, lower, upper float64) {
	rank := q * float64(p.Count)
	cum := float64(p.ZeroCount)
	base := math.Exp2(math.Exp2(-float64(p.Scale)))
	for k, c := range p.Positive.BucketCounts {
		if c == 0 || cum+float64(c) < rank {
			cum += float64(c)
			continue
		}
		i := float64(p.Positive.Offset) + float64(k)
		lower, upper = math.Pow(base, i), math.Pow(base, i+1)
		f := (rank - cum) / float64(c)
		return lower * math.Pow(upper/lower, f), lower, upper
	}
	return math.NaN(), 0, 0
}

// statsblob-collector pushes to a real OpenTelemetry Collector (built from
// the collector's Go modules), which exports to a test OTLP receiver: what
// arrives has OpenTelemetry's names and units, the types and temporalities
// asked for, exact counts, and quantiles of the exponential histograms
// within a bucket of the exact samples.
func TestE2EOTelCollector(t *testing.T) {
	e2eEnabled(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	const hosts = 3
	fleet := newLatFleet(t, dir, 150, hosts, 7)
	sink := newOTLPSink(t)
	otelAddr := freePort(t)
	startOtelcol(t, ctx, otelcolBinary(t, ctx, dir), dir, otelAddr, sink.URL)
	bin := buildCollector(t, ctx, dir)
	before := uint64(time.Now().UnixNano())
	otlp := "http://" + otelAddr + "/v1/metrics"
	cum := startCollector(t, ctx, bin, "-templates", fleet.tfile, "-otlp", otlp, "-otlp-interval", "500ms", "-unit", "latency=us")
	delta := startCollector(t, ctx, bin, "-templates", fleet.tfile, "-otlp", otlp, "-otlp-temporality", "delta", "-window", "1h", "-unit", "latency=microseconds")
	for h := range hosts {
		cum.post(t, fmt.Sprintf("src=otel&host=h%d", h), fleet.blobs[h]...)
	}
	delta.post(t, "src=delta&host=h0", fleet.blobs[0]...)
	deltaStart := uint64(time.Now().UnixNano())
	delta.stop(t) // pushes the window under way, delta
	require.Eventually(t, func() bool {
		for h := range hosts {
			m := sink.point("e2e_lat.latency.hist", fmt.Sprintf("host=h%d,src=otel", h))
			if m == nil || m.GetHistogram().DataPoints[0].Count != uint64(len(fleet.samples[h])) {
				return false
			}
		}
		return sink.point("e2e_lat.latency.hist", "host=h0,src=delta") != nil
	}, 60*time.Second, 100*time.Millisecond, "every host's points went through the OpenTelemetry Collector")
	cum.stop(t)

	t.Run("resource", func(t *testing.T) {
		sink.mu.Lock()
		defer sink.mu.Unlock()
		require.Equal(t, "statsblob-collector", sink.resource["service.name"])
		require.Len(t, sink.resource["service.instance.id"], 36)
		require.NotEmpty(t, sink.resource["host.name"])
		require.Equal(t, "go", sink.resource["telemetry.sdk.language"])
	})

	t.Run("names units types", func(t *testing.T) {
		for _, src := range []string{"otel", "delta"} {
			require.Equal(t, []string{"e2e_lat.latency", "e2e_lat.latency.hist", "e2e_lat.latency.max",
				"e2e_lat.latency.min", "e2e_lat.latency.tdigest"}, sink.names(src))
			temp := metricpb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE
			if src == "delta" {
				temp = metricpb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA
			}
			attrs := "host=h0,src=" + src
			for _, name := range sink.names(src) {
				require.Equal(t, "us", sink.point(name, attrs).Unit, name)
			}
			sum := sink.point("e2e_lat.latency", attrs).GetSum()
			require.True(t, sum.IsMonotonic)
			require.Equal(t, temp, sum.AggregationTemporality)
			require.NotNil(t, sink.point("e2e_lat.latency.max", attrs).GetGauge())
			require.NotNil(t, sink.point("e2e_lat.latency.min", attrs).GetGauge())
			require.Equal(t, temp, sink.point("e2e_lat.latency.hist", attrs).GetHistogram().AggregationTemporality)
			require.Equal(t, temp, sink.point("e2e_lat.latency.tdigest", attrs).GetExponentialHistogram().AggregationTemporality)
		}
	})

	t.Run("start times", func(t *testing.T) {
		// Cumulative: every point from the collector's start; delta: the
		// window's start to its end, the stop.
		c := sink.point("e2e_lat.latency", "host=h1,src=otel").GetSum().DataPoints[0]
		require.Greater(t, c.StartTimeUnixNano, before-uint64(time.Minute))
		require.Less(t, c.StartTimeUnixNano, c.TimeUnixNano)
		for _, name := range sink.names("otel") {
			for h := range hosts {
				m := sink.point(name, fmt.Sprintf("host=h%d,src=otel", h))
				require.Equal(t, c.StartTimeUnixNano, startOf(m), name)
			}
		}
		d := sink.point("e2e_lat.latency.tdigest", "host=h0,src=delta").GetExponentialHistogram().DataPoints[0]
		require.Greater(t, d.StartTimeUnixNano, before-uint64(time.Minute))
		require.Less(t, d.StartTimeUnixNano, deltaStart)
		require.GreaterOrEqual(t, d.TimeUnixNano, deltaStart, "the window ended at the stop")
	})

	t.Run("exact counts and histograms", func(t *testing.T) {
		for h := range hosts {
			xs := slices.Sorted(slices.Values(fleet.samples[h]))
			n := uint64(len(xs))
			s := 0.0
			for _, x := range xs {
				s += x
			}
			srcs := []string{"otel"}
			if h == 0 {
				srcs = append(srcs, "delta")
			}
			for _, src := range srcs {
				attrs := fmt.Sprintf("host=h%d,src=%s", h, src)
				require.Equal(t, s, sink.point("e2e_lat.latency", attrs).GetSum().DataPoints[0].GetAsDouble())
				require.Equal(t, xs[len(xs)-1], sink.point("e2e_lat.latency.max", attrs).GetGauge().DataPoints[0].GetAsDouble())
				require.Equal(t, xs[0], sink.point("e2e_lat.latency.min", attrs).GetGauge().DataPoints[0].GetAsDouble())
				hp := sink.point("e2e_lat.latency.hist", attrs).GetHistogram().DataPoints[0]
				require.Equal(t, n, hp.Count)
				require.Equal(t, s, hp.GetSum())
				require.Equal(t, xs[0], hp.GetMin())
				require.Equal(t, xs[len(xs)-1], hp.GetMax())
				var below uint64
				for i, le := range hp.ExplicitBounds {
					below += hp.BucketCounts[i]
					require.Equal(t, uint64(countLE(xs, le)), below, "le %v", le)
				}
				e := sink.point("e2e_lat.latency.tdigest", attrs).GetExponentialHistogram().DataPoints[0]
				require.Equal(t, n, e.Count)
				require.Equal(t, s, e.GetSum())
				require.Equal(t, xs[0], e.GetMin())
				require.Equal(t, xs[len(xs)-1], e.GetMax())
				var total uint64
				for _, c := range e.Positive.BucketCounts {
					total += c
				}
				require.Equal(t, n, total+e.ZeroCount)
				for _, q := range []float64{0.5, 0.9, 0.99} {
					v, lo, hi := expQuantile(e, q)
					exact := exactQ(xs, q)
					w := hi/lo - 1
					t.Logf("%s host h%d q%g: exponential histogram %.1f in (%.1f, %.1f] (scale %d, %.2f%% wide), exact %v, rank error %.4f",
						src, h, q, v, lo, hi, e.Scale, 100*w, exact, rankOf(xs, v)-q)
					// The stated error: the digest's (a rank error of
					// 0.3% at most on this fleet) and the bucket's: the
					// exact quantile is in the bucket read or a neighbour.
					require.True(t, exact > lo/(1+w) && exact <= hi*(1+w), "q%g: exact %v more than a bucket from (%v, %v]", q, exact, lo, hi)
					require.InDelta(t, q, rankOf(xs, v), 0.01, "q%g: rank error", q)
				}
			}
		}
	})
}

// startOf returns the start time of a metric's one point.
func startOf(m *metricpb.Metric) uint64 {
	switch d := m.Data.(type) {
	case *metricpb.Metric_Sum:
		return d.Sum.DataPoints[0].StartTimeUnixNano
	case *metricpb.Metric_Gauge:
		return d.Gauge.DataPoints[0].StartTimeUnixNano
	case *metricpb.Metric_Histogram:
		return d.Histogram.DataPoints[0].StartTimeUnixNano
	case *metricpb.Metric_ExponentialHistogram:
		return d.ExponentialHistogram.DataPoints[0].StartTimeUnixNano
	}
	return 0
}
