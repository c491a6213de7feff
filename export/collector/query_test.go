package collector_test

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/export/collector"
	"github.com/statsblob/statsblob/export/internal/fixture"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// get serves a GET and returns the status, the body and the headers.
func get(t *testing.T, h http.Handler, target string, hdr map[string]string) (int, string, http.Header) {
	t.Helper()
	r := httptest.NewRequest(http.MethodGet, target, nil)
	for k, v := range hdr {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Code, w.Body.String(), w.Header()
}

var times = regexp.MustCompile(`"created":"[^"]*","lastreset":"[^"]*"`)

// sameStats: a and b hold the same statistics (their headers' times may
// differ).
func sameStats(t *testing.T, a, b *blob.Blob) {
	t.Helper()
	require.Equal(t, times.ReplaceAllString(string(a.AppendJSON(nil)), ""), times.ReplaceAllString(string(b.AppendJSON(nil)), ""))
}

func TestQueryAPI(t *testing.T) {
	c := &clock{t: time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)}
	s, tp := newServer(t, collector.Config{Now: c.now, History: 2})
	kb := fixture.KitchenBlob(tp).Bytes()
	for _, q := range []string{"host=web1&svc=api", "host=web1&svc=api", "host=web2&svc=api", "host=db1&svc=db", "svc=api"} {
		code, body := post(t, s, http.MethodPost, q, kb)
		require.Equal(t, 204, code, body)
	}
	wide, err := tpl.Widen(tp)
	require.NoError(t, err)
	wh := strconv.FormatUint(uint64(wide.Hash()), 10)
	agg := func(labels string, n int) string {
		return `{"template":"KITCHEN","hash":` + wh + `,"labels":{` + labels + `},"blobs":` + strconv.Itoa(n) + `,"window_start":"2026-11-27T12:00:00Z"}`
	}
	for _, c := range []struct{ query, want string }{
		{"", "[" + agg(`"host":"db1","svc":"db"`, 1) + "," + agg(`"host":"web1","svc":"api"`, 2) + "," +
			agg(`"host":"web2","svc":"api"`, 1) + "," + agg(`"svc":"api"`, 1) + "]"},
		{"?tpl=KITCHEN&host=web*", "[" + agg(`"host":"web1","svc":"api"`, 2) + "," + agg(`"host":"web2","svc":"api"`, 1) + "]"},
		{"?host=*&svc=a*i", "[" + agg(`"host":"web1","svc":"api"`, 2) + "," + agg(`"host":"web2","svc":"api"`, 1) + "]"},
		{"?host=*1", "[" + agg(`"host":"db1","svc":"db"`, 1) + "," + agg(`"host":"web1","svc":"api"`, 2) + "]"},
		{"?tpl=OTHER", "[]"},
	} {
		code, body, h := get(t, s, "/v1/aggregates"+c.query, nil)
		require.Equal(t, 200, code, body)
		require.Equal(t, "application/json", h.Get("Content-Type"))
		require.Equal(t, c.want+"\n", body, c.query)
	}

	// The merged blob: three posts of the kitchen blob, in the wide form.
	want := blob.New(wide, nil)
	k1, err := blob.FromBytes(kb, nil)
	require.NoError(t, err)
	_, err = blob.Fold(want, k1, k1, k1)
	require.NoError(t, err)
	code, body, h := get(t, s, "/v1/aggregate?tpl=KITCHEN&host=web*", nil)
	require.Equal(t, 200, code, body)
	require.Equal(t, "application/octet-stream", h.Get("Content-Type"))
	require.Equal(t, "2", h.Get("Statsblob-Aggregates"))
	require.Equal(t, "3", h.Get("Statsblob-Blobs"))
	require.Equal(t, "2026-11-27T12:00:00Z", h.Get("Statsblob-Window-Start"))
	got, err := blob.FromBytes([]byte(body), nil)
	require.NoError(t, err)
	sameStats(t, want, got)
	sum, err := got.Fetch(0, voi.Sum)
	require.NoError(t, err)
	require.Equal(t, uint64(3*1448), binary.LittleEndian.Uint64(sum.Data))

	code, body, h = get(t, s, "/v1/aggregate?tpl=KITCHEN&host=web*", map[string]string{"Accept": "application/json"})
	require.Equal(t, 200, code, body)
	require.Equal(t, "application/json", h.Get("Content-Type"))
	var doc struct {
		Template   string
		Aggregates int
		Blobs      uint64
		Blob       map[string]any
	}
	require.NoError(t, json.Unmarshal([]byte(body), &doc))
	require.Equal(t, "KITCHEN", doc.Template)
	require.Equal(t, 2, doc.Aggregates)
	require.Equal(t, uint64(3), doc.Blobs)
	require.Equal(t, "KITCHEN", doc.Blob["tplname"])

	for _, c := range []struct {
		query string
		code  int
		msg   string
	}{
		{"", 400, "query: tpl=NAME is required"},
		{"?tpl=NOPE", 404, `no aggregate of template "NOPE" matches`},
		{"?tpl=KITCHEN&host=nope", 404, "no aggregate"},
		{"?tpl=KITCHEN&window=-1", 404, "window -1: no such closed window kept yet"},
		{"?tpl=KITCHEN&window=-3", 400, "window \"-3\": 0 (the current window) to -2 (-history)"},
		{"?tpl=KITCHEN&window=1", 400, "window \"1\""},
		{"?tpl=KITCHEN&tpl=KITCHEN", 400, `"tpl" given 2 times`},
		{"?tpl=KITCHEN&host=", 400, "an empty name or value"},
		{"?tpl=KITCHEN&%zz", 400, "query"},
	} {
		code, body, _ := get(t, s, "/v1/aggregate"+c.query, nil)
		require.Equal(t, c.code, code, c.query)
		require.Contains(t, body, c.msg, c.query)
	}
	// Without -history a closed window is no window at all.
	s0, _ := newServer(t, collector.Config{})
	code, body, _ = get(t, s0, "/v1/aggregate?tpl=KITCHEN&window=-1", nil)
	require.Equal(t, 400, code)
	require.Contains(t, body, `window "-1": only 0, the current window: the collector keeps no closed windows (-history)`)

	w := httptest.NewRecorder()
	s.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/v1/aggregate?tpl=KITCHEN", nil))
	require.Equal(t, 405, w.Code)
	require.Equal(t, "GET, HEAD", w.Header().Get("Allow"))

	// History: the last two closed windows.
	for i := range 3 {
		c.set(c.now().Add(time.Minute))
		s.Rotate()
		for range i + 1 {
			code, body := post(t, s, http.MethodPost, "host=web1", kb)
			require.Equal(t, 204, code, body)
		}
	}
	for _, c := range []struct {
		window string
		blobs  string
		start  string
	}{
		{"0", "3", "2026-11-27T12:03:00Z"},
		{"-1", "2", "2026-11-27T12:02:00Z"},
		{"-2", "1", "2026-11-27T12:01:00Z"},
	} {
		code, body, h := get(t, s, "/v1/aggregate?tpl=KITCHEN&host=web1&window="+c.window, nil)
		require.Equal(t, 200, code, body)
		require.Equal(t, c.blobs, h.Get("Statsblob-Blobs"), c.window)
		require.Equal(t, c.start, h.Get("Statsblob-Window-Start"), c.window)
	}
	code, body, _ = get(t, s, "/v1/aggregates?window=-2", nil)
	require.Equal(t, 200, code)
	require.Equal(t, fmt.Sprintf(`[{"template":"KITCHEN","hash":%s,"labels":{"host":"web1"},"blobs":1,"window_start":"2026-11-27T12:01:00Z"}]`+"\n", wh), body)
}
