package collector

import (
	"compress/gzip"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"

	"github.com/klauspost/compress/zstd"
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

// readBody reads a post's body into bb: at most MaxBody bytes, after
// decoding a gzip or zstd Content-Encoding. A body that does not arrive
// within the read timeout is a 408; the reasons never echo the
// connection's addresses.
func (s *Server) readBody(r *http.Request, bb *bodyBuf) ([]byte, *rejection) {
	return s.readBodyWithin(r, s.cfg.MaxBody, "-max-body", bb)
}

// readBodyWithin is readBody with the limit of flag; a nil bb reads into
// a new buffer.
func (s *Server) readBodyWithin(r *http.Request, limit int64, flag string, bb *bodyBuf) ([]byte, *rejection) {
	var in io.Reader = r.Body
	switch enc := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding"))); enc {
	case "", "identity":
		if r.ContentLength > limit {
			s.hit("body_bytes")
			return nil, reject(http.StatusRequestEntityTooLarge, "size", "body of %d bytes over the limit of %d (%s)", r.ContentLength, limit, flag)
		}
	case "gzip":
		// The compressed body is bounded too: gzip of a blob is never
		// more than a few bytes over it.
		zr, err := gzip.NewReader(io.LimitReader(r.Body, limit+1024))
		if err != nil {
			return nil, s.bodyError(err, true)
		}
		defer zr.Close()
		in = zr
	case "zstd":
		return s.readZstd(r, limit)
	default:
		return nil, reject(http.StatusUnsupportedMediaType, "encoding", "Content-Encoding %.40q: gzip, zstd or none", enc)
	}
	gz := in != r.Body
	size := int64(4096)
	if r.ContentLength >= 0 && !gz {
		size = r.ContentLength + 1 // one more byte to see the end
	}
	var buf []byte
	if bb != nil && int64(cap(bb.b)) >= size {
		buf = bb.b[:0]
	} else {
		buf = make([]byte, 0, size)
	}
	body, err := readAtMost(buf, in, limit+1)
	if bb != nil {
		bb.b = body[:0]
	}
	if err != nil {
		return nil, s.bodyError(err, gz)
	}
	if int64(len(body)) > limit {
		s.hit("body_bytes")
		if gz {
			return nil, reject(http.StatusRequestEntityTooLarge, "size", "decoded body over the limit of %d bytes (%s)", limit, flag)
		}
		return nil, reject(http.StatusRequestEntityTooLarge, "size", "body over the limit of %d bytes (%s)", limit, flag)
	}
	return body, nil
}

// readZstd reads a zstd body: the compressed bytes (at most limit and a
// KiB), then their decoding, at most limit bytes, with a window of at most
// 1 MiB (a larger one is refused, not allocated).
func (s *Server) readZstd(r *http.Request, limit int64) ([]byte, *rejection) {
	comp, err := readAtMost(make([]byte, 0, 4096), r.Body, limit+1024)
	if err != nil {
		return nil, s.bodyError(err, false)
	}
	s.zstdOnce.Do(func() {
		s.zstd, _ = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
			zstd.WithDecoderMaxMemory(uint64(limit)), zstd.WithDecoderMaxWindow(1<<20))
	})
	if s.zstd == nil {
		return nil, reject(http.StatusUnsupportedMediaType, "encoding", "zstd is not available")
	}
	body, err := s.zstd.DecodeAll(comp, nil)
	switch {
	case errors.Is(err, zstd.ErrDecoderSizeExceeded):
		s.hit("body_bytes")
		return nil, reject(http.StatusRequestEntityTooLarge, "size", "decoded body over the limit of %d bytes (-max-body)", limit)
	case err != nil:
		return nil, reject(http.StatusBadRequest, "encoding", "the zstd body is not a valid zstd stream")
	}
	return body, nil
}

// readAtMost appends to dst what r holds, up to n bytes.
func readAtMost(dst []byte, r io.Reader, n int64) ([]byte, error) {
	lr := io.LimitReader(r, n)
	for {
		if len(dst) == cap(dst) {
			dst = append(dst, 0)[:len(dst)]
		}
		m, err := lr.Read(dst[len(dst):cap(dst)])
		dst = dst[:len(dst)+m]
		if err == io.EOF {
			return dst, nil
		}
		if err != nil {
			return dst, err
		}
	}
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
