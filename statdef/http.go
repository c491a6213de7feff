package statdef

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/statsblob/statsblob/voi"
)

// MaxBody is the largest definition Handler takes in one request, in bytes.
const MaxBody = 64 << 10

// Handler serves the definition over HTTP, as Linux's definition file in
// debugfs: GET returns what Write prints; POST (or PUT) applies the body
// (Apply) and answers with the definition as it now is, or 400 with the
// reason for a definition Apply refuses (nothing changed), 413 for a body
// over MaxBody bytes. Mount it where only operators reach it.
func Handler(d Def) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fail := func(code int, err error) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(code)
			_, _ = io.WriteString(w, strings.ReplaceAll(err.Error(), "\n", " ")+"\n")
		}
		switch r.Method {
		case http.MethodGet, http.MethodHead:
		case http.MethodPost, http.MethodPut:
			body, err := io.ReadAll(io.LimitReader(r.Body, MaxBody+1))
			switch {
			case err != nil:
				fail(http.StatusBadRequest, err)
				return
			case len(body) > MaxBody:
				fail(http.StatusRequestEntityTooLarge, fmt.Errorf("statdef: definition over %d bytes", MaxBody))
				return
			}
			if err := d.Apply(string(body)); err != nil {
				code := http.StatusInternalServerError // a Resetter's own failure
				if errors.Is(err, voi.ErrInvalid) {
					code = http.StatusBadRequest
				}
				fail(code, err)
				return
			}
		default:
			w.Header().Set("Allow", "GET, HEAD, POST, PUT")
			fail(http.StatusMethodNotAllowed, fmt.Errorf("statdef: method %s: GET the definition, POST a change", r.Method))
			return
		}
		var sb strings.Builder
		if err := d.Write(&sb); err != nil {
			fail(http.StatusInternalServerError, err)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, sb.String())
	})
}
