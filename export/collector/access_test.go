package collector_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/export/collector"
	"github.com/statsblob/statsblob/export/internal/fixture"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

const (
	apiToken    = "api-token-0123456789"
	anyToken    = "any-token-0123456789"
	readerToken = "read-token-0123456789"
)

func do(t *testing.T, h http.Handler, method, target, token string, body []byte) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(method, target, bytes.NewReader(body))
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// TestAccessControl: tokens limit who posts which templates with which
// labels, and who reads.
func TestAccessControl(t *testing.T) {
	toks, err := collector.ParseTokens([]byte(`[
		{"token": "` + apiToken + `", "templates": ["KITCHEN"], "labels": {"svc": "api"}},
		{"token": "` + anyToken + `", "post": true},
		{"token": "` + readerToken + `", "read": true}]`))
	require.NoError(t, err)
	require.Equal(t, []collector.Token{
		{Token: apiToken, Post: true, Templates: []string{"KITCHEN"}, Labels: map[string]string{"svc": "api"}},
		{Token: anyToken, Post: true},
		{Token: readerToken, Read: true},
	}, toks)
	k2 := kitchenV2(t)
	other, err := tpl.NewRegistry().New("OTHER")
	require.NoError(t, err)
	require.NoError(t, other.AddVOI(tpl.VOIDef{ID: 0, Name: "n", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}))
	s, err := collector.New(collector.Config{MoreTemplates: []*tpl.Template{fixture.Kitchen(), other}, Tokens: toks})
	require.NoError(t, err)
	kb := fixture.KitchenBlob(fixture.Kitchen()).Bytes()
	ob := v2Blob(t, other, 3)
	_ = k2

	for _, c := range []struct {
		path, query, token string
		body               []byte
		code               int
		msg                string
	}{
		{"/v1/blobs", "host=a", "", kb, 401, "a post token is required (Authorization: Bearer TOKEN; -tokens)\n"},
		{"/v1/blobs", "host=a", "wrong-token-0123456789", kb, 401, "a post token is required"},
		{"/v1/blobs", "host=a", readerToken, kb, 401, "a post token is required"},
		{"/v1/blobs", "host=a", apiToken, kb, 204, ""},         // svc=api added
		{"/v1/blobs", "host=a&svc=api", apiToken, kb, 204, ""}, // given as forced
		{"/v1/blobs", "host=a&svc=web", apiToken, kb, 403, "label \"svc\" is \"api\" for this token (-tokens)\n"},
		{"/v1/blobs", "host=a", apiToken, ob, 403, "this token may not post template \"OTHER\" (-tokens)\n"},
		{"/v1/blobs", "host=a", anyToken, ob, 204, ""},
		{"/v1/batch", "host=b", apiToken, batch(t, "", kb, "x=1", kb), 204, ""},
		{"/v1/batch", "host=b", apiToken, batch(t, "", kb, "svc=x", kb), 403, "frame 1: label \"svc\" is \"api\""},
		{"/v1/batch", "", "", batch(t, "", kb), 401, "a post token is required"},
	} {
		w := do(t, s, http.MethodPost, c.path+"?"+c.query, c.token, c.body)
		require.Equal(t, c.code, w.Code, "%s?%s: %s", c.path, c.query, w.Body)
		require.Contains(t, w.Body.String(), c.msg)
		if c.code == 401 {
			require.Equal(t, `Bearer realm="statsblob-collector"`, w.Header().Get("WWW-Authenticate"))
		}
	}
	w := do(t, s, http.MethodGet, "/v1/aggregates", readerToken, nil)
	require.Equal(t, 200, w.Code, w.Body.String())
	var list []struct {
		Template string
		Labels   map[string]string
		Blobs    int
	}
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &list))
	require.Equal(t, []struct {
		Template string
		Labels   map[string]string
		Blobs    int
	}{ // in key order: the hash of OTHER sorts first
		{"OTHER", map[string]string{"host": "a"}, 1},
		{"KITCHEN", map[string]string{"host": "a", "svc": "api"}, 2},
		{"KITCHEN", map[string]string{"host": "b", "svc": "api"}, 1},
		{"KITCHEN", map[string]string{"host": "b", "svc": "api", "x": "1"}, 1},
	}, list)

	// Reading needs the read token; probes do not.
	for _, p := range []string{"/metrics", "/v1/aggregates", "/v1/aggregate?tpl=KITCHEN", "/v1/templates"} {
		for _, tok := range []string{"", apiToken} {
			w := do(t, s, http.MethodGet, p, tok, nil)
			require.Equal(t, 401, w.Code, p)
			require.Equal(t, "a read token is required (Authorization: Bearer TOKEN; -tokens)\n", w.Body.String())
		}
		require.Equal(t, 200, do(t, s, http.MethodGet, p, readerToken, nil).Code, p)
	}
	for _, p := range []string{"/healthz", "/readyz"} {
		require.Equal(t, 200, do(t, s, http.MethodGet, p, "", nil).Code, p)
	}

	// Uploading templates: a post token limited to the names uploaded.
	j2, err := json.Marshal(k2)
	require.NoError(t, err)
	require.Equal(t, 401, do(t, s, http.MethodPost, "/v1/templates", "", j2).Code)
	// The token is checked before the body is read: no token, no parse.
	w = do(t, s, http.MethodPost, "/v1/templates", "", []byte("not a template"))
	require.Equal(t, 401, w.Code, w.Body.String())
	require.Equal(t, `Bearer realm="statsblob-collector"`, w.Header().Get("WWW-Authenticate"))
	k3, err := tpl.NewRegistry().New("THIRD")
	require.NoError(t, err)
	require.NoError(t, k3.AddVOI(tpl.VOIDef{ID: 0, Name: "n", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}))
	j3, err := json.Marshal(k3)
	require.NoError(t, err)
	w = do(t, s, http.MethodPost, "/v1/templates", apiToken, j3)
	require.Equal(t, 403, w.Code)
	require.Equal(t, "this token may not post template \"THIRD\" (-tokens)\n", w.Body.String())
	require.Equal(t, 200, do(t, s, http.MethodPost, "/v1/templates", apiToken, j2).Code)
	require.Equal(t, 200, do(t, s, http.MethodPost, "/v1/templates", anyToken, j3).Code)
	require.Equal(t, 10.0, counter(t, s, "auth").value(), "the refused posts, by reason auth")
}

func TestParseTokens(t *testing.T) {
	for _, c := range []struct{ doc, msg string }{
		{`{}`, "cannot unmarshal object"},
		{`[{"token":"short"}]`, "token 0: 5 bytes, want 16 to 256"},
		{`[{"token":"has a space in it ok"}]`, "byte 3 is not printable ASCII"},
		{`[{"token":"0123456789abcdef"},{"token":"0123456789abcdef"}]`, "token 1: given twice"},
		{`[{"token":"0123456789abcdef","templates":[""]}]`, "an empty template name"},
		{`[{"token":"0123456789abcdef","labels":{"le":"1"}}]`, "forced labels"},
		{`[{"token":"0123456789abcdef","admin":true}]`, "unknown field"},
		{`[] []`, "data after the array"},
	} {
		_, err := collector.ParseTokens([]byte(c.doc))
		require.ErrorIs(t, err, voi.ErrInvalid, c.doc)
		require.ErrorContains(t, err, c.msg, c.doc)
	}
}

// FuzzParseTokens: ParseTokens never panics; what it accepts has tokens of
// 16 to 256 printable bytes, each once, each allowed to post or read.
func FuzzParseTokens(f *testing.F) {
	f.Add([]byte(`[{"token":"0123456789abcdef","templates":["A"],"labels":{"svc":"api"}},{"token":"fedcba9876543210","read":true}]`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, p []byte) {
		ts, err := collector.ParseTokens(p)
		if err != nil {
			require.ErrorIs(t, err, voi.ErrInvalid)
			return
		}
		seen := map[string]bool{}
		for _, tk := range ts {
			require.GreaterOrEqual(t, len(tk.Token), 16)
			require.LessOrEqual(t, len(tk.Token), 256)
			require.False(t, strings.ContainsAny(tk.Token, " \t\r\n"))
			require.False(t, seen[tk.Token])
			seen[tk.Token] = true
			require.True(t, tk.Post || tk.Read)
		}
	})
}
