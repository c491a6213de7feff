package ship_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/hist"
	"github.com/statsblob/statsblob/ship"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// webTemplate has VOI 0 "lat" (INT_U64: SUM, a 64-bit histogram, a 64-bit
// t-digest) and VOI 1 "big" (INT_U32: SUM), whose SUM overflows when two
// snapshots holding MaxUint32-10 merge.
func webTemplate(t testing.TB) *tpl.Template {
	t.Helper()
	tp, err := tpl.NewRegistry().New("WEB")
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "lat", DType: voi.IntU64, Stats: []tpl.StatSpec{
		tpl.Sum(),
		tpl.Histogram(hist.Spec{DType: voi.CRHist64, Scheme: hist.Lin, LB: 0, UB: 1000, StepInc: 100}),
		tpl.TDigest(voi.TDgstClust64, 50, 8)}}))
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 1, Name: "big", DType: voi.IntU32, Stats: []tpl.StatSpec{tpl.Sum()}}))
	return tp
}

// tally is what the tests compare: SUMs, histogram counts (oob in the
// last slot), t-digest sample count.
type tally struct {
	Sum    uint64
	Big    uint64
	Hist   [11]uint64
	Digest uint64
}

func (a *tally) add(b tally) {
	a.Sum += b.Sum
	a.Big += b.Big
	for i := range a.Hist {
		a.Hist[i] += b.Hist[i]
	}
	a.Digest += b.Digest
}

// record is what recording x into VOI 0 adds to a tally.
func (a *tally) record(x uint64) {
	a.Sum += x
	if x < 1000 {
		a.Hist[x/100]++
	} else {
		a.Hist[10]++
	}
	a.Digest++
}

func tallyOf(t testing.TB, b *blob.Blob) tally {
	t.Helper()
	var out tally
	for id, s := range b.Stats() {
		switch {
		case s.Type == voi.Sum && id == 0:
			v, err := b.FetchU64(0, voi.Sum)
			require.NoError(t, err)
			out.Sum = v
		case s.Type == voi.Sum && id == 1:
			v, err := b.FetchU32(1, voi.Sum)
			require.NoError(t, err)
			out.Big = uint64(v)
		case s.Type == voi.Hist:
			for i, bk := range hist.Buckets(s.Data, s.DType, voi.IntU64) {
				out.Hist[i] = bk.Cnt
			}
			out.Hist[len(out.Hist)-1] += hist.OOB(s.Data, s.DType)
		case s.Type == voi.TDgst:
			n, err := s.Count()
			require.NoError(t, err)
			out.Digest = n
		}
	}
	return out
}

// update records x into b's VOI 0.
func update(t testing.TB, b interface{ UpdateU64(int32, uint64) error }, x uint64) {
	if err := b.UpdateU64(0, x); err != nil {
		t.Error(err)
	}
}

// post is one POST as the test server saw it.
type post struct {
	Sender       string
	Seq, Settled uint64
	Labels       string // the sorted query
	Body         []byte
	Dup          bool // a (sender, seq) seen before: not merged
	Status       int  // the answer
}

// server is a collector for tests: it deduplicates by (sender, seq), as
// the protocol asks of a collector, and tallies what it merged per label
// set. fail, if set, may answer a POST instead (before it is merged).
type server struct {
	t    testing.TB
	srv  *httptest.Server
	mu   sync.Mutex
	seen map[string]bool
	got  map[string]*tally
	log  []post
	fail func(p post) (status int, retryAfter string)
}

func newServer(t testing.TB) *server {
	s := &server{t: t, seen: map[string]bool{}, got: map[string]*tally{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.handle))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *server) url() string { return s.srv.URL + "/v1/blobs" }

func (s *server) handle(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	seq, err1 := strconv.ParseUint(r.Header.Get(ship.HeaderSeq), 10, 64)
	settled, err2 := strconv.ParseUint(r.Header.Get(ship.HeaderSettledBelow), 10, 64)
	if err1 != nil || err2 != nil || r.Header.Get(ship.HeaderSender) == "" || r.Header.Get("Content-Type") != "application/octet-stream" {
		http.Error(w, "headers", http.StatusBadRequest)
		return
	}
	p := post{Sender: r.Header.Get(ship.HeaderSender), Seq: seq, Settled: settled, Labels: q.Encode(), Body: body}
	s.mu.Lock()
	fail := s.fail
	s.mu.Unlock()
	if fail != nil {
		if status, ra := fail(p); status != 0 {
			p.Status = status
			s.mu.Lock()
			s.log = append(s.log, p)
			s.mu.Unlock()
			if ra != "" {
				w.Header().Set("Retry-After", ra)
			}
			http.Error(w, "scripted failure", status)
			return
		}
	}
	b, err := blob.FromBytes(body, nil)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	key := fmt.Sprintf("%s/%d", p.Sender, p.Seq)
	p.Dup = s.seen[key]
	p.Status = http.StatusNoContent
	s.log = append(s.log, p)
	if !p.Dup {
		s.seen[key] = true
		if s.got[p.Labels] == nil {
			s.got[p.Labels] = &tally{}
		}
		s.got[p.Labels].add(tallyOf(s.t, b))
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *server) setFail(f func(p post) (int, string)) {
	s.mu.Lock()
	s.fail = f
	s.mu.Unlock()
}

// totals returns the merged tallies by label query.
func (s *server) totals() map[string]tally {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]tally{}
	for k, v := range s.got {
		out[k] = *v
	}
	return out
}

// posts returns the POSTs answered with 204.
func (s *server) posts() []post {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []post
	for _, p := range s.log {
		if p.Status == http.StatusNoContent {
			out = append(out, p)
		}
	}
	return out
}

// all returns every POST.
func (s *server) all() []post {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.log)
}

// fakeClock is a Clock the test moves.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []waiter
	waiting chan struct{} // signalled when After is called
}

type waiter struct {
	at time.Time
	c  chan time.Time
}

func newClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), waiting: make(chan struct{}, 100)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.now
		return ch
	}
	c.waiters = append(c.waiters, waiter{c.now.Add(d), ch})
	select {
	case c.waiting <- struct{}{}:
	default:
	}
	return ch
}

// Advance moves the clock and fires the timers that are due.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if w.at.After(c.now) {
			kept = append(kept, w)
			continue
		}
		w.c <- c.now
	}
	c.waiters = kept
}

// labelsOf is the query a label list is posted as.
func labelsOf(kv ...string) string {
	q := url.Values{}
	for i := 0; i < len(kv); i += 2 {
		q.Set(kv[i], kv[i+1])
	}
	return q.Encode()
}
