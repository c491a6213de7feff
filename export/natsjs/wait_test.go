package natsjs_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/export/aggregate"
	"github.com/statsblob/statsblob/export/natsjs"
	"github.com/statsblob/statsblob/ship"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// addCounter adds a template like counterTemplate's, named name, to reg.
func addCounter(t *testing.T, reg *tpl.Registry, name string) *tpl.Template {
	tp, err := reg.New(name)
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "requests", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}))
	return tp
}

// setTotals sums VOI 0's SUM of a SetStore's aggregates by template name
// and labels.
func setTotals(t *testing.T, s *natsjs.SetStore) map[string]uint64 {
	out := map[string]uint64{}
	for _, n := range s.Blobs() {
		v, err := n.Blob.FetchU64(0, voi.Sum)
		require.NoError(t, err)
		out[fmt.Sprintf("%s%v", n.Posted.Name(), n.Labels)] += v
	}
	return out
}

// TestUnknownTemplateWaits: messages of a template the collector does not
// know wait for it (acknowledged, so that they hold back neither the
// partition's other messages nor its acknowledgement floor), are tried
// again every Config.TemplateRetry, and are merged once it is known: in stream
// order, so a late copy among them is still recognised. Before, each was
// refused and acknowledged: dropped for good, though the shipper had been
// told it was stored ({REQ web1} never arrived).
func TestUnknownTemplateWaits(t *testing.T) {
	setup := natsjs.Setup{Partitions: 1, LeaseTTL: time.Second, Duplicates: 200 * time.Millisecond}
	ctx, js, tr := onePartition(t, setup)
	req := counterTemplate(t) // "REQ", the shippers' new template
	reg := tpl.NewRegistry()
	known := addCounter(t, reg, "KNOWN")

	first := countMsg(t, req, "s1", 1, "web1", 7)
	for _, m := range []ship.Message{first, countMsg(t, known, "s1", 2, "web1", 1), countMsg(t, req, "s1", 3, "web1", 5)} {
		require.NoError(t, tr.Send(ctx, m))
	}
	time.Sleep(300 * time.Millisecond)
	require.NoError(t, tr.Send(ctx, first)) // a late copy, stored again
	require.NoError(t, tr.Send(ctx, countMsg(t, known, "s1", 4, "web2", 2)))

	store := natsjs.NewSetStore(reg, aggregate.Config{})
	var mu sync.Mutex
	var logs []string
	c, _ := runConsumer(t, ctx, js, setup, "c", store, func(cfg *natsjs.Config) {
		cfg.TemplateRetry = 100 * time.Millisecond
		cfg.Logf = func(f string, a ...any) {
			mu.Lock()
			logs = append(logs, fmt.Sprintf(f, a...))
			mu.Unlock()
		}
	})
	require.Eventually(t, func() bool {
		st := c.Stats()
		return st.Merged == 2 && st.Waiting == 3 && st.Unacked == 0
	}, 30*time.Second, 20*time.Millisecond, "the known template's messages merged, the others waiting, all acknowledged")
	time.Sleep(500 * time.Millisecond) // retried a few times
	st := c.Stats()
	require.Equal(t, uint64(2), st.Merged)
	require.Equal(t, 3, st.Waiting)
	require.Zero(t, st.Refused)
	require.Equal(t, map[string]uint64{"KNOWN[{host web1}]": 1, "KNOWN[{host web2}]": 2}, setTotals(t, store))
	mu.Lock()
	require.Contains(t, logs, fmt.Sprintf("natsjs: partition 0: template %d (%08x) unknown: its messages wait for it in the stream (tried every 100ms)", req.Hash(), req.Hash()))
	mu.Unlock()

	require.Equal(t, req.Hash(), addCounter(t, reg, "REQ").Hash()) // the templates file updated, say
	require.Eventually(t, func() bool { return c.Stats().Waiting == 0 }, 30*time.Second, 20*time.Millisecond)
	st = c.Stats()
	require.Equal(t, uint64(4), st.Merged)
	require.Equal(t, uint64(1), st.Duplicates)
	require.Zero(t, st.Refused)
	require.Equal(t, map[string]uint64{"KNOWN[{host web1}]": 1, "KNOWN[{host web2}]": 2, "REQ[{host web1}]": 12}, setTotals(t, store))
}

// TestWaitingAcrossHandover: the waiting messages are in the stored state:
// a collector that knows their template takes the partition over and
// merges them at once. Before, the first collector had dropped them.
func TestWaitingAcrossHandover(t *testing.T) {
	setup := natsjs.Setup{Partitions: 1, LeaseTTL: time.Second}
	ctx, js, tr := onePartition(t, setup)
	req := counterTemplate(t)
	for i := range 3 {
		require.NoError(t, tr.Send(ctx, countMsg(t, req, "s1", uint64(i+1), fmt.Sprintf("web%d", i), uint64(i+1))))
	}
	a, stopA := runConsumer(t, ctx, js, setup, "a", natsjs.NewSetStore(tpl.NewRegistry(), aggregate.Config{}), nil)
	require.Eventually(t, func() bool { return a.Stats().Waiting == 3 }, 30*time.Second, 20*time.Millisecond)
	stopA()

	reg := tpl.NewRegistry()
	addCounter(t, reg, "REQ")
	store := natsjs.NewSetStore(reg, aggregate.Config{})
	b, _ := runConsumer(t, ctx, js, setup, "b", store, nil)
	require.Eventually(t, func() bool { return b.Stats().Merged == 3 }, 30*time.Second, 20*time.Millisecond)
	require.Equal(t, map[string]uint64{"REQ[{host web0}]": 1, "REQ[{host web1}]": 2, "REQ[{host web2}]": 3}, setTotals(t, store))
	require.Zero(t, b.Stats().Waiting)
}

// TestWaitingBounded: past Config.MaxWaiting, a message of an unknown
// template is dropped, and counted.
func TestWaitingBounded(t *testing.T) {
	setup := natsjs.Setup{Partitions: 1, LeaseTTL: time.Second}
	ctx, js, tr := onePartition(t, setup)
	req := counterTemplate(t)
	for i := range 5 {
		require.NoError(t, tr.Send(ctx, countMsg(t, req, "s1", uint64(i+1), "web1", 1)))
	}
	c, _ := runConsumer(t, ctx, js, setup, "c", natsjs.NewSetStore(tpl.NewRegistry(), aggregate.Config{}),
		func(cfg *natsjs.Config) { cfg.MaxWaiting = 3 })
	require.Eventually(t, func() bool { return c.Stats().WaitFull == 2 }, 30*time.Second, 20*time.Millisecond)
	require.Equal(t, 3, c.Stats().Waiting)
}

// TestWaitingExpired: a waiting message the stream removes (its MaxAge)
// before its template is known is counted, and waits no more.
func TestWaitingExpired(t *testing.T) {
	setup := natsjs.Setup{Partitions: 1, LeaseTTL: time.Second, MaxAge: time.Second, Duplicates: 500 * time.Millisecond}
	ctx, js, tr := onePartition(t, setup)
	require.NoError(t, tr.Send(ctx, countMsg(t, counterTemplate(t), "s1", 1, "web1", 1)))
	c, _ := runConsumer(t, ctx, js, setup, "c", natsjs.NewSetStore(tpl.NewRegistry(), aggregate.Config{}),
		func(cfg *natsjs.Config) { cfg.TemplateRetry = 100 * time.Millisecond })
	require.Eventually(t, func() bool { return c.Stats().Waiting == 1 }, 30*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool { return c.Stats().Expired == 1 }, 30*time.Second, 20*time.Millisecond)
	require.Zero(t, c.Stats().Waiting)
	require.Zero(t, c.Stats().Merged)
}

// TestGapCounted: messages the stream removed (its MaxAge) while no
// collector read the partition (all of them down longer than that) are
// counted as a gap when a collector takes it again. (A partition never
// read has no such gap: its consumer starts at the stream's first
// message.)
func TestGapCounted(t *testing.T) {
	setup := natsjs.Setup{Partitions: 1, LeaseTTL: time.Second, MaxAge: time.Second, Duplicates: 500 * time.Millisecond}
	ctx, js, tr := onePartition(t, setup)
	tp := counterTemplate(t)
	require.NoError(t, tr.Send(ctx, countMsg(t, tp, "s1", 1, "web1", 1)))
	a, stopA := runConsumer(t, ctx, js, setup, "a", newMemStore(), nil)
	require.Eventually(t, func() bool { return a.Stats().Merged == 1 }, 30*time.Second, 20*time.Millisecond)
	stopA()
	require.Zero(t, a.Stats().Gaps)

	require.NoError(t, tr.Send(ctx, countMsg(t, tp, "s1", 2, "web1", 2)))
	require.NoError(t, tr.Send(ctx, countMsg(t, tp, "s1", 3, "web1", 4)))
	time.Sleep(1500 * time.Millisecond) // removed unread
	require.NoError(t, tr.Send(ctx, countMsg(t, tp, "s1", 4, "web1", 8)))
	var mu sync.Mutex
	var logs []string
	b, _ := runConsumer(t, ctx, js, setup, "b", newMemStore(), func(cfg *natsjs.Config) {
		cfg.Logf = func(f string, a ...any) {
			mu.Lock()
			logs = append(logs, fmt.Sprintf(f, a...))
			mu.Unlock()
		}
	})
	require.Eventually(t, func() bool { return b.Stats().Merged == 1 }, 30*time.Second, 20*time.Millisecond)
	require.Equal(t, uint64(1), b.Stats().Gaps)
	time.Sleep(300 * time.Millisecond) // checkpoints: counted once
	require.Equal(t, uint64(1), b.Stats().Gaps)
	mu.Lock()
	defer mu.Unlock()
	require.Contains(t, logs, "natsjs: partition 0: the stream removed its sequences 2 to 3 (its MaxAge or other limits) before this partition read them: the partition's messages among them were never merged")
}
