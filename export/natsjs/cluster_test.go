package natsjs_test

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/export/natsjs"
	"github.com/statsblob/statsblob/export/natsjs/internal/natstest"
	"github.com/statsblob/statsblob/ship"
)

// TestClusterFailover: a 3-node JetStream cluster, shippers publishing all
// along, two consumers sharing the partitions; one consumer dies without a
// word (its connection cut, nothing released) and a third joins. At the
// end every partition has one owner and the owners' totals equal exactly
// what the shippers recorded. (e2e kills NATS nodes too, as processes.)
func TestClusterFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("a 3-node cluster takes seconds")
	}
	cl := natstest.Start(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	url := cl.URL()
	_, js := connect(t, url)
	setup := natsjs.Setup{Partitions: 8, Replicas: 3, LeaseTTL: 2 * time.Second}
	require.Eventually(t, func() bool { // a cluster under load elects leaders slowly
		ectx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		return setup.Ensure(ectx, js) == nil
	}, time.Minute, 100*time.Millisecond)

	startConsumer := func(id string) (*natsjs.Consumer, *memStore, func(), func()) {
		nc, js := connect(t, url)
		store := newMemStore()
		c, err := natsjs.NewConsumer(ctx, natsjs.Config{Setup: setup, JS: js, ID: id, Store: store, Checkpoint: 200 * time.Millisecond, Logf: func(f string, a ...any) { t.Logf(id+": "+f, a...) }})
		require.NoError(t, err)
		cctx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { _ = c.Run(cctx); close(done) }()
		graceful := func() { stop(); <-done }
		kill := func() { nc.Close(); stop(); <-done }
		return c, store, graceful, kill
	}
	a, storeA, _, killA := startConsumer("a")
	b, storeB, stopB, _ := startConsumer("b")

	tp := counterTemplate(t)
	var wmu sync.Mutex
	want := map[string]uint64{}
	var wg sync.WaitGroup
	shipCtx, stopShipping := context.WithCancel(ctx)
	for h := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, js := connect(t, url)
			host := fmt.Sprintf("web%d", h)
			sh, err := ship.New(&natsjs.Transport{JS: js, Partitions: 8}, ship.Options{
				Labels: []ship.Label{{Name: "host", Value: host}}, MinBackoff: 50 * time.Millisecond, MaxBackoff: 500 * time.Millisecond})
			require.NoError(t, err)
			bl := blob.New(tp, nil)
			var mu sync.Mutex
			require.NoError(t, sh.AddBlob(bl, &mu))
			key := fmt.Sprintf("%08x[{host %s}]", tp.Hash(), host)
			for i := uint64(1); shipCtx.Err() == nil; i++ {
				mu.Lock()
				require.NoError(t, bl.UpdateU64(0, i))
				mu.Unlock()
				wmu.Lock()
				want[key] += i
				wmu.Unlock()
				_ = sh.Ship(ctx) // failures stay in the backlog
				time.Sleep(20 * time.Millisecond)
			}
			cctx, cc := context.WithTimeout(ctx, time.Minute)
			defer cc()
			require.NoError(t, sh.Close(cctx))
			st := sh.Stats()
			require.Zero(t, st.Dropped+st.Rejected)
		}()
	}
	require.Eventually(t, func() bool { return len(a.Owned())+len(b.Owned()) == 8 }, time.Minute, 50*time.Millisecond)
	time.Sleep(time.Second)
	killA() // consumer a dies: b takes its partitions after the lease time
	// (NATS nodes killed and restarted: the process-level test, e2e.)
	require.Eventually(t, func() bool { return len(b.Owned()) == 8 }, 30*time.Second, 50*time.Millisecond)
	c, storeC, stopC, _ := startConsumer("c") // a replacement joins: b hands back its extras
	require.Eventually(t, func() bool { return len(b.Owned())+len(c.Owned()) == 8 && len(c.Owned()) >= 3 }, 30*time.Second, 50*time.Millisecond)
	time.Sleep(500 * time.Millisecond)
	stopShipping()
	wg.Wait()

	// the owners' totals converge to exactly what was recorded
	sum := func() map[string]uint64 {
		out := storeB.totals(t)
		for k, v := range storeC.totals(t) {
			out[k] += v
		}
		return out
	}
	require.Eventually(t, func() bool { return maps.Equal(want, sum()) }, 30*time.Second, 100*time.Millisecond)
	require.Empty(t, storeA.totals(t), "the dead consumer exports nothing")
	owned := map[int]int{}
	for _, p := range append(b.Owned(), c.Owned()...) {
		owned[p]++
	}
	require.Len(t, owned, 8)
	for p, n := range owned {
		require.Equal(t, 1, n, "partition %d", p)
	}
	t.Logf("b: %+v", b.Stats())
	t.Logf("c: %+v", c.Stats())
	stopB()
	stopC()
}
