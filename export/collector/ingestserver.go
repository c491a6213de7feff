package collector

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"

	"github.com/valyala/fasthttp"

	"github.com/statsblob/statsblob/export/aggregate"
)

// An IngestServer serves a Server's posts on a listener of their own:
// POST /v1/blobs and /v1/batch, as the Server's ServeHTTP does, and the
// probes /healthz and /readyz. Everything else (/metrics, the query API,
// templates) stays on the Server's net/http listener.
//
// It is built on fasthttp, an HTTP/1.1 server that keeps each
// connection's request and response buffers from one request to the next
// and reads a body's first 8 KiB (all of a typical blob) with the
// headers; the handler reads the rest from fasthttp's stream, as
// ServeHTTP does from net/http's, into a buffer that grows with the bytes
// received, never to the announced length: its part of a post costs
// about a third less CPU than net/http's (8-10 against 13-17 µs on the
// machine of bench/README.md), a whole post a quarter less, which is what
// takes it to 57,700–64,200 single posts per CPU second (bench/README.md).
// What net/http would do around the handler it does with the same
// Config:
//
//   - connections: MaxConns, one budget with the Server's other
//     listeners (503 with Retry-After, then closed);
//   - a request line and headers over MaxHeaderBytes: 431, counted as
//     header_bytes;
//   - the request line and headers within ReadHeaderTimeout, the body
//     within ReadTimeout of them: else 408, counted as read_timeout
//     (net/http closes a connection whose headers are late without an
//     answer; a body whose first 8 KiB are late gets the 408 of late
//     headers, the rest of a body ServeHTTP's);
//   - a body announced over MaxBody (MaxBatchBody for a batch) and
//     maxCompressedSlack: 413 before it is read, counted as body_bytes,
//     and the connection closed; a body over its limit otherwise
//     (chunked, compressed, decoded): the 413 ServeHTTP gives;
//   - WriteTimeout for each answer, IdleTimeout between requests;
//   - Expect: 100-continue is answered 100 Continue, or 413 (without a
//     message) when the announced body is over its limit.
//
// Every answer is the one ServeHTTP gives the same post: same status,
// reason, message and headers, but for a Date header on every answer
// (fasthttp copies one it formats once a second, where net/http formats
// one per answer, which the Server's 204s leave out). Bodies
// are not decoded by fasthttp (Content-Encoding is the accept path's), and
// multipart forms are not parsed. For HTTPS serve it on a
// tls.NewListener (as the command does with -tls-cert and -tls-key).
type IngestServer struct {
	s  *Server
	fs *fasthttp.Server

	mu  sync.Mutex
	lns []*limitListener // of Serve, for Close

	// announced holds the Content-Length of the requests whose body is
	// announced over its limit, which headerReceived sets to 0: fasthttp
	// would read the body's first 8 KiB before calling the handler, which
	// refuses the post by this length at once (and the connection is
	// closed after the answer, the body unread).
	announced sync.Map // *fasthttp.RequestHeader -> int64
}

// IngestServer returns an IngestServer of s: Serve it on a listener
// other than the one HTTPServer serves.
func (s *Server) IngestServer() *IngestServer {
	in := &IngestServer{s: s}
	in.fs = &fasthttp.Server{
		Handler:        in.handle,
		ErrorHandler:   in.refuseRequest,
		HeaderReceived: in.headerReceived,
		ExpectHandler:  in.expect,
		// The first byte and the headers: ReadHeaderTimeout; the body:
		// ReadTimeout from the end of the headers (headerReceived).
		ReadTimeout:                  s.cfg.ReadHeaderTimeout,
		WriteTimeout:                 s.cfg.WriteTimeout,
		IdleTimeout:                  s.cfg.IdleTimeout,
		ReadBufferSize:               s.cfg.MaxHeaderBytes, // fasthttp's header limit
		MaxRequestBodySize:           int(s.cfg.MaxBody + maxCompressedSlack),
		DisablePreParseMultipartForm: true,
		NoDefaultServerHeader:        true,
		NoDefaultContentType:         true,
		SecureErrorLogMessage:        true,
		CloseOnShutdown:              true,
		Logger:                       ingestLog{s},
		// The handler reads the body (readBodyWithin) into a buffer that
		// grows as it arrives, where fasthttp would make one of the
		// announced length before a byte of it came; fasthttp reads only
		// its first 8 KiB (all of a typical blob's) with the headers.
		StreamRequestBody: true,
	}
	return in
}

// Serve serves posts on ln (within MaxConns, as Listener does) until
// Shutdown or Close; it returns nil after them.
func (in *IngestServer) Serve(ln net.Listener) error {
	l := in.s.newLimitListener(ln, true)
	in.mu.Lock()
	in.lns = append(in.lns, l)
	in.mu.Unlock()
	return in.fs.Serve(l)
}

// Shutdown stops accepting connections and waits for the requests under
// way to be answered; each connection is closed after its answer. When
// ctx ends first, the connections still open are closed (their posts
// unacknowledged) and ctx's error is returned.
func (in *IngestServer) Shutdown(ctx context.Context) error {
	err := in.fs.ShutdownWithContext(ctx)
	if err != nil {
		in.Close()
	}
	return err
}

// Close closes the listeners and every connection at once.
func (in *IngestServer) Close() {
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, l := range in.lns {
		_ = l.Close()
		l.closeAll()
	}
}

// ingestLog takes fasthttp's log lines, which may name addresses, to the
// Server's log at debug level.
type ingestLog struct{ s *Server }

func (l ingestLog) Printf(format string, args ...any) {
	if lg := l.s.cfg.Log; lg != nil && lg.Enabled(context.Background(), slog.LevelDebug) {
		lg.Debug("ingest listener: " + fmt.Sprintf(format, args...))
	}
}

// bodyLimit is the largest body a request of path may have once decoded.
func (in *IngestServer) bodyLimit(path []byte) int64 {
	limit, _ := in.s.postLimit(string(path) == "/v1/batch")
	return limit
}

// uriPath is the path of a request target, origin-form ("/v1/batch?a=b")
// or absolute-form ("http://host/v1/batch?a=b").
func uriPath(uri []byte) []byte {
	if i := bytes.IndexByte(uri, '?'); i >= 0 {
		uri = uri[:i]
	}
	if len(uri) > 0 && uri[0] != '/' {
		if i := bytes.Index(uri, []byte("://")); i >= 0 {
			uri = uri[i+3:]
			if j := bytes.IndexByte(uri, '/'); j >= 0 {
				return uri[j:]
			}
			return nil
		}
	}
	return uri
}

// headerReceived sets the body's bounds once the headers are read. A
// body announced over its limit and maxCompressedSlack is not read: the
// request's Content-Length becomes 0 (the announced one kept in
// announced) and its connection is closed after the answer.
func (in *IngestServer) headerReceived(h *fasthttp.RequestHeader) fasthttp.RequestConfig {
	most := in.bodyLimit(uriPath(h.RequestURI())) + maxCompressedSlack
	if n := int64(h.ContentLength()); n > most {
		in.announced.Store(h, n)
		h.SetContentLength(0)
		h.SetConnectionClose()
	} else {
		in.announced.Delete(h) // of a request that ended before its handler
	}
	return fasthttp.RequestConfig{ReadTimeout: in.s.cfg.ReadTimeout, MaxRequestBodySize: int(most)}
}

// expect answers Expect: 100-continue: 100 unless the announced body is
// over its limit, which is then refused with 413 before the client sends
// it (counted as ServeHTTP's; fasthttp answers without a message and
// closes the connection).
func (in *IngestServer) expect(ctx *fasthttp.RequestCtx) int {
	h := &ctx.Request.Header
	if n, over := in.announced.LoadAndDelete(h); over { // headerReceived
		limit, flag := in.s.postLimit(string(uriPath(h.RequestURI())) == "/v1/batch")
		rej := in.s.tooLarge("body", n.(int64), limit, flag) // counted; fasthttp sends no message
		in.s.rejected.WithLabelValues(rej.reason).Inc()
		return rej.status
	}
	return http.StatusContinue
}

// refuseRequest answers a request fasthttp could not read: its headers
// over their limit, or late, or not HTTP, or the first 8 KiB of its body
// (which fasthttp reads with the headers) late. A body over its limit is
// the handler's to refuse (readBodyWithin), as are the rest's timeouts.
func (in *IngestServer) refuseRequest(ctx *fasthttp.RequestCtx, err error) {
	in.announced.Delete(&ctx.Request.Header)
	var rej *rejection
	var small *fasthttp.ErrSmallBuffer
	var ne net.Error
	switch {
	case errors.As(err, &small):
		in.s.hit("header_bytes")
		rej = reject(http.StatusRequestHeaderFieldsTooLarge, "", "request line and headers over %d bytes (-max-header-bytes)", in.s.cfg.MaxHeaderBytes)
	case errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		in.s.hit("read_timeout")
		rej = reject(http.StatusRequestTimeout, "timeout", "request not received within the read timeouts: %v for its headers (-read-header-timeout), %v more for its body (-read-timeout)", in.s.cfg.ReadHeaderTimeout, in.s.cfg.ReadTimeout)
	default:
		rej = reject(http.StatusBadRequest, "", "the request is not HTTP/1.1 the ingest listener reads")
	}
	if rej.reason != "" {
		in.s.rejected.WithLabelValues(rej.reason).Inc()
	}
	writeRejection(ctx, rej)
}

// handle serves one request.
func (in *IngestServer) handle(ctx *fasthttp.RequestCtx) {
	defer func() {
		if v := recover(); v != nil { // net/http's behaviour: the request fails, the server goes on
			in.s.warn("ingest listener: a request panicked", "panic", fmt.Sprint(v))
			ctx.ResetBody()
			ctx.SetStatusCode(http.StatusInternalServerError)
			ctx.SetConnectionClose()
		}
	}()
	announced := int64(-1)
	if n, over := in.announced.LoadAndDelete(&ctx.Request.Header); over { // headerReceived
		announced = n.(int64)
	}
	switch string(ctx.Path()) {
	case "/v1/blobs":
		in.serve(ctx, in.s.accept, announced)
	case "/v1/batch":
		in.serve(ctx, in.s.acceptBatch, announced)
	case "/healthz":
		answer(ctx, http.StatusOK, "ok")
	case "/readyz":
		status, msg, retry := in.s.readiness()
		if retry {
			ctx.Response.Header.Set("Retry-After", "1")
		}
		answer(ctx, status, msg)
	default:
		answer(ctx, http.StatusNotFound, "the ingest listener serves POST /v1/blobs and /v1/batch; the rest is on the collector's other listener")
	}
}

// serve answers a post with accept's verdict. Its body is read from
// fasthttp's stream (which holds the first 8 KiB already read); a body
// announced over its limit (announced >= 0: headerReceived) is refused
// by that length, unread.
func (in *IngestServer) serve(ctx *fasthttp.RequestCtx, accept func(*post) *rejection, announced int64) {
	h := &ctx.Request.Header
	p := post{method: http.MethodPost, auth: string(h.Peek("Authorization")),
		sender: string(h.Peek(aggregate.HeaderSender)), seq: string(h.Peek(aggregate.HeaderSeq)),
		encoding: string(h.Peek("Content-Encoding")), length: int64(max(h.ContentLength(), -1)), body: ctx.RequestBodyStream()}
	if announced >= 0 {
		p.length = announced
	}
	if p.body == nil { // no body: neither Content-Length nor chunked
		p.whole = ctx.PostBody()
	}
	if !ctx.IsPost() {
		p.method = string(ctx.Method())
	}
	if q := ctx.URI().QueryString(); len(q) > 0 {
		p.query = string(q)
	}
	rej := in.s.acceptCounted(&p, accept)
	if rej == nil {
		ctx.SetStatusCode(http.StatusNoContent)
		return
	}
	writeRejection(ctx, rej)
}

// writeRejection writes rej's status, headers and one-line message.
func writeRejection(ctx *fasthttp.RequestCtx, rej *rejection) {
	rej.eachHeader(ctx.Response.Header.Set)
	ctx.SetStatusCode(rej.status)
	ctx.SetBodyString(rej.msg + "\n")
}

// answer writes status and msg as text.
func answer(ctx *fasthttp.RequestCtx, status int, msg string) {
	ctx.SetStatusCode(status)
	ctx.SetContentType("text/plain; charset=utf-8")
	ctx.SetBodyString(msg + "\n")
}
