package natsjs_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/export/aggregate"
	"github.com/statsblob/statsblob/export/natsjs"
	"github.com/statsblob/statsblob/export/natsjs/internal/natstest"
	"github.com/statsblob/statsblob/internal/stream"
	"github.com/statsblob/statsblob/internal/tcpsim"
	"github.com/statsblob/statsblob/internal/tcpstats"
	"github.com/statsblob/statsblob/ship"
	"github.com/statsblob/statsblob/tpl"
)

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestIngestRate measures how fast a collector merges TCP_DEFAULT blobs
// from a stream (one in-process node, one partition): wall time and CPU
// time of this process (consumer and server) per blob. It runs with
// STATSBLOB_NATS_RATE=N (blobs); bench/README.md records its figures.
func TestIngestRate(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("STATSBLOB_NATS_RATE"))
	if n == 0 {
		t.Skip("set STATSBLOB_NATS_RATE=N")
	}
	cl := natstest.Start(t, 1)
	ctx := context.Background()
	_, js := connect(t, cl.URL())
	setup := natsjs.Setup{Partitions: 1, LeaseTTL: 5 * time.Second}
	require.NoError(t, setup.Ensure(ctx, js))
	reg := tpl.NewRegistry()
	tp, err := tcpstats.New(reg)
	require.NoError(t, err)
	s := stream.Stream(7)
	tr := &natsjs.Transport{JS: js, Partitions: 1}
	for i := range n {
		b := blob.New(tp, blob.NewEnv(nil, uint32(i+1)))
		tcpsim.SimulateConn(b, &s, nil)
		m := ship.Message{Sender: "bench", Seq: uint64(i + 1), Labels: []ship.Label{{Name: "host", Value: fmt.Sprint("h", i%100)}}, Body: b.Bytes()}
		require.NoError(t, tr.Send(ctx, m))
	}
	store := natsjs.NewSetStore(reg, aggregate.Config{})
	c, err := natsjs.NewConsumer(ctx, natsjs.Config{Setup: setup, JS: js, ID: "bench", Store: store, Checkpoint: time.Second, Batch: 1024})
	require.NoError(t, err)
	cctx, stop := context.WithCancel(ctx)
	defer stop()
	cpu0, t0 := cpuTime(), time.Now()
	go func() { _ = c.Run(cctx) }()
	require.Eventually(t, func() bool { return c.Stats().Merged == uint64(n) }, 10*time.Minute, 5*time.Millisecond)
	wall, cpu := time.Since(t0), cpuTime()-cpu0
	t.Logf("%d TCP_DEFAULT blobs from JetStream: %.0f blobs/s wall, %.0f blobs per CPU-second (consumer and in-process server)",
		n, float64(n)/wall.Seconds(), float64(n)/cpu.Seconds())
}
