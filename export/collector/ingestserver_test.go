package collector_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/export/collector"
	"github.com/statsblob/statsblob/export/internal/fixture"
)

// A stack is a way posts reach a Server: via returns the handler a test
// posts through.
type stack struct {
	name string
	via  func(testing.TB, *collector.Server) http.Handler
}

// stacks are the HTTP servers posts come in by: the Server's own
// ServeHTTP (net/http's handler), and an IngestServer reached over a real
// connection.
var stacks = []stack{
	{"net/http", func(_ testing.TB, s *collector.Server) http.Handler { return s }},
	{"ingest", viaIngest},
}

// forEachStack runs f once per stack.
func forEachStack(t *testing.T, f func(t *testing.T, via func(testing.TB, *collector.Server) http.Handler)) {
	for _, st := range stacks {
		t.Run(st.name, func(t *testing.T) { f(t, st.via) })
	}
}

// An httpServer serves s on ln until the test ends and returns ln's
// address: serveOn (net/http, as HTTPServer and Listener) or
// serveIngestOn (an IngestServer).
type httpServer func(testing.TB, *collector.Server, net.Listener) string

// httpServers are the HTTP servers posts can come in by.
var httpServers = []struct {
	name string
	on   httpServer
}{{"net/http", serveOn}, {"ingest", serveIngestOn}}

// forEachServer runs f once per HTTP server posts can come in by.
func forEachServer(t *testing.T, f func(t *testing.T, name string, on httpServer)) {
	for _, sv := range httpServers {
		t.Run(sv.name, func(t *testing.T) { f(t, sv.name, sv.on) })
	}
}

// serveWith serves s with on, on a new loopback listener.
func serveWith(t testing.TB, s *collector.Server, on httpServer) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	return on(t, s, ln)
}

// serveIngest serves s's IngestServer on a new loopback listener until
// the test ends and returns its address.
func serveIngest(t testing.TB, s *collector.Server) string {
	return serveWith(t, s, serveIngestOn)
}

func serveIngestOn(t testing.TB, s *collector.Server, ln net.Listener) string {
	in := s.IngestServer()
	done := make(chan error, 1)
	go func() { done <- in.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(t, in.Shutdown(ctx))
		require.NoError(t, <-done)
	})
	return ln.Addr().String()
}

// viaIngest returns a handler that sends the posts (/v1/blobs, /v1/batch)
// to an IngestServer of s over a connection, as they came (the headers
// byte for byte, chunked when their length is unknown), and hands every
// other request to s.
func viaIngest(t testing.TB, s *collector.Server) http.Handler {
	addr := serveIngest(t, s)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/blobs" && r.URL.Path != "/v1/batch" {
			s.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(r.Body)
		require.NoError(t, err)
		var req bytes.Buffer
		fmt.Fprintf(&req, "%s %s HTTP/1.1\r\nHost: collector\r\n", r.Method, r.URL.RequestURI())
		for k, vs := range r.Header {
			for _, v := range vs {
				fmt.Fprintf(&req, "%s: %s\r\n", k, v)
			}
		}
		if r.ContentLength < 0 && len(body) == 0 {
			fmt.Fprintf(&req, "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
		} else if r.ContentLength < 0 {
			fmt.Fprintf(&req, "Transfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n", len(body), body)
		} else {
			fmt.Fprintf(&req, "Content-Length: %d\r\n\r\n%s", len(body), body)
		}
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		defer c.Close()
		_, err = c.Write(req.Bytes())
		require.NoError(t, err)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		require.NoError(t, err)
		defer resp.Body.Close()
		for k, vs := range resp.Header {
			w.Header()[k] = vs
		}
		w.WriteHeader(resp.StatusCode)
		_, err = io.Copy(w, resp.Body)
		require.NoError(t, err)
	})
}

// The ingest listener's own answers: the probes, a 404 that points
// elsewhere, a 405 with Allow, Expect: 100-continue, pipelined posts on
// one connection, and a batch held to MaxBatchBody (not -max-body) even
// when fasthttp refuses it before the handler, chunked or not.
func TestIngestServer(t *testing.T) {
	s, tp := newServer(t, collector.Config{MaxBody: 2000})
	addr := serveIngest(t, s)
	kb := fixture.KitchenBlob(tp).Bytes()

	resp, body := exchange(t, addr, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "ok\n", body)
	resp, body = exchange(t, addr, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	require.Equal(t, "the ingest listener serves POST /v1/blobs and /v1/batch; the rest is on the collector's other listener\n", body)
	resp, body = exchange(t, addr, "GET /v1/blobs?h=a HTTP/1.1\r\nHost: x\r\n\r\n")
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	require.Equal(t, "POST", resp.Header.Get("Allow"))
	require.Equal(t, "method GET not allowed: POST a blob's bytes\n", body)

	// Expect: 100-continue: the 100, then the answer.
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	br := bufio.NewReader(c)
	_, err = fmt.Fprintf(c, "POST /v1/blobs?h=a HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: %d\r\n\r\n", len(kb))
	require.NoError(t, err)
	line, err := br.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "HTTP/1.1 100 Continue\r\n", line)
	_, err = br.ReadString('\n')
	require.NoError(t, err)
	_, err = c.Write(kb)
	require.NoError(t, err)
	resp, err = http.ReadResponse(br, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusNoContent, resp.StatusCode)

	// Expect: 100-continue with a body over the limit: 413 before it is
	// sent, counted.
	n := hits(t, s, "body_bytes")
	resp, _ = exchange(t, addr, "POST /v1/blobs?h=a HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5000\r\n\r\n")
	require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
	require.Equal(t, n+1, hits(t, s, "body_bytes"))

	// Pipelined: three posts written at once, three answers in order.
	_, err = io.WriteString(c, postReq("/v1/blobs?h=a", kb)+postReq("/v1/blobs?h=b", []byte("junk"))+postReq("/v1/blobs?h=a", kb))
	require.NoError(t, err)
	for _, want := range []int{204, 400, 204} {
		resp, err := http.ReadResponse(br, nil)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		require.Equal(t, want, resp.StatusCode)
	}
	require.Equal(t, []uint64{3}, s.Merged())

	// A batch over MaxBatchBody: refused before it is read, by its own
	// limit; under it (and over -max-body), accepted.
	big := make([]byte, collector.MaxBatchBody+4096)
	for _, chunked := range []bool{false, true} {
		n := hits(t, s, "body_bytes")
		// The headers only: the answer comes before the body is read.
		req := fmt.Sprintf("POST /v1/batch HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", len(big))
		want := "body of 16781312 bytes over the limit of 16777216 (MaxBatchBody)\n"
		if chunked {
			// The whole body: the server reads it up to the limit.
			req = fmt.Sprintf("POST /v1/batch HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n", len(big), big)
			want = "body over the limit of 16777216 bytes (MaxBatchBody)\n"
		}
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		go func() { _, _ = io.WriteString(c, req) }() // the server may close before it is all sent
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		c.Close()
		require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode, "chunked %v", chunked)
		require.Equal(t, want, string(body))
		require.Equal(t, n+1, hits(t, s, "body_bytes"))
	}
	var frames []any
	for len(frames)/2*len(kb) <= 4000 {
		frames = append(frames, "h=c", kb)
	}
	resp, body = exchange(t, addr, postReq("/v1/batch", batch(t, frames...)))
	require.Equal(t, http.StatusNoContent, resp.StatusCode, body)
	require.Equal(t, []uint64{3, uint64(len(frames) / 2)}, s.Merged())
}

// MaxConns is one budget over the net/http listener and the ingest
// listener.
func TestIngestSharesConnLimit(t *testing.T) {
	s, tp := newServer(t, collector.Config{MaxConns: 2})
	web, ingest := serve(t, s), serveIngest(t, s)
	for _, addr := range []string{web, ingest} {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		defer c.Close()
	}
	require.Eventually(t, func() bool { return gauge(t, s, "statsblob_collector_connections") == 2 }, 10*time.Second, time.Millisecond)
	for _, addr := range []string{web, ingest} {
		resp, body := exchange(t, addr, postReq("/v1/blobs?h=a", fixture.KitchenBlob(tp).Bytes()))
		require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
		require.Equal(t, "connection limit of 2 reached (-max-conns)\n", body)
	}
	require.Equal(t, 2.0, hits(t, s, "connections"))
}

// Shutdown answers the request under way and closes its keep-alive
// connection after it; when its context ends first it closes the
// connections still open (a body that never finishes) and says so.
func TestIngestShutdown(t *testing.T) {
	s, tp := newServer(t, collector.Config{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	in := s.IngestServer()
	served := make(chan error, 1)
	go func() { served <- in.Serve(ln) }()
	addr := ln.Addr().String()
	kb := fixture.KitchenBlob(tp).Bytes()

	idle, err := net.Dial("tcp", addr) // kept alive after one post
	require.NoError(t, err)
	defer idle.Close()
	_, err = io.WriteString(idle, postReq("/v1/blobs?h=a", kb))
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(idle), nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	slow, err := net.Dial("tcp", addr) // its body never ends
	require.NoError(t, err)
	defer slow.Close()
	req := postReq("/v1/blobs?h=b", kb)
	_, err = io.WriteString(slow, req[:len(req)-10])
	require.NoError(t, err)
	require.Eventually(t, func() bool { return gauge(t, s, "statsblob_collector_connections") == 2 }, 10*time.Second, time.Millisecond)

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	require.ErrorIs(t, in.Shutdown(ctx), context.DeadlineExceeded)
	require.Less(t, time.Since(start), 5*time.Second)
	require.NoError(t, <-served)
	for _, c := range []net.Conn{idle, slow} {
		require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
		_, err := io.ReadAll(c) // the server closed it
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool { return gauge(t, s, "statsblob_collector_connections") == 0 }, 10*time.Second, time.Millisecond)
	require.Equal(t, []uint64{1}, s.Merged())
}

// FuzzIngestRequest writes any bytes to the ingest listener as a
// connection's requests: every answer is a 204, which adds one blob, or a
// 4xx or 5xx one-liner; the blobs merged are exactly the 204s; and the
// listener serves a good post afterwards.
func FuzzIngestRequest(f *testing.F) {
	tp := fixture.Kitchen()
	kb := fixture.KitchenBlob(tp).Bytes()
	f.Add([]byte(postReq("/v1/blobs?host=a", kb)))
	f.Add([]byte(postReq("/v1/blobs?host=a", kb) + postReq("/v1/blobs?host=b", kb)))
	f.Add([]byte(fmt.Sprintf("POST /v1/blobs HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n", len(kb), kb)))
	f.Add([]byte(fmt.Sprintf("POST /v1/blobs HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\nTransfer-Encoding: chunked\r\n\r\n%s", len(kb), kb)))
	f.Add([]byte("POST /v1/batch HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffff\r\n"))
	f.Add([]byte("POST /v1/blobs HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n"))
	f.Add([]byte("GET /readyz HTTP/1.0\r\n\r\n"))
	s, err := collector.New(collector.Config{Templates: tp.Registry(), MaxAggregates: 8,
		ReadHeaderTimeout: 200 * time.Millisecond, ReadTimeout: 200 * time.Millisecond})
	if err != nil {
		f.Fatal(err)
	}
	addr := serveIngest(f, s)
	merged := func() (n uint64) {
		for _, m := range s.Merged() {
			n += m
		}
		return n
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		n0 := merged()
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		defer c.Close()
		go func() {
			_, _ = c.Write(in)
			_ = c.(*net.TCPConn).CloseWrite()
		}()
		require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
		br := bufio.NewReader(c)
		accepted := uint64(0)
		for {
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				break // the server closed the connection
			}
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			switch {
			case resp.StatusCode == http.StatusNoContent:
				accepted++
			case resp.StatusCode >= 400 && resp.StatusCode < 600:
				require.True(t, len(body) == 0 || bytes.Count(body, []byte("\n")) == 1 && body[len(body)-1] == '\n', "%q", body)
			case resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusContinue:
			default:
				t.Fatalf("status %d %q", resp.StatusCode, body)
			}
		}
		require.Equal(t, n0+accepted, merged(), "blobs merged against 204s")
		resp, body := exchange(t, addr, postReq("/v1/blobs?host=after", kb))
		if resp.StatusCode != http.StatusTooManyRequests { // the fuzzer may have filled the label sets
			require.Equal(t, http.StatusNoContent, resp.StatusCode, body)
		}
	})
}
