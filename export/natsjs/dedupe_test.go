package natsjs_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/export/natsjs"
	"github.com/statsblob/statsblob/ship"
	"github.com/statsblob/statsblob/tpl"
)

// countMsg is message seq of sender s: host's label set, a blob of tp
// counting n.
func countMsg(t *testing.T, tp *tpl.Template, s string, seq uint64, host string, n uint64) ship.Message {
	b := blob.New(tp, nil)
	require.NoError(t, b.UpdateU64(0, n))
	return ship.Message{Sender: s, Seq: seq, SettledBelow: seq, Labels: []ship.Label{{Name: "host", Value: host}}, Body: b.Bytes()}
}

// runConsumer runs a consumer of setup on js into store until the test
// ends or the returned stop is called.
func runConsumer(t *testing.T, ctx context.Context, js jetstream.JetStream, setup natsjs.Setup, id string, store natsjs.Store,
	tune func(*natsjs.Config)) (*natsjs.Consumer, func()) {
	cfg := natsjs.Config{Setup: setup, JS: js, ID: id, Store: store, Checkpoint: 100 * time.Millisecond,
		Logf: func(f string, a ...any) { t.Logf(id+": "+f, a...) }}
	if tune != nil {
		tune(&cfg)
	}
	c, err := natsjs.NewConsumer(ctx, cfg)
	require.NoError(t, err)
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { _ = c.Run(cctx); close(done) }()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			<-done
		}
	}
	t.Cleanup(stop)
	return c, stop
}

func key(tp *tpl.Template, host string) string {
	return fmt.Sprintf("%08x[{host %s}]", tp.Hash(), host)
}

// TestLateRetryMergedOnce: a shipper's message stored, its
// acknowledgement lost, and the same message (sender and sequence)
// published again after the stream's duplicate window: the stream stores
// it twice, and the consumer merges it once, counting the copy. Before,
// both were merged ({host web1}: 14, want 7), and nothing said so.
func TestLateRetryMergedOnce(t *testing.T) {
	setup := natsjs.Setup{Partitions: 1, LeaseTTL: time.Second, Duplicates: 500 * time.Millisecond}
	ctx, js, tr := onePartition(t, setup)
	tp := counterTemplate(t)

	m := countMsg(t, tp, "s1", 1, "web1", 7)
	require.NoError(t, tr.Send(ctx, m)) // stored; its acknowledgement lost, say
	require.NoError(t, tr.Send(ctx, m)) // a retry within the window: stored once
	time.Sleep(time.Second)
	require.NoError(t, tr.Send(ctx, m)) // the retry after the window: stored again
	require.NoError(t, tr.Send(ctx, countMsg(t, tp, "s1", 2, "web1", 5)))
	require.NoError(t, tr.Send(ctx, countMsg(t, tp, "s2", 1, "web1", 100))) // another sender, its own sequence 1
	require.NoError(t, tr.Send(ctx, countMsg(t, tp, "s1", 3, "web2", 1)))   // another label set of s1

	store := newMemStore()
	c, _ := runConsumer(t, ctx, js, setup, "c1", store, nil)
	want := map[string]uint64{key(tp, "web1"): 112, key(tp, "web2"): 1}
	require.Eventually(t, func() bool { return c.Stats().Merged+c.Stats().Duplicates == 5 }, 30*time.Second, 20*time.Millisecond)
	require.Equal(t, want, store.totals(t))
	st := c.Stats()
	require.Equal(t, uint64(4), st.Merged)
	require.Equal(t, uint64(1), st.Duplicates)
	require.Zero(t, st.Unchecked)
}

// TestLateRetryAcrossHandover: the marks are in the stored state, so a
// collector that takes the partition over recognises a late copy of a
// message its predecessor merged. Before, the copy was merged again.
func TestLateRetryAcrossHandover(t *testing.T) {
	setup := natsjs.Setup{Partitions: 1, LeaseTTL: time.Second, Duplicates: 200 * time.Millisecond}
	ctx, js, tr := onePartition(t, setup)
	tp := counterTemplate(t)
	m := countMsg(t, tp, "s1", 1, "web1", 7)
	require.NoError(t, tr.Send(ctx, m))

	a, stopA := runConsumer(t, ctx, js, setup, "a", newMemStore(), nil)
	require.Eventually(t, func() bool { return a.Stats().Merged == 1 }, 30*time.Second, 20*time.Millisecond)
	stopA() // stores the state and hands the partition back

	time.Sleep(300 * time.Millisecond)
	require.NoError(t, tr.Send(ctx, m)) // the late copy
	require.NoError(t, tr.Send(ctx, countMsg(t, tp, "s1", 2, "web1", 5)))
	storeB := newMemStore()
	b, _ := runConsumer(t, ctx, js, setup, "b", storeB, nil)
	require.Eventually(t, func() bool { return b.Stats().Merged+b.Stats().Duplicates == 2 }, 30*time.Second, 20*time.Millisecond)
	require.Equal(t, map[string]uint64{key(tp, "web1"): 12}, storeB.totals(t))
	require.Equal(t, uint64(1), b.Stats().Duplicates)
}

// TestRedeliveredBehindNewerMerged: an owner that died holding a
// message (fetched, never acknowledged) leaves it to be redelivered once
// its acknowledgement wait has passed, after the next owner has merged
// the newer message of the same sender and label set. It is no
// duplicate: a mark taken in delivery order would drop it; the
// consumer's marks take only what is below the acknowledgement floor,
// and merge it.
func TestRedeliveredBehindNewerMerged(t *testing.T) {
	setup := natsjs.Setup{Partitions: 1, LeaseTTL: 2 * time.Second}
	ctx, js, tr := onePartition(t, setup)
	tp := counterTemplate(t)
	require.NoError(t, tr.Send(ctx, countMsg(t, tp, "s1", 1, "web1", 7)))

	// The dead owner: message 1 delivered to it, never acknowledged.
	dead, err := js.CreateOrUpdateConsumer(ctx, "STATSBLOB", setup.ConsumerConfig(0))
	require.NoError(t, err)
	batch, err := dead.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
	require.NoError(t, err)
	n := 0
	for range batch.Messages() {
		n++
	}
	require.Equal(t, 1, n)

	require.NoError(t, tr.Send(ctx, countMsg(t, tp, "s1", 2, "web1", 5)))
	store := newMemStore()
	c, _ := runConsumer(t, ctx, js, setup, "c", store, nil)
	require.Eventually(t, func() bool { return c.Stats().Merged >= 1 }, 30*time.Second, 10*time.Millisecond)
	require.Equal(t, map[string]uint64{key(tp, "web1"): 5}, store.totals(t), "message 2 first")
	require.Eventually(t, func() bool { return c.Stats().Merged == 2 }, 30*time.Second, 20*time.Millisecond)
	require.Equal(t, map[string]uint64{key(tp, "web1"): 12}, store.totals(t))
	require.Zero(t, c.Stats().Duplicates)
}

// TestMarksBounded: past Config.MaxMarks, a new sender's label set is
// merged without the check, and counted; the label sets with a mark keep
// theirs.
func TestMarksBounded(t *testing.T) {
	setup := natsjs.Setup{Partitions: 1, LeaseTTL: time.Second, Duplicates: 200 * time.Millisecond}
	ctx, js, tr := onePartition(t, setup)
	tp := counterTemplate(t)
	msgs := []ship.Message{countMsg(t, tp, "s1", 1, "web1", 1), countMsg(t, tp, "s1", 2, "web2", 10), countMsg(t, tp, "s1", 3, "web3", 100)}
	for _, m := range msgs {
		require.NoError(t, tr.Send(ctx, m))
	}
	time.Sleep(300 * time.Millisecond)
	for _, m := range msgs { // every one again, after the window
		require.NoError(t, tr.Send(ctx, m))
	}
	store := newMemStore()
	c, _ := runConsumer(t, ctx, js, setup, "c", store, func(cfg *natsjs.Config) { cfg.MaxMarks = 2 })
	require.Eventually(t, func() bool { return c.Stats().Merged+c.Stats().Duplicates == 6 }, 30*time.Second, 20*time.Millisecond)
	require.Equal(t, map[string]uint64{key(tp, "web1"): 1, key(tp, "web2"): 10, key(tp, "web3"): 200}, store.totals(t))
	st := c.Stats()
	require.Equal(t, uint64(2), st.Duplicates)
	require.Equal(t, uint64(2), st.Unchecked, "web3's message and its copy")
}
