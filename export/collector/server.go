package collector

import (
	"bytes"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// HTTPServer returns an http.Server of s with the Config's timeouts and
// header limit. Serve it on Listener(ln) to bound the connections too.
func (s *Server) HTTPServer() *http.Server {
	return &http.Server{
		Handler:           s,
		ReadHeaderTimeout: s.cfg.ReadHeaderTimeout,
		ReadTimeout:       s.cfg.ReadTimeout,
		// The whole exchange, reading included, so that a slow body
		// still gets its answer; /metrics sets its own deadline.
		WriteTimeout:   s.cfg.ReadTimeout + s.cfg.WriteTimeout,
		IdleTimeout:    s.cfg.IdleTimeout,
		MaxHeaderBytes: s.cfg.MaxHeaderBytes,
	}
}

// Listener wraps ln: at most MaxConns connections are open at once, over
// every listener of s (this one, others, the IngestServer's); one more is
// answered 503 with Retry-After and closed. It counts the requests
// net/http refuses for their header size (431) and the responses cut by
// a write timeout.
func (s *Server) Listener(ln net.Listener) net.Listener {
	return s.newLimitListener(ln, false)
}

// newLimitListener is Listener for net/http, or for an IngestServer
// (ingest), which counts its own 431s and closes its connections itself
// (closeAll: the listener keeps them).
func (s *Server) newLimitListener(ln net.Listener, ingest bool) *limitListener {
	s.connSemOnce.Do(func() { s.connSem = make(chan struct{}, s.cfg.MaxConns) })
	l := &limitListener{Listener: ln, s: s, sem: s.connSem, refusing: make(chan struct{}, 16), sniff431: !ingest}
	if ingest {
		l.open = map[*limitConn]struct{}{}
	}
	return l
}

type limitListener struct {
	net.Listener
	s        *Server
	sem      chan struct{} // the Server's: one budget for all its listeners
	refusing chan struct{} // bounds the goroutines answering refused connections
	sniff431 bool

	mu   sync.Mutex
	open map[*limitConn]struct{} // for closeAll; nil: not kept
}

// closeAll closes the connections open now.
func (l *limitListener) closeAll() {
	l.mu.Lock()
	cs := make([]*limitConn, 0, len(l.open))
	for c := range l.open {
		cs = append(cs, c)
	}
	l.mu.Unlock()
	for _, c := range cs {
		_ = c.Close()
	}
}

const refusal = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\nRetry-After: 1\r\nConnection: close\r\n\r\n"

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.sem <- struct{}{}:
			l.s.connsOpen.Inc()
			lc := &limitConn{Conn: c, l: l}
			if l.open != nil { // set once, before the first Accept
				l.mu.Lock()
				l.open[lc] = struct{}{}
				l.mu.Unlock()
			}
			return lc, nil
		default:
		}
		l.s.hit("connections")
		select {
		case l.refusing <- struct{}{}:
			go func() {
				defer func() { <-l.refusing }()
				_ = c.SetWriteDeadline(time.Now().Add(time.Second))
				_, _ = c.Write([]byte(refusal + "connection limit of " + itoa(l.s.cfg.MaxConns) + " reached (-max-conns)\n"))
				_ = c.Close()
			}()
		default:
			_ = c.Close()
		}
	}
}

type limitConn struct {
	net.Conn
	l    *limitListener
	once sync.Once
	cut  atomic.Bool // a write timed out
}

var status431 = []byte("HTTP/1.1 431 ")

func (c *limitConn) Write(p []byte) (int, error) {
	// net/http writes its 431 in one Write straight to the connection;
	// responses of handlers go through a buffer and never start so.
	if c.l.sniff431 && bytes.HasPrefix(p, status431) {
		c.l.s.hit("header_bytes")
	}
	n, err := c.Conn.Write(p)
	if err != nil && isTimeout(err) && !c.cut.Swap(true) {
		c.l.s.hit("write_timeout")
	}
	return n, err
}

// CloseWrite lets net/http half-close a TCP connection, as it does after
// an error answer.
func (c *limitConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		if c.l.open != nil {
			c.l.mu.Lock()
			delete(c.l.open, c)
			c.l.mu.Unlock()
		}
		<-c.l.sem
		c.l.s.connsOpen.Dec()
	})
	return err
}
