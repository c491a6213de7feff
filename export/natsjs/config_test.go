package natsjs_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/export/natsjs"
	"github.com/statsblob/statsblob/voi"
)

// offlineJS is a JetStream that is never reached: a call past the checks
// of the configuration fails (KeyValue) or panics (the rest).
type offlineJS struct{ jetstream.JetStream }

var errOffline = errors.New("offline")

func (offlineJS) KeyValue(context.Context, string) (jetstream.KeyValue, error) {
	return nil, errOffline
}

type noStore struct{}

func (noStore) Open(int, []byte) (natsjs.Partition, error) { return nil, errOffline }

// TestLeaseTTLChecked: a lease below MinLeaseTTL is refused before
// anything is made. Before, -lease 3ns made the consumer's renewal
// ticker LeaseTTL/4 = 0 and Run panicked in time.NewTicker.
func TestLeaseTTLChecked(t *testing.T) {
	ctx := context.Background()
	f := func(lease time.Duration, wantErr error, msg string) {
		t.Helper()
		_, err := natsjs.NewConsumer(ctx, natsjs.Config{Setup: natsjs.Setup{LeaseTTL: lease}, JS: offlineJS{}, ID: "c1", Store: noStore{}})
		require.ErrorIs(t, err, wantErr)
		if msg != "" {
			require.EqualError(t, err, msg)
			require.EqualError(t, natsjs.Setup{LeaseTTL: lease}.Ensure(ctx, offlineJS{}), msg)
		}
	}
	f(3*time.Nanosecond, voi.ErrInvalid, "natsjs: lease 3ns shorter than 1s: invalid argument")
	f(natsjs.MinLeaseTTL-1, voi.ErrInvalid, "natsjs: lease 999.999999ms shorter than 1s: invalid argument")
	f(natsjs.MinLeaseTTL, errOffline, "")
	f(0, errOffline, "") // the default
	f(-time.Second, errOffline, "")

	_, err := natsjs.NewConsumer(ctx, natsjs.Config{JS: offlineJS{}, Store: noStore{}})
	require.ErrorIs(t, err, voi.ErrInvalid)
	require.EqualError(t, err, "natsjs: a consumer needs JS, ID and Store: invalid argument")
}

// TestCheckpointAndRetryChecked: a Checkpoint below MinCheckpoint or a
// TemplateRetry below MinTemplateRetry is refused before anything is
// made. Before, 1ns of either was taken: an owner's loop fetched for 1ns
// and stored its state on every turn, or read a waiting message from
// the stream on every turn, as fast as the stream answered.
func TestCheckpointAndRetryChecked(t *testing.T) {
	ctx := context.Background()
	f := func(ckpt, retry time.Duration, wantErr error, msg string) {
		t.Helper()
		_, err := natsjs.NewConsumer(ctx, natsjs.Config{JS: offlineJS{}, ID: "c1", Store: noStore{}, Checkpoint: ckpt, TemplateRetry: retry})
		require.ErrorIs(t, err, wantErr)
		if msg != "" {
			require.EqualError(t, err, msg)
		}
	}
	f(time.Nanosecond, 0, voi.ErrInvalid, "natsjs: checkpoint every 1ns, more often than every 100ms: invalid argument")
	f(natsjs.MinCheckpoint-1, 0, voi.ErrInvalid, "natsjs: checkpoint every 99.999999ms, more often than every 100ms: invalid argument")
	f(0, time.Nanosecond, voi.ErrInvalid, "natsjs: template retry every 1ns, more often than every 100ms: invalid argument")
	f(0, natsjs.MinTemplateRetry-1, voi.ErrInvalid, "natsjs: template retry every 99.999999ms, more often than every 100ms: invalid argument")
	f(natsjs.MinCheckpoint, natsjs.MinTemplateRetry, errOffline, "")
	f(0, 0, errOffline, "") // the defaults
	f(-time.Second, -time.Second, errOffline, "")
	// At most half the lease (10 s by default): JetStream redelivers a
	// message not acknowledged within the lease, and acknowledgements go
	// at checkpoints. Before, a checkpoint of 15 s was taken, and every
	// message was redelivered before it was acknowledged.
	f(5*time.Second, 0, errOffline, "")
	f(5*time.Second+1, 0, voi.ErrInvalid, "natsjs: checkpoint every 5.000000001s, over half the lease of 10s (messages would be redelivered before their acknowledgement): invalid argument")
	_, err := natsjs.NewConsumer(ctx, natsjs.Config{Setup: natsjs.Setup{LeaseTTL: 3 * time.Second}, JS: offlineJS{}, ID: "c1", Store: noStore{}, Checkpoint: 2 * time.Second})
	require.EqualError(t, err, "natsjs: checkpoint every 2s, over half the lease of 3s (messages would be redelivered before their acknowledgement): invalid argument")
}
