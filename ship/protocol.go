package ship

import (
	"context"
	"fmt"
	"time"
)

// The HTTP headers of the wire protocol (see the package documentation,
// "Wire protocol"). Every POST carries all three.
const (
	// HeaderSender names the shipper: an opaque token of 1 to 64 bytes
	// from [A-Za-z0-9._-], unique to one Shipper for its whole life
	// (Options.Sender; by default 32 random hex digits).
	HeaderSender = "Statsblob-Sender"
	// HeaderSeq is the message's sequence number in decimal: 1 for the
	// sender's first message, one more for each new message, whatever its
	// labels or template. A retry repeats the number, the labels and the
	// body exactly.
	HeaderSeq = "Statsblob-Seq"
	// HeaderSettledBelow is, in decimal, a number N such that every
	// message of the sender with a sequence number under N is settled:
	// acknowledged, or given up, and never sent again. It never decreases
	// along a sender's messages, and is at most the message's own Seq.
	HeaderSettledBelow = "Statsblob-Settled-Below"
)

// Label is one label of a message: a name and its value.
type Label struct {
	Name, Value string
}

// Message is one send: a blob's bytes with its labels, stamped with the
// sender's id and sequence number. A Transport must not modify or keep
// any of it after Send returns: the shipper resends the same Message on
// a retry.
type Message struct {
	Sender       string  // HeaderSender
	Seq          uint64  // HeaderSeq
	SettledBelow uint64  // HeaderSettledBelow
	Labels       []Label // sorted by name, names unique
	Body         []byte  // the blob's bytes (blob.Blob.Bytes)
}

// ID returns "Sender/Seq", the message's idempotency key as one string
// (for example a NATS JetStream Nats-Msg-Id).
func (m Message) ID() string { return fmt.Sprintf("%s/%d", m.Sender, m.Seq) }

// Transport delivers messages to a collector. Send returns nil once the
// receiver has acknowledged the message (and will not lose it), an error
// wrapping a *SendError when the receiver answered with a refusal, or any
// other error when the outcome is unknown (the network failed, ctx ended):
// the shipper retries both kinds except a SendError marked Permanent.
// Send is called from one goroutine at a time.
type Transport interface {
	Send(ctx context.Context, m Message) error
}

// SendError is a receiver's refusal of a message, as a Transport reports
// it.
type SendError struct {
	// Status is the receiver's status code (for HTTP, the response's).
	Status int
	// Permanent means that the same message will never be accepted (for
	// HTTP: 400, 413, 414, 431): the shipper gives it up and counts it in
	// Stats.Rejected. Otherwise the message is kept and retried.
	Permanent bool
	// RetryAfter is how long the receiver asked the sender to wait (HTTP
	// Retry-After); 0 leaves the wait to the shipper's backoff.
	RetryAfter time.Duration
	// Msg is the receiver's reason, one line.
	Msg string
}

// Error describes the refusal.
func (e *SendError) Error() string {
	kind := "refused"
	if e.Permanent {
		kind = "rejected"
	}
	if e.Msg == "" {
		return fmt.Sprintf("ship: %s with status %d", kind, e.Status)
	}
	return fmt.Sprintf("ship: %s with status %d: %s", kind, e.Status, e.Msg)
}
