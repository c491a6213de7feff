package collector

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"

	"github.com/klauspost/compress/zstd"

	"github.com/statsblob/statsblob/export/aggregate"
)

// A bodyBuf holds the buffer of a post's body for the next post: what is
// kept of a body is copied (blob.FromBytes, the write-ahead log's
// record), so the buffer is free once the post is answered.
type bodyBuf struct{ b []byte }

// maxPooledBody bounds the buffers kept for the next posts, in bytes.
const maxPooledBody = 1 << 20

var bodyBufs = sync.Pool{New: func() any { return new(bodyBuf) }}

// getBodyBuf returns a buffer for a body; putBodyBuf gives it back once
// nothing refers to the body read into it.
func getBodyBuf() *bodyBuf { return bodyBufs.Get().(*bodyBuf) }

func putBodyBuf(bb *bodyBuf) {
	if cap(bb.b) > maxPooledBody {
		bb.b = nil
	}
	bodyBufs.Put(bb)
}

// A post is a POST /v1/blobs or /v1/batch as the accept path reads it,
// whichever HTTP server received it: net/http (fromHTTP) or the ingest
// listener (ingest.go). Its strings may be the request's own bytes: what
// is kept is copied.
type post struct {
	method   string
	query    string // the URL's raw query
	auth     string // Authorization
	sender   string // aggregate.HeaderSender
	seq      string // aggregate.HeaderSeq
	encoding string // Content-Encoding
	length   int64  // Content-Length; -1: unknown
	body     io.Reader
	whole    []byte // the whole body, already read, when body is nil
}

// fromHTTP is the post of r.
func fromHTTP(r *http.Request) *post {
	return &post{method: r.Method, query: r.URL.RawQuery, auth: r.Header.Get("Authorization"),
		sender: r.Header.Get(aggregate.HeaderSender), seq: r.Header.Get(aggregate.HeaderSeq),
		encoding: r.Header.Get("Content-Encoding"), length: r.ContentLength, body: r.Body}
}

// header answers the post's sender headers, as levels.record asks.
func (p *post) header(name string) string {
	switch name {
	case aggregate.HeaderSender:
		return p.sender
	case aggregate.HeaderSeq:
		return p.seq
	}
	return ""
}

// maxCompressedSlack is how many bytes a compressed body may have over the
// decoded limit: gzip or zstd of a blob is never more than a few bytes
// over it.
const maxCompressedSlack = 1024

// postLimit is the largest body of a post once decoded, and the flag (or
// constant) that sets it: MaxBody for a blob, MaxBatchBody for a batch.
func (s *Server) postLimit(batch bool) (int64, string) {
	if batch {
		return MaxBatchBody, "MaxBatchBody"
	}
	return s.cfg.MaxBody, "-max-body"
}

// tooLarge counts a body over the limit that flag sets and returns its
// 413: what ("body", "decoded body", ...) of n bytes, n < 0 if unknown.
func (s *Server) tooLarge(what string, n, limit int64, flag string) *rejection {
	s.hit("body_bytes")
	if n >= 0 {
		return reject(http.StatusRequestEntityTooLarge, "size", "%s of %d bytes over the limit of %d (%s)", what, n, limit, flag)
	}
	return reject(http.StatusRequestEntityTooLarge, "size", "%s over the limit of %d bytes (%s)", what, limit, flag)
}

// firstBodyBuf bounds the buffer a body is read into before its bytes
// arrive: a larger one grows as they do (readAtMost), so that headers
// announcing a large body (a batch may have 16 MiB) hold no more than this
// until the client has sent that much.
const firstBodyBuf = 64 << 10

// readBodyWithin reads a post's body into bb: at most limit bytes (set by
// flag), after decoding a gzip or zstd Content-Encoding, whose compressed
// bytes may be maxCompressedSlack more (a 413 past either, and before the
// body is read when Content-Length is over). A body that does not arrive
// within the read timeout is a 408; the reasons never echo the
// connection's addresses. A nil bb reads into a new buffer; a post whose
// whole body is already read is not copied. The buffer grows with the
// bytes received (readAtMost), never to what Content-Length announces.
func (s *Server) readBodyWithin(p *post, limit int64, flag string, bb *bodyBuf) ([]byte, *rejection) {
	body := p.body
	if body == nil {
		body = bytes.NewReader(p.whole)
	}
	in := body
	var capped *cappedReader
	switch enc := strings.ToLower(strings.TrimSpace(p.encoding)); enc {
	case "", "identity":
		if p.length > limit {
			return nil, s.tooLarge("body", p.length, limit, flag)
		}
		if p.body == nil {
			if int64(len(p.whole)) > limit {
				return nil, s.tooLarge("body", -1, limit, flag)
			}
			return p.whole, nil
		}
	case "gzip":
		if p.length > limit+maxCompressedSlack {
			return nil, s.tooLarge("compressed body", p.length, limit+maxCompressedSlack, flag)
		}
		capped = &cappedReader{r: body, left: limit + maxCompressedSlack}
		zr, err := gzip.NewReader(capped)
		if err != nil {
			return nil, s.compressedError(err, capped, limit, flag)
		}
		defer zr.Close()
		in = zr
	case "zstd":
		if p.length > limit+maxCompressedSlack {
			return nil, s.tooLarge("compressed body", p.length, limit+maxCompressedSlack, flag)
		}
		return s.readZstd(p, body, limit, flag, bb)
	default:
		return nil, reject(http.StatusUnsupportedMediaType, "encoding", "Content-Encoding %.40q: gzip, zstd or none", enc)
	}
	size := int64(4096)
	if p.length >= 0 && capped == nil {
		size = min(p.length+1, firstBodyBuf) // one more byte to see the end
	}
	var buf []byte
	if bb != nil && int64(cap(bb.b)) >= size {
		buf = bb.b[:0]
	} else {
		buf = make([]byte, 0, size)
	}
	got, err := readAtMost(buf, in, limit+1)
	if bb != nil {
		bb.b = got[:0]
	}
	if err != nil {
		if capped != nil {
			return nil, s.compressedError(err, capped, limit, flag)
		}
		return nil, s.bodyError(err, false)
	}
	if int64(len(got)) > limit {
		if capped != nil {
			return nil, s.tooLarge("decoded body", -1, limit, flag)
		}
		return nil, s.tooLarge("body", -1, limit, flag)
	}
	return got, nil
}

// errOverCap is a cappedReader's error past its cap.
var errOverCap = errors.New("collector: compressed body over its limit")

// A cappedReader reads at most left bytes of r; a byte more is the error
// errOverCap (over set), so that a decoder cut at the cap is told apart
// from a bad stream.
type cappedReader struct {
	r    io.Reader
	left int64
	over bool
}

func (c *cappedReader) Read(p []byte) (int, error) {
	if c.over {
		return 0, errOverCap
	}
	if int64(len(p)) > c.left+1 {
		p = p[:c.left+1] // one byte more shows the body goes on
	}
	n, err := c.r.Read(p)
	if int64(n) > c.left {
		c.over = true
		return int(c.left), errOverCap
	}
	c.left -= int64(n)
	return n, err
}

// compressedError is the rejection of a gzip body that could not be
// decoded: 413 when its compressed bytes passed limit and
// maxCompressedSlack (the stream was cut there, not bad), else bodyError's.
func (s *Server) compressedError(err error, c *cappedReader, limit int64, flag string) *rejection {
	if c.over {
		return s.tooLarge("compressed body", -1, limit+maxCompressedSlack, flag)
	}
	return s.bodyError(err, true)
}

// maxZstdWindow is the largest zstd window taken (a larger one is
// refused, not allocated).
const maxZstdWindow = 1 << 20

// zstdDecoders holds a zstd decoder per body limit (MaxBody, MaxBatchBody,
// MaxTemplatesBody), each made on first use and decoding one body at a
// time. Each stops decoding within a block (128 KiB) past its limit
// (zstd.ErrDecoderSizeExceeded), before a byte when the frame announces
// more: a limit of maxZstdWindow or more is the decoder's memory bound; a
// smaller one, which as a memory bound would refuse windows over it too,
// is the capacity of the buffer decoded into (zstd.WithDecodeAllCapLimit).
type zstdDecoders struct {
	mu      sync.Mutex
	byLimit map[int64]*zstd.Decoder
}

// get returns the decoder of limit (nil if zstd is not available) and
// whether it decodes at most its buffer's capacity.
func (z *zstdDecoders) get(limit int64) (d *zstd.Decoder, toCap bool) {
	toCap = limit < maxZstdWindow
	z.mu.Lock()
	defer z.mu.Unlock()
	if d, ok := z.byLimit[limit]; ok {
		return d, toCap
	}
	d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
		zstd.WithDecoderMaxMemory(uint64(max(limit, maxZstdWindow))), zstd.WithDecoderMaxWindow(maxZstdWindow),
		zstd.WithDecodeAllCapLimit(toCap))
	if err != nil {
		d = nil
	}
	if z.byLimit == nil {
		z.byLimit = map[int64]*zstd.Decoder{}
	}
	z.byLimit[limit] = d
	return d, toCap
}

// readZstd reads p's zstd body: the compressed bytes (at most limit and
// maxCompressedSlack), then their decoding into bb, stopped past limit
// bytes (zstdDecoders), with a window of at most 1 MiB.
func (s *Server) readZstd(p *post, body io.Reader, limit int64, flag string, bb *bodyBuf) ([]byte, *rejection) {
	comp := p.whole
	if p.body != nil {
		size := int64(4096)
		if p.length >= 0 {
			size = min(p.length+1, firstBodyBuf)
		}
		var err error
		if comp, err = readAtMost(make([]byte, 0, size), body, limit+maxCompressedSlack+1); err != nil {
			return nil, s.bodyError(err, false)
		}
	}
	if int64(len(comp)) > limit+maxCompressedSlack {
		return nil, s.tooLarge("compressed body", -1, limit+maxCompressedSlack, flag)
	}
	d, toCap := s.zstd.get(limit)
	if d == nil {
		return nil, reject(http.StatusUnsupportedMediaType, "encoding", "zstd is not available")
	}
	var dst []byte
	switch {
	case toCap && bb != nil && int64(cap(bb.b)) >= limit:
		dst = bb.b[:0:limit]
	case toCap:
		dst = make([]byte, 0, limit)
	case bb != nil:
		dst = bb.b[:0]
	}
	dec, err := d.DecodeAll(comp, dst)
	if bb != nil && cap(dec) > cap(bb.b) {
		bb.b = dec[:0]
	}
	switch {
	case errors.Is(err, zstd.ErrDecoderSizeExceeded) || err == nil && int64(len(dec)) > limit:
		return nil, s.tooLarge("decoded body", -1, limit, flag)
	case err != nil:
		return nil, reject(http.StatusBadRequest, "encoding", "the zstd body is not a valid zstd stream")
	}
	return dec, nil
}

// readAtMost appends to dst what r holds, up to n bytes. dst grows as the
// bytes arrive, doubling (to 4 KiB at least, len(dst)+n at most): its
// capacity is at most its first, 4 KiB, or twice what it holds, never
// what a header announced.
func readAtMost(dst []byte, r io.Reader, n int64) ([]byte, error) {
	end := int64(len(dst)) + n
	for int64(len(dst)) < end {
		if len(dst) == cap(dst) {
			grown := make([]byte, len(dst), min(max(2*int64(cap(dst)), 4096), end))
			copy(grown, dst)
			dst = grown
		}
		m, err := r.Read(dst[len(dst):min(int64(cap(dst)), end)])
		dst = dst[:len(dst)+m]
		if err == io.EOF {
			return dst, nil
		}
		if err != nil {
			return dst, err
		}
	}
	return dst, nil
}

// bodyError is the rejection of a body that could not be read: a timeout,
// a body cut short, or (gz) a bad gzip stream. Its message never holds
// the error's text, which may name the connection's addresses.
func (s *Server) bodyError(err error, gz bool) *rejection {
	var ne net.Error
	if errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout() {
		s.hit("read_timeout")
		return reject(http.StatusRequestTimeout, "timeout", "body not received within the read timeout of %v (-read-timeout)", s.cfg.ReadTimeout)
	}
	var mb *http.MaxBytesError
	if errors.As(err, &mb) {
		s.hit("body_bytes")
		return reject(http.StatusRequestEntityTooLarge, "size", "body over the limit of %d bytes", mb.Limit)
	}
	if gz {
		return reject(http.StatusBadRequest, "encoding", "the gzip body is not a valid gzip stream")
	}
	return reject(http.StatusBadRequest, "blob", "the body ended before its end (connection closed or bad chunked encoding)")
}
