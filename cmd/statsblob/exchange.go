package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// exchange is one request of the commands that talk to a statsblob-
// collector or a service (fetch, def).
type exchange struct {
	method, url   string
	body          io.Reader // nil: none
	contentType   string    // of body
	accept, token string    // token: sent as a bearer token if not empty
	timeout       time.Duration
	limit         int    // the longest answer taken, in bytes
	what          string // what the answer is ("blob"), for the error of a longer one
}

// errBadURL marks an exchange whose URL could not make a request.
type errBadURL struct{ err error }

func (e errBadURL) Error() string { return e.err.Error() }

// do sends the request and returns the answer's body and header. Errors
// name the URL: errBadURL for a URL that makes no request; for an answer
// other than 200 its status and the first line of its reason (at most 200
// bytes); an answer over limit bytes.
func (x exchange) do() ([]byte, http.Header, error) {
	ctx, cancel := context.WithTimeout(context.Background(), x.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, x.method, x.url, x.body)
	if err != nil {
		return nil, nil, errBadURL{err}
	}
	req.Header.Set("Accept", x.accept)
	if x.body != nil {
		req.Header.Set("Content-Type", x.contentType)
	}
	if x.token != "" {
		req.Header.Set("Authorization", "Bearer "+x.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, int64(x.limit)+1))
	if err != nil {
		return nil, nil, fmt.Errorf("%s: reading the answer: %w", x.url, err)
	}
	if resp.StatusCode != http.StatusOK {
		reason, _, _ := strings.Cut(strings.TrimSpace(string(answer)), "\n")
		if len(reason) > 200 {
			reason = reason[:200]
		}
		return nil, nil, fmt.Errorf("%s: %s: %s", x.url, resp.Status, reason)
	}
	if len(answer) > x.limit {
		return nil, nil, fmt.Errorf("%s: an answer over %d bytes is not a %s", x.url, x.limit, x.what)
	}
	return answer, resp.Header, nil
}
