package collector_test

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/export/aggregate"
	"github.com/statsblob/statsblob/export/collector"
	"github.com/statsblob/statsblob/export/internal/fixture"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// postH is post with request headers.
func postH(t testing.TB, h http.Handler, path, query string, body []byte, hdr map[string]string) (int, string) {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
	r.URL.RawQuery = query
	for k, v := range hdr {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Code, w.Body.String()
}

// The lock-out (issue 21, issue 22 defect 4): a blob whose SUM
// would overflow the aggregate's is accepted, an INT_U32 SUM keeps
// counting exactly past 2^32, and what passes 2^64 saturates, counted.
func TestOverflowNeverRefused(t *testing.T) {
	forEachStack(t, func(t *testing.T, via func(testing.TB, *collector.Server) http.Handler) {
		s, tp := newServer(t, collector.Config{})
		h := via(t, s)
		kb := fixture.KitchenBlob(tp)
		// "lat" (VOI 3) is an INT_U32 SUM: 1,051 per blob; make it 2^32-1.
		lat := kb.Clone()
		st, err := lat.Fetch(3, voi.Sum)
		require.NoError(t, err)
		binary.LittleEndian.PutUint32(st.Data, math.MaxUint32)
		big := blob.New(tp, nil)
		require.NoError(t, big.UpdateU64(0, math.MaxUint64-100))
		for _, b := range [][]byte{lat.Bytes(), lat.Bytes(), kb.Bytes(), big.Bytes(), kb.Bytes()} {
			code, body := post(t, h, http.MethodPost, "host=a", b)
			require.Equal(t, http.StatusNoContent, code, body)
		}
		// The posts are folded when the aggregate is first read: read it before
		// the registry, whose collectors run concurrently (the saturation
		// counter is read beside the scrape that folds).
		require.Len(t, s.Blobs(), 1)
		require.NoError(t, testutil.GatherAndCompare(s.Registry(), strings.NewReader(`# HELP kitchen_bytes_total statsblob KITCHEN bytes: SUM (INT_U64)
	# TYPE kitchen_bytes_total counter
	kitchen_bytes_total{host="a"} 1.8446744073709552e+19
	# HELP kitchen_lat_total statsblob KITCHEN lat: SUM (INT_U64)
	# TYPE kitchen_lat_total counter
	kitchen_lat_total{host="a"} 8.589936692e+09
	# HELP statsblob_collector_saturated_total Statistics of an aggregate that saturated at their 64-bit limit (each also counted in the statistic's errors).
	# TYPE statsblob_collector_saturated_total counter
	statsblob_collector_saturated_total 2
	`), "kitchen_bytes_total", "kitchen_lat_total", "statsblob_collector_saturated_total"))
		v, err := s.Blobs()[0].Blob.FetchU64(0, voi.Sum)
		require.NoError(t, err)
		require.Equal(t, uint64(math.MaxUint64), v)
		l, err := s.Blobs()[0].Blob.FetchU64(3, voi.Sum)
		require.NoError(t, err)
		require.Equal(t, 2*uint64(math.MaxUint32)+2*1051, l)
		require.Equal(t, []uint64{5}, s.Merged())
	})
}

func TestIdempotentPosts(t *testing.T) {
	forEachStack(t, func(t *testing.T, via func(testing.TB, *collector.Server) http.Handler) {
		s, tp := newServer(t, collector.Config{})
		h := via(t, s)
		kb := fixture.KitchenBlob(tp).Bytes()
		hdr := func(id, seq string) map[string]string {
			return map[string]string{aggregate.HeaderSender: id, aggregate.HeaderSeq: seq}
		}
		for _, p := range []struct {
			h    map[string]string
			code int
			msg  string
		}{
			{hdr("web1", "1"), 204, ""},
			{hdr("web1", "1"), 204, ""}, // a retry that had arrived: not added again
			{hdr("web1", "2"), 204, ""},
			{hdr("web2", "1"), 204, ""},
			{nil, 204, ""},
			{nil, 204, ""},
			{hdr("web1", ""), 400, "Statsblob-Sender and Statsblob-Seq go together"},
			{hdr("", "3"), 400, "go together"},
			{hdr("web1", "-3"), 400, "not a decimal uint64"},
			{hdr("web\xe9", "3"), 400, "holds byte 0xe9"}, // obs-text: HTTP servers pass it, control bytes they refuse
		} {
			code, body := postH(t, h, "/v1/blobs", "host=a", kb, p.h)
			require.Equal(t, p.code, code, body)
			require.Contains(t, body, p.msg)
		}
		require.Equal(t, []uint64{5}, s.Merged())
		require.Equal(t, 4.0, counter(t, s, "sender").value())
		require.NoError(t, testutil.GatherAndCompare(s.Registry(), strings.NewReader(`# HELP statsblob_collector_duplicates_total Posts answered 204 without being added again: their sender's sequence number was already added.
	# TYPE statsblob_collector_duplicates_total counter
	statsblob_collector_duplicates_total 1
	`), "statsblob_collector_duplicates_total"))
		// A refused post is not recorded: the retry of its number is added.
		code, _ := postH(t, h, "/v1/blobs", "host=a", []byte("junk"), hdr("web1", "3"))
		require.Equal(t, 400, code)
		code, _ = postH(t, h, "/v1/blobs", "host=a", kb, hdr("web1", "3"))
		require.Equal(t, 204, code)
		require.Equal(t, []uint64{6}, s.Merged())
	})
}

// A post refused with 429 (a new label set beyond -max-aggregates)
// changes nothing, sender headers or not: each left a sequence mark keyed
// by its label set in its sender's state (2 KB for these labels), never
// dropped while the sender posted (and never at all with Window 0), so
// refused posts alone grew the heap without bound.
func TestRefusedTrackedPostsKeepNoMemory(t *testing.T) {
	s, tp := newServer(t, collector.Config{MaxAggregates: 1})
	kb := fixture.KitchenBlob(tp).Bytes()
	code, body := post(t, s, http.MethodPost, "host=a", kb)
	require.Equal(t, http.StatusNoContent, code, body)
	long := strings.Repeat("v", 120)
	query := func(i int) string { // 16 labels, about 2 KB: not cached
		q := fmt.Sprintf("l00=%d", i)
		for j := 1; j < 16; j++ {
			q += fmt.Sprintf("&l%02d=%s", j, long)
		}
		return q
	}
	hdr := map[string]string{aggregate.HeaderSender: "attacker", aggregate.HeaderSeq: "1"}
	for i := range 100 { // warm up
		code, _ := postH(t, s, "/v1/blobs", query(i), kb, hdr)
		require.Equal(t, http.StatusTooManyRequests, code)
	}
	before := heapInUse()
	const n = 5000
	for i := range n {
		code, _ := postH(t, s, "/v1/blobs", query(100+i), kb, hdr)
		require.Equal(t, http.StatusTooManyRequests, code)
	}
	grown := int64(heapInUse()) - int64(before)
	runtime.KeepAlive(s)
	t.Logf("heap grew %d bytes for %d refused posts", grown, n)
	require.Less(t, grown, int64(1<<20)) // 10.5 MB before
}

// A batch without frames carries no blob, so nothing of it was added
// before: it is no duplicate. It was counted in
// statsblob_collector_duplicates_total (the signal of retries and
// replays), which any client could inflate at will with 4-byte posts.
func TestEmptyBatchIsNoDuplicate(t *testing.T) {
	s, _ := newServer(t, collector.Config{})
	for seq := range 3 {
		code, body := postH(t, s, "/v1/batch", "", []byte(collector.BatchMagic),
			map[string]string{aggregate.HeaderSender: "s", aggregate.HeaderSeq: strconv.Itoa(seq + 1)})
		require.Equal(t, http.StatusNoContent, code, body)
	}
	require.Equal(t, 0.0, counterValue(t, s, "statsblob_collector_duplicates_total"))
	require.Empty(t, s.Blobs())
}

func batch(t testing.TB, frames ...any) []byte {
	t.Helper()
	body := []byte(collector.BatchMagic)
	for i := 0; i < len(frames); i += 2 {
		var err error
		body, err = collector.AppendBatchFrame(body, frames[i].(string), frames[i+1].([]byte))
		require.NoError(t, err)
	}
	return body
}

func TestBatch(t *testing.T) {
	forEachStack(t, func(t *testing.T, via func(testing.TB, *collector.Server) http.Handler) {
		s, tp := newServer(t, collector.Config{MaxAggregates: 3})
		h := via(t, s)
		kb := fixture.KitchenBlob(tp).Bytes()
		code, body := postH(t, h, "/v1/batch", "svc=api", batch(t, "host=a", kb, "host=b", kb, "host=a", kb), nil)
		require.Equal(t, http.StatusNoContent, code, body)
		require.Equal(t, []uint64{2, 1}, s.Merged())
		named := s.Blobs()
		require.Equal(t, "host", named[0].Labels[0].Name)
		require.Equal(t, "svc", named[0].Labels[1].Name)
		require.Equal(t, 3.0, counter(t, s, "").value())

		// A batch with a bad frame adds nothing, whatever the frame.
		before := snapshot(s)
		other := blob.New(fixture.Kitchen(), nil).Bytes() // the same layout
		binary.LittleEndian.PutUint32(other[8:], 7)       // another hash
		for _, c := range []struct {
			name, query string
			body        []byte
			code        int
			reason, msg string
		}{
			{"no magic", "", kb, 400, "batch", `does not start with "SBB1"`},
			{"cut short", "", batch(t, "host=a", kb)[:100], 400, "batch", "frame 0 at 4"},
			{"bad blob", "", batch(t, "host=a", kb, "host=a", kb[:40]), 400, "blob", "frame 1: blob:"},
			{"bad labels", "", batch(t, "host=a", kb, "le=1", kb), 400, "labels", `frame 1: `},
			{"label twice", "host=x", batch(t, "host=a", kb), 400, "labels", `frame 0: label "host" given 2 times`},
			{"unknown template", "", batch(t, "host=a", kb, "host=a", other), 422, "template", "frame 1: unknown template hash 7 (00000007)"},
			{"limit", "", batch(t, "host=a", kb, "host=c", kb, "host=d", kb), 429, "limit", "at most 3"},
		} {
			t.Run(c.name, func(t *testing.T) {
				rejected := counter(t, s, c.reason).value()
				code, body := postH(t, h, "/v1/batch", c.query, c.body, nil)
				require.Equal(t, c.code, code, body)
				require.Contains(t, body, c.msg)
				require.Equal(t, rejected+1, counter(t, s, c.reason).value())
				require.Equal(t, before[:2], snapshot(s)[:2], "nothing added")
			})
		}
		// A batch refused for the label-set limit says when to retry, as a
		// blob does.
		r := httptest.NewRequest(http.MethodPost, "/v1/batch", bytes.NewReader(batch(t, "host=e", kb, "host=f", kb)))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		require.Equal(t, http.StatusTooManyRequests, w.Code, w.Body.String())
		require.NotEmpty(t, w.Header().Get("Retry-After"))

		// Idempotent as a whole.
		hdr := map[string]string{aggregate.HeaderSender: "s", aggregate.HeaderSeq: "9"}
		for range 2 {
			code, body := postH(t, h, "/v1/batch", "svc=api", batch(t, "host=b", kb, "host=b", kb), hdr)
			require.Equal(t, http.StatusNoContent, code, body)
		}
		require.Equal(t, uint64(3), s.Merged()[1])
	})
}

func TestDecodeBatch(t *testing.T) {
	f := func(body []byte, want []string, wantErr string) {
		t.Helper()
		var got []string
		err := collector.DecodeBatch(body, func(i int, labels string, blob []byte) error {
			got = append(got, labels+"|"+string(blob))
			return nil
		})
		require.Equal(t, want, got)
		if wantErr == "" {
			require.NoError(t, err)
			return
		}
		require.ErrorIs(t, err, voi.ErrInvalid)
		require.ErrorContains(t, err, wantErr)
	}
	f([]byte("SBB1"), nil, "")
	f([]byte("SBB1\x01\x00a\x02\x00xy\x00\x00\x01\x00z"), []string{"a|xy", "|z"}, "")
	f([]byte("SBB"), nil, "does not start")
	f([]byte("XBB1"), nil, "does not start")
	f([]byte("SBB1\x01"), nil, "frame 0 at 4: labels length cut short")
	f([]byte("SBB1\x01\x00a\x02"), nil, "frame 0 at 4: 1 bytes of labels and a blob length")
	f([]byte("SBB1\x00\x00\x00\x00"), nil, "frame 0 at 4: blob of 0 bytes")
	f([]byte("SBB1\x00\x00\x01\x00z\x00\x00\x05\x00abc"), []string{"|z"}, "frame 1 at 9: blob of 5 bytes, 3 left")
	_, err := collector.AppendBatchFrame(nil, "", nil)
	require.ErrorIs(t, err, voi.ErrInvalid)
	_, err = collector.AppendBatchFrame(nil, "", make([]byte, 65536))
	require.ErrorIs(t, err, voi.ErrInvalid)
}

// FuzzDecodeBatch: DecodeBatch reads any bytes without panicking; the
// frames it hands out, framed again, give back the bytes it read.
func FuzzDecodeBatch(f *testing.F) {
	f.Add([]byte("SBB1\x01\x00a\x02\x00xy\x00\x00\x01\x00z"))
	f.Add([]byte("SBB1\x00\x00\x00\x00"))
	f.Add([]byte("SBB1\xff\xff"))
	f.Fuzz(func(t *testing.T, body []byte) {
		again := []byte(collector.BatchMagic)
		err := collector.DecodeBatch(body, func(i int, labels string, blob []byte) error {
			var err error
			again, err = collector.AppendBatchFrame(again, labels, blob)
			require.NoError(t, err)
			return nil
		})
		if err == nil {
			require.Equal(t, body, again)
			return
		}
		require.ErrorIs(t, err, voi.ErrInvalid)
		if !bytes.HasPrefix(body, []byte(collector.BatchMagic)) {
			require.Equal(t, collector.BatchMagic, string(again), "no frame without the magic")
			return
		}
		require.True(t, bytes.HasPrefix(body, again), "the frames read are the body's start")
	})
}

// scrapeLines returns the lines of GET /metrics, sorted, and the
// Content-Type; with gz the answer is asked for gzipped.
func scrapeLines(t *testing.T, s http.Handler, gz bool) ([]string, string) {
	t.Helper()
	r := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	if gz {
		r.Header.Set("Accept-Encoding", "gzip")
	}
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	require.Equal(t, http.StatusOK, w.Code)
	body := w.Body.Bytes()
	if gz {
		require.Equal(t, "gzip", w.Header().Get("Content-Encoding"))
		zr, err := gzip.NewReader(bytes.NewReader(body))
		require.NoError(t, err)
		body, err = io.ReadAll(zr)
		require.NoError(t, err)
	}
	lines := strings.Split(strings.TrimSuffix(string(body), "\n"), "\n")
	slices.Sort(lines)
	return stable(lines), w.Header().Get("Content-Type")
}

// stable leaves out the lines of the metrics that change between two
// gatherings: the go_ and process_ ones, the scrape interval.
func stable(lines []string) []string {
	return slices.DeleteFunc(lines, func(l string) bool {
		name := strings.TrimPrefix(strings.TrimPrefix(l, "# HELP "), "# TYPE ")
		return strings.HasPrefix(name, "go_") || strings.HasPrefix(name, "process_") ||
			strings.HasPrefix(name, "statsblob_collector_scrape_interval_seconds")
	})
}

// registryLines returns the lines client_golang's registry and expfmt
// write for the server's metrics, sorted.
func registryLines(t *testing.T, s *collector.Server) []string {
	t.Helper()
	mfs, err := s.Registry().Gather()
	require.NoError(t, err)
	var buf bytes.Buffer
	for _, mf := range mfs {
		_, err := expfmt.MetricFamilyToText(&buf, mf)
		require.NoError(t, err)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	slices.Sort(lines)
	return stable(lines)
}

// /metrics is written without client_golang's const metrics: it must say
// exactly what the registry says.
func TestMetricsTextMatchesRegistry(t *testing.T) {
	s, tp := newServer(t, collector.Config{})
	kb := fixture.KitchenBlob(tp).Bytes()
	empty := blob.New(tp, nil).Bytes()
	for _, q := range []string{"host=a", "host=a", "host=b%22%5Cq%0Ax&svc=api", "svc=x", "host=z"} {
		code, body := post(t, s, http.MethodPost, q, kb)
		require.Equal(t, http.StatusNoContent, code, body)
	}
	code, _ := post(t, s, http.MethodPost, "host=empty", empty)
	require.Equal(t, http.StatusNoContent, code)
	got, ct := scrapeLines(t, s, false)
	require.Equal(t, "text/plain; version=0.0.4; charset=utf-8", ct)
	want := registryLines(t, s)
	require.Equal(t, want, got)
	require.Contains(t, got, `kitchen_bytes_total{host="b\"\\q\nx",svc="api"} 1448`)
	gz, _ := scrapeLines(t, s, true)
	require.Equal(t, want, gz)

	// A changed aggregate is rendered again, the others come from the
	// cache; an aggregate gone (a new window) is gone.
	code, _ = post(t, s, http.MethodPost, "host=z", kb)
	require.Equal(t, http.StatusNoContent, code)
	got, _ = scrapeLines(t, s, false)
	require.Equal(t, registryLines(t, s), got)
	require.Contains(t, got, `kitchen_bytes_total{host="z"} 2896`)
	s.Rotate()
	code, _ = post(t, s, http.MethodPost, "host=y", kb)
	require.Equal(t, http.StatusNoContent, code)
	got, _ = scrapeLines(t, s, false)
	require.Equal(t, registryLines(t, s), got)
	require.NotContains(t, strings.Join(got, "\n"), `host="z"`)
}

// /v1/blobs and /v1/batch decode zstd each to its own limit: a batch over
// MaxBody bytes decoded is accepted after a zstd blob, and a blob is
// still held to MaxBody after a batch.
func TestZstdLimitsPerEndpoint(t *testing.T) {
	forEachStack(t, func(t *testing.T, via func(testing.TB, *collector.Server) http.Handler) {
		s, tp := newServer(t, collector.Config{})
		h := via(t, s)
		kb := fixture.KitchenBlob(tp).Bytes()
		enc, err := zstd.NewWriter(nil)
		require.NoError(t, err)
		zh := map[string]string{"Content-Encoding": "zstd"}
		code, body := postH(t, h, "/v1/blobs", "host=a", enc.EncodeAll(kb, nil), zh)
		require.Equal(t, http.StatusNoContent, code, body)
		var frames []any
		for len(frames)/2*len(kb) <= collector.DefaultMaxBody {
			frames = append(frames, "host=b", kb)
		}
		code, body = postH(t, h, "/v1/batch", "", enc.EncodeAll(batch(t, frames...), nil), zh)
		require.Equal(t, http.StatusNoContent, code, body)
		require.Equal(t, []uint64{1, uint64(len(frames) / 2)}, s.Merged())
		code, body = postH(t, h, "/v1/blobs", "host=a", enc.EncodeAll(make([]byte, collector.DefaultMaxBody+1), nil), zh)
		require.Equal(t, http.StatusRequestEntityTooLarge, code, body)
		require.Equal(t, "decoded body over the limit of 65535 bytes (-max-body)\n", body)
	})
}

// A zstd body is decoded at most to its endpoint's limit and a block
// (128 KiB): the decoder was shared by /v1/blobs and /v1/batch and
// bounded by the larger limit (MaxBatchBody), so that a /v1/blobs post of
// 2 KiB of zstd had 16 MiB decoded before its 413 for passing -max-body
// (64 KiB). A frame that announces its size is refused before decoding,
// one that does not (a streaming encoder's) once decoding passes the
// limit. A window of 1 MiB is still taken, over -max-body as it is.
func TestZstdBlobDecodesAtMostMaxBody(t *testing.T) {
	s, tp := newServer(t, collector.Config{})
	zh := map[string]string{"Content-Encoding": "zstd"}
	var wide bytes.Buffer // streamed: the window is not fitted to the blob
	zw, err := zstd.NewWriter(&wide, zstd.WithWindowSize(1<<20))
	require.NoError(t, err)
	_, err = zw.Write(fixture.KitchenBlob(tp).Bytes())
	require.NoError(t, err)
	require.NoError(t, zw.Flush()) // the frame's header out before its size is known
	require.NoError(t, zw.Close())
	var h zstd.Header
	require.NoError(t, h.Decode(wide.Bytes()))
	require.Equal(t, uint64(1<<20), h.WindowSize)
	code, body := postH(t, s, "/v1/blobs", "host=a", wide.Bytes(), zh) // the decoder made
	require.Equal(t, http.StatusNoContent, code, body)
	big := make([]byte, collector.MaxBatchBody)
	var streamed bytes.Buffer
	zw.Reset(&streamed)
	_, err = zw.Write(big)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	for _, c := range []struct {
		name   string
		body   []byte
		hasFCS bool
	}{{"announced", zw.EncodeAll(big, nil), true}, {"streamed", streamed.Bytes(), false}} {
		var h zstd.Header
		require.NoError(t, h.Decode(c.body))
		require.Equal(t, c.hasFCS, h.HasFCS, c.name)
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		code, body := postH(t, s, "/v1/blobs", "host=a", c.body, zh)
		runtime.ReadMemStats(&m1)
		require.Equal(t, http.StatusRequestEntityTooLarge, code, c.name)
		require.Equal(t, "decoded body over the limit of 65535 bytes (-max-body)\n", body, c.name)
		alloc := m1.TotalAlloc - m0.TotalAlloc
		t.Logf("%s: a %d-byte zstd body of %d bytes: %d bytes allocated", c.name, len(c.body), len(big), alloc)
		require.Less(t, alloc, uint64(1<<20), c.name)
	}
	require.Equal(t, []uint64{1}, s.Merged())
}

// A batch's frames share their labels' parse, key and admission: a 2 MiB
// batch of 64-byte blobs (about 30,000 frames) under 16 long URL labels,
// with and without a token that forces a label, allocates what its
// frames' blobs and items take, about 24 times its size (before, each
// frame parsed the URL's labels again, since
// queries over 512 bytes are not cached, and built its own key: 537 MB).
func TestBatchLabelsParsedOnce(t *testing.T) {
	reg, body, frames, query := longLabelsBatch(t)
	toks, err := collector.ParseTokens([]byte(`[{"token": "` + anyToken + `", "post": true, "labels": {"svc": "api"}}]`))
	require.NoError(t, err)
	for _, c := range []struct {
		name   string
		cfg    collector.Config
		header map[string]string
		labels int
	}{
		{"URL labels", collector.Config{Templates: reg}, nil, 16},
		{"and a forced label", collector.Config{Templates: reg, Tokens: toks, MaxLabels: 17}, map[string]string{"Authorization": "Bearer " + anyToken}, 17},
	} {
		t.Run(c.name, func(t *testing.T) {
			// The least of three posts, each to a server of its own:
			// TotalAlloc counts the whole process's allocations, and
			// other tests' goroutines may still run.
			least := uint64(math.MaxUint64)
			for range 3 {
				s, err := collector.New(c.cfg)
				require.NoError(t, err)
				var m0, m1 runtime.MemStats
				runtime.ReadMemStats(&m0)
				code, msg := postH(t, s, "/v1/batch", query, body, c.header)
				runtime.ReadMemStats(&m1)
				require.Equal(t, http.StatusNoContent, code, msg)
				least = min(least, m1.TotalAlloc-m0.TotalAlloc)
				require.Equal(t, []uint64{uint64(frames)}, s.Merged())
				require.Len(t, s.Blobs()[0].Labels, c.labels)
			}
			t.Logf("%d frames, %d bytes: %d MB allocated", frames, len(body), least>>20)
			// Each frame's blob and item take about 1.2 KB (24 times the
			// batch's bytes; more under the race detector).
			require.Less(t, least, uint64(64*len(body)))
		})
	}
}

// tinyBlob returns a registry of one template, TINY, of a single INT_U64
// VOI keeping a SUM, and the bytes of a blob of it (64 of them).
func tinyBlob(t *testing.T) (*tpl.Registry, []byte) {
	t.Helper()
	reg := tpl.NewRegistry()
	tiny, err := reg.New("TINY")
	require.NoError(t, err)
	require.NoError(t, tiny.AddVOI(tpl.VOIDef{ID: 0, Name: "x", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}))
	b := blob.New(tiny, nil)
	require.NoError(t, b.UpdateU64(0, 1))
	return reg, b.Bytes()
}

// longLabelsBatch returns tinyBlob's registry, a batch of about 2 MiB of
// its blobs without labels of their own (and how many), and a URL query
// of 16 labels of 128-byte names and values, too long for the label
// cache.
func longLabelsBatch(t *testing.T) (reg *tpl.Registry, body []byte, frames int, query string) {
	t.Helper()
	reg, bb := tinyBlob(t)
	body = []byte(collector.BatchMagic)
	var err error
	for ; len(body) < 2<<20; frames++ {
		body, err = collector.AppendBatchFrame(body, "", bb)
		require.NoError(t, err)
	}
	var q []string
	for i := range 16 {
		q = append(q, fmt.Sprintf("%s%02d=%s", strings.Repeat("n", 126), i, strings.Repeat("v", 128)))
	}
	return reg, body, frames, strings.Join(q, "&")
}

// A shipper's retry of a post whose answer was lost is a duplicate even
// when several short windows rotate before it arrives (the shipper waits
// up to a minute between retries, a Retry-After up to five): the sender's
// number is kept for -sequence-mark-age, not only two windows. Before,
// with -window 10s, a retry 30 s later was added a second time.
func TestRetryAfterShortWindowsIsADuplicate(t *testing.T) {
	ck := &clock{t: time.Unix(1_700_000_000, 0)}
	s, tp := newServer(t, collector.Config{Window: 10 * time.Second, Now: ck.now})
	kb := fixture.KitchenBlob(tp).Bytes()
	h := map[string]string{aggregate.HeaderSender: "web1", aggregate.HeaderSeq: "1"}
	code, body := postH(t, s, "/v1/blobs", "host=a", kb, h) // answered; the answer is lost
	require.Equal(t, http.StatusNoContent, code, body)
	posts := uint64(0)
	for i := range 3 {
		ck.set(time.Unix(1_700_000_010+10*int64(i), 0))
		posts += s.Rotate().Posts
	}
	code, body = postH(t, s, "/v1/blobs", "host=a", kb, h) // the retry
	require.Equal(t, http.StatusNoContent, code, body)
	require.Equal(t, uint64(1), posts+uint64(len(s.Merged())), "the post counted once")
}
