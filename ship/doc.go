// Package ship sends a service's blobs to a collector: every interval it
// takes Snapshot(true) of each blob, Sharded blob or family (package
// family) it was given and sends the bytes, with their labels, through a
// Transport (HTTP for statsblob-collector; natsjs.Transport, in the nested
// module export/natsjs, for NATS JetStream). Retries, merging of what is unsent, and the sender id and
// sequence number that let a collector drop a retry it already merged are
// the shipper's; the service only updates its blobs.
//
//	sh, err := ship.New(&ship.HTTP{URL: "http://collector:9129/v1/blobs"},
//		ship.Options{Labels: []ship.Label{{Name: "host", Value: "web1"}}})
//	err = sh.AddFamily(fam)
//	go sh.Run(ctx)
//	defer sh.Close(ctx) // ships the last snapshot
//
// # What is kept, merged and dropped
//
// The shipper keeps one queue per template and label set. A snapshot joins
// its queue's pending snapshots. When the queue's turn to send comes, its
// pending snapshots are merged in one step (blob.MergeAll: counts exact,
// all t-digests merged at once, more accurate than one by one) into one
// message, which gets the sender's next sequence number. From then on that message
// is frozen: it is resent with the same bytes, labels and number until the
// receiver acknowledges it, so a receiver that saw it already can drop the
// copy; snapshots taken meanwhile wait for the next message. A snapshot
// that cannot merge with the others (an overflow: blob.MergeAll leaves it
// out) is kept and sent on its own later; only the backlog's bound, below,
// ever drops a snapshot. A message merged from several intervals'
// snapshots counts, at a collector with windows, in the window it arrives
// in.
//
// The unsent bytes (pending snapshots and frozen messages) are bounded by
// Options.MaxBacklog. When a snapshot would pass the bound, the queues
// with the most pending snapshots are merged ahead of time (losing only
// the one-step quality of their t-digest merges, never counts); if that
// does not make room, the snapshot is merged into its queue's last pending
// one; only a snapshot that can neither fit nor merge is dropped, and
// counted in Stats.Dropped and DroppedBytes. While merges succeed, a
// receiver that is down for hours costs at most two blobs per label set.
//
// # Retries
//
// A send that fails is retried after a backoff: MinBackoff·2^(n-1) for the
// n-th retry, at most MaxBackoff, jittered down by up to half, or the
// receiver's Retry-After (at most MaxRetryAfter). Each queue backs off on
// its own after a refusal; a failure that is not the receiver's answer
// (network down, a timeout) holds every queue back for a backoff of the
// shipper's (the same sequence, counted in failures in a row), so a
// receiver that is down sees one probe per backoff, not one per label
// set.
//
// Refusals the receiver may get over (HTTP 408, 409, 422 for a template it
// does not know yet, 429, 5xx, even 401/403/404, which a configuration fix
// cures) keep the message and retry it; they are counted in Stats.Retried
// and Stats.Refused, the last one's reason is Stats.LastError, and
// Options.OnError sees each. Only a SendError marked Permanent (HTTP 400,
// 413, 414, 431: the same bytes can never be accepted) gives a message up,
// counted in Stats.Rejected and RejectedBytes. No data leaves the shipper
// uncounted: every snapshot is acknowledged, rejected, dropped or, after a
// Close that timed out, reported as unsent.
//
// # Wire protocol
//
// HTTP (type HTTP): POST URL?NAME=VALUE&... with the blob's bytes as the
// body (Content-Type application/octet-stream), the labels as query
// parameters (sorted by name), and three headers:
//
//	Statsblob-Sender: 3f9c0a...        the sender id (HeaderSender)
//	Statsblob-Seq: 42                  the message's sequence number (HeaderSeq)
//	Statsblob-Settled-Below: 40        every seq under this one is settled (HeaderSettledBelow)
//
// The sender id is 1 to 64 bytes of [A-Za-z0-9._-], unique to one Shipper
// for its life (a restart gets a new random one). Sequence numbers are
// per sender, not per label set: 1, 2, 3, ... across all of the sender's
// templates and label sets, in the order messages are formed, so (sender,
// seq) names one message's data. A retry repeats the labels, the body and
// the seq exactly. Messages of different label sets may arrive out of
// order, and some numbers may never arrive (a message rejected for good,
// or unsent at exit). Within one template and label set, a sender has at
// most one message in flight: it forms the next message of that set only
// once the previous one is settled (acknowledged or given up), so the
// seqs of one set's messages increase in the order they are first sent.
//
// What a collector must do for idempotency: merge each (sender, seq) at
// most once, whatever window it lands in, and answer a duplicate with 2xx
// as if it had merged it (the shipper then forgets the message). Two ways
// are exact:
//
//   - keep, per sender and aggregate (template hash and label set), the
//     highest seq merged; a message whose seq is not above it is a
//     duplicate. One number per sender and aggregate, kept across windows
//     (and made as durable as the aggregates: a duplicate may arrive after
//     a restart), forgotten when the sender has been silent longer than
//     any retry lasts;
//   - or keep the set of (sender, seq) merged, forgetting a sender's seqs
//     under its latest Statsblob-Settled-Below: every seq of that sender
//     under the value will never be sent again (it may still arrive as a
//     stale copy from a proxy, which the first way also catches). The
//     value never decreases along a sender's messages and is at most the
//     message's Seq; one set whose message is refused for hours holds it
//     back, so this set can grow.
//
// A collector that acknowledges (2xx) must not lose the message afterwards
// (durability is the collector's promise; see the collector's
// documentation).
//
// Status codes, as type HTTP reads them: 2xx acknowledged; 400, 413, 414,
// 431 rejected for good; anything else retried, Retry-After honoured.
//
// Other transports carry the same Message: natsjs.Transport (module
// github.com/statsblob/statsblob/export/natsjs) publishes the body with the
// labels (Statsblob-Labels) and the three values as headers and Message.ID
// ("sender/seq") as Nats-Msg-Id, so JetStream's own duplicate window drops
// retries too.
package ship
