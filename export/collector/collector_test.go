package collector_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"

	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/export"
	"github.com/statsblob/statsblob/export/collector"
	"github.com/statsblob/statsblob/export/internal/fixture"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// clock is a settable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

func newServer(t *testing.T, cfg collector.Config) (*collector.Server, *tpl.Template) {
	t.Helper()
	tp := fixture.Kitchen()
	if cfg.Templates == nil {
		cfg.Templates = tp.Registry()
	}
	s, err := collector.New(cfg)
	require.NoError(t, err)
	return s, tp
}

// post sends body to the server and returns the status and the body of the
// answer.
func post(t testing.TB, h http.Handler, method, query string, body []byte) (int, string) {
	t.Helper()
	r := httptest.NewRequest(method, "/v1/blobs", bytes.NewReader(body))
	r.URL.RawQuery = query
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Code, w.Body.String()
}

func TestPostAndScrape(t *testing.T) {
	s, tp := newServer(t, collector.Config{Now: func() time.Time { return time.Unix(1_700_000_500, 0) }})
	kb := fixture.KitchenBlob(tp).Bytes()
	for _, q := range []string{"host=a", "host=a", "host=b"} {
		code, body := post(t, s, http.MethodPost, q, kb)
		require.Equal(t, http.StatusNoContent, code, body)
		require.Empty(t, body)
	}
	// The aggregates are blobs of the template's wide form (tpl.Widen):
	// the INT_U32 VOI is an INT_U64 there.
	require.NoError(t, testutil.GatherAndCompare(s.Registry(), strings.NewReader(`# HELP kitchen_bytes_total statsblob KITCHEN bytes: SUM (INT_U64)
# TYPE kitchen_bytes_total counter
kitchen_bytes_total{host="a"} 2896
kitchen_bytes_total{host="b"} 1448
# HELP kitchen_lat_hist statsblob KITCHEN lat: CRHIST64 (INT_U64)
# TYPE kitchen_lat_hist histogram
kitchen_lat_hist_bucket{host="a",le="9"} 2
kitchen_lat_hist_bucket{host="a",le="19"} 6
kitchen_lat_hist_bucket{host="a",le="49"} 10
kitchen_lat_hist_bucket{host="a",le="+Inf"} 14
kitchen_lat_hist_sum{host="a"} 2102
kitchen_lat_hist_count{host="a"} 14
kitchen_lat_hist_bucket{host="b",le="9"} 1
kitchen_lat_hist_bucket{host="b",le="19"} 3
kitchen_lat_hist_bucket{host="b",le="49"} 5
kitchen_lat_hist_bucket{host="b",le="+Inf"} 7
kitchen_lat_hist_sum{host="b"} 1051
kitchen_lat_hist_count{host="b"} 7
# HELP statsblob_collector_blobs_accepted_total Blobs merged into an aggregate and acknowledged (204). A post answered 503 for durability is counted in statsblob_collector_blobs_rejected_total alone, even when its blobs were merged before its -data-dir log record failed (they stay in the aggregates; a sequenced retry of it is then a duplicate).
# TYPE statsblob_collector_blobs_accepted_total counter
statsblob_collector_blobs_accepted_total 3
# HELP statsblob_collector_accepted_bytes_total Bytes of the blobs counted in statsblob_collector_blobs_accepted_total.
# TYPE statsblob_collector_accepted_bytes_total counter
statsblob_collector_accepted_bytes_total `+itoa(3*len(kb))+`
# HELP statsblob_collector_aggregates Aggregates (template and label set) in the current window.
# TYPE statsblob_collector_aggregates gauge
statsblob_collector_aggregates 2
`), "kitchen_bytes_total", "kitchen_lat_hist", "statsblob_collector_blobs_accepted_total",
		"statsblob_collector_accepted_bytes_total", "statsblob_collector_aggregates"))
	require.Equal(t, []uint64{2, 1}, s.Merged())
	// The created timestamp is the window's start.
	mfs, err := s.Registry().Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == "kitchen_bytes_total" {
			require.Equal(t, int64(1_700_000_500), mf.Metric[0].Counter.CreatedTimestamp.Seconds)
		}
	}
	// GET /metrics over the handler.
	w := httptest.NewRecorder()
	s.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	require.Equal(t, http.StatusOK, w.Code)
	require.Contains(t, w.Body.String(), `kitchen_rtt_tdigest_count{host="a"} 8`)
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// Bad input gets a 4xx with a one-line reason, is counted by reason, and
// changes nothing.
func TestRejections(t *testing.T) {
	s, tp := newServer(t, collector.Config{MaxAggregates: 2, MaxLabels: 3})
	good := fixture.KitchenBlob(tp).Bytes()
	code, _ := post(t, s, http.MethodPost, "host=a", good)
	require.Equal(t, http.StatusNoContent, code)
	code, _ = post(t, s, http.MethodPost, "host=b", good)
	require.Equal(t, http.StatusNoContent, code)

	reg := tpl.NewRegistry()
	other, _ := reg.New("OTHER")
	require.NoError(t, other.AddVOI(tpl.VOIDef{ID: 0, Name: "x", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}))
	unknown := blob.New(other, nil).Bytes()
	// A self-consistent blob claiming the kitchen's hash with another layout.
	forged := bytes.Clone(unknown)
	binary.LittleEndian.PutUint32(forged[8:], tp.Hash())
	truncated := good[:len(good)-1]

	cases := []struct {
		name, method, query string
		body                []byte
		status              int
		reason, msg         string
	}{
		{"GET", http.MethodGet, "host=a", nil, 405, "method", "method GET not allowed: POST a blob's bytes"},
		{"PUT", http.MethodPut, "host=a", good, 405, "method", "method PUT not allowed"},
		{"oversized", http.MethodPost, "host=a", make([]byte, 70000), 413, "size", "body of 70000 bytes over the limit of 65535"},
		{"garbage", http.MethodPost, "host=a", []byte("not a blob"), 400, "blob", "blob: need at least 32 bytes of header"},
		{"truncated", http.MethodPost, "host=a", truncated, 400, "blob", "blob:"},
		{"empty", http.MethodPost, "host=a", nil, 400, "blob", "blob:"},
		{"unknown template", http.MethodPost, "host=a", unknown, 422, "template", "unknown template hash"},
		{"forged layout", http.MethodPost, "host=a", forged, 422, "layout", "blob does not fit its template"},
		{"new label set over the limit", http.MethodPost, "host=c", good, 429, "limit", "aggregate: too many aggregates: 2 aggregates in this window and 1 new, at most 2 (-max-aggregates)"},
		{"reserved label", http.MethodPost, "le=1", good, 400, "labels", `"le" is reserved`},
		{"bad label name", http.MethodPost, "1host=a", good, 400, "labels", `label name "1host"`},
		{"repeated label", http.MethodPost, "host=a&host=b", good, 400, "labels", `label "host" given 2 times`},
		{"empty value", http.MethodPost, "host=", good, 400, "labels", `label "host" has an empty value`},
		{"too many labels", http.MethodPost, "a=1&b=2&c=3&d=4", good, 400, "labels", "4 labels, at most 3"},
		{"long value", http.MethodPost, "host=" + strings.Repeat("x", 129), good, 400, "labels", "over 128 bytes"},
		{"bad query", http.MethodPost, "host=%zz", good, 400, "labels", "query:"},
		{"value not UTF-8", http.MethodPost, "host=a%FA%0F", good, 400, "labels", `value "a\xfa\x0f" is not valid UTF-8`},
	}
	before := snapshot(s)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rejected := counter(t, s, c.reason).value()
			code, body := post(t, s, c.method, c.query, c.body)
			require.Equal(t, c.status, code, body)
			require.Contains(t, body, c.msg)
			require.Equal(t, 1, strings.Count(body, "\n"), "one line")
			require.True(t, strings.HasSuffix(body, "\n"))
			require.Equal(t, rejected+1, counter(t, s, c.reason).value())
			require.Equal(t, before, snapshot(s), "nothing changed")
		})
	}
	require.Equal(t, 2.0, counter(t, s, "").value())
}

// A blob refused for its layout (422) changes nothing, whatever its
// labels: posted with a label set the window did not hold yet, it left an
// empty aggregate behind, a zero series on /metrics for labels no blob
// was accepted for and one of -max-aggregates' places taken.
func TestRefusedLayoutMakesNoAggregate(t *testing.T) {
	forEachStack(t, func(t *testing.T, via func(testing.TB, *collector.Server) http.Handler) {
		s, tp := newServer(t, collector.Config{MaxAggregates: 1})
		h := via(t, s)
		reg := tpl.NewRegistry()
		other, _ := reg.New("OTHER")
		require.NoError(t, other.AddVOI(tpl.VOIDef{ID: 0, Name: "x", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}))
		forged := bytes.Clone(blob.New(other, nil).Bytes())
		binary.LittleEndian.PutUint32(forged[8:], tp.Hash())

		code, body := post(t, h, http.MethodPost, "host=evil", forged)
		require.Equal(t, http.StatusUnprocessableEntity, code, body)
		require.Empty(t, s.Blobs())
		require.Zero(t, s.Aggregates())
		// The one label set -max-aggregates allows is still free.
		code, body = post(t, h, http.MethodPost, "host=good", fixture.KitchenBlob(tp).Bytes())
		require.Equal(t, http.StatusNoContent, code, body)
		require.Equal(t, []uint64{1}, s.Merged())
	})
}

// counter returns the rejected counter of reason ("": the accepted one).
func counter(t *testing.T, s *collector.Server, reason string) *rejectedCounter {
	return &rejectedCounter{s: s, reason: reason}
}

// rejectedCounter reads a counter of the server's registry.
type rejectedCounter struct {
	s      *collector.Server
	reason string
}

func (c *rejectedCounter) value() float64 {
	mfs, _ := c.s.Registry().Gather()
	for _, mf := range mfs {
		switch {
		case c.reason == "" && mf.GetName() == "statsblob_collector_blobs_accepted_total":
			return mf.Metric[0].Counter.GetValue()
		case c.reason != "" && mf.GetName() == "statsblob_collector_blobs_rejected_total":
			for _, m := range mf.Metric {
				if m.Label[0].GetValue() == c.reason {
					return m.Counter.GetValue()
				}
			}
		}
	}
	return -1
}

// snapshot is the aggregates' bytes and labels.
func snapshot(s *collector.Server) []string {
	var out []string
	for _, n := range s.Blobs() {
		l, _ := json.Marshal(n.Labels)
		out = append(out, fmt.Sprintf("%s %x", l, sha256.Sum256(n.Blob.Bytes())))
	}
	return out
}

func TestRotate(t *testing.T) {
	ck := &clock{t: time.Unix(1000, 0)}
	s, tp := newServer(t, collector.Config{Window: time.Minute, Now: ck.now})
	kb := fixture.KitchenBlob(tp).Bytes()
	var closed []collector.Closed
	s.OnClose(func(c collector.Closed) { closed = append(closed, c) })
	code, _ := post(t, s, http.MethodPost, "host=a", kb)
	require.Equal(t, http.StatusNoContent, code)
	ck.set(time.Unix(1060, 0))
	c := s.Rotate()
	require.Equal(t, []collector.Closed{c}, closed)
	require.Equal(t, time.Unix(1000, 0), c.Start)
	require.Equal(t, time.Unix(1060, 0), c.End)
	require.Len(t, c.Blobs, 1)
	require.Equal(t, []export.Label{{Name: "host", Value: "a"}}, c.Blobs[0].Labels)
	v, err := c.Blobs[0].Blob.FetchU64(0, voi.Sum)
	require.NoError(t, err)
	require.Equal(t, uint64(1448), v)
	require.Empty(t, s.Blobs(), "the new window starts empty")
	require.Zero(t, s.Aggregates())
	code, _ = post(t, s, http.MethodPost, "host=b", kb)
	require.Equal(t, http.StatusNoContent, code)
	bs := s.Blobs()
	require.Len(t, bs, 1)
	require.Equal(t, time.Unix(1060, 0), bs[0].Start)
	require.NoError(t, testutil.GatherAndCompare(s.Registry(), strings.NewReader(`# HELP statsblob_collector_windows_total Windows closed.
# TYPE statsblob_collector_windows_total counter
statsblob_collector_windows_total 1
`), "statsblob_collector_windows_total"))

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s.RunWindows(ctx) // returns at once when ctx is done
}

func TestNewErrors(t *testing.T) {
	_, err := collector.New(collector.Config{})
	require.ErrorIs(t, err, voi.ErrInvalid)
	_, err = collector.New(collector.Config{Templates: tpl.NewRegistry(), Window: -1})
	require.ErrorIs(t, err, voi.ErrInvalid)
	_, err = collector.New(collector.Config{Templates: tpl.NewRegistry(), Export: export.Options{Quantiles: []float64{7}}})
	require.ErrorIs(t, err, voi.ErrInvalid)
}

func TestLoadTemplates(t *testing.T) {
	tp := fixture.Kitchen()
	one, err := json.Marshal(tp)
	require.NoError(t, err)
	reg := tpl.NewRegistry()
	ts, err := collector.LoadTemplates(reg, one)
	require.NoError(t, err)
	require.Len(t, ts, 1)
	require.Equal(t, tp.Hash(), ts[0].Hash())
	arr := []byte("[" + string(one) + "]")
	ts, err = collector.LoadTemplates(tpl.NewRegistry(), arr)
	require.NoError(t, err)
	require.Len(t, ts, 1)
	for _, bad := range []string{"", "3", "[1]", "{}", "[{"} {
		_, err := collector.LoadTemplates(tpl.NewRegistry(), []byte(bad))
		require.ErrorIs(t, err, voi.ErrInvalid, bad)
	}
}

// fakeExporter records what it is asked to export.
type fakeExporter struct {
	mu   sync.Mutex
	got  []metricdata.ResourceMetrics
	shut bool
}

func (f *fakeExporter) Temporality(sdkmetric.InstrumentKind) metricdata.Temporality {
	return metricdata.CumulativeTemporality
}
func (f *fakeExporter) Aggregation(k sdkmetric.InstrumentKind) sdkmetric.Aggregation {
	return sdkmetric.DefaultAggregationSelector(k)
}
func (f *fakeExporter) Export(_ context.Context, rm *metricdata.ResourceMetrics) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.got = append(f.got, *rm)
	return nil
}
func (f *fakeExporter) ForceFlush(context.Context) error { return nil }
func (f *fakeExporter) Shutdown(context.Context) error   { f.shut = true; return nil }

// bytesSum returns the kitchen_bytes point of an export.
func bytesSum(t *testing.T, rm metricdata.ResourceMetrics) metricdata.Sum[float64] {
	t.Helper()
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if m.Name == "kitchen.bytes" {
			return m.Data.(metricdata.Sum[float64])
		}
	}
	t.Fatal("no kitchen_bytes")
	return metricdata.Sum[float64]{}
}

func TestPushDelta(t *testing.T) {
	ck := &clock{t: time.Unix(1000, 0)}
	s, tp := newServer(t, collector.Config{Window: time.Minute, Now: ck.now})
	fe := &fakeExporter{}
	p := s.NewPusher(fe, collector.PushConfig{Temporality: metricdata.DeltaTemporality})
	kb := fixture.KitchenBlob(tp).Bytes()
	post(t, s, http.MethodPost, "host=a", kb)
	post(t, s, http.MethodPost, "host=a", kb)
	require.NoError(t, p.Push(context.Background()), "delta pushes only closed windows")
	require.Empty(t, fe.got)
	ck.set(time.Unix(1060, 0))
	s.Rotate()
	post(t, s, http.MethodPost, "host=a", kb)
	ck.set(time.Unix(1075, 0))
	require.NoError(t, p.Close(context.Background()), "closes the window under way")
	require.True(t, fe.shut)
	require.Len(t, fe.got, 2)
	for i, want := range []struct {
		start, end int64
		v          float64
	}{{1000, 1060, 2896}, {1060, 1075, 1448}} {
		sum := bytesSum(t, fe.got[i])
		require.Equal(t, metricdata.DeltaTemporality, sum.Temporality)
		dp := sum.DataPoints[0]
		require.Equal(t, want.v, dp.Value)
		require.Equal(t, time.Unix(want.start, 0), dp.StartTime)
		require.Equal(t, time.Unix(want.end, 0), dp.Time)
	}
	require.NoError(t, testutil.GatherAndCompare(s.Registry(), strings.NewReader(`# HELP statsblob_collector_otlp_pushes_total OTLP exports, by result.
# TYPE statsblob_collector_otlp_pushes_total counter
statsblob_collector_otlp_pushes_total{result="error"} 0
statsblob_collector_otlp_pushes_total{result="ok"} 2
`), "statsblob_collector_otlp_pushes_total"))
}

func TestPushCumulative(t *testing.T) {
	ck := &clock{t: time.Unix(1000, 0)}
	s, tp := newServer(t, collector.Config{Now: ck.now})
	fe := &fakeExporter{}
	p := s.NewPusher(fe, collector.PushConfig{})
	kb := fixture.KitchenBlob(tp).Bytes()
	post(t, s, http.MethodPost, "host=a", kb)
	ck.set(time.Unix(1010, 0))
	require.NoError(t, p.Push(context.Background()))
	post(t, s, http.MethodPost, "host=a", kb)
	ck.set(time.Unix(1020, 0))
	require.NoError(t, p.Close(context.Background()))
	require.Len(t, fe.got, 2)
	for i, v := range []float64{1448, 2896} {
		sum := bytesSum(t, fe.got[i])
		require.Equal(t, metricdata.CumulativeTemporality, sum.Temporality)
		require.Equal(t, v, sum.DataPoints[0].Value)
		require.Equal(t, time.Unix(1000, 0), sum.DataPoints[0].StartTime)
		require.Equal(t, time.Unix(1010+10*int64(i), 0), sum.DataPoints[0].Time)
	}
	// Run pushes every interval until ctx ends.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.Run(ctx, time.Millisecond); close(done) }()
	require.Eventually(t, func() bool { return fe.count() > 2 }, 10*time.Second, time.Millisecond)
	cancel()
	<-done
}

func (f *fakeExporter) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.got)
}

// A body of unknown length (chunked) over the limit is refused as it is
// read.
func TestOversizedChunked(t *testing.T) {
	s, _ := newServer(t, collector.Config{MaxBody: 1000})
	r := httptest.NewRequest(http.MethodPost, "/v1/blobs", io.MultiReader(bytes.NewReader(make([]byte, 1001))))
	r.ContentLength = -1
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	require.Equal(t, http.StatusRequestEntityTooLarge, w.Code)
	require.Equal(t, "body over the limit of 1000 bytes (-max-body)\n", w.Body.String())
	require.Equal(t, 1.0, counter(t, s, "size").value())
	require.Empty(t, s.Blobs())
}
