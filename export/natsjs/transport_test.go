package natsjs_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/export/natsjs"
	"github.com/statsblob/statsblob/export/natsjs/internal/natstest"
	"github.com/statsblob/statsblob/ship"
)

// TestSendPastMaxPayload: a message larger than the server's max_payload
// is a permanent ship.SendError (413, as the HTTP collector's answer to
// a body past its limit): the same bytes can never be published. Before,
// the client's nats.ErrMaxPayload came back as an ordinary error, which
// the shipper retried forever, its label set stuck, on the README's
// './nats-server -js' (1 MiB) with any blob past it.
func TestSendPastMaxPayload(t *testing.T) {
	ctx := context.Background()
	c := natstest.Start(t, 1)
	c.StopNode(0)
	c.Nodes[0].Opts.MaxPayload = 4096
	c.StartNode(0)
	c.WaitReady()
	_, js := connect(t, c.URL())
	require.NoError(t, natsjs.Setup{}.Ensure(ctx, js))
	tr := &natsjs.Transport{JS: js}
	b := blob.New(counterTemplate(t), nil).Bytes()

	require.NoError(t, tr.Send(ctx, ship.Message{Sender: "s1", Seq: 1, Body: b}))
	big := append(b, make([]byte, 8192)...) // the header's template hash is all Send reads
	err := tr.Send(ctx, ship.Message{Sender: "s1", Seq: 2, Body: big})
	var se *ship.SendError
	require.True(t, errors.As(err, &se), "%v", err)
	require.True(t, se.Permanent)
	require.Equal(t, 413, se.Status)
	require.EqualError(t, err, "natsjs: publish: "+se.Error())
}
