package collector_test

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/statsblob/statsblob/export/collector"
	"github.com/statsblob/statsblob/export/internal/fixture"
)

// blackHole is an exporter whose pushes never finish before their
// context ends, unless it is up.
type blackHole struct {
	fakeExporter
	up    atomic.Bool
	tries atomic.Int64
}

func (b *blackHole) Export(ctx context.Context, rm *metricdata.ResourceMetrics) error {
	b.tries.Add(1)
	if b.up.Load() {
		return b.fakeExporter.Export(ctx, rm)
	}
	<-ctx.Done()
	return ctx.Err()
}

// Defect 6 of issue 22: with delta temporality Rotate pushed the closed
// window synchronously with no deadline, so a black-hole endpoint stopped
// rotation (windows_total stayed at 1 while the window grew) and shutdown
// waited on it. Rotation must never wait on the exporter, every push has a
// deadline, and Close says what it could not ship.
func TestRotateNeverWaitsOnTheExporter(t *testing.T) {
	ck := &clock{t: time.Unix(1000, 0)}
	s, tp := newServer(t, collector.Config{Window: time.Minute, Now: ck.now})
	bh := &blackHole{}
	p := s.NewPusher(bh, collector.PushConfig{Temporality: metricdata.DeltaTemporality, Timeout: 20 * time.Millisecond})
	kb := fixture.KitchenBlob(tp).Bytes()
	for i := range 3 {
		code, _ := post(t, s, http.MethodPost, "h=a", kb)
		require.Equal(t, http.StatusNoContent, code)
		ck.set(time.Unix(1060+60*int64(i), 0))
		rotated := make(chan struct{})
		go func() { s.Rotate(); close(rotated) }()
		select {
		case <-rotated:
		case <-time.After(10 * time.Second):
			t.Fatal("Rotate is waiting on the exporter")
		}
	}
	require.NoError(t, testutilCompare(s, "statsblob_collector_windows_total", 3))
	require.Eventually(t, func() bool { return bh.tries.Load() >= 2 }, 10*time.Second, time.Millisecond, "the worker retries")

	code, _ := post(t, s, http.MethodPost, "h=a", kb)
	require.Equal(t, http.StatusNoContent, code)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := p.Close(ctx)
	var ns *collector.NotShipped
	require.ErrorAs(t, err, &ns)
	require.Equal(t, 4, ns.Windows)
	require.Equal(t, uint64(4), ns.Posts)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Equal(t, "4 accepted blobs in 4 windows not shipped over OTLP: context deadline exceeded", err.Error())
	require.NoError(t, ctx.Err(), "Close kept to the push timeout, not the caller's deadline")
}

// Windows closed while the endpoint is down are pushed, in order, once it
// is back; past MaxPending the oldest is dropped and counted.
func TestDeltaQueue(t *testing.T) {
	ck := &clock{t: time.Unix(1000, 0)}
	s, tp := newServer(t, collector.Config{Window: time.Minute, Now: ck.now})
	bh := &blackHole{}
	// A timeout a push can meet under the race detector: producing the
	// metrics alone took over 5 ms there, and every push then failed.
	p := s.NewPusher(bh, collector.PushConfig{Temporality: metricdata.DeltaTemporality, Timeout: 250 * time.Millisecond, MaxPending: 2})
	kb := fixture.KitchenBlob(tp).Bytes()
	for i := range 3 {
		code, body := post(t, s, http.MethodPost, "h=a", kb)
		require.Equal(t, http.StatusNoContent, code, body)
		ck.set(time.Unix(1060+60*int64(i), 0))
		c := s.Rotate()
		require.Len(t, c.Blobs, 1)
	}
	// The worker's push under way must meet the endpoint down (a push that
	// reaches it after it came back would ship the window the queue
	// dropped): wait for its try before bringing the endpoint up.
	require.Eventually(t, func() bool { return bh.tries.Load() >= 1 }, 10*time.Second, time.Millisecond)
	bh.up.Store(true)
	require.Eventually(t, func() bool { return bh.count() >= 2 }, 10*time.Second, time.Millisecond)
	require.NoError(t, p.Close(context.Background()), "nothing left: the window under way is empty")
	bh.mu.Lock()
	defer bh.mu.Unlock()
	require.Len(t, bh.got, 2)
	for i, want := range []int64{1060, 1120} { // the window of 1000-1060 was dropped
		require.Equal(t, time.Unix(want, 0), bytesSum(t, bh.got[i]).DataPoints[0].StartTime)
	}
	require.NoError(t, testutilCompare(s, "statsblob_collector_otlp_dropped_windows_total", 1))
}

// slowAck is an exporter whose endpoint takes each push at once and
// answers it only when release is closed: a push cut off before then has
// been delivered although its caller sees an error.
type slowAck struct {
	fakeExporter
	entered chan struct{} // a push has been delivered
	release chan struct{}
	calls   atomic.Int64
}

func (a *slowAck) Export(ctx context.Context, rm *metricdata.ResourceMetrics) error {
	a.calls.Add(1)
	_ = a.fakeExporter.Export(ctx, rm)
	select {
	case a.entered <- struct{}{}:
	default:
	}
	select {
	case <-a.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// pushUnderWay returns a delta Pusher whose worker is pushing a closed
// window of one post to a slowAck that has taken it and not answered.
func pushUnderWay(t *testing.T) (*collector.Pusher, *slowAck) {
	ck := &clock{t: time.Unix(1000, 0)}
	s, tp := newServer(t, collector.Config{Window: time.Minute, Now: ck.now})
	a := &slowAck{entered: make(chan struct{}, 1), release: make(chan struct{})}
	p := s.NewPusher(a, collector.PushConfig{Temporality: metricdata.DeltaTemporality, Timeout: time.Minute})
	code, _ := post(t, s, http.MethodPost, "h=a", fixture.KitchenBlob(tp).Bytes())
	require.Equal(t, http.StatusNoContent, code)
	ck.set(time.Unix(1060, 0))
	s.Rotate()
	select {
	case <-a.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the worker did not push the closed window")
	}
	return p, a
}

// A delta Close waits for the push under way instead of cutting it off:
// cut off, its window stayed queued and Close pushed it again, and the
// endpoint counted the window twice (the collector's end-to-end test saw
// 2 × 1448 bytes under load).
func TestDeltaCloseLetsThePushUnderWayFinish(t *testing.T) {
	p, a := pushUnderWay(t)
	closed := make(chan error, 1)
	go func() { closed <- p.Close(context.Background()) }()
	require.Never(t, func() bool { return a.calls.Load() > 1 }, 200*time.Millisecond, time.Millisecond,
		"Close pushed the window under way again")
	close(a.release)
	require.NoError(t, <-closed)
	a.mu.Lock()
	defer a.mu.Unlock()
	require.Len(t, a.got, 1)
	require.Equal(t, 1448.0, bytesSum(t, a.got[0]).DataPoints[0].Value)
	require.True(t, a.shut)
}

// A delta Close whose deadline ends before the push under way does, cuts
// it off and says what it could not ship.
func TestDeltaCloseDeadlineCutsThePushOff(t *testing.T) {
	p, _ := pushUnderWay(t)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := p.Close(ctx)
	var ns *collector.NotShipped
	require.ErrorAs(t, err, &ns)
	require.Equal(t, 1, ns.Windows)
	require.Equal(t, uint64(1), ns.Posts)
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

// A cumulative Close whose push fails says so.
func TestCumulativeCloseFails(t *testing.T) {
	s, tp := newServer(t, collector.Config{})
	p := s.NewPusher(&blackHole{}, collector.PushConfig{Timeout: 5 * time.Millisecond})
	post(t, s, http.MethodPost, "h=a", fixture.KitchenBlob(tp).Bytes())
	err := p.Close(context.Background())
	var ns *collector.NotShipped
	require.True(t, errors.As(err, &ns), "%v", err)
	require.Equal(t, collector.NotShipped{Windows: 1, Posts: 1, Err: context.DeadlineExceeded}, *ns)
}

// Run with an interval of 0 or less pushes every DefaultPushInterval: it
// called time.NewTicker with it, which panics (the command's
// -otlp-interval 0 took the process down). The server holds a post, so
// that a push would be seen: a positive interval of 1 ms pushes it (the
// control), and 0 or a negative interval must not push within 20 ms
// (DefaultPushInterval is 10 s; a tick of less than 20 ms taken for it
// fails here).
func TestRunNonPositiveInterval(t *testing.T) {
	pusher := func() (*collector.Pusher, *fakeExporter) {
		t.Helper()
		s, tp := newServer(t, collector.Config{})
		code, body := post(t, s, http.MethodPost, "host=a", fixture.KitchenBlob(tp).Bytes())
		require.Equal(t, http.StatusNoContent, code, body)
		exp := &fakeExporter{}
		return s.NewPusher(exp, collector.PushConfig{}), exp
	}
	pushes := func(exp *fakeExporter) int {
		exp.mu.Lock()
		defer exp.mu.Unlock()
		return len(exp.got)
	}

	p, exp := pusher()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); p.Run(ctx, time.Millisecond) }()
	require.Eventually(t, func() bool { return pushes(exp) > 0 }, 10*time.Second, time.Millisecond, "the control: a 1 ms interval pushes")
	cancel()
	<-done

	for _, every := range []time.Duration{0, -time.Second} {
		p, exp := pusher()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		p.Run(ctx, every) // returns when ctx is done
		cancel()
		require.Zero(t, pushes(exp), "no push within 20 ms of a %v interval", every)
	}
}
