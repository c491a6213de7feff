package tcpsim_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/internal/stream"
	"github.com/statsblob/statsblob/internal/tcpsim"
	"github.com/statsblob/statsblob/internal/tcpstats"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// TestSimulateConn: a connection's updates are a function of the stream
// alone, every RTT sample reaches the blob, and the stream moves on.
func TestSimulateConn(t *testing.T) {
	tp, err := tcpstats.New(tpl.NewRegistry())
	require.NoError(t, err)
	env := func() *blob.Env { return blob.NewEnv(func() int64 { return blob.SBinTime(1000, 0) }, 1) }
	a, b := blob.New(tp, env()), blob.New(tp, env())
	sa, sb := stream.Stream(stream.Seed), stream.Stream(stream.Seed)
	rtts := tcpsim.SimulateConn(a, &sa, nil)
	require.Equal(t, rtts, tcpsim.SimulateConn(b, &sb, nil))
	require.Equal(t, a.Bytes(), b.Bytes())
	require.Equal(t, sa, sb)
	require.GreaterOrEqual(t, len(rtts), 20)
	require.Less(t, len(rtts), 420)

	gotMax, err := a.FetchU32(tcpstats.RTT, voi.Max)
	require.NoError(t, err)
	var want uint32
	for _, r := range rtts {
		want = max(want, uint32(r))
	}
	require.Equal(t, want, gotMax)
	td, err := a.Fetch(tcpstats.RTT, voi.TDgst)
	require.NoError(t, err)
	n, err := td.Count()
	require.NoError(t, err)
	require.Equal(t, uint64(len(rtts)), n)

	next := tcpsim.SimulateConn(a, &sa, rtts)
	require.Greater(t, len(next), len(rtts), "a second connection appends")
}
