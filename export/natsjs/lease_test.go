package natsjs_test

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"net/url"
	"regexp"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/export/natsjs"
	"github.com/statsblob/statsblob/export/natsjs/internal/natstest"
	"github.com/statsblob/statsblob/ship"
)

// cutProxy forwards TCP connections to a NATS server until cut: then it
// drops every byte either way without closing anything, as a network
// partition does (a client's requests time out; nothing tells it the
// link is gone).
type cutProxy struct {
	ln  net.Listener
	cut atomic.Bool
}

func newCutProxy(t *testing.T, natsURL string) *cutProxy {
	u, err := url.Parse(natsURL)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &cutProxy{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", u.Host)
			if err != nil {
				c.Close()
				continue
			}
			t.Cleanup(func() { c.Close(); s.Close() })
			go p.pipe(s, c)
			go p.pipe(c, s)
		}
	}()
	return p
}

func (p *cutProxy) pipe(dst io.Writer, src io.Reader) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !p.cut.Load() {
			if _, err := dst.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *cutProxy) url() string { return "nats://" + p.ln.Addr().String() }

// TestCutOffOwnerStopsExporting: a collector cut off from NATS (its
// process alive, its requests unanswered) cannot renew its leases; by the
// time another collector may take its partitions it has stopped
// exporting them, so that no series is exported twice, and once the link
// is back the totals of both are exactly what was shipped. Before, the
// cut-off owner took its failed renewals and checkpoints for passing
// trouble and kept exporting its partitions' aggregates, beside the new
// owner's, for as long as the cut lasted: a sum over the collectors
// counted all its data twice.
func TestCutOffOwnerStopsExporting(t *testing.T) {
	cl := natstest.Start(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, js := connect(t, cl.URL())
	const lease = 2 * time.Second
	setup := natsjs.Setup{Partitions: 2, LeaseTTL: lease}
	require.NoError(t, setup.Ensure(ctx, js))

	tp := counterTemplate(t)
	want := map[string]uint64{}
	tr := &natsjs.Transport{JS: js, Partitions: 2}
	seq := uint64(0)
	publish := func() {
		for h := range 4 {
			b := blob.New(tp, nil)
			require.NoError(t, b.UpdateU64(0, uint64(h+1)))
			seq++
			labels := []ship.Label{{Name: "host", Value: fmt.Sprintf("web%d", h)}}
			require.NoError(t, tr.Send(ctx, ship.Message{Sender: "s", Seq: seq, SettledBelow: seq, Labels: labels, Body: b.Bytes()}))
			want[fmt.Sprintf("%08x%v", tp.Hash(), labels)] += uint64(h + 1)
		}
	}
	start := func(id, url string) (*natsjs.Consumer, *memStore) {
		_, js := connect(t, url)
		store := newMemStore()
		c, _ := runConsumer(t, ctx, js, setup, id, store, nil)
		return c, store
	}

	px := newCutProxy(t, cl.URL())
	a, storeA := start("a", px.url())
	publish()
	require.Eventually(t, func() bool { return len(a.Owned()) == 2 && maps.Equal(want, storeA.totals(t)) },
		30*time.Second, 20*time.Millisecond)

	px.cut.Store(true)
	publish()
	b, storeB := start("b", cl.URL())
	require.Eventually(t, func() bool { return len(b.Owned()) == 2 }, 30*time.Second, 20*time.Millisecond)
	require.Eventually(t, func() bool { return len(storeA.totals(t)) == 0 }, time.Second, 10*time.Millisecond,
		"the cut-off owner still exports what the new owner exports")
	require.Equal(t, uint64(2), a.Stats().Lost)

	px.cut.Store(false) // a comes back, and may take a share again
	publish()
	var mu sync.Mutex
	sum := func() map[string]uint64 {
		mu.Lock()
		defer mu.Unlock()
		out := storeA.totals(t)
		for k, v := range storeB.totals(t) {
			out[k] += v
		}
		return out
	}
	require.Eventually(t, func() bool { return maps.Equal(want, sum()) }, 30*time.Second, 50*time.Millisecond)
}

// logLines collects a consumer's log lines.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

// to makes cfg log to l (runConsumer's tune).
func (l *logLines) to(cfg *natsjs.Config) { cfg.Logf = l.logf }

// matching returns the lines that match re.
func (l *logLines) matching(re string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, s := range l.lines {
		if regexp.MustCompile(re).MatchString(s) {
			out = append(out, s)
		}
	}
	return out
}

// TestOwnershipLogged: every change of a partition's owner is logged
// once, with the partition and why: taken, handed back (a collector
// joined, stopping), lost (the lease not renewed). Before, only metrics
// told a partition was taken or handed back, and a lost lease was
// logged by whichever path noticed it, in words of its own.
func TestOwnershipLogged(t *testing.T) {
	cl := natstest.Start(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, js := connect(t, cl.URL())
	setup := natsjs.Setup{Partitions: 2, LeaseTTL: time.Second}
	require.NoError(t, setup.Ensure(ctx, js))
	start := func(id, url string, log *logLines) (*natsjs.Consumer, func()) {
		_, js := connect(t, url)
		return runConsumer(t, ctx, js, setup, id, newMemStore(), log.to)
	}
	px := newCutProxy(t, cl.URL())
	var logA, logB logLines
	a, _ := start("a", px.url(), &logA)
	require.Eventually(t, func() bool { return len(a.Owned()) == 2 }, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, []string{
		"natsjs: partition 0: taken (its lease was free, this collector below its share of 2 partitions among 1 collectors), no stored state",
		"natsjs: partition 1: taken (its lease was free, this collector below its share of 2 partitions among 1 collectors), no stored state",
	}, sorted(logA.matching(`taken`)))

	b, stopB := start("b", cl.URL(), &logB)
	require.Eventually(t, func() bool { return len(b.Owned()) == 1 && len(a.Owned()) == 1 }, 10*time.Second, 10*time.Millisecond)
	moved := b.Owned()[0]
	require.Equal(t, []string{fmt.Sprintf("natsjs: partition %d: handed back (above this collector's share of 1 partitions among 2 collectors)", moved)},
		logA.matching(`handed back|lost`))
	require.Equal(t, []string{fmt.Sprintf("natsjs: partition %d: taken (its lease was free, this collector below its share of 1 partitions among 2 collectors), from its stored state", moved)},
		logB.matching(`taken|handed back|lost`))

	px.cut.Store(true) // a can no longer renew its lease
	kept := a.Owned()[0]
	require.Eventually(t, func() bool { return len(a.Owned()) == 0 }, 10*time.Second, 10*time.Millisecond)
	lost := logA.matching(`lost`)
	require.Len(t, lost, 1)
	require.Regexp(t, fmt.Sprintf(`^natsjs: partition %d: lost \(lease not renewed for \d+ms, before another collector may take it\): no longer exported$`, kept), lost[0])

	stopB()
	require.Equal(t, []string{fmt.Sprintf("natsjs: partition %d: handed back (stopping)", moved)}, logB.matching(`handed back|lost`))
	require.Equal(t, natsjs.Stats{Taken: 2, Released: 1, Lost: 1}, pick(a.Stats()))
}

func sorted(s []string) []string { slices.Sort(s); return s }

// pick keeps the ownership counters of st.
func pick(st natsjs.Stats) natsjs.Stats {
	return natsjs.Stats{Taken: st.Taken, Released: st.Released, Lost: st.Lost}
}

// TestOutageLoggedOnce: while the stream is unreachable every round's
// heartbeat and every owned partition's renewal fail; each run of
// failures is logged once at its start (and the heartbeat's again when
// one succeeds), not once a round. Before, an outage wrote a heartbeat
// line and a renew line per partition every quarter of the lease.
func TestOutageLoggedOnce(t *testing.T) {
	cl := natstest.Start(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, js := connect(t, cl.URL())
	setup := natsjs.Setup{Partitions: 2, LeaseTTL: time.Second}
	require.NoError(t, setup.Ensure(ctx, js))
	var log logLines
	c, _ := runConsumer(t, ctx, js, setup, "a", newMemStore(), log.to)
	require.Eventually(t, func() bool { return len(c.Owned()) == 2 && c.Ready() == nil }, 10*time.Second, 10*time.Millisecond)

	cl.StopNode(0)
	// Rounds every 250 ms, each at most 500 ms: at least four fail.
	require.Eventually(t, func() bool { return len(c.Owned()) == 0 }, 10*time.Second, 10*time.Millisecond)
	time.Sleep(3 * time.Second)
	hb := log.matching(`^natsjs: heartbeat`)
	require.Len(t, hb, 1, "%q", hb)
	require.Regexp(t, `^natsjs: heartbeat: .* \(retried every round; logged again when one succeeds\)$`, hb[0])
	for _, l := range log.matching(`renew: `) {
		require.Regexp(t, `^natsjs: partition [01]: renew: .* \(retried every round until the lease runs out\)$`, l)
	}
	require.LessOrEqual(t, len(log.matching(`renew: `)), 2, "a run of each partition's failures logged once")

	cl.StartNode(0)
	cl.WaitReady()
	require.Eventually(t, func() bool { return c.Ready() == nil }, 30*time.Second, 50*time.Millisecond)
	again := log.matching(`^natsjs: heartbeat stored again`)
	require.Len(t, again, 1)
	require.Regexp(t, `^natsjs: heartbeat stored again after \d+ failed rounds$`, again[0])
	require.Len(t, log.matching(`^natsjs: heartbeat: `), 1)
}
