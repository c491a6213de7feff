package natsjs

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
)

// stalledConsumer is a partition's consumer cut off from the stream: a
// Fetch returns at once, but its batch ends only when the client gives
// up on the server (FetchMaxWait plus the client's own second), with no
// message.
type stalledConsumer struct {
	jetstream.Consumer
	stall time.Duration
}

func (c *stalledConsumer) Fetch(int, ...jetstream.FetchOpt) (jetstream.MessageBatch, error) {
	return newStalledBatch(c.stall), nil
}

type stalledBatch struct {
	msgs chan jetstream.Msg
}

func newStalledBatch(d time.Duration) *stalledBatch {
	b := &stalledBatch{msgs: make(chan jetstream.Msg)}
	time.AfterFunc(d, func() { close(b.msgs) })
	return b
}

func (b *stalledBatch) Messages() <-chan jetstream.Msg { return b.msgs }
func (b *stalledBatch) Error() error                   { return jetstream.ErrNoMessages }

// unreachableKV is the owners' bucket of a cut-off collector.
type unreachableKV struct{ jetstream.KeyValue }

func (unreachableKV) Delete(context.Context, string, ...jetstream.KVDeleteOpt) error {
	return context.DeadlineExceeded
}

// closeTimed is a Partition that notes when it stopped being exported.
type closeTimed struct{ closed atomic.Int64 }

func (p *closeTimed) Merge(Message) error   { return nil }
func (p *closeTimed) Save() ([]byte, error) { return nil, nil }
func (p *closeTimed) Close()                { p.closed.Store(time.Now().UnixNano()) }
func (p *closeTimed) closedAt() (time.Time, bool) {
	n := p.closed.Load()
	return time.Unix(0, n), n != 0
}

// A worker whose lease is not renewed stops exporting its partition
// before the lease can pass to another collector, whatever it is waiting
// for: a Fetch on a link that answers nothing lasts its FetchMaxWait
// (up to a second) and then the client's own second, and a worker that
// passed its check of the lease just before the give-up point went on
// exporting for up to two seconds after it, past the lease itself under
// a -lease shorter than about 8 seconds (and past the default 10 with
// waiting messages retried first): two collectors exported the
// partition at once. The fetch is now given up at the lease's give-up
// point.
func TestWorkerGivesUpWithinItsLease(t *testing.T) {
	const lease = 2 * time.Second
	c := &Consumer{cfg: Config{Setup: Setup{LeaseTTL: lease}.withDefaults(), Checkpoint: time.Minute, Batch: 8,
		Logf: func(f string, a ...any) { t.Logf(f, a...) }}, owners: unreachableKV{}, owned: map[int]*owned{}}
	renewed := time.Now()
	o := &owned{done: make(chan struct{})}
	o.renewed.Store(renewed.UnixNano())
	c.owned[0] = o
	part := &closeTimed{}
	w := &worker{c: c, p: 0, o: o, part: part, cons: &stalledConsumer{stall: 2 * time.Second}, l: newLedger(), held: map[uint64]int{}}
	time.Sleep(time.Duration(leaseGiveUp*float64(lease)) - 100*time.Millisecond) // the check passes, just before the give-up point
	go w.run(context.Background())
	select {
	case <-o.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the worker did not stop")
	}
	at, ok := part.closedAt()
	require.True(t, ok, "the partition is no longer exported")
	require.Less(t, at.Sub(renewed), lease, "stopped exporting %v after the last renewal, with a lease of %v", at.Sub(renewed), lease)
	require.Empty(t, c.Owned(), "given up")
}
