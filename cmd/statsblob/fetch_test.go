package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFetch: fetch saves what a collector's GET /v1/aggregate answers,
// which quantile then reads; refusals and non-blobs are errors naming the
// status and the reason.
func TestFetch(t *testing.T) {
	f := newFixture(t, 1, spread)
	want := f.blobs[0].Bytes()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/aggregate":
			if r.Header.Get("Authorization") != "Bearer s3cret" {
				http.Error(w, "a read token is required (-read-token)", http.StatusUnauthorized)
				return
			}
			w.Header().Set("Statsblob-Aggregates", "2")
			w.Header().Set("Statsblob-Blobs", "7")
			w.Header().Set("Statsblob-Window-Start", "2026-11-27T12:00:00Z")
			_, _ = w.Write(want)
		case "/junk":
			_, _ = w.Write([]byte("not a blob"))
		default:
			http.Error(w, "no aggregate of template \"X\" matches", http.StatusNotFound)
		}
	}))
	defer srv.Close()
	out := filepath.Join(f.dir, "agg.blob")
	r := sb(t, "fetch", "-o", out, "-token", "s3cret", srv.URL+"/v1/aggregate?tpl=CONN")
	require.Equal(t, result{0, "", "statsblob fetch: 2 aggregates, 7 blobs, window from 2026-11-27T12:00:00Z\n"}, r)
	got, err := os.ReadFile(out)
	require.NoError(t, err)
	require.Equal(t, want, got)
	q := sb(t, "quantile", "-voi", "1", "-q", "p50", out)
	require.Equal(t, 0, q.code, q.stderr)
	require.Equal(t, sb(t, "quantile", "-voi", "1", "-q", "p50", f.files[0]).stdout, q.stdout)

	for _, c := range []struct {
		args []string
		res  result
	}{
		{[]string{"-o", out, srv.URL + "/v1/aggregate"}, result{1, "", "statsblob fetch: " + srv.URL + "/v1/aggregate: 401 Unauthorized: a read token is required (-read-token)\n"}},
		{[]string{"-o", out, srv.URL + "/v1/other"}, result{1, "", "statsblob fetch: " + srv.URL + "/v1/other: 404 Not Found: no aggregate of template \"X\" matches\n"}},
		{[]string{"-o", out, srv.URL + "/junk"}, result{1, "", ""}},
		{[]string{srv.URL}, result{2, "", "statsblob fetch: -o OUT is required\nusage: statsblob fetch -o OUT [-token T] [-timeout D] URL\nRun 'statsblob fetch -h' for help.\n"}},
		{[]string{"-o", out, "ftp://x"}, result{2, "", "statsblob fetch: URL \"ftp://x\": http:// or https://\nusage: statsblob fetch -o OUT [-token T] [-timeout D] URL\nRun 'statsblob fetch -h' for help.\n"}},
		// A timeout of 0 or less gave up before asking ("context deadline exceeded", exit 1).
		{[]string{"-o", out, "-timeout", "0", srv.URL + "/v1/aggregate"}, result{2, "", "statsblob fetch: -timeout 0s: want a positive duration\nusage: statsblob fetch -o OUT [-token T] [-timeout D] URL\nRun 'statsblob fetch -h' for help.\n"}},
		{[]string{"-o", out, "-timeout", "-1s", srv.URL + "/v1/aggregate"}, result{2, "", "statsblob fetch: -timeout -1s: want a positive duration\nusage: statsblob fetch -o OUT [-token T] [-timeout D] URL\nRun 'statsblob fetch -h' for help.\n"}},
	} {
		r := sb(t, append([]string{"fetch"}, c.args...)...)
		require.Equal(t, c.res.code, r.code, r.stderr)
		if c.res.stderr != "" {
			require.Equal(t, c.res.stderr, r.stderr)
		} else {
			require.Contains(t, r.stderr, "the answer is not a blob")
		}
	}
	got, err = os.ReadFile(out)
	require.NoError(t, err)
	require.Equal(t, want, got, "a failed fetch leaves OUT as it was")
}
