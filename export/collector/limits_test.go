package collector_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/export/aggregate"
	"github.com/statsblob/statsblob/export/collector"
	"github.com/statsblob/statsblob/export/internal/fixture"
	"github.com/statsblob/statsblob/ship"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// hits returns statsblob_collector_limit_hits_total{limit}.
func hits(t testing.TB, s *collector.Server, limit string) float64 {
	t.Helper()
	return collector.LimitHits(s, limit)
}

// gauge returns the value of an unlabelled gauge of s's registry.
func gauge(t testing.TB, s *collector.Server, name string) float64 {
	t.Helper()
	mfs, err := s.Registry().Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.Metric[0].Gauge.GetValue()
		}
	}
	t.Fatalf("no gauge %q", name)
	return 0
}

func gz(t testing.TB, p []byte) []byte {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	_, err := w.Write(p)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return b.Bytes()
}

// Each request limit refuses with its status and a reason naming the
// flag, counts the refusal under its name, and changes nothing.
func TestRequestLimits(t *testing.T) {
	forEachStack(t, func(t *testing.T, via func(testing.TB, *collector.Server) http.Handler) {
		ck := &clock{t: time.Unix(1000, 0)}
		reg := tpl.NewRegistry()
		tp := fixture.Kitchen()
		_, err := collector.LoadTemplates(reg, mustJSON(t, tp))
		require.NoError(t, err)
		other, _ := reg.New("OTHER")
		require.NoError(t, other.AddVOI(tpl.VOIDef{ID: 0, Name: "x", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}))
		s, err := collector.New(collector.Config{Templates: reg, MaxLabels: 2, MaxLabelBytes: 8, MaxAggregates: 3,
			MaxAggregatesPerTemplate: 2, MaxBody: 2000, Window: time.Minute, Now: ck.now})
		require.NoError(t, err)
		h := via(t, s)
		good := fixture.KitchenBlob(tp).Bytes()
		ob := blob.New(other, nil).Bytes()
		for _, q := range []string{"h=a", "h=b"} {
			code, body := post(t, h, http.MethodPost, q, good)
			require.Equal(t, http.StatusNoContent, code, body)
		}
		ck.set(time.Unix(1020, 0))

		cases := []struct {
			name, query, encoding string
			body                  []byte
			chunked               bool
			status                int
			limit, msg            string
			retryAfter            string
		}{
			{"labels", "a=1&b=2&c=3", "", good, false, 400, "labels", "3 labels, at most 2 (-max-labels)\n", ""},
			{"label value bytes", "h=123456789", "", good, false, 400, "label_bytes", `label "h": name or value over 8 bytes (-max-label-bytes)` + "\n", ""},
			{"label name bytes", "abcdefghi=1", "", good, false, 400, "label_bytes", `label "abcdefghi": name or value over 8 bytes (-max-label-bytes)` + "\n", ""},
			{"label sets per template", "h=c", "", good, false, 429, "label_sets_per_template",
				"aggregate: too many aggregates of one template: 2 aggregates of template hash " + fmt.Sprintf("%d (%08x)", tp.Hash(), tp.Hash()) +
					" in this window and 1 new, at most 2 (-max-aggregates-per-template)\n", "40"},
			{"body bytes", "h=a", "", make([]byte, 2001), false, 413, "body_bytes", "body of 2001 bytes over the limit of 2000 (-max-body)\n", ""},
			{"body bytes chunked", "h=a", "", make([]byte, 2001), true, 413, "body_bytes", "body over the limit of 2000 bytes (-max-body)\n", ""},
			{"body bytes far over", "h=a", "", make([]byte, 5000), false, 413, "body_bytes", "body of 5000 bytes over the limit of 2000 (-max-body)\n", ""},
			{"body bytes far over chunked", "h=a", "", make([]byte, 5000), true, 413, "body_bytes", "body over the limit of 2000 bytes (-max-body)\n", ""},
			{"decoded body bytes", "h=a", "gzip", gz(t, make([]byte, 2001)), false, 413, "body_bytes", "decoded body over the limit of 2000 bytes (-max-body)\n", ""},
		}
		before := snapshot(s)
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				n := hits(t, s, c.limit)
				r := httptest.NewRequest(http.MethodPost, "/v1/blobs?"+c.query, bytes.NewReader(c.body))
				if c.chunked {
					r.ContentLength = -1
				}
				if c.encoding != "" {
					r.Header.Set("Content-Encoding", c.encoding)
				}
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				require.Equal(t, c.status, w.Code)
				require.Equal(t, c.msg, w.Body.String())
				require.Equal(t, c.retryAfter, w.Header().Get("Retry-After"))
				require.Equal(t, n+1, hits(t, s, c.limit))
				require.Equal(t, before, snapshot(s))
			})
		}

		// The total: the other template's label sets fill the window.
		code, body := post(t, h, http.MethodPost, "h=a", ob)
		require.Equal(t, http.StatusNoContent, code, body)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/v1/blobs?h=b", bytes.NewReader(ob)))
		require.Equal(t, http.StatusTooManyRequests, w.Code)
		require.Equal(t, "aggregate: too many aggregates: 3 aggregates in this window and 1 new, at most 3 (-max-aggregates)\n", w.Body.String())
		require.Equal(t, "40", w.Header().Get("Retry-After"), "the window ends at 1060")
		require.Equal(t, 1.0, hits(t, s, "label_sets"))

		// A gzip body is decoded; another encoding or bad gzip is refused.
		r := httptest.NewRequest(http.MethodPost, "/v1/blobs?h=a", bytes.NewReader(gz(t, good)))
		r.Header.Set("Content-Encoding", "gzip")
		w = httptest.NewRecorder()
		h.ServeHTTP(w, r)
		require.Equal(t, http.StatusNoContent, w.Code, w.Body.String())
		for _, c := range []struct{ enc, body, msg string }{
			{"br", "x", `Content-Encoding "br": gzip, zstd or none`},
			{"gzip", "not gzip", "the gzip body is not a valid gzip stream"},
			{"gzip", string(gz(t, good)[:40]), "the gzip body is not a valid gzip stream"},
		} {
			r := httptest.NewRequest(http.MethodPost, "/v1/blobs?h=a", strings.NewReader(c.body))
			r.Header.Set("Content-Encoding", c.enc)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			require.Equal(t, c.msg+"\n", w.Body.String())
			require.Contains(t, []int{400, 415}, w.Code)
		}
		require.Equal(t, 3.0, counter(t, s, "encoding").value())

		// zstd too, its window and its decoded size bounded.
		zw := func(window int, single bool, p []byte) []byte {
			enc, err := zstd.NewWriter(nil, zstd.WithWindowSize(window), zstd.WithSingleSegment(single))
			require.NoError(t, err)
			return enc.EncodeAll(p, nil)
		}
		for _, c := range []struct {
			name   string
			body   []byte
			status int
			msg    string
		}{
			{"zstd", zw(1<<20, true, good), 204, ""},
			{"zstd over the limit", zw(1<<20, true, make([]byte, 2001)), 413, "decoded body over the limit of 2000 bytes (-max-body)\n"},
			{"zstd window of 8 MiB", zw(8<<20, false, make([]byte, 2<<20)), 400, "the zstd body is not a valid zstd stream\n"}, // 228 bytes
			{"zstd cut", zw(1<<20, true, good)[:30], 400, "the zstd body is not a valid zstd stream\n"},
		} {
			r := httptest.NewRequest(http.MethodPost, "/v1/blobs?h=a", bytes.NewReader(c.body))
			r.Header.Set("Content-Encoding", "zstd")
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			require.Equal(t, c.status, w.Code, c.name)
			require.Equal(t, c.msg, w.Body.String(), c.name)
		}
	})
}

// A gzip or zstd body whose compressed bytes pass -max-body and its 1 KiB
// of slack is a 413 on both listeners, chunked or not, before more than
// that is read: net/http cut such a gzip body at the slack and answered
// 400 "not a valid gzip stream", and a zstd one too unless its
// Content-Length gave it away, where the ingest listener answered 413.
// The gzip body is valid: a header with an extra field of 65535 bytes,
// then 4 KiB.
func TestLongCompressedBodyIs413(t *testing.T) {
	forEachStack(t, func(t *testing.T, via func(testing.TB, *collector.Server) http.Handler) {
		s, _ := newServer(t, collector.Config{})
		h := via(t, s)
		noise := make([]byte, collector.DefaultMaxBody+2048) // neither gzip nor zstd can shrink it
		_, err := rand.NewChaCha8([32]byte{}).Read(noise)
		require.NoError(t, err)
		var gzb bytes.Buffer
		gw := gzip.NewWriter(&gzb)
		gw.Extra = make([]byte, math.MaxUint16)
		_, err = gw.Write(noise[:4096])
		require.NoError(t, err)
		require.NoError(t, gw.Close())
		enc, err := zstd.NewWriter(nil)
		require.NoError(t, err)
		zb := enc.EncodeAll(noise, nil)
		const most = collector.DefaultMaxBody + 1024
		for _, c := range []struct {
			encoding string
			body     []byte
		}{{"gzip", gzb.Bytes()}, {"zstd", zb}} {
			require.Greater(t, len(c.body), most, c.encoding)
			for _, chunked := range []bool{false, true} {
				n, size := hits(t, s, "body_bytes"), counter(t, s, "size").value()
				r := httptest.NewRequest(http.MethodPost, "/v1/blobs?h=a", bytes.NewReader(c.body))
				r.Header.Set("Content-Encoding", c.encoding)
				want := fmt.Sprintf("compressed body of %d bytes over the limit of %d (-max-body)\n", len(c.body), most)
				if chunked { // read up to the limit
					r.ContentLength = -1
					want = fmt.Sprintf("compressed body over the limit of %d bytes (-max-body)\n", most)
				}
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				require.Equal(t, http.StatusRequestEntityTooLarge, w.Code, "%s chunked %v", c.encoding, chunked)
				require.Equal(t, want, w.Body.String())
				require.Equal(t, n+1, hits(t, s, "body_bytes"))
				require.Equal(t, size+1, counter(t, s, "size").value())
			}
		}
		require.Empty(t, s.Blobs())
	})
}

// Label sets idle for the TTL expire, with or without a window, freeing
// their place; the 429 of a full collector says when one may be free.
func TestLabelSetsExpire(t *testing.T) {
	for _, window := range []time.Duration{0, time.Hour} {
		ck := &clock{t: time.Unix(1000, 0)}
		s, tp := newServer(t, collector.Config{MaxAggregates: 2, LabelTTL: time.Minute, Window: window, Now: ck.now})
		kb := fixture.KitchenBlob(tp).Bytes()
		post(t, s, http.MethodPost, "h=a", kb)
		ck.set(time.Unix(1030, 0))
		post(t, s, http.MethodPost, "h=b", kb)
		require.Zero(t, s.Expire())
		// Full: a place frees when h=a expires, at 1060.
		w := httptest.NewRecorder()
		s.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/v1/blobs?h=c", bytes.NewReader(kb)))
		require.Equal(t, http.StatusTooManyRequests, w.Code)
		require.Equal(t, "30", w.Header().Get("Retry-After"))
		ck.set(time.Unix(1045, 0))
		w = httptest.NewRecorder()
		s.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/v1/blobs?h=c", bytes.NewReader(kb)))
		require.Equal(t, "15", w.Header().Get("Retry-After"))

		ck.set(time.Unix(1061, 0))
		require.Equal(t, 1, s.Expire())
		require.Equal(t, 1, s.Aggregates())
		code, body := post(t, s, http.MethodPost, "h=c", kb)
		require.Equal(t, http.StatusNoContent, code, body)
		code, _ = post(t, s, http.MethodPost, "h=a", kb)
		require.Equal(t, http.StatusTooManyRequests, code)
		ck.set(time.Unix(1200, 0))
		require.Equal(t, 2, s.Expire())
		require.Zero(t, s.Aggregates())
		code, _ = post(t, s, http.MethodPost, "h=a", kb)
		require.Equal(t, http.StatusNoContent, code, "a label set that expired comes back afresh")
		require.Equal(t, []uint64{1}, s.Merged())
		require.NoError(t, testutilCompare(s, "statsblob_collector_label_sets_expired_total", 3))
	}
}

// With a delta pusher a window ships whole: nothing expires within it.
func TestNoExpiryUnderDeltaPush(t *testing.T) {
	ck := &clock{t: time.Unix(1000, 0)}
	s, tp := newServer(t, collector.Config{LabelTTL: time.Minute, Window: time.Hour, Now: ck.now})
	s.NewPusher(&fakeExporter{}, collector.PushConfig{Temporality: deltaTemporality})
	post(t, s, http.MethodPost, "h=a", fixture.KitchenBlob(tp).Bytes())
	ck.set(time.Unix(2000, 0))
	require.Zero(t, s.Expire())
	require.Equal(t, 1, s.Aggregates())
}

// Any consumer of closed windows (a remote writer, through OnClose) gets
// them whole: a label set idle past LabelTTL within the window still ships
// with it (before, only a delta pusher stopped expiry, and remote write
// with -window never sent acknowledged posts of label sets that expired).
func TestClosedWindowHoldsIdleLabelSets(t *testing.T) {
	ck := &clock{t: time.Unix(0, 0)}
	s, tp := newServer(t, collector.Config{Window: 2 * time.Hour, LabelTTL: time.Hour, Now: ck.now})
	var shipped []collector.Closed
	s.OnClose(func(c collector.Closed) { shipped = append(shipped, c) })
	code, body := post(t, s, http.MethodPost, "host=a", fixture.KitchenBlob(tp).Bytes())
	require.Equal(t, http.StatusNoContent, code, body)
	ck.set(time.Unix(3700, 0)) // RunWindows's sweep, the label set idle past LabelTTL
	require.Zero(t, s.Expire())
	ck.set(time.Unix(7200, 0))
	s.Rotate()
	require.Len(t, shipped, 1)
	require.Equal(t, uint64(1), shipped[0].Posts, "an accepted post is in the window that ships")
	require.Len(t, shipped[0].Blobs, 1)
}

// A scrape serves at most MaxScrapeSeries samples and about MaxScrapeBytes
// bytes: later aggregates are left out, counted and shown.
func TestScrapeBounds(t *testing.T) {
	tp := fixture.Kitchen()
	kb := fixture.KitchenBlob(tp).Bytes()
	scrape := func(s *collector.Server) string {
		w := httptest.NewRecorder()
		s.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		require.Equal(t, http.StatusOK, w.Code)
		return w.Body.String()
	}
	full, _ := newServer(t, collector.Config{})
	post(t, full, http.MethodPost, "h=a", kb)
	one, size := 0, 0 // the sample lines of one aggregate, and their bytes
	for _, l := range strings.Split(scrape(full), "\n") {
		if strings.Contains(l, `h="a"`) {
			one++
			size += len(l) + 1
		}
	}
	require.Greater(t, one, 20)

	for _, c := range []struct {
		cfg   collector.Config
		limit string
	}{
		{collector.Config{MaxScrapeSeries: one + one/2}, "scrape_series"},
		{collector.Config{MaxScrapeBytes: size + size/2}, "scrape_bytes"},
	} {
		s, _ := newServer(t, c.cfg)
		for _, q := range []string{"h=a", "h=b", "h=c"} {
			post(t, s, http.MethodPost, q, kb)
		}
		text := scrape(s)
		require.Equal(t, one, strings.Count(text, `h="a"`), c.limit)
		require.Zero(t, strings.Count(text, `h="b"`), c.limit)
		require.Zero(t, strings.Count(text, `h="c"`), c.limit)
		require.Equal(t, 2.0, collector.Omitted(s))
		require.Equal(t, 1.0, hits(t, s, c.limit))
	}
}

// /healthz answers while the process serves; /readyz until Drain.
func TestHealth(t *testing.T) {
	s, _ := newServer(t, collector.Config{})
	get := func(path string) (int, string, string) {
		w := httptest.NewRecorder()
		s.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		return w.Code, w.Body.String(), w.Header().Get("Retry-After")
	}
	f := func(path string, code int, body, ra string) {
		t.Helper()
		c, b, r := get(path)
		require.Equal(t, code, c)
		require.Equal(t, body, b)
		require.Equal(t, ra, r)
	}
	f("/healthz", 200, "ok\n", "")
	f("/readyz", 200, "ready\n", "")
	s.Drain()
	f("/healthz", 200, "ok\n", "")
	f("/readyz", 503, "shutting down\n", "1")
	// go_ and process_ metrics are served.
	_, text, _ := get("/metrics")
	require.Contains(t, text, "\ngo_goroutines ")
	require.Contains(t, text, "\nprocess_resident_memory_bytes ")
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

var deltaTemporality = metricdata.DeltaTemporality

// testutilCompare compares an unlabelled counter of s's registry.
func testutilCompare(s *collector.Server, name string, v float64) error {
	mfs, err := s.Registry().Gather()
	if err != nil {
		return err
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			if got := mf.Metric[0].Counter.GetValue(); got != v {
				return fmt.Errorf("%s = %v, want %v", name, got, v)
			}
			return nil
		}
	}
	return fmt.Errorf("no %s", name)
}

// A window shorter than the interval between a client's scrapes is warned
// of, in the log and in a gauge: whole windows close unseen.
func TestWindowShorterThanScrape(t *testing.T) {
	ck := &clock{t: time.Unix(1000, 0)}
	var logged bytes.Buffer
	s, _ := newServer(t, collector.Config{Window: 10 * time.Second, Now: ck.now,
		Log: slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}}))})
	scrapeAt := func(sec int64, from string) {
		t.Helper()
		ck.set(time.Unix(sec, 0))
		r := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		r.RemoteAddr = from
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		require.Equal(t, http.StatusOK, w.Code)
	}
	scrapeAt(1000, "10.0.0.1:1000")
	scrapeAt(1005, "10.0.0.2:1000") // another scraper: its own interval
	require.Zero(t, gauge(t, s, "statsblob_collector_window_shorter_than_scrape"))
	scrapeAt(1015, "10.0.0.1:2000")
	require.Equal(t, 1.0, gauge(t, s, "statsblob_collector_window_shorter_than_scrape"))
	require.Equal(t, 15.0, gauge(t, s, "statsblob_collector_scrape_interval_seconds"))
	scrapeAt(1030, "10.0.0.1:2000") // still short: warned once
	require.Equal(t, `level=WARN msg="the window is shorter than the scrape interval: windows close unseen by Prometheus" window=10s scrape_interval=15s`+"\n", logged.String())
	scrapeAt(1035, "10.0.0.1:2000")
	require.Zero(t, gauge(t, s, "statsblob_collector_window_shorter_than_scrape"))
}

// A label TTL shorter than the scrape interval is warned of in the log.
func TestTTLShorterThanScrape(t *testing.T) {
	ck := &clock{t: time.Unix(1000, 0)}
	var logged bytes.Buffer
	s, _ := newServer(t, collector.Config{LabelTTL: 10 * time.Second, Now: ck.now,
		Log: slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}}))})
	for _, sec := range []int64{1000, 1005, 1020, 1040} {
		ck.set(time.Unix(sec, 0))
		w := httptest.NewRecorder()
		s.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		require.Equal(t, http.StatusOK, w.Code)
	}
	require.Equal(t, `level=WARN msg="the label TTL is shorter than the scrape interval: a label set may expire before it is scraped" label_ttl=10s scrape_interval=15s`+"\n", logged.String())
}

// Defect 4 of issue 22: a blob whose SUM is 2^64-1 less the aggregate's
// total was taken (204), and then every ordinary post of that label set
// got 409 until restart. The aggregates of package export/aggregate are
// wide and saturate instead of refusing.
func TestOverflowDoesNotLockOutALabelSet(t *testing.T) {
	s, tp := newServer(t, collector.Config{})
	kb := fixture.KitchenBlob(tp)
	code, _ := post(t, s, http.MethodPost, "h=a", kb.Bytes())
	require.Equal(t, http.StatusNoContent, code)
	sum, err := kb.FetchU64(0, voi.Sum)
	require.NoError(t, err)
	hostile := blob.New(tp, nil)
	require.NoError(t, hostile.UpdateU64(0, math.MaxUint64-sum))
	code, _ = post(t, s, http.MethodPost, "h=a", hostile.Bytes())
	require.Equal(t, http.StatusNoContent, code)
	for range 3 {
		code, body := post(t, s, http.MethodPost, "h=a", kb.Bytes())
		require.Equal(t, http.StatusNoContent, code, body)
	}
	require.Equal(t, []uint64{5}, s.Merged())
}

// RunWindows sweeps idle label sets with Window 0 too.
func TestRunWindowsExpires(t *testing.T) {
	s, tp := newServer(t, collector.Config{LabelTTL: 50 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.RunWindows(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	code, _ := post(t, s, http.MethodPost, "h=a", fixture.KitchenBlob(tp).Bytes())
	require.Equal(t, http.StatusNoContent, code)
	require.Eventually(t, func() bool { return s.Aggregates() == 0 }, 10*time.Second, 10*time.Millisecond)
}

// Expiry under load: label sets expire and come back while posts run; the
// counts the limits use stay right (four label sets never meet a limit of
// four), and nothing races.
func TestExpireUnderLoad(t *testing.T) {
	s, tp := newServer(t, collector.Config{MaxAggregates: 4, MaxAggregatesPerTemplate: 4, LabelTTL: time.Microsecond})
	kb := fixture.KitchenBlob(tp).Bytes()
	stop := make(chan struct{})
	var bg sync.WaitGroup
	var expired atomic.Int64
	bg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
				expired.Add(int64(s.Expire()))
			}
		}
	})
	var wg sync.WaitGroup
	for p := range 4 {
		wg.Go(func() {
			for range 300 {
				code, body := post(t, s, http.MethodPost, fmt.Sprintf("h=%d", p), kb)
				if code != http.StatusNoContent {
					t.Errorf("%d %s", code, body)
					return
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	bg.Wait()
	t.Logf("%d label sets expired under load", expired.Load())
	require.Positive(t, expired.Load())
	time.Sleep(time.Millisecond)
	s.Expire()
	require.Zero(t, s.Aggregates())
	for p := range 4 {
		code, body := post(t, s, http.MethodPost, fmt.Sprintf("h=new%d", p), kb)
		require.Equal(t, http.StatusNoContent, code, body)
	}
}

// QueueBytes bounds the accepted blobs queued unfolded: past it a post
// folds its aggregate's queue at once (statsblob_collector_folds_total),
// the queued bytes never exceed it, and the aggregates hold exactly what
// was posted, as with the default budget, under which these few blobs
// all stay queued.
func TestQueueBytes(t *testing.T) {
	tp, bs := demoBlobs(t, 12)
	size := len(bs[0].Bytes())
	_, err := collector.New(collector.Config{Templates: tp.Registry(), QueueBytes: -1})
	require.ErrorIs(t, err, voi.ErrInvalid)
	for _, budget := range []int64{0, int64(2*size + size/2)} {
		t.Run(fmt.Sprint(budget), func(t *testing.T) {
			s, err := collector.New(collector.Config{Templates: tp.Registry(), QueueBytes: budget})
			require.NoError(t, err)
			sent := make([][]*blob.Blob, 4)
			queued := 0
			for i, b := range bs {
				require.Len(t, b.Bytes(), size)
				code, body := post(t, s, http.MethodPost, fmt.Sprintf("host=h%d", i%4), b.Bytes())
				require.Equal(t, http.StatusNoContent, code, body)
				sent[i%4] = append(sent[i%4], b)
				queued += size
				q := gauge(t, s, "statsblob_collector_queued_bytes")
				if budget == 0 {
					require.Equal(t, float64(queued), q)
				} else {
					require.LessOrEqual(t, q, float64(budget))
				}
			}
			folds := counterValue(t, s, "statsblob_collector_folds_total")
			if budget == 0 {
				require.Zero(t, folds)
			} else {
				require.Positive(t, folds)
			}
			require.Equal(t, []uint64{3, 3, 3, 3}, s.Merged())
			for h, n := range s.Blobs() {
				require.Equal(t, totalsOf(t, sent[h]...), totalsOf(t, n.Blob), "host h%d", h)
			}
		})
	}
}

// What a sender id costs was bounded by no limit: each (sender id, label
// set) a post reached kept a level reading (up to MaxLevelSenders per
// label set) and a sequence mark (up to aggregate.DefaultMaxSenders
// senders), for two windows or, without -window, for as long as the label
// set was posted to. One batch of a frame per label set, from a new
// Statsblob-Sender each time, kept about 400 bytes a frame: 10,000 label
// sets of 4,096 senders, 16.8 GB. MaxLevelReadings and MaxSequenceMarks
// bound them over all label sets and senders: past them the least
// recently heard reading gives way to the new one, and a post without a
// place for its marks is added without the duplicate check, each counted
// in statsblob_collector_limit_hits_total; no post is refused, and the
// levels exported are the freshest senders'.
func TestCyclingSenderIDsPinBoundedMemory(t *testing.T) {
	reg := tpl.NewRegistry()
	tp, err := reg.New("POOL")
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "inflight", DType: voi.IntS64, Flags: voi.FlagRelUpdate, Stats: []tpl.StatSpec{tpl.Max()}}))
	for _, bad := range []collector.Config{{Templates: reg, MaxLevelReadings: -1}, {Templates: reg, MaxSequenceMarks: -1}} {
		_, err := collector.New(bad)
		require.ErrorIs(t, err, voi.ErrInvalid)
	}
	const sets, senders, budget = 1000, 64, 2 * 1000
	s, err := collector.New(collector.Config{Templates: reg, MaxLevelReadings: budget, MaxSequenceMarks: budget,
		Now: func() time.Time { return time.Unix(1_700_000_000, 0) }})
	require.NoError(t, err)
	b := blob.New(tp, nil)
	require.NoError(t, b.UpdateRelS64(0, 1))
	body := []byte(collector.BatchMagic)
	for i := range sets {
		body, err = collector.AppendBatchFrame(body, fmt.Sprintf("pool=%d", i), b.Bytes())
		require.NoError(t, err)
	}
	post := func(sender string) {
		t.Helper()
		code, msg := postH(t, s, "/v1/batch", "", body, map[string]string{ship.HeaderSender: sender, ship.HeaderSeq: "1"})
		require.Equal(t, http.StatusNoContent, code, msg)
	}
	post("warm") // the label sets' aggregates, a reading and a mark each
	var m0, m1 runtime.MemStats
	s.Blobs() // folds the queues: the blobs queued (bounded by QueueBytes) are not counted
	runtime.GC()
	runtime.ReadMemStats(&m0)
	for i := range senders {
		post(fmt.Sprint("s", i))
	}
	s.Blobs()
	runtime.GC()
	runtime.ReadMemStats(&m1)
	grown := int64(m1.HeapAlloc) - int64(m0.HeapAlloc)
	t.Logf("%d batches of %d frames from new senders kept %.2f MB: %.0f bytes a (sender, label set)",
		senders, sets, float64(grown)/1e6, float64(grown)/(sets*senders))
	// Within the budgets, s0's 1,000 readings and marks (0.3 MB) and the
	// aggregates' folds: about 1.4 MB. Without them, 64,000 of each: 26 MB.
	require.Less(t, grown, int64(6<<20), "more than the budgets' readings and marks")
	runtime.KeepAlive(s)

	require.Equal(t, float64(budget), gauge(t, s, "statsblob_collector_level_readings"), "the budget full")
	require.Equal(t, float64(budget), gauge(t, s, "statsblob_collector_sequence_marks"), "the budget full")
	require.Equal(t, float64(senders*sets-(budget-sets)), hits(t, s, "level_readings"), "every reading past the budget evicts one")
	require.Equal(t, float64(senders-1), hits(t, s, "sequence_marks"), "s0 took the last places; the others' posts went unchecked")
	require.Equal(t, float64(senders-1), counterValue(t, s, "statsblob_collector_untracked_senders_total"))
	require.Equal(t, slices.Repeat([]uint64{1 + senders}, sets), s.Merged(), "nothing refused")
	post("warm") // tracked: a duplicate
	require.Equal(t, slices.Repeat([]uint64{1 + senders}, sets), s.Merged())
	post("s1") // untracked: its retry is added again
	require.Equal(t, slices.Repeat([]uint64{2 + senders}, sets), s.Merged())
	lines, _ := scrapeLines(t, s, false)
	require.Contains(t, lines, `pool_inflight{pool="7"} 2`, "the two freshest readings of each label set")
}

// The default budgets keep every reading and mark of the fleets the other
// limits let in: many senders on a few label sets (a label set's
// MaxLevelSenders; 100,000 senders, aggregate.DefaultMaxSenders), or a
// few senders on each of many label sets (DefaultMaxAggregates); and a
// fleet within the budgets hits neither.
func TestDefaultBudgetsFitLegitimateFleets(t *testing.T) {
	require.GreaterOrEqual(t, collector.DefaultMaxLevelReadings, 64*collector.MaxLevelSenders)
	require.GreaterOrEqual(t, collector.DefaultMaxLevelReadings, 26*collector.DefaultMaxAggregates)
	require.GreaterOrEqual(t, collector.DefaultMaxSequenceMarks, 10*aggregate.DefaultMaxSenders)
	require.GreaterOrEqual(t, collector.DefaultMaxSequenceMarks, 100*collector.DefaultMaxAggregates)

	reg := tpl.NewRegistry()
	tp, err := reg.New("POOL")
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "inflight", DType: voi.IntS64, Flags: voi.FlagRelUpdate, Stats: []tpl.StatSpec{tpl.Max()}}))
	const senders, sets = 50, 4
	s, err := collector.New(collector.Config{Templates: reg, MaxLevelReadings: senders * sets, MaxSequenceMarks: senders * sets})
	require.NoError(t, err)
	for round := range 3 {
		for i := range senders {
			for j := range sets {
				b := blob.New(tp, nil)
				require.NoError(t, b.UpdateRelS64(0, 1))
				hdr := map[string]string{ship.HeaderSender: fmt.Sprint("s", i), ship.HeaderSeq: fmt.Sprint(round + 1)}
				code, msg := postH(t, s, "/v1/blobs", fmt.Sprint("pool=", j), b.Bytes(), hdr)
				require.Equal(t, http.StatusNoContent, code, msg)
			}
		}
	}
	require.Zero(t, hits(t, s, "level_readings"))
	require.Zero(t, hits(t, s, "sequence_marks"))
	lines, _ := scrapeLines(t, s, false)
	require.Contains(t, lines, fmt.Sprintf(`pool_inflight{pool="3"} %d`, senders))
}
