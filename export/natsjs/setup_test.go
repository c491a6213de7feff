package natsjs_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/export/natsjs"
	"github.com/statsblob/statsblob/export/natsjs/internal/natstest"
)

// TestEnsureKeepsOperatorLimits: Ensure on an existing stream sets what
// Setup holds and leaves the limits Setup has no field for (MaxBytes,
// MaxMsgs, ...), which an operator sets to size the stream's retention
// (the README's advice), as they are. Before, every collector's start
// (Ensure) replaced the stream's whole configuration: a MaxBytes of
// 1 GiB set by hand became unlimited again.
func TestEnsureKeepsOperatorLimits(t *testing.T) {
	ctx := context.Background()
	c := natstest.Start(t, 1)
	_, js := connect(t, c.URL())
	setup := natsjs.Setup{MaxAge: time.Hour}
	require.NoError(t, setup.Ensure(ctx, js))

	s, err := js.Stream(ctx, "STATSBLOB")
	require.NoError(t, err)
	cfg := s.CachedInfo().Config
	cfg.MaxBytes = 1 << 30
	cfg.MaxMsgs = 1_000_000
	cfg.Description = "fleet stats"
	_, err = js.UpdateStream(ctx, cfg)
	require.NoError(t, err)

	setup.MaxAge = 2 * time.Hour // what Setup holds is Ensure's
	require.NoError(t, setup.Ensure(ctx, js))
	info, err := js.Stream(ctx, "STATSBLOB")
	require.NoError(t, err)
	got := info.CachedInfo().Config
	require.Equal(t, int64(1<<30), got.MaxBytes)
	require.Equal(t, int64(1_000_000), got.MaxMsgs)
	require.Equal(t, "fleet stats", got.Description)
	require.Equal(t, 2*time.Hour, got.MaxAge)
	require.Equal(t, 10*time.Minute, got.Duplicates)
	require.Equal(t, []string{"statsblob.>"}, got.Subjects)
	require.Equal(t, jetstream.LimitsPolicy, got.Retention)
}
