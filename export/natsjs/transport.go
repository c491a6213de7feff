package natsjs

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/statsblob/statsblob/internal/abi"
	"github.com/statsblob/statsblob/ship"
)

// Defaults of Transport and Config.
const (
	DefaultPrefix     = "statsblob"
	DefaultPartitions = 16
)

// Transport publishes a shipper's messages to a JetStream stream: a
// ship.Transport (ship.New(&natsjs.Transport{JS: js}, ...)). Send returns
// nil once the stream has stored the message (its publish
// acknowledgement), so the shipper's retries and backlog work as they do
// over HTTP. A message the stream can never take (a body shorter than a
// blob header, or larger than the server's max_payload, 413, or the
// stream's maximum message size) is a permanent ship.SendError; other refusals of the stream (no leader,
// storage full) are a ship.SendError the shipper retries, and a publish
// with no answer (the stream unreachable, ctx ended) an ordinary error,
// retried too.
type Transport struct {
	JS         jetstream.JetStream
	Prefix     string // subject prefix; "" is DefaultPrefix
	Partitions int    // the stream's partition count; 0 is DefaultPartitions. Every shipper and collector of a stream must agree.
}

// Send publishes m (see Transport).
func (t *Transport) Send(ctx context.Context, m ship.Message) error {
	if len(m.Body) < abi.HeaderSize {
		return &ship.SendError{Status: 400, Permanent: true, Msg: fmt.Sprintf("a %d-byte body is no blob", len(m.Body))}
	}
	tplHash := binary.LittleEndian.Uint32(m.Body[abi.OffTplHash:])
	prefix, n := t.Prefix, t.Partitions
	if prefix == "" {
		prefix = DefaultPrefix
	}
	if n <= 0 {
		n = DefaultPartitions
	}
	msg := nats.NewMsg(Subject(prefix, PartitionOf(tplHash, m.Labels, n), tplHash))
	msg.Header.Set(ship.HeaderSender, m.Sender)
	msg.Header.Set(ship.HeaderSeq, strconv.FormatUint(m.Seq, 10))
	msg.Header.Set(ship.HeaderSettledBelow, strconv.FormatUint(m.SettledBelow, 10))
	msg.Header.Set(HeaderLabels, encodeLabels(m.Labels))
	msg.Data = m.Body
	_, err := t.JS.PublishMsg(ctx, msg, jetstream.WithMsgID(m.ID()))
	if err == nil {
		return nil
	}
	if errors.Is(err, nats.ErrMaxPayload) { // the client's check of the server's max_payload
		return fmt.Errorf("natsjs: publish: %w", &ship.SendError{Status: 413, Permanent: true,
			Msg: fmt.Sprintf("a %d-byte body is past the server's max_payload", len(m.Body))})
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		permanent := apiErr.ErrorCode == jetstream.JSErrCodeStreamMessageExceedsMaximum
		return fmt.Errorf("natsjs: publish: %w", &ship.SendError{Status: apiErr.Code, Permanent: permanent, Msg: apiErr.Description})
	}
	return fmt.Errorf("natsjs: publish: %w", err)
}
