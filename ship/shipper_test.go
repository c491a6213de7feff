package ship_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/family"
	"github.com/statsblob/statsblob/ship"
	"github.com/statsblob/statsblob/voi"
)

// noJitter makes backoffs exact: the full MinBackoff·2^(n-1).
func noJitter() float64 { return 0 }

func TestNewRejects(t *testing.T) {
	tr := &ship.HTTP{URL: "http://127.0.0.1:1/v1/blobs"}
	f := func(tr ship.Transport, o ship.Options) {
		t.Helper()
		_, err := ship.New(tr, o)
		require.ErrorIs(t, err, voi.ErrInvalid)
	}
	f(nil, ship.Options{})
	f(&ship.HTTP{}, ship.Options{}) // every send would fail, retried without end
	f(&ship.HTTP{URL: "collector:9129/v1/blobs"}, ship.Options{})
	f(&ship.HTTP{URL: "http://"}, ship.Options{})
	f(&ship.HTTP{URL: "http://a b"}, ship.Options{})
	f(tr, ship.Options{Interval: -1})
	f(tr, ship.Options{MaxBacklog: -1})
	f(tr, ship.Options{Sender: "a b"})
	f(tr, ship.Options{Sender: string(make([]byte, 65))})
	f(tr, ship.Options{Labels: []ship.Label{{"host", ""}}})
	f(tr, ship.Options{Labels: []ship.Label{{"le", "x"}}})
	f(tr, ship.Options{Labels: []ship.Label{{"host", "a"}, {"host", "b"}}})

	sh, err := ship.New(tr, ship.Options{Labels: []ship.Label{{"host", "web1"}}})
	require.NoError(t, err)
	require.Len(t, sh.Sender(), 32)
	fam, err := family.New(webTemplate(t), []string{"host"}, family.Options{})
	require.NoError(t, err)
	require.ErrorIs(t, sh.AddFamily(fam), voi.ErrInvalid) // host twice
	require.ErrorIs(t, sh.AddBlob(blob.New(webTemplate(t), nil), nil, ship.Label{"svc", "a"}, ship.Label{"svc", "b"}), voi.ErrInvalid)
	require.ErrorIs(t, sh.AddBlob(nil, nil), voi.ErrInvalid)
}

// TestBackoffSequence: a receiver that is down is retried after
// MinBackoff·2^(n-1), at most MaxBackoff, each jittered down by up to
// half; a Retry-After replaces the backoff.
func TestBackoffSequence(t *testing.T) {
	srv := newServer(t)
	clk := newClock()
	start := clk.Now()
	var attempts []time.Duration
	srv.setFail(func(p post) (int, string) {
		attempts = append(attempts, clk.Now().Sub(start))
		if len(attempts) == 6 {
			return http.StatusTooManyRequests, "7"
		}
		if len(attempts) < 9 {
			return http.StatusServiceUnavailable, ""
		}
		return 0, ""
	})
	jit := 0.0
	sh, err := ship.New(&ship.HTTP{URL: srv.url()}, ship.Options{Clock: clk, Sender: "s1",
		MinBackoff: time.Second, MaxBackoff: 8 * time.Second, Jitter: func() float64 { return jit }})
	require.NoError(t, err)
	b := blob.New(webTemplate(t), nil)
	require.NoError(t, sh.AddBlob(b, nil))
	update(t, b, 5)
	ctx := context.Background()
	// Step the clock by 250ms, shipping each time: only due sends go.
	for range 200 {
		if len(attempts) == 7 {
			jit = 0.5 // the next wait is 8s less a quarter: 6s
		}
		_ = sh.Ship(ctx)
		clk.Advance(250 * time.Millisecond)
	}
	sec := time.Second
	// 1, 2, 4, 8, 8 (capped); then Retry-After 7; then 8; then 8-2 (jitter).
	require.Equal(t, []time.Duration{0, 1 * sec, 3 * sec, 7 * sec, 15 * sec, 23 * sec, 30 * sec, 38 * sec, 44 * sec}, attempts[:9])
	st := sh.Stats()
	require.Equal(t, uint64(8), st.Retried)
	require.Equal(t, uint64(8), st.Refused)
	require.Equal(t, uint64(0), st.Rejected)
	require.GreaterOrEqual(t, st.Sent, uint64(1))
	// One message carried the first snapshot; everything the server got
	// adds up to it (later snapshots were empty).
	require.Equal(t, uint64(5), srv.totals()[""].Sum)
	// Every retry of seq 1 carried the same bytes.
	for _, p := range srv.posts()[:1] {
		require.Equal(t, uint64(1), p.Seq)
	}
}

// TestStatuses: how the HTTP transport's statuses reach the shipper.
func TestStatuses(t *testing.T) {
	cases := []struct {
		status     int
		retryAfter string
		permanent  bool
		wait       time.Duration
	}{
		{http.StatusBadRequest, "", true, 0},
		{http.StatusRequestEntityTooLarge, "", true, 0},
		{http.StatusUnprocessableEntity, "", false, 0}, // unknown template: kept
		{http.StatusConflict, "", false, 0},
		{http.StatusNotFound, "", false, 0},
		{http.StatusTooManyRequests, "3", false, 3 * time.Second},
		{http.StatusServiceUnavailable, "120", false, 2 * time.Minute},
		{http.StatusInternalServerError, "", false, 0},
		{http.StatusServiceUnavailable, "soon", false, 0},
	}
	for _, c := range cases {
		srv := newServer(t)
		srv.setFail(func(post) (int, string) { return c.status, c.retryAfter })
		tr := &ship.HTTP{URL: srv.url()}
		err := tr.Send(context.Background(), ship.Message{Sender: "x", Seq: 1, SettledBelow: 1, Body: []byte{1}})
		var se *ship.SendError
		require.ErrorAs(t, err, &se, "%d", c.status)
		require.Equal(t, c.status, se.Status)
		require.Equal(t, c.permanent, se.Permanent, "%d", c.status)
		require.Equal(t, c.wait, se.RetryAfter, "%d", c.status)
		require.Equal(t, "scripted failure", se.Msg)
	}
	// A network failure is not a SendError: retried.
	err := (&ship.HTTP{URL: "http://127.0.0.1:1/v1/blobs"}).Send(context.Background(), ship.Message{Sender: "x", Seq: 1})
	var se *ship.SendError
	require.Error(t, err)
	require.False(t, errors.As(err, &se))
}

// TestHeadersAndLabels: what a POST carries.
func TestHeadersAndLabels(t *testing.T) {
	srv := newServer(t)
	clk := newClock()
	sh, err := ship.New(&ship.HTTP{URL: srv.url() + "?token=t"}, ship.Options{Clock: clk, Sender: "web1-a",
		Labels: []ship.Label{{"host", "web1"}}})
	require.NoError(t, err)
	fam, err := family.New(webTemplate(t), []string{"method", "status"}, family.Options{})
	require.NoError(t, err)
	require.NoError(t, sh.AddFamily(fam, ship.Label{"svc", "api"}))
	for _, v := range [][2]string{{"GET", "200"}, {"POST", "500"}} {
		b, err := fam.With(v[0], v[1])
		require.NoError(t, err)
		update(t, b, 10)
	}
	require.NoError(t, sh.Ship(context.Background()))
	ps := srv.posts()
	require.Len(t, ps, 2)
	for i := range ps {
		ps[i].Body = nil
	}
	require.Equal(t, []post{
		{Sender: "web1-a", Seq: 1, Settled: 1, Labels: labelsOf("host", "web1", "method", "GET", "status", "200", "svc", "api", "token", "t"), Status: 204},
		{Sender: "web1-a", Seq: 2, Settled: 2, Labels: labelsOf("host", "web1", "method", "POST", "status", "500", "svc", "api", "token", "t"), Status: 204},
	}, ps)
}

// TestBacklogMergeExact: while the receiver is down, snapshots pile up;
// the first message is frozen and retried as it was, the later snapshots
// are merged into the next message in one step, and what arrives adds up
// exactly to what was recorded.
func TestBacklogMergeExact(t *testing.T) {
	srv := newServer(t)
	clk := newClock()
	down := true
	srv.setFail(func(post) (int, string) {
		if down {
			return http.StatusServiceUnavailable, ""
		}
		return 0, ""
	})
	sh, err := ship.New(&ship.HTTP{URL: srv.url()}, ship.Options{Clock: clk, Sender: "s", Jitter: noJitter,
		MinBackoff: time.Second, MaxBackoff: time.Second})
	require.NoError(t, err)
	sb := blob.NewSharded(webTemplate(t), 3, nil)
	require.NoError(t, sh.AddSharded(sb, ship.Label{"route", "a"}))
	var want tally
	x := uint64(0)
	for range 12 { // 12 intervals down
		for range 50 {
			x = (x*7 + 13) % 1500
			update(t, sb, x)
			want.record(x)
		}
		require.Error(t, sh.Ship(context.Background()))
		clk.Advance(10 * time.Second)
	}
	st := sh.Stats()
	require.Equal(t, 12, st.Pending) // message 1 frozen, 11 snapshots pending
	require.Equal(t, uint64(0), st.Sent)
	down = false
	require.NoError(t, sh.Ship(context.Background())) // a 13th, empty snapshot joins
	var seqs []uint64
	for _, p := range srv.all() {
		seqs = append(seqs, p.Seq)
		if p.Seq == 2 {
			break
		}
		require.True(t, bytes.Equal(srv.all()[0].Body, p.Body), "seq 1 resent as it was")
	}
	require.Equal(t, []uint64{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2}, seqs)
	require.Equal(t, map[string]tally{labelsOf("route", "a"): want}, srv.totals())
	st = sh.Stats()
	require.Equal(t, uint64(2), st.Sent)
	require.Equal(t, 0, st.Pending)
	require.Equal(t, 0, st.PendingBytes)
	require.Nil(t, st.LastError)
}

// lossy is a Transport that delivers a message but reports a failure, as
// when the response is lost: the receiver has it, the sender retries.
type lossy struct {
	tr    ship.Transport
	mu    sync.Mutex
	loseN int
}

func (l *lossy) Send(ctx context.Context, m ship.Message) error {
	err := l.tr.Send(ctx, m)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err == nil && l.loseN > 0 {
		l.loseN--
		return errors.New("connection reset after the request was sent")
	}
	return err
}

// TestDuplicateDelivery: a message that arrived but whose answer was lost
// is resent with the same sender, seq, labels and bytes, which the
// receiver recognises.
func TestDuplicateDelivery(t *testing.T) {
	srv := newServer(t)
	clk := newClock()
	tr := &lossy{tr: &ship.HTTP{URL: srv.url()}, loseN: 2}
	sh, err := ship.New(tr, ship.Options{Clock: clk, Jitter: noJitter})
	require.NoError(t, err)
	var mu sync.Mutex
	b := blob.New(webTemplate(t), nil)
	require.NoError(t, sh.AddBlob(b, &mu))
	var want tally
	for i := range 5 {
		mu.Lock()
		update(t, b, uint64(100*i+1))
		mu.Unlock()
		want.record(uint64(100*i + 1))
		_ = sh.Ship(context.Background())
		clk.Advance(10 * time.Second)
	}
	ps := srv.posts()
	require.Equal(t, ps[0].Seq, ps[1].Seq)
	require.True(t, bytes.Equal(ps[0].Body, ps[1].Body))
	require.Equal(t, ps[0].Labels, ps[1].Labels)
	require.Equal(t, ps[0].Seq, ps[2].Seq)
	require.Equal(t, []bool{false, true, true}, []bool{ps[0].Dup, ps[1].Dup, ps[2].Dup})
	require.Equal(t, map[string]tally{"": want}, srv.totals())
	require.Equal(t, uint64(2), sh.Stats().Retried)
	require.Equal(t, uint64(0), sh.Stats().Refused)
}

// TestClose: Close ships what was recorded since the last interval, and
// reports what it could not send when its context ends first.
func TestClose(t *testing.T) {
	srv := newServer(t)
	sh, err := ship.New(&ship.HTTP{URL: srv.url()}, ship.Options{Interval: time.Hour})
	require.NoError(t, err)
	fam, err := family.New(webTemplate(t), []string{"route"}, family.Options{})
	require.NoError(t, err)
	require.NoError(t, sh.AddFamily(fam))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- sh.Run(ctx) }()
	b, err := fam.With("a")
	require.NoError(t, err)
	update(t, b, 42)
	require.NoError(t, sh.Close(context.Background()))
	require.NoError(t, <-done) // Close stops Run
	cancel()
	require.Equal(t, uint64(42), srv.totals()[labelsOf("route", "a")].Sum)
	require.ErrorIs(t, sh.Close(context.Background()), ship.ErrClosed)
	require.ErrorIs(t, sh.Ship(context.Background()), ship.ErrClosed)

	// Down: Close gives up when its context ends, and says what is left.
	srv.setFail(func(post) (int, string) { return http.StatusServiceUnavailable, "" })
	clk := newClock()
	sh, err = ship.New(&ship.HTTP{URL: srv.url()}, ship.Options{Clock: clk})
	require.NoError(t, err)
	b2 := blob.New(webTemplate(t), nil)
	require.NoError(t, sh.AddBlob(b2, nil))
	update(t, b2, 1)
	ctx, cancel = context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err = sh.Close(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorContains(t, err, "ship: close: 1 snapshots (")
	require.Equal(t, 1, sh.Stats().Pending)
}

// TestBacklogDrops: snapshots that cannot merge (an INT_U32 SUM that
// would overflow) are kept apart, never merged away; only when the
// backlog is full is one dropped, and counted.
func TestBacklogDrops(t *testing.T) {
	srv := newServer(t)
	down := true
	srv.setFail(func(post) (int, string) {
		if down {
			return http.StatusServiceUnavailable, ""
		}
		return 0, ""
	})
	clk := newClock()
	tp := webTemplate(t)
	size := blob.New(tp, nil).CurSz()
	sh, err := ship.New(&ship.HTTP{URL: srv.url()}, ship.Options{Clock: clk, Jitter: noJitter,
		MaxBacklog: 3 * size, MinBackoff: time.Second, MaxBackoff: time.Second})
	require.NoError(t, err)
	b := blob.New(tp, nil)
	require.NoError(t, sh.AddBlob(b, nil))
	big := uint32(math.MaxUint32 - 10)
	for range 5 {
		require.NoError(t, b.UpdateU32(1, big))
		_ = sh.Ship(context.Background())
		clk.Advance(10 * time.Second)
	}
	st := sh.Stats()
	require.Equal(t, 3, st.Pending)
	require.Equal(t, 3*size, st.PendingBytes)
	require.Equal(t, uint64(2), st.Dropped)
	require.Equal(t, uint64(2*size), st.DroppedBytes)
	down = false
	require.NoError(t, sh.Ship(context.Background())) // the 6th snapshot is empty: it merges
	var sums []uint64
	for _, p := range srv.posts() {
		if !p.Dup {
			b, err := blob.FromBytes(p.Body, nil)
			require.NoError(t, err)
			sums = append(sums, tallyOf(t, b).Big)
		}
	}
	// Each of the three kept snapshots on its own, the empty one merged
	// into the first message formed after the receiver came back.
	require.Equal(t, []uint64{uint64(big), uint64(big), uint64(big)}, sums)
	require.Equal(t, uint64(3), sh.Stats().Sent)
}

// TestRejected: a message refused for good is given up and counted; the
// next one goes on.
func TestRejected(t *testing.T) {
	srv := newServer(t)
	n := 0
	srv.setFail(func(post) (int, string) {
		n++
		if n == 1 {
			return http.StatusBadRequest, ""
		}
		return 0, ""
	})
	var seen []error
	sh, err := ship.New(&ship.HTTP{URL: srv.url()}, ship.Options{Clock: newClock(), OnError: func(err error) { seen = append(seen, err) }})
	require.NoError(t, err)
	b := blob.New(webTemplate(t), nil)
	require.NoError(t, sh.AddBlob(b, nil))
	update(t, b, 1)
	require.Error(t, sh.Ship(context.Background()))
	update(t, b, 2)
	require.NoError(t, sh.Ship(context.Background()))
	st := sh.Stats()
	require.Equal(t, uint64(1), st.Rejected)
	require.Equal(t, uint64(1), st.Sent)
	require.Equal(t, uint64(2), srv.totals()[""].Sum)
	require.Len(t, seen, 1)
	ps := srv.posts()
	require.Equal(t, uint64(2), ps[len(ps)-1].Seq)
	require.Equal(t, uint64(2), ps[len(ps)-1].Settled)
}

// TestRunSchedule: Run snapshots every Interval and wakes for a retry
// when its backoff ends, before the next interval.
func TestRunSchedule(t *testing.T) {
	srv := newServer(t)
	clk := newClock()
	start := clk.Now()
	var attempts []time.Duration
	srv.setFail(func(p post) (int, string) {
		attempts = append(attempts, clk.Now().Sub(start))
		if len(attempts) <= 2 {
			return http.StatusServiceUnavailable, ""
		}
		return 0, ""
	})
	sh, err := ship.New(&ship.HTTP{URL: srv.url()}, ship.Options{Clock: clk, Jitter: noJitter,
		Interval: 10 * time.Second, MinBackoff: time.Second})
	require.NoError(t, err)
	b := blob.NewSharded(webTemplate(t), 2, nil)
	require.NoError(t, sh.AddSharded(b))
	update(t, b, 3)
	ran := make(chan error, 1)
	go func() { ran <- sh.Run(context.Background()) }()
	for _, d := range []time.Duration{10 * time.Second, time.Second, 2 * time.Second, 7 * time.Second} {
		<-clk.waiting // Run waits on the clock
		clk.Advance(d)
	}
	<-clk.waiting
	require.NoError(t, sh.Close(context.Background()))
	require.NoError(t, <-ran)
	sec := time.Second
	// Interval at 10s (fails), retries at 11s (fails) and 13s; the next
	// interval at 20s sends the empty snapshot of 10s..20s; Close one more.
	require.Equal(t, []time.Duration{10 * sec, 11 * sec, 13 * sec, 20 * sec, 20 * sec}, attempts)
	require.Equal(t, uint64(3), srv.totals()[""].Sum)
	require.Equal(t, uint64(3), sh.Stats().Sent)
}

// TestSettledBelow: a message held back by refusals holds
// Statsblob-Settled-Below at its seq while other label sets go on; once
// it is acknowledged the value moves past it.
func TestSettledBelow(t *testing.T) {
	srv := newServer(t)
	refusals := 2
	srv.setFail(func(p post) (int, string) {
		if p.Labels == labelsOf("route", "a") && refusals > 0 {
			refusals--
			return http.StatusUnprocessableEntity, ""
		}
		return 0, ""
	})
	clk := newClock()
	sh, err := ship.New(&ship.HTTP{URL: srv.url()}, ship.Options{Clock: clk, Jitter: noJitter, MinBackoff: time.Second, MaxBackoff: time.Second})
	require.NoError(t, err)
	a, b := blob.New(webTemplate(t), nil), blob.New(webTemplate(t), nil)
	require.NoError(t, sh.AddBlob(a, nil, ship.Label{"route", "a"}))
	require.NoError(t, sh.AddBlob(b, nil, ship.Label{"route", "b"}))
	for range 3 {
		_ = sh.Ship(context.Background())
		clk.Advance(10 * time.Second)
	}
	type sent struct {
		Labels       string
		Seq, Settled uint64
		Status       int
	}
	var got []sent
	for _, p := range srv.all() {
		got = append(got, sent{p.Labels, p.Seq, p.Settled, p.Status})
	}
	ra, rb := labelsOf("route", "a"), labelsOf("route", "b")
	require.Equal(t, []sent{
		{ra, 1, 1, 422}, {rb, 2, 1, 204}, // round 1: a refused, b acknowledged
		{ra, 1, 1, 422}, {rb, 3, 1, 204}, // round 2: a still held back
		{ra, 1, 1, 204}, {ra, 4, 4, 204}, {rb, 5, 5, 204}, // round 3: a goes, then its next message
	}, got)
	st := sh.Stats()
	require.Equal(t, uint64(2), st.Refused)
	require.Equal(t, uint64(5), st.Sent)
}

// downTransport fails every send as an unreachable receiver does, and
// records when.
type downTransport struct {
	clk   *fakeClock
	start time.Time
	at    []time.Duration
}

func (d *downTransport) Send(_ context.Context, m ship.Message) error {
	d.at = append(d.at, d.clk.Now().Sub(d.start))
	return errors.New("connect: connection refused")
}

// TestUnreachable: while the receiver cannot be reached, the shipper
// probes it once per backoff, not once per label set.
func TestUnreachable(t *testing.T) {
	clk := newClock()
	tr := &downTransport{clk: clk, start: clk.Now()}
	sh, err := ship.New(tr, ship.Options{Clock: clk, Jitter: noJitter, MinBackoff: time.Second, MaxBackoff: 4 * time.Second})
	require.NoError(t, err)
	fam, err := family.New(webTemplate(t), []string{"route"}, family.Options{})
	require.NoError(t, err)
	require.NoError(t, sh.AddFamily(fam))
	for i := range 10 {
		b, err := fam.With(string(rune('a' + i)))
		require.NoError(t, err)
		update(t, b, 1)
	}
	for range 40 { // 10 s in steps of 250 ms
		_ = sh.Ship(context.Background())
		clk.Advance(250 * time.Millisecond)
	}
	sec := time.Second
	require.Equal(t, []time.Duration{0, 1 * sec, 3 * sec, 7 * sec}, tr.at)
	st := sh.Stats()
	require.Equal(t, uint64(4), st.Retried)
	require.Equal(t, uint64(0), st.Refused)
	require.Equal(t, 10*40, int(st.Snapshots))
	require.ErrorContains(t, st.LastError, "connection refused")
}

// TestHTTPExtraHeader: HTTP.Header goes with every POST (e.g. a bearer
// token), beside the protocol's headers.
func TestHTTPExtraHeader(t *testing.T) {
	got := make(chan http.Header, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Clone()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	tr := &ship.HTTP{URL: srv.URL, Header: http.Header{"Authorization": {"Bearer x"}}}
	require.NoError(t, tr.Send(context.Background(), ship.Message{Sender: "s", Seq: 9, SettledBelow: 4, Body: []byte{1}}))
	h := <-got
	require.Equal(t, "Bearer x", h.Get("Authorization"))
	require.Equal(t, "s", h.Get(ship.HeaderSender))
	require.Equal(t, "9", h.Get(ship.HeaderSeq))
	require.Equal(t, "4", h.Get(ship.HeaderSettledBelow))
	require.Equal(t, "s/9", ship.Message{Sender: "s", Seq: 9}.ID())
}

// TestSkipIdle: with SkipIdle, label sets not updated since the last
// interval are not sent.
func TestSkipIdle(t *testing.T) {
	for _, skip := range []bool{false, true} {
		srv := newServer(t)
		sh, err := ship.New(&ship.HTTP{URL: srv.url()}, ship.Options{Clock: newClock(), SkipIdle: skip})
		require.NoError(t, err)
		fam, err := family.New(webTemplate(t), []string{"route"}, family.Options{})
		require.NoError(t, err)
		require.NoError(t, sh.AddFamily(fam))
		for _, r := range []string{"a", "b", "c"} {
			b, err := fam.With(r)
			require.NoError(t, err)
			update(t, b, 1)
		}
		require.NoError(t, sh.Ship(context.Background())) // all three
		b, err := fam.With("b")
		require.NoError(t, err)
		update(t, b, 2)
		require.NoError(t, sh.Ship(context.Background())) // b, or all three
		st := sh.Stats()
		require.Equal(t, uint64(6), st.Snapshots)
		if skip {
			require.Equal(t, uint64(2), st.Idle)
			require.Equal(t, uint64(4), st.Sent)
		} else {
			require.Equal(t, uint64(0), st.Idle)
			require.Equal(t, uint64(6), st.Sent)
		}
		require.Equal(t, uint64(3), srv.totals()[labelsOf("route", "b")].Sum)
	}
}

// hwReceiver is the receiver the package documentation describes first:
// per sender and label set, the highest seq merged; a message whose seq
// is not above it is answered as a duplicate and not merged. It refuses
// the first send of the messages refuse names (by seq) with a 503, and
// sums VOI 0 per label set.
type hwReceiver struct {
	refuse map[uint64]bool
	hw     map[string]uint64
	got    map[string]uint64
}

func (r *hwReceiver) Send(_ context.Context, m ship.Message) error {
	if r.refuse[m.Seq] {
		delete(r.refuse, m.Seq)
		return &ship.SendError{Status: http.StatusServiceUnavailable}
	}
	key := m.Sender + fmt.Sprintf("%q", m.Labels)
	if m.Seq <= r.hw[key] {
		return nil // a duplicate
	}
	r.hw[key] = m.Seq
	b, err := blob.FromBytes(m.Body, nil)
	if err != nil {
		return err
	}
	v, err := b.FetchU64(0, voi.Sum)
	if err != nil {
		return err
	}
	r.got[fmt.Sprintf("%v", m.Labels)] += v
	return nil
}

// TestOneQueuePerLabelSet: sources whose label sets are the same once
// merged (a family's names and a blob's labels given in another order)
// share one queue, so that the label set has one message in flight and
// its seqs increase as the protocol promises; and label values holding
// NUL never make two label sets share a queue. Before, the queue's key
// followed the order the labels were given in, and wrote values as they
// are: the family's set and the blob were two queues of one label set, a
// refused message of the one was overtaken by the other's next seq, and a
// receiver keeping the highest seq per label set (as the documentation
// advises) took its retry for a duplicate: 10 of 11 arrived; and
// {a="x\x00b\x00y"} was merged into {a="x", b="y"}'s messages.
func TestOneQueuePerLabelSet(t *testing.T) {
	tp := webTemplate(t)
	clk := newClock()
	r := &hwReceiver{refuse: map[uint64]bool{1: true}, hw: map[string]uint64{}, got: map[string]uint64{}}
	sh, err := ship.New(r, ship.Options{Clock: clk, Jitter: noJitter, MinBackoff: time.Second, SkipIdle: true})
	require.NoError(t, err)
	fam, err := family.New(tp, []string{"route"}, family.Options{})
	require.NoError(t, err)
	require.NoError(t, sh.AddFamily(fam, ship.Label{"host", "web1"}))
	b := blob.New(tp, nil)
	require.NoError(t, sh.AddBlob(b, nil, ship.Label{"route", "a"}, ship.Label{"host", "web1"}))
	nul, err := family.New(tp, []string{"a"}, family.Options{})
	require.NoError(t, err)
	require.NoError(t, sh.AddFamily(nul))
	plain := blob.New(tp, nil)
	require.NoError(t, sh.AddBlob(plain, nil, ship.Label{"a", "x"}, ship.Label{"b", "y"}))

	fb, err := fam.With("a")
	require.NoError(t, err)
	update(t, fb, 1)
	update(t, b, 10)
	nb, err := nul.With("x\x00b\x00y")
	require.NoError(t, err)
	update(t, nb, 100)
	update(t, plain, 1000)
	_ = sh.Ship(context.Background()) // the first message refused
	clk.Advance(2 * time.Second)
	require.NoError(t, sh.Ship(context.Background()))
	require.Equal(t, map[string]uint64{
		"[{host web1} {route a}]": 11,
		"[{a x\x00b\x00y}]":       100,
		"[{a x} {b y}]":           1000,
	}, r.got)
	st := sh.Stats()
	require.Zero(t, st.Pending)
	require.Equal(t, uint64(3), st.Sent)
}
