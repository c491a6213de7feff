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
// within the stream's duplicate window (Setup.Duplicates); a retry
// published later is stored again, and recognised by the consumer (see
// Late copies).
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
//
// # Late copies
//
// A shipper whose publish was stored but not acknowledged (the stream
// unreachable on the way back) publishes the message again, without a
// time limit; past Setup.Duplicates the stream stores the copy as a new
// message. The shipper has one message of a label set in flight and
// numbers the next only once one is acknowledged, so in the stream every
// copy of sequence N precedes N+1 of the same sender, template and
// labels; the owner keeps, in the partition's state, the highest
// sequence merged of each (a mark), and a copy at most its mark is
// counted (Stats.Duplicates) and not merged. Deliveries are not in
// stream order (a message redelivered after its owner died comes after
// newer ones), so a mark only takes in the messages at or below the
// consumer's acknowledgement floor; those above are kept exactly (sender,
// label set, sequence) until the floor passes them. A label set's mark
// goes when no message of it has been stored for Setup.MaxAge (by the
// stream's clock): a copy stored later than that after the original is
// merged again. Config.MaxMarks bounds the marks of a partition; past it
// a new sender's label set is merged unchecked (Stats.Unchecked). A
// message without Statsblob-Sender or Statsblob-Seq is merged as it comes
// (only the stream's duplicate window guards it).
//
// # Unknown templates
//
// A message whose template the collector does not know (yet: shippers
// rolled out before the collectors' templates file) is neither dropped
// nor left unacknowledged: it waits. Its stream sequence goes into the
// partition's state, it is acknowledged with it, and every Config.TemplateRetry
// the first waiting message of its template is read from the stream
// again, until the template is known (its Store learns it, as
// statsblob-collector's on SIGHUP, or a collector that knows it takes the
// partition over); then the template's
// waiting messages are merged in stream order, and a newer message of a
// template with waiting ones waits behind them, so late copies among them
// are still recognised. Waiting messages hold back neither the
// partition's other messages nor its acknowledgement floor. They stay in
// the stream within its limits: one the stream removes first (MaxAge) is
// counted (Stats.Expired) and forgotten; past Config.MaxWaiting a message
// of an unknown template is dropped (Stats.WaitFull). Stats.Waiting says
// how many wait.
//
// # Versions
//
// A templates file may hold several versions of one template name, and
// during a rolling upgrade shippers of two versions publish under one
// label set. A SetStore over a TemplateSet exports them as the HTTP
// collector (export/collector) exports the same posts: where aggregates
// of several versions of a name share a label set, the series of each
// version but the newest carry export.VersionLabel
// (statsblob_template_hash), its template hash, and no two series clash
// (export.ErrNameClash). The newest version of a name is the last of it
// in the templates file (TemplateSet.Add), never the one whose messages
// came last, so collectors that read one file agree on it. The rule
// takes all the partitions a collector owns together; a label set's
// messages of two versions are in two partitions (the partition hashes
// the template hash), and where two collectors own them, each exports
// its version's series without the label (the scrape's instance label
// tells them apart) until one collector owns both.
//
// # Templates in the state
//
// A partition's state carries the templates of its aggregates (their
// JSON forms, once each), so that it never depends on the templates
// file keeping every version it ever merged: a collector whose file no
// longer holds one (a version dropped after its rollout) still takes the
// partition, exports the aggregates and merges new messages of the
// template, which it learns from the state (SetStore.Learned,
// SetStore.Logf): it ranks below the file's versions of its name (the
// file's newest stays the newest) and stays known, as a template of
// an earlier file read does, so every state the collector writes
// carries it again. A state of an earlier version, which carries no
// template, is stored again with them at the first checkpoint of a
// collector that knows them; one that reaches a collector knowing none
// of its aggregates' templates cannot be opened until one does (the
// collector logs why at every try). So upgrade first and drop versions
// from the file after: once every collector of a stream runs this
// version, each partition it owns has been stored with its templates
// (within a checkpoint of the takeover). Collectors before this version
// cannot open a state it wrote: upgrade every collector of a stream.
//
// Messages the stream removes before any collector read them (all of
// them down for longer than Setup.MaxAge) are lost unmerged: an owner
// notices the gap between the partition's read position and the
// stream's first message and counts it (Stats.Gaps), but cannot tell how
// many of them were its partition's.
package natsjs
