// Package natsjs carries statsblob blobs through NATS JetStream, so that a
// fleet can outgrow one collector: shippers publish their snapshots to a
// replicated, persistent stream (Transport, a ship.Transport), and any
// number of collectors consume it (Consumer), the label sets split among
// them so that each is merged and exported by exactly one collector at a
// time.
//
// # Subjects and partitions
//
// A message's subject is PREFIX.P.HASH: P is the message's partition, a
// hash of its template hash and labels modulo the stream's partition count
// (Partition), and HASH the template hash in 8 hexadecimal digits. Every
// message of one label set lands in one partition, and every partition is
// consumed by one collector at a time, so one collector holds all of a
// label set and exports it alone (Prometheus cannot add summaries back
// together, so two partial exports of one series would be wrong).
//
// A message's headers carry what an HTTP POST carries: Statsblob-Sender,
// Statsblob-Seq and Statsblob-Settled-Below (package ship), the labels as
// one URL-encoded Statsblob-Labels, and Nats-Msg-Id = "sender/seq", so a
// shipper's retry of a message the stream already stored is stored once
// (within the stream's duplicate window).
//
// # Ownership and delivery
//
// Collectors take partitions by leases, keys of a key-value bucket whose
// entries expire unless their owner renews them: a collector that stops
// (or is killed) loses its partitions within the lease time, and the others
// take them. An owner that cannot renew a lease for three quarters of the
// lease time (cut off from the stream, say) gives the partition up and
// stops exporting it before another may take it. Collectors count each
// other through a second bucket of the same kind and each takes its fair
// share, handing back extras when a collector joins.
//
// An owner merges its partition's messages into the partition's
// aggregates and, every checkpoint interval, stores them, with the stream
// sequences of the messages they hold that may not be acknowledged yet, in
// a key-value bucket (compare-and-swap on the revision, so an owner that
// lost the partition cannot overwrite its successor's), and only then
// acknowledges each message. A new owner starts from the last stored state
// and gets the unacknowledged messages again, in any order, skipping those
// whose sequence the state holds: a message is merged once, whoever is
// killed when.
package natsjs
