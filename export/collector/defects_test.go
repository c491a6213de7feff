package collector_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/export"
	"github.com/statsblob/statsblob/export/collector"
	"github.com/statsblob/statsblob/export/internal/fixture"
)

// Defect 1 of issue 22: the aggregate key joined names and values with NUL,
// and a value may hold NUL, so ?svc=x%00zz%00y and ?svc=x&zz=y were one
// aggregate and the second label set never appeared.
func TestLabelSetsWithNULStayApart(t *testing.T) {
	forEachStack(t, func(t *testing.T, via func(testing.TB, *collector.Server) http.Handler) {
		s, tp := newServer(t, collector.Config{})
		h := via(t, s)
		kb := fixture.KitchenBlob(tp).Bytes()
		for _, q := range []string{"svc=x%00zz%00y", "svc=x&zz=y", "svc=x%00zz%00y"} {
			code, body := post(t, h, http.MethodPost, q, kb)
			require.Equal(t, http.StatusNoContent, code, body)
		}
		var got [][]export.Label
		for _, n := range s.Blobs() {
			got = append(got, n.Labels)
		}
		require.Equal(t, [][]export.Label{
			{{Name: "svc", Value: "x"}, {Name: "zz", Value: "y"}},
			{{Name: "svc", Value: "x\x00zz\x00y"}},
		}, got)
		require.Equal(t, []uint64{1, 2}, s.Merged())
	})
}

// heapInUse returns the live heap after a full collection.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// Defect 2 of issue 22: labels were substrings of the request's query,
// itself a substring of the request line, so every new label set pinned
// the whole line (up to the 1 MB of headers the server allowed). An
// aggregate must hold copies of its labels only.
func TestLabelsDoNotPinTheRequest(t *testing.T) {
	forEachStack(t, func(t *testing.T, via func(testing.TB, *collector.Server) http.Handler) {
		const sets, pad = 200, 64 << 10
		s, tp := newServer(t, collector.Config{})
		h := via(t, s)
		kb := fixture.KitchenBlob(tp).Bytes()
		// Warm up: the first aggregate of a template builds shared state.
		code, _ := post(t, h, http.MethodPost, "svc=warm", kb)
		require.Equal(t, http.StatusNoContent, code)
		before := heapInUse()
		for i := range sets {
			line := strings.Repeat("p", pad) + fmt.Sprintf("svc=v%d", i)
			r := httptest.NewRequest(http.MethodPost, "/v1/blobs", strings.NewReader(string(kb)))
			r.URL.RawQuery = line[pad:] // what url.Parse does: a substring of the line
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			require.Equal(t, http.StatusNoContent, w.Code, w.Body.String())
		}
		perSet := float64(heapInUse()-before) / sets
		t.Logf("%.0f bytes of heap per label set (request lines of %d bytes)", perSet, pad)
		// An aggregate is its blob (1,612 bytes here) and a copy of its
		// labels: under 8 KiB (2.2 KiB measured), an eighth of the request line.
		require.Less(t, perSet, float64(8<<10))
		require.Len(t, s.Blobs(), sets+1)
	})
}
