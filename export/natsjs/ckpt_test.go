package natsjs_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/export/natsjs"
	"github.com/statsblob/statsblob/export/natsjs/internal/natstest"
	"github.com/statsblob/statsblob/ship"
)

// TestCheckpointFailuresCounted: a partition whose state cannot be
// stored (past Setup.MaxState here) merges its messages but can
// acknowledge none of them; that is logged and counted, not silent, and
// the messages redelivered meanwhile are held once each. Before, a
// failed checkpoint that was not a lost lease was dropped without a word
// (no log, no counter), and every redelivery of a held message was held
// again: the messages to acknowledge grew by all the unacknowledged ones
// every AckWait, without bound.
func TestCheckpointFailuresCounted(t *testing.T) {
	cl := natstest.Start(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, js := connect(t, cl.URL())
	setup := natsjs.Setup{Partitions: 1, LeaseTTL: time.Second, MaxState: 1024}
	require.NoError(t, setup.Ensure(ctx, js))
	tp := counterTemplate(t)
	tr := &natsjs.Transport{JS: js, Partitions: 1}
	const n = 40
	for i := range n {
		b := blob.New(tp, nil)
		require.NoError(t, b.UpdateU64(0, 1))
		labels := []ship.Label{{Name: "host", Value: fmt.Sprintf("web%02d", i)}}
		require.NoError(t, tr.Send(ctx, ship.Message{Sender: "s", Seq: uint64(i + 1), SettledBelow: uint64(i + 1), Labels: labels, Body: b.Bytes()}))
	}
	var mu sync.Mutex
	var logs []string
	store := newMemStore()
	c, err := natsjs.NewConsumer(ctx, natsjs.Config{Setup: setup, JS: js, ID: "a", Store: store, Checkpoint: 100 * time.Millisecond,
		Logf: func(f string, a ...any) {
			mu.Lock()
			logs = append(logs, fmt.Sprintf(f, a...))
			mu.Unlock()
		}})
	require.NoError(t, err)
	cctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { _ = c.Run(cctx); close(done) }()
	defer func() { stop(); <-done }()
	require.Eventually(t, func() bool { return c.Stats().Merged == n }, 30*time.Second, 20*time.Millisecond)
	time.Sleep(3500 * time.Millisecond) // three AckWaits: every message redelivered, more than once
	st := c.Stats()
	require.Equal(t, uint64(n), st.Merged)
	require.GreaterOrEqual(t, st.Skipped, uint64(2*n), "redelivered, skipped")
	mu.Lock()
	failed := 0
	for _, l := range logs {
		if strings.Contains(l, "checkpoint failed") {
			failed++
		}
	}
	mu.Unlock()
	require.Equal(t, 1, failed, "the first failure logged, once: %q", logs)
	require.Greater(t, st.CheckpointFailures, uint64(20))
	require.Zero(t, st.Checkpoints)
	require.Equal(t, n, st.Unacked, "each message held once for its acknowledgement")
}
