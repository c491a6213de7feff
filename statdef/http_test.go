package statdef_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/statdef"
)

func TestHandler(t *testing.T) {
	d, _ := setup(t)
	h := statdef.Handler(d)
	do := func(method, body string) (int, string) {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(method, "/definition", strings.NewReader(body)))
		return w.Code, w.Body.String()
	}
	code, body := do(http.MethodGet, "")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "on=1\nname=bytes on=1\nname=rtt on=1\n", body)
	code, body = do(http.MethodPost, "name=rtt on=0")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "on=1\nname=bytes on=1\nname=rtt on=0 stopped=2026-11-27T12:00:01Z\n", body)
	code, body = do(http.MethodPost, "name=nope on=0")
	require.Equal(t, http.StatusBadRequest, code)
	require.Equal(t, "statdef: line 1: no VOI named \"nope\" in \"CONN\":1770738175: invalid argument\n", body)
	code, _ = do(http.MethodPost, strings.Repeat(" ", statdef.MaxBody+1))
	require.Equal(t, http.StatusRequestEntityTooLarge, code)
	code, _ = do(http.MethodDelete, "")
	require.Equal(t, http.StatusMethodNotAllowed, code)
	_, body = do(http.MethodGet, "")
	require.Equal(t, "on=1\nname=bytes on=1\nname=rtt on=0 stopped=2026-11-27T12:00:01Z\n", body)
}
