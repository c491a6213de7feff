package collector_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/export/collector"
)

// BenchmarkScrape10k: one GET /metrics of 10,000 TCP_DEFAULT aggregates
// (each with two short labels), through the handler, uncompressed and
// gzipped.
func BenchmarkScrape10k(b *testing.B) {
	tp, bs := demoBlobs(b, 64)
	s, err := collector.New(collector.Config{Templates: tp.Registry()})
	require.NoError(b, err)
	for i := range 10000 {
		code, body := post(b, s, http.MethodPost, fmt.Sprintf("host=h%05d&svc=api", i), bs[i%len(bs)].Bytes())
		require.Equal(b, http.StatusNoContent, code, body)
	}
	// The first scrape renders every aggregate; the next ones reuse the
	// lines of those that did not change (all of them here).
	s.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/metrics", nil))
	for _, enc := range []string{"identity", "gzip"} {
		b.Run(enc, func(b *testing.B) {
			b.ReportAllocs()
			var size int
			for b.Loop() {
				w := httptest.NewRecorder()
				r := httptest.NewRequest(http.MethodGet, "/metrics", nil)
				r.Header.Set("Accept-Encoding", enc) // Prometheus asks for gzip
				s.ServeHTTP(w, r)
				size = w.Body.Len()
				_, _ = io.Copy(io.Discard, w.Body)
			}
			b.ReportMetric(float64(size), "bytes/scrape")
		})
	}
}

// BenchmarkScrape10kChanged: as BenchmarkScrape10k, but every aggregate
// got a blob since the last scrape (posted untimed), so each scrape folds
// and renders all 10,000 afresh: the load test's scrape under ingest.
func BenchmarkScrape10kChanged(b *testing.B) {
	tp, bs := demoBlobs(b, 64)
	s, err := collector.New(collector.Config{Templates: tp.Registry()})
	require.NoError(b, err)
	postAll := func() {
		for i := range 10000 {
			code, body := post(b, s, http.MethodPost, fmt.Sprintf("host=h%05d&svc=api", i), bs[i%len(bs)].Bytes())
			require.Equal(b, http.StatusNoContent, code, body)
		}
	}
	postAll()
	s.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/metrics", nil))
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		postAll()
		b.StartTimer()
		w := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		r.Header.Set("Accept-Encoding", "gzip")
		s.ServeHTTP(w, r)
	}
}
