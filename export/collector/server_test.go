package collector_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/export/collector"
	"github.com/statsblob/statsblob/export/internal/fixture"
)

// serve runs s on a loopback listener with its http.Server and Listener,
// as the command does, and returns the address.
func serve(t testing.TB, s *collector.Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	return serveOn(t, s, ln)
}

// smallSendBuffers gives accepted connections a send buffer of 4 KiB, so
// that a response to a reader that does not read stalls after a few KiB
// rather than after the kernel's default of up to 4 MiB.
type smallSendBuffers struct{ net.Listener }

func (l smallSendBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(4096)
	}
	return c, err
}

func serveOn(t testing.TB, s *collector.Server, ln net.Listener) string {
	srv := s.HTTPServer()
	go func() { _ = srv.Serve(s.Listener(ln)) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

// exchange writes a raw request on a new connection and returns the
// response's status line, headers and body.
func exchange(t testing.TB, addr, req string) (*http.Response, string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	_, err = io.WriteString(c, req)
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

func postReq(target string, body []byte) string {
	return fmt.Sprintf("POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", target, len(body), body)
}

// Over MaxConns, a connection is answered 503 with Retry-After and closed;
// once one closes, connections are served again.
func TestConnLimit(t *testing.T) {
	forEachServer(t, func(t *testing.T, name string, on httpServer) {
		s, tp := newServer(t, collector.Config{MaxConns: 2})
		addr := serveWith(t, s, on)
		kb := fixture.KitchenBlob(tp).Bytes()
		var held []net.Conn
		for range 2 {
			c, err := net.Dial("tcp", addr)
			require.NoError(t, err)
			held = append(held, c)
		}
		require.Eventually(t, func() bool { return gauge(t, s, "statsblob_collector_connections") == 2 }, 10*time.Second, time.Millisecond)
		resp, body := exchange(t, addr, postReq("/v1/blobs?h=a", kb))
		require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
		require.Equal(t, "1", resp.Header.Get("Retry-After"))
		require.Equal(t, "connection limit of 2 reached (-max-conns)\n", body)
		require.Equal(t, 1.0, hits(t, s, "connections"))
		require.Empty(t, s.Blobs())

		held[0].Close()
		require.Eventually(t, func() bool { return gauge(t, s, "statsblob_collector_connections") == 1 }, 10*time.Second, time.Millisecond)
		resp, body = exchange(t, addr, postReq("/v1/blobs?h=a", kb))
		require.Equal(t, http.StatusNoContent, resp.StatusCode, body)
		held[1].Close()
	})
}

// A request line and headers over MaxHeaderBytes get net/http's 431,
// counted; at the default limit a 12 KiB request line is served.
func TestHeaderLimit(t *testing.T) {
	forEachServer(t, func(t *testing.T, name string, on httpServer) {
		s, tp := newServer(t, collector.Config{})
		addr := serveWith(t, s, on)
		kb := fixture.KitchenBlob(tp).Bytes()
		resp, body := exchange(t, addr, postReq("http://"+strings.Repeat("a", 12<<10)+"/v1/blobs?h=a", kb))
		require.Equal(t, http.StatusNoContent, resp.StatusCode, body)
		resp, _ = exchange(t, addr, postReq("http://"+strings.Repeat("a", 21<<10)+"/v1/blobs?h=b", kb))
		require.Equal(t, http.StatusRequestHeaderFieldsTooLarge, resp.StatusCode)
		require.Equal(t, 1.0, hits(t, s, "header_bytes"))
		require.Len(t, s.Blobs(), 1)
	})
}

// A body that does not arrive within ReadTimeout is a 408 counted as a
// timeout (it was counted as reason="blob" and its message held the
// connection's addresses).
func TestReadTimeout(t *testing.T) {
	forEachServer(t, func(t *testing.T, name string, on httpServer) {
		s, tp := newServer(t, collector.Config{ReadTimeout: 200 * time.Millisecond})
		addr := serveWith(t, s, on)
		kb := fixture.KitchenBlob(tp).Bytes()
		req := postReq("/v1/blobs?h=a", kb)
		resp, body := exchange(t, addr, req[:len(req)-len(kb)/2])
		require.Equal(t, http.StatusRequestTimeout, resp.StatusCode)
		want := "body not received within the read timeout of 200ms (-read-timeout)\n"
		if name == "ingest" { // fasthttp does not say whether the headers or the body were late
			want = "request not received within the read timeouts: 5s for its headers (-read-header-timeout), 200ms more for its body (-read-timeout)\n"
		}
		require.Equal(t, want, body)
		require.NotContains(t, body, "127.0.0.1")
		require.Equal(t, 1.0, counter(t, s, "timeout").value())
		require.Equal(t, 0.0, counter(t, s, "blob").value())
		require.Equal(t, 1.0, hits(t, s, "read_timeout"))
		require.Empty(t, s.Blobs())
	})
}

// A body past the 8 KiB the ingest listener reads with the headers (the
// handler reads the rest from fasthttp's stream) is held to ReadTimeout
// too, with ServeHTTP's answer, on either listener.
func TestReadTimeoutLongBody(t *testing.T) {
	forEachServer(t, func(t *testing.T, name string, on httpServer) {
		s, _ := newServer(t, collector.Config{ReadTimeout: 200 * time.Millisecond})
		addr := serveWith(t, s, on)
		sent := append([]byte(collector.BatchMagic), make([]byte, 16<<10)...)
		resp, body := exchange(t, addr, fmt.Sprintf("POST /v1/batch HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", 64<<10, sent))
		require.Equal(t, http.StatusRequestTimeout, resp.StatusCode)
		require.Equal(t, "body not received within the read timeout of 200ms (-read-timeout)\n", body)
		require.Equal(t, 1.0, counter(t, s, "timeout").value())
		require.Equal(t, 1.0, hits(t, s, "read_timeout"))
		require.Empty(t, s.Blobs())
	})
}

// fill posts n label sets of the kitchen blob, each with a label of 100
// bytes (about 5 KiB of text per aggregate in a scrape).
func fill(t testing.TB, s *collector.Server, n int) {
	t.Helper()
	tp := fixture.Kitchen()
	kb := fixture.KitchenBlob(tp).Bytes()
	for i := range n {
		code, body := post(t, s, http.MethodPost, fmt.Sprintf("host=h%05d&svc=%s", i, strings.Repeat("s", 100)), kb)
		require.Equal(t, http.StatusNoContent, code, body)
	}
}

// slowReader sends GET /metrics on a connection with a small receive
// buffer and never reads the answer.
func slowReader(t testing.TB, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	c, err := d.Dial("tcp", addr)
	require.NoError(t, err)
	_, err = io.WriteString(c, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)
	return c
}

// serveSmall serves s with small send buffers.
func serveSmall(t testing.TB, s *collector.Server) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	return serveOn(t, s, smallSendBuffers{ln})
}

// Defect 3 of issue 22: there was no write timeout, so a client that asked
// for /metrics and never read held the rendered scrape for as long as it
// liked. Now the response is cut after WriteTimeout, counted, and the
// scrape's slot and memory are freed.
func TestSlowScrapeReaderIsCut(t *testing.T) {
	s, _ := newServer(t, collector.Config{WriteTimeout: 300 * time.Millisecond, MaxScrapes: 1})
	fill(t, s, 100)
	addr := serveSmall(t, s)
	c := slowReader(t, addr)
	defer c.Close()
	require.Eventually(t, func() bool { return hits(t, s, "write_timeout") == 1 }, 20*time.Second, 50*time.Millisecond)
	// The slot is free again once the cut handler has returned.
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + addr + "/metrics")
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 20*time.Second, 50*time.Millisecond)
}

// Memory under the slow-reader attack at the default limits: ten clients
// that ask for /metrics and never read hold at most MaxScrapes (2)
// scrapes, each its rendered text (the working memory of a scrape is
// freed before it is written); the others are refused 503 at once.
func TestSlowReadersMemoryBound(t *testing.T) {
	s, _ := newServer(t, collector.Config{})
	fill(t, s, 400)
	addr := serveSmall(t, s)
	// What one scrape allocates, in all.
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	resp, err := http.Get("http://" + addr + "/metrics")
	require.NoError(t, err)
	size, _ := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	runtime.ReadMemStats(&m1)
	perScrape := m1.TotalAlloc - m0.TotalAlloc
	before := heapInUse()

	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
		// The stalled handlers end (and free their scrapes) before the
		// next test measures.
		require.Eventually(t, func() bool { return collector.ScrapesWriting(s) == 0 }, 20*time.Second, time.Millisecond)
	}()
	for range 10 {
		conns = append(conns, slowReader(t, addr))
	}
	require.Eventually(t, func() bool { return hits(t, s, "scrapes") == 8 && collector.ScrapesWriting(s) == 2 },
		20*time.Second, 10*time.Millisecond)
	resp, err = http.Get("http://" + addr + "/metrics")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "two slow readers hold both slots")
	grown := int64(heapInUse()) - int64(before)
	t.Logf("scrape: %d bytes of text, %d bytes allocated; heap grown by %d with 10 slow readers", size, perScrape, grown)
	require.Less(t, grown, int64(collector.DefaultMaxScrapes)*int64(perScrape))
	// Stalled, a scrape holds its rendered text (and little else).
	require.Less(t, grown, int64(collector.DefaultMaxScrapes)*(size+size/4))
}

// Memory under the padded-URI attack at the default limits: new label
// sets made with request lines just under the header limit cost their
// aggregate and a copy of their labels, not the line (defect 2); longer
// lines are refused with 431.
func TestPaddedURIMemoryBound(t *testing.T) {
	forEachServer(t, func(t *testing.T, name string, on httpServer) {
		const sets = 2000
		s, tp := newServer(t, collector.Config{})
		addr := serveWith(t, s, on)
		kb := fixture.KitchenBlob(tp).Bytes()
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		defer c.Close()
		br := bufio.NewReader(c)
		send := func(target string) int {
			_, err := io.WriteString(c, postReq(target, kb))
			require.NoError(t, err)
			resp, err := http.ReadResponse(br, nil)
			require.NoError(t, err)
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return resp.StatusCode
		}
		pad := strings.Repeat("a", collector.DefaultMaxHeaderBytes-200)
		for i := range 200 { // warm up: buffers, pools, the map's growth
			require.Equal(t, http.StatusNoContent, send(fmt.Sprintf("http://%s/v1/blobs?warm=w%d", pad, i)))
		}
		before := heapInUse()
		for i := range sets {
			require.Equal(t, http.StatusNoContent, send(fmt.Sprintf("http://%s/v1/blobs?svc=s%d", pad, i)))
		}
		perSet := float64(int64(heapInUse())-int64(before)) / sets
		t.Logf("%.0f bytes of heap per label set made with %d-byte request lines", perSet, len(pad)+40)
		require.Less(t, perSet, float64(8<<10))
		resp, _ := exchange(t, addr, postReq("http://"+strings.Repeat("a", 2*collector.DefaultMaxHeaderBytes)+"/v1/blobs?svc=x", kb))
		require.Equal(t, http.StatusRequestHeaderFieldsTooLarge, resp.StatusCode)
	})
}

// Memory under the announced-body attack at the default limits: posts
// whose headers announce a batch of MaxBatchBody (16 MiB) hold what came
// of their body, not what was announced, while their handlers wait for
// the rest, on either listener. Both sized the body's buffer by
// Content-Length before a byte of it arrived (net/http's readBodyWithin,
// fasthttp before the handler): 16 MiB a connection for -read-timeout,
// 16 GiB over -max-conns, where the README's bound is about 150 MB.
func TestBatchBodyNotPreallocated(t *testing.T) {
	forEachServer(t, func(t *testing.T, name string, on httpServer) {
		const conns = 8
		s, _ := newServer(t, collector.Config{})
		addr := serveWith(t, s, on)
		// Past the 8 KiB the ingest listener reads with the headers, so
		// that its handler runs.
		sent := append([]byte(collector.BatchMagic), make([]byte, 16<<10)...)
		before := heapInUse()
		var cs []net.Conn
		defer func() {
			for _, c := range cs {
				c.Close()
			}
			// The handlers end (and free their buffers) before the next
			// test measures.
			require.Eventually(t, func() bool { return s.InFlight() == 0 }, 20*time.Second, time.Millisecond)
		}()
		for range conns {
			c, err := net.Dial("tcp", addr)
			require.NoError(t, err)
			cs = append(cs, c)
			_, err = fmt.Fprintf(c, "POST /v1/batch HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", collector.MaxBatchBody, sent)
			require.NoError(t, err)
		}
		// Until every post's handler reads its body, or the heap is past
		// the bound already (as when fasthttp made the body's buffer before
		// the handler ran).
		const bound = conns << 20
		require.Eventually(t, func() bool {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			return s.InFlight() == conns || int64(ms.HeapAlloc)-int64(before) > bound
		}, 20*time.Second, 10*time.Millisecond)
		grown := int64(heapInUse()) - int64(before)
		t.Logf("%s: heap grown by %d KiB for %d posts announcing %d bytes, %d of them sent", name, grown>>10, conns, collector.MaxBatchBody, len(sent))
		require.Less(t, grown, int64(bound))
	})
}

// A post whose body is announced over its limit (and, compressed, its
// slack) is refused at once, before the body comes, on either listener,
// and what follows its headers (here a post of its own) is never read as
// the next request: the connection is closed after the answer.
func TestAnnouncedBodyOverLimitUnread(t *testing.T) {
	forEachServer(t, func(t *testing.T, name string, on httpServer) {
		s, tp := newServer(t, collector.Config{})
		addr := serveWith(t, s, on)
		inner := postReq("/v1/blobs?h=a", fixture.KitchenBlob(tp).Bytes())
		const n = collector.MaxBatchBody + 2048
		for _, c := range []struct{ encoding, msg string }{
			{"", fmt.Sprintf("body of %d bytes over the limit of %d (MaxBatchBody)\n", n, collector.MaxBatchBody)},
			{"gzip", fmt.Sprintf("compressed body of %d bytes over the limit of %d (MaxBatchBody)\n", n, collector.MaxBatchBody+1024)},
		} {
			hits0 := hits(t, s, "body_bytes")
			conn, err := net.Dial("tcp", addr)
			require.NoError(t, err)
			defer conn.Close()
			enc := ""
			if c.encoding != "" {
				enc = "Content-Encoding: " + c.encoding + "\r\n"
			}
			_, err = fmt.Fprintf(conn, "POST /v1/batch HTTP/1.1\r\nHost: x\r\n%sContent-Length: %d\r\n\r\n%s", enc, n, inner)
			require.NoError(t, err)
			require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
			br := bufio.NewReader(conn)
			resp, err := http.ReadResponse(br, nil)
			require.NoError(t, err)
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode, c.encoding)
			require.Equal(t, c.msg, string(body))
			require.Equal(t, hits0+1, hits(t, s, "body_bytes"))
			rest, err := io.ReadAll(br) // until the server closes the connection
			require.NoError(t, err)
			require.Empty(t, string(rest), "an answer to the post in the body")
		}
		require.Empty(t, s.Blobs())
	})
}

// A connection that does not finish its headers within ReadHeaderTimeout,
// or stays idle for IdleTimeout between requests, is closed.
func TestHeaderAndIdleTimeouts(t *testing.T) {
	forEachServer(t, func(t *testing.T, name string, on httpServer) {
		s, tp := newServer(t, collector.Config{ReadHeaderTimeout: 100 * time.Millisecond, IdleTimeout: 100 * time.Millisecond})
		addr := serveWith(t, s, on)
		closed := func(c net.Conn) {
			t.Helper()
			require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
			_, err := io.ReadAll(c) // returns once the server closes
			require.NoError(t, err)
		}
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		defer c.Close()
		_, err = io.WriteString(c, "POST /v1/blobs?h=a HTTP/1.1\r\nHost: x\r\n")
		require.NoError(t, err)
		closed(c)

		c2, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		defer c2.Close()
		_, err = io.WriteString(c2, postReq("/v1/blobs?h=a", fixture.KitchenBlob(tp).Bytes()))
		require.NoError(t, err)
		resp, err := http.ReadResponse(bufio.NewReader(c2), nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusNoContent, resp.StatusCode)
		closed(c2) // kept alive, then idle
		require.Equal(t, []uint64{1}, s.Merged())
	})
}

// An accepted post is answered 204 without a Date header by net/http
// (formatting it cost a share of the CPU of every post); a refusal keeps
// it.
func TestAcceptedPostHasNoDate(t *testing.T) {
	forEachServer(t, func(t *testing.T, name string, on httpServer) {
		tp, bs := demoBlobs(t, 1)
		s, err := collector.New(collector.Config{Templates: tp.Registry()})
		require.NoError(t, err)
		addr := serveWith(t, s, on)
		resp, _ := exchange(t, addr, postReq("/v1/blobs?svc=a", bs[0].Bytes()))
		require.Equal(t, http.StatusNoContent, resp.StatusCode)
		if name == "ingest" { // its Date costs a copy of a line formatted once a second
			require.Contains(t, resp.Header, "Date")
		} else {
			require.NotContains(t, resp.Header, "Date")
		}
		resp, _ = exchange(t, addr, postReq("/v1/blobs?svc=a", []byte("no blob")))
		require.Equal(t, http.StatusBadRequest, resp.StatusCode)
		require.Contains(t, resp.Header, "Date")
	})
}
