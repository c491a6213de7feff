package collector_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/export/collector"
)

// scrape10k returns a collector holding 10,000 TCP_DEFAULT aggregates
// (each with two short labels), already scraped once, and a function that
// posts a blob to each of them again.
func scrape10k(b *testing.B) (*collector.Server, func()) {
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
	// The first scrape renders every aggregate; the next ones reuse the
	// lines of those that did not change.
	s.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/metrics", nil))
	return s, postAll
}

// scrape serves one GET /metrics with the encoding enc and returns the
// body's length.
func scrape(s *collector.Server, enc string) int {
	w := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	r.Header.Set("Accept-Encoding", enc) // Prometheus asks for gzip
	s.ServeHTTP(w, r)
	return w.Body.Len()
}

// BenchmarkScrape10k: one GET /metrics of 10,000 unchanged aggregates,
// through the handler, uncompressed and gzipped.
func BenchmarkScrape10k(b *testing.B) {
	s, _ := scrape10k(b)
	for _, enc := range []string{"identity", "gzip"} {
		b.Run(enc, func(b *testing.B) {
			b.ReportAllocs()
			var size int
			for b.Loop() {
				size = scrape(s, enc)
			}
			b.ReportMetric(float64(size), "bytes/scrape")
		})
	}
}

// BenchmarkScrape10kChanged: as BenchmarkScrape10k, but every aggregate
// got a blob since the last scrape (posted untimed), so each scrape folds
// and renders all 10,000 afresh: the load test's scrape under ingest.
func BenchmarkScrape10kChanged(b *testing.B) {
	s, postAll := scrape10k(b)
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		postAll()
		b.StartTimer()
		scrape(s, "gzip")
	}
}
