package collector_test

import (
	"bytes"
	"compress/gzip"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/statsblob/statsblob/export/collector"
	"github.com/statsblob/statsblob/export/internal/fixture"
)

// FuzzPost posts any bytes with any query: the answer is 204 and one more
// blob merged, or a 4xx and nothing changed; a scrape works either way.
func FuzzPost(f *testing.F) {
	tp := fixture.Kitchen()
	kb := fixture.KitchenBlob(tp).Bytes()
	f.Add(kb, "host=a")
	f.Add(kb[:100], "host=a&le=1")
	f.Add([]byte("x"), "a=%zz")
	s, err := collector.New(collector.Config{Templates: tp.Registry(), MaxAggregates: 8})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte, query string) {
		before := snapshot(s)
		merged := s.Merged()
		code, msg := post(t, s, http.MethodPost, query, body)
		switch {
		case code == http.StatusNoContent:
			var n0, n1 uint64
			for _, n := range merged {
				n0 += n
			}
			for _, n := range s.Merged() {
				n1 += n
			}
			if n1 != n0+1 {
				t.Fatalf("204 but %d blobs merged, was %d", n1, n0)
			}
		case code >= 400 && code < 500:
			if !slices.Equal(before, snapshot(s)) {
				t.Fatalf("%d %q changed the aggregates", code, msg)
			}
		default:
			t.Fatalf("status %d %q", code, msg)
		}
		if _, err := s.Registry().Gather(); err != nil {
			t.Fatalf("scrape after %d: %v", code, err)
		}
	})
}

// FuzzEncodedBody posts any bytes as a gzip or zstd body: the answer is
// 204 and one more blob merged, or a 4xx and nothing changed.
func FuzzEncodedBody(f *testing.F) {
	tp := fixture.Kitchen()
	kb := fixture.KitchenBlob(tp).Bytes()
	var gzb bytes.Buffer
	zw := gzip.NewWriter(&gzb)
	_, _ = zw.Write(kb)
	_ = zw.Close()
	enc, _ := zstd.NewWriter(nil)
	f.Add(gzb.Bytes(), false)
	f.Add(enc.EncodeAll(kb, nil), true)
	f.Add(enc.EncodeAll(make([]byte, 70000), nil), true)
	s, err := collector.New(collector.Config{Templates: tp.Registry(), MaxAggregates: 8})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte, isZstd bool) {
		before, merged := snapshot(s), s.Merged()
		r := httptest.NewRequest(http.MethodPost, "/v1/blobs?h=a", bytes.NewReader(body))
		r.Header.Set("Content-Encoding", map[bool]string{false: "gzip", true: "zstd"}[isZstd])
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		switch {
		case w.Code == http.StatusNoContent:
			var n0, n1 uint64
			for _, n := range merged {
				n0 += n
			}
			for _, n := range s.Merged() {
				n1 += n
			}
			if n1 != n0+1 {
				t.Fatalf("204 but %d blobs merged, was %d", n1, n0)
			}
		case w.Code >= 400 && w.Code < 500:
			if !slices.Equal(before, snapshot(s)) {
				t.Fatalf("%d %q changed the aggregates", w.Code, w.Body.String())
			}
		default:
			t.Fatalf("status %d %q", w.Code, w.Body.String())
		}
	})
}
