package remotewrite

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/snappy"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/export"
	"github.com/statsblob/statsblob/export/internal/fixture"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// rwBlob is a latency VOI with a SUM, a CRHIST (lower bounds 10, 20, 50)
// and a t-digest, updated with 3, 10, 19, 20, 49, 50 and 900.
func rwBlob(t *testing.T) export.Named {
	t.Helper()
	reg := tpl.NewRegistry()
	tp, err := reg.New("RW")
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "lat", DType: voi.IntU32, Stats: []tpl.StatSpec{tpl.Sum(),
		fixture.Usr(voi.CRHist64, 0, fixture.CR(10, 20, 50)...), tpl.TDigest(voi.TDgstClust64, 20, 8)}}))
	b := blob.New(tp, blob.NewEnv(nil, 1))
	for _, v := range []uint32{3, 10, 19, 20, 49, 50, 900} {
		require.NoError(t, b.UpdateU32(0, v))
	}
	return export.Named{Blob: b, Template: tp, Labels: []export.Label{{Name: "host", Value: "a"}}}
}

// server is a remote write receiver that decodes every request and answers
// with the status answer returns (nil: 204).
type server struct {
	*httptest.Server
	mu     sync.Mutex
	got    [][]series
	md     [][]metadata
	answer func(n int, ss []series) (int, string)
}

func newServer(t *testing.T, answer func(n int, ss []series) (int, string)) *server {
	t.Helper()
	s := &server{answer: answer}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Header.Get("Content-Encoding") != "snappy" || r.Header.Get("Content-Type") != "application/x-protobuf" ||
			r.Header.Get("X-Prometheus-Remote-Write-Version") != "0.1.0" {
			http.Error(w, "headers", http.StatusUnsupportedMediaType)
			return
		}
		raw, err := snappy.Decode(nil, body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		ss, md, err := decodeRequest(raw)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		n := len(s.got)
		s.mu.Unlock()
		status, msg := http.StatusNoContent, ""
		if s.answer != nil {
			status, msg = s.answer(n, ss)
		}
		s.mu.Lock()
		s.got = append(s.got, ss)
		s.md = append(s.md, md)
		s.mu.Unlock()
		if msg == "retry-after" {
			w.Header().Set("Retry-After", "1")
		}
		if status != http.StatusNoContent {
			http.Error(w, msg, status)
			return
		}
		w.WriteHeader(status)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *server) requests() [][]series {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.got)
}

// lines renders a request's series, without the native histograms.
func lines(ss []series) []string {
	var out []string
	for _, s := range ss {
		if len(s.histograms) == 0 {
			out = append(out, s.String())
		}
	}
	return out
}

func newWriter(t *testing.T, cfg Config) *Writer {
	t.Helper()
	if cfg.MinBackoff == 0 {
		cfg.MinBackoff, cfg.MaxBackoff = time.Millisecond, 4*time.Millisecond
	}
	cfg.Options.Quantiles = []float64{0.5}
	w, err := New(cfg)
	require.NoError(t, err)
	return w
}

var at = time.UnixMilli(1_700_000_100_000)

// One snapshot: every series a scrape would store, the ext label added,
// the t-digest as a native histogram with Prometheus's bucket index
// (OpenTelemetry's plus one).
// rwBlobLines are the series of rwBlob sent at "at" by a Writer with the
// label collector=c1.
var rwBlobLines = []string{
	"rw_lat_total{collector=c1,host=a} 1051@1700000100000",
	"rw_lat_hist_bucket{collector=c1,host=a,le=9} 1@1700000100000",
	"rw_lat_hist_bucket{collector=c1,host=a,le=19} 3@1700000100000",
	"rw_lat_hist_bucket{collector=c1,host=a,le=49} 5@1700000100000",
	"rw_lat_hist_bucket{collector=c1,host=a,le=+Inf} 7@1700000100000",
	"rw_lat_hist_count{collector=c1,host=a} 7@1700000100000",
	"rw_lat_hist_sum{collector=c1,host=a} 1051@1700000100000",
	"rw_lat_tdigest{collector=c1,host=a,quantile=0.5} 20@1700000100000",
	"rw_lat_tdigest_count{collector=c1,host=a} 7@1700000100000",
	"rw_lat_tdigest_sum{collector=c1,host=a} 1051@1700000100000",
}

func TestSendExact(t *testing.T) {
	srv := newServer(t, nil)
	w := newWriter(t, Config{URL: srv.URL, Labels: []export.Label{{Name: "collector", Value: "c1"}}})
	n := rwBlob(t)
	require.NoError(t, w.Enqueue([]export.Named{n}, at, time.Time{}))
	require.NoError(t, w.Close(context.Background()))
	reqs := srv.requests()
	require.Len(t, reqs, 1)
	require.Equal(t, rwBlobLines, lines(reqs[0]))
	m, err := export.NewMapper(export.Options{NativeHistogram: true})
	require.NoError(t, err)
	ms, err := m.Append(nil, n)
	require.NoError(t, err)
	e := ms[len(ms)-1].Exp
	nat := reqs[0][len(reqs[0])-1]
	require.Equal(t, "rw_lat_tdigest_native{collector=c1,host=a}", strings.Fields(nat.String())[0])
	require.Equal(t, []nativeHist{{count: 7, sum: 1051, schema: e.Scale, posOffset: e.Positive.Offset + 1, pos: e.Positive.Counts,
		ts: at.UnixMilli()}}, nat.histograms)
	require.Equal(t, 11.0, testutil.ToFloat64(w.samples), "10 samples and a native histogram acknowledged")
	srv.mu.Lock()
	defer srv.mu.Unlock()
	require.Equal(t, []metadata{
		{typeCounter, "rw_lat_total", "statsblob RW lat: SUM (INT_U32)", ""},
		{typeHistogram, "rw_lat_hist", "statsblob RW lat: CRHIST64 (INT_U32)", ""},
		{typeSummary, "rw_lat_tdigest", "statsblob RW lat: TDGSTCLUST64 t-digest (INT_U32)", ""},
		{typeHistogram, "rw_lat_tdigest_native", "statsblob RW lat: TDGSTCLUST64 t-digest as a native histogram (INT_U32)", ""},
	}, srv.md[0])
}

// A window's snapshot starts its counts at 0 just after the window's start
// (not its gauges and quantiles); timestamps only grow.
func TestWindowZero(t *testing.T) {
	srv := newServer(t, nil)
	w := newWriter(t, Config{URL: srv.URL, Options: export.Options{}})
	n := rwBlob(t)
	start := at.Add(-time.Minute)
	require.NoError(t, w.Enqueue([]export.Named{n}, at, start))
	require.NoError(t, w.Enqueue([]export.Named{n}, at, time.Time{})) // same time: 1 ms later
	require.NoError(t, w.Close(context.Background()))
	reqs := srv.requests()
	require.Len(t, reqs, 2)
	var zeros []string
	for _, s := range reqs[0] {
		if s.String() != "" && (len(s.samples) > 0 && s.samples[0].ts == start.UnixMilli()+1 || len(s.histograms) > 0 && s.histograms[0].ts == start.UnixMilli()+1) {
			zeros = append(zeros, s.String())
		}
	}
	z := "@1700000040001"
	require.Equal(t, []string{
		"rw_lat_total{host=a} 0" + z,
		"rw_lat_hist_bucket{host=a,le=9} 0" + z,
		"rw_lat_hist_bucket{host=a,le=19} 0" + z,
		"rw_lat_hist_bucket{host=a,le=49} 0" + z,
		"rw_lat_hist_bucket{host=a,le=+Inf} 0" + z,
		"rw_lat_hist_count{host=a} 0" + z,
		"rw_lat_hist_sum{host=a} 0" + z,
		"rw_lat_tdigest_count{host=a} 0" + z,
		"rw_lat_tdigest_sum{host=a} 0" + z,
		"rw_lat_tdigest_native{host=a} hist(count=0 sum=0 schema=4 zero=0 pos=0:[] neg=0:[])" + z,
	}, zeros)
	require.Len(t, reqs[0], len(zeros)+11)
	require.Equal(t, at.UnixMilli()+1, reqs[1][0].samples[0].ts)
}

// Network errors, 5xx and 429 are retried with backoff (Retry-After
// lengthens it, up to MaxBackoff) until acknowledged;
// another 4xx drops the snapshot, counted, and the next one goes on.
func TestRetryAndReject(t *testing.T) {
	srv := newServer(t, func(n int, ss []series) (int, string) {
		switch n {
		case 0:
			return http.StatusServiceUnavailable, "busy"
		case 1:
			return http.StatusTooManyRequests, "retry-after"
		case 3:
			return http.StatusBadRequest, "out of order sample"
		}
		return http.StatusNoContent, ""
	})
	w := newWriter(t, Config{URL: srv.URL, MinBackoff: time.Millisecond, MaxBackoff: 300 * time.Millisecond})
	n := rwBlob(t)
	for i := range 3 {
		require.NoError(t, w.Enqueue([]export.Named{n}, at.Add(time.Duration(i)*time.Second), time.Time{}))
	}
	t0 := time.Now()
	require.NoError(t, w.Close(context.Background()))
	require.GreaterOrEqual(t, time.Since(t0), 300*time.Millisecond, "Retry-After: 1 (s), capped at MaxBackoff")
	reqs := srv.requests()
	require.Len(t, reqs, 5, "503, 429, then 204; 400; 204")
	for i, want := range []int64{0, 0, 0, 1, 2} {
		require.Equal(t, at.UnixMilli()+1000*want, reqs[i][0].samples[0].ts, "request %d", i)
	}
	require.Equal(t, 2.0, testutil.ToFloat64(w.requests.WithLabelValues("retried")))
	require.Equal(t, 1.0, testutil.ToFloat64(w.requests.WithLabelValues("rejected")))
	require.Equal(t, 2.0, testutil.ToFloat64(w.requests.WithLabelValues("ok")))
	require.Equal(t, 1.0, testutil.ToFloat64(w.dropped.WithLabelValues("rejected")))
	require.Equal(t, 0.0, testutil.ToFloat64(w.dropped.WithLabelValues("queue_full")))
	require.ErrorIs(t, w.Enqueue(nil, at, time.Time{}), ErrClosed)
}

// A full queue drops its oldest snapshot for the new one, counted; the one
// being sent is not sent twice.
func TestQueueFull(t *testing.T) {
	release := make(chan struct{})
	srv := newServer(t, func(n int, ss []series) (int, string) {
		if n == 0 {
			<-release
		}
		return http.StatusNoContent, ""
	})
	w := newWriter(t, Config{URL: srv.URL, QueueSize: 2})
	n := rwBlob(t)
	require.NoError(t, w.Enqueue([]export.Named{n}, at, time.Time{}))
	require.Eventually(t, func() bool { return len(srv.requests()) == 0 && w.Queued() == 1 }, 5*time.Second, time.Millisecond)
	time.Sleep(10 * time.Millisecond) // the first request is under way (or about to be): the order below does not depend on it
	for i := 1; i <= 3; i++ {
		require.NoError(t, w.Enqueue([]export.Named{n}, at.Add(time.Duration(i)*time.Second), time.Time{}))
	}
	require.Equal(t, 2, w.Queued())
	require.Equal(t, 2.0, testutil.ToFloat64(w.dropped.WithLabelValues("queue_full")))
	close(release)
	require.NoError(t, w.Close(context.Background()))
	var got []int64
	for _, r := range srv.requests() {
		got = append(got, (r[0].samples[0].ts-at.UnixMilli())/1000)
	}
	require.Equal(t, []int64{0, 2, 3}, got, "0 was under way; 1 dropped for 3")
}

// A server that refuses native histograms (Prometheus without
// --enable-feature=native-histograms answers 500 "native histograms are
// disabled") gets the same snapshot again as classic buckets, and classic
// buckets from then on, at the fixed scale collectors share.
func TestNativeFallback(t *testing.T) {
	srv := newServer(t, func(n int, ss []series) (int, string) {
		for _, s := range ss {
			if len(s.histograms) > 0 {
				return http.StatusInternalServerError, "native histograms are disabled"
			}
		}
		return http.StatusNoContent, ""
	})
	w := newWriter(t, Config{URL: srv.URL})
	require.True(t, w.Native())
	n := rwBlob(t)
	require.NoError(t, w.Enqueue([]export.Named{n}, at, time.Time{}))
	require.NoError(t, w.Enqueue([]export.Named{n}, at.Add(time.Second), time.Time{}))
	require.NoError(t, w.Close(context.Background()))
	require.False(t, w.Native())
	reqs := srv.requests()
	require.Len(t, reqs, 3)
	var buckets []string
	for _, l := range lines(reqs[1]) {
		if strings.HasPrefix(l, "rw_lat_tdigest_native") {
			buckets = append(buckets, strings.TrimSuffix(l, "@1700000100000"))
		}
	}
	// Scale 3: bounds 2^(i/8). The digest's CDF between its means puts
	// the counts near them (3; 10; 19, 20; 49, 50; 900 interpolated
	// toward 50 by the digest).
	require.Contains(t, buckets, "rw_lat_tdigest_native_bucket{host=a,le=+Inf} 7")
	require.Contains(t, buckets, "rw_lat_tdigest_native_bucket{host=a,le=939.0121402415833} 7", "900 in the last bucket")
	require.Contains(t, buckets, "rw_lat_tdigest_native_count{host=a} 7")
	require.Contains(t, buckets, "rw_lat_tdigest_native_sum{host=a} 1051")
	require.Contains(t, buckets, "rw_lat_tdigest_native_bucket{host=a,le=3.084421650815882} 1", "3 in (2^(12/8), 2^(13/8)]")
	var next []string
	for _, l := range lines(reqs[1]) {
		next = append(next, strings.Replace(l, "@1700000100000", "@1700000101000", 1))
	}
	require.Equal(t, next, lines(reqs[2]), "the same series after")
	require.Equal(t, 0.0, testutil.ToFloat64(w.dropped.WithLabelValues("rejected")))
}

// Close gives up at its context's end: what is left is counted as dropped
// and the error says so.
func TestCloseDrops(t *testing.T) {
	srv := newServer(t, func(int, []series) (int, string) { return http.StatusBadGateway, "down" })
	w := newWriter(t, Config{URL: srv.URL})
	n := rwBlob(t)
	for i := range 3 {
		require.NoError(t, w.Enqueue([]export.Named{n}, at.Add(time.Duration(i)*time.Second), time.Time{}))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := w.Close(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorContains(t, err, "3 snapshots not sent")
	require.Equal(t, 3.0, testutil.ToFloat64(w.dropped.WithLabelValues("shutdown")))
	require.Equal(t, 0, w.Queued())
}

func TestNewErrors(t *testing.T) {
	for _, cfg := range []Config{{}, {URL: "ftp://x/y"}, {URL: "http://"}, {URL: "http://h/w", QueueSize: -1}, {URL: "http://h/w", Lookback: -time.Second},
		{URL: "http://h/w", Labels: []export.Label{{Name: "le", Value: "1"}}}, {URL: "http://h/w", Options: export.Options{NativeScale: 9}},
		{URL: "http://h/w", Labels: []export.Label{{Name: "collector", Value: ""}}},
		{URL: "http://h/w", Labels: []export.Label{{Name: export.VersionLabel, Value: "1"}}}} {
		_, err := New(cfg)
		require.ErrorIs(t, err, voi.ErrInvalid, "%+v", cfg)
	}
}

// Remote write 1.0 allows no empty label value: New refuses one in
// Config.Labels (above), and a Named's label with an empty value is left
// out, as Prometheus takes it for no label; its data is sent, under the
// label set the storage would give it, and a Config label it named empty
// is added.
func TestEmptyLabelValueLeftOut(t *testing.T) {
	srv := newServer(t, nil)
	w := newWriter(t, Config{URL: srv.URL, Labels: []export.Label{{Name: "collector", Value: "c1"}}})
	n := rwBlob(t)
	n.Labels = append(n.Labels, export.Label{Name: "zone", Value: ""}, export.Label{Name: "collector", Value: ""})
	require.NoError(t, w.Enqueue([]export.Named{n}, at, time.Time{}))
	require.NoError(t, w.Close(context.Background()))
	reqs := srv.requests()
	require.Len(t, reqs, 1)
	require.Equal(t, rwBlobLines, lines(reqs[0]))
	require.Len(t, reqs[0], 11)
	for _, s := range reqs[0] {
		for _, l := range s.labels {
			require.NotEmpty(t, l.value, "%s: label %q", s, l.name)
		}
	}
}

// Blobs of templates whose names sanitise alike ("RW" and "rw") write the
// same series: a request holding one twice is refused whole by
// Prometheus ("duplicate sample for timestamp"). The first template's is
// sent, the other's counted (name_clash), and series only the second
// template writes are sent; a blob the mapping refuses is counted too
// (unmappable), each once however often the snapshot is retried. Before,
// the request held both and an unmappable blob vanished uncounted.
func TestNameClashAndUnmappableCounted(t *testing.T) {
	srv := newServer(t, func(n int, _ []series) (int, string) {
		if n == 0 {
			return http.StatusServiceUnavailable, "" // one retry
		}
		return http.StatusNoContent, ""
	})
	w := newWriter(t, Config{URL: srv.URL, Labels: []export.Label{{Name: "collector", Value: "c1"}}})
	first := rwBlob(t)
	tp, err := tpl.NewRegistry().New("rw")
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "lat", DType: voi.IntU32, Stats: []tpl.StatSpec{tpl.Sum()}}))
	b := blob.New(tp, blob.NewEnv(nil, 1))
	require.NoError(t, b.UpdateU32(0, 5))
	same := export.Named{Blob: b, Template: tp, Labels: first.Labels}
	other := export.Named{Blob: b, Template: tp, Labels: []export.Label{{Name: "host", Value: "b"}}}
	bad := export.Named{Blob: b, Template: first.Template, Labels: first.Labels} // not the blob's template
	require.NoError(t, w.Enqueue([]export.Named{first, same, bad, other}, at, time.Time{}))
	require.NoError(t, w.Close(context.Background()))
	reqs := srv.requests()
	require.Len(t, reqs, 2)
	require.Equal(t, append(slices.Clone(rwBlobLines), "rw_lat_total{collector=c1,host=b} 5@1700000100000"), lines(reqs[1]))
	require.Equal(t, 1.0, testutil.ToFloat64(w.omitted.WithLabelValues("name_clash")))
	require.Equal(t, 1.0, testutil.ToFloat64(w.omitted.WithLabelValues("unmappable")))
}

// Two blobs of one template under {host=a} and {host=a,zone=""} (a
// library's Source may hand out such label sets; remote write leaves out a
// label of empty value) write one series each: sent twice in one request
// with different values, Prometheus refuses the whole request ("duplicate
// sample for timestamp", a 400 the Writer does not retry), and every other
// series of the snapshot is lost with it. The first blob's series is
// sent, the other's counted (name_clash). Before, the request held each
// of rwBlob's series twice and was refused: the server below answers as
// Prometheus does.
func TestOneTemplateOneSeriesSentOnce(t *testing.T) {
	srv := newServer(t, func(_ int, ss []series) (int, string) {
		seen := map[string]bool{}
		for _, s := range ss {
			k := strings.Fields(s.String())[0]
			if seen[k] {
				return http.StatusBadRequest, "duplicate sample for timestamp: " + k
			}
			seen[k] = true
		}
		return http.StatusNoContent, ""
	})
	w := newWriter(t, Config{URL: srv.URL, Labels: []export.Label{{Name: "collector", Value: "c1"}}})
	first := rwBlob(t)
	second := rwBlob(t)
	require.NoError(t, second.Blob.UpdateU32(0, 7))
	second.Labels = append(slices.Clone(second.Labels), export.Label{Name: "zone", Value: ""})
	other := rwBlob(t)
	other.Labels = []export.Label{{Name: "host", Value: "b"}}
	require.NoError(t, w.Enqueue([]export.Named{first, second, other}, at, time.Time{}))
	require.NoError(t, w.Close(context.Background()))
	reqs := srv.requests()
	require.Len(t, reqs, 1)
	want := slices.Clone(rwBlobLines)
	for _, l := range rwBlobLines {
		want = append(want, strings.Replace(l, "host=a", "host=b", 1))
	}
	require.Equal(t, want, lines(reqs[0]))
	require.Len(t, reqs[0], 22, "and the two native histograms")
	require.Equal(t, 1.0, testutil.ToFloat64(w.requests.WithLabelValues("ok")))
	require.Equal(t, 0.0, testutil.ToFloat64(w.dropped.WithLabelValues("rejected")))
	require.Equal(t, 4.0, testutil.ToFloat64(w.omitted.WithLabelValues("name_clash")), "second's sum, histogram, summary and native histogram")
}

// Run with an interval of 0 or less enqueues every DefaultInterval: it
// called time.NewTicker with it, which panics (the command's
// -remote-write-interval 0 took the process down).
func TestRunNonPositiveInterval(t *testing.T) {
	for _, every := range []time.Duration{0, -time.Second} {
		srv := newServer(t, nil)
		w := newWriter(t, Config{URL: srv.URL})
		n := rwBlob(t)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		w.Run(ctx, export.SourceFunc(func() []export.Named { return []export.Named{n} }), every, time.Now)
		cancel()
		require.NoError(t, w.Close(context.Background()))
		require.Empty(t, srv.requests(), "nothing sent within 20 ms of a %v interval", every)
	}
}
