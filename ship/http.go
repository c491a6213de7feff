package ship

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/statsblob/statsblob/voi"
)

// DefaultHTTPTimeout bounds one POST of an HTTP transport without a Client.
const DefaultHTTPTimeout = 30 * time.Second

var defaultClient = &http.Client{Timeout: DefaultHTTPTimeout}

// HTTP is the Transport of statsblob-collector: it POSTs a message's body
// to URL (the collector's /v1/blobs) with its labels as query parameters
// (added to any the URL holds) and the protocol's headers. The zero value
// needs URL set; an HTTP must not be changed while in use.
//
// The status code decides: 2xx acknowledges; 400, 413, 414 and 431 reject
// the message for good (the same bytes and labels cannot succeed); every
// other status (5xx, 408, 409, 422 unknown template, 429, ...) and every
// network error is retried, with Retry-After (seconds or an HTTP date)
// honoured for any status.
type HTTP struct {
	URL    string       // the collector's POST URL, e.g. http://127.0.0.1:9129/v1/blobs
	Client *http.Client // nil: a client with DefaultHTTPTimeout
	Header http.Header  // extra headers of every POST (e.g. Authorization)
}

// check refuses a URL no POST can reach (New checks an HTTP transport:
// every send would fail and be retried without end).
func (h *HTTP) check() error {
	u, err := url.Parse(h.URL)
	switch {
	case err != nil:
		return fmt.Errorf("ship: URL %q: %v: %w", h.URL, err, voi.ErrInvalid)
	case u.Scheme != "http" && u.Scheme != "https" || u.Host == "":
		return fmt.Errorf("ship: URL %q: need http:// or https:// and a host: %w", h.URL, voi.ErrInvalid)
	}
	return nil
}

// Send POSTs m; see HTTP.
func (h *HTTP) Send(ctx context.Context, m Message) error {
	u, err := url.Parse(h.URL)
	if err != nil {
		return fmt.Errorf("ship: URL %q: %w", h.URL, err)
	}
	if len(m.Labels) > 0 {
		q := u.Query()
		for _, l := range m.Labels {
			q.Set(l.Name, l.Value)
		}
		u.RawQuery = q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(m.Body))
	if err != nil {
		return fmt.Errorf("ship: %w", err)
	}
	for k, vs := range h.Header {
		req.Header[k] = vs
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	req.Header.Set(HeaderSender, m.Sender)
	req.Header.Set(HeaderSeq, strconv.FormatUint(m.Seq, 10))
	req.Header.Set(HeaderSettledBelow, strconv.FormatUint(m.SettledBelow, 10))
	c := h.Client
	if c == nil {
		c = defaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("ship: POST %s: %w", u.Redacted(), err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // so the connection can be reused
	if resp.StatusCode/100 == 2 {
		return nil
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(msg)), "\n")
	return fmt.Errorf("ship: POST %s: %w", u.Redacted(), &SendError{
		Status:     resp.StatusCode,
		Permanent:  permanentStatus(resp.StatusCode),
		RetryAfter: retryAfter(resp.Header.Get("Retry-After"), time.Now()),
		Msg:        line,
	})
}

// permanentStatus reports the statuses after which the same request cannot
// succeed: malformed (400), too large (413), URI (414) or headers (431) too
// long.
func permanentStatus(code int) bool {
	switch code {
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusRequestURITooLong,
		http.StatusRequestHeaderFieldsTooLarge:
		return true
	}
	return false
}

// retryAfter parses a Retry-After header: delay-seconds or an HTTP date
// (relative to now); 0 for none or a malformed one.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseUint(v, 10, 32); err == nil {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
