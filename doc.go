// Package statsblob is FreeBSD's stats(3) framework for Go: templates of
// Variables Of Interest (VOIs) and their statistics (SUM, MAX, MIN,
// histograms, t-digests), compiled into blobs that are one []byte laid out
// exactly as FreeBSD's STATS_ABI_V1, updated without allocating, shipped
// as bytes, validated, merged, queried and rendered. This package holds
// only documentation; README.md has the tour.
//
// # Package map
//
// The packages of this module from the floor up. Each imports only
// packages listed before it (imports_test.go checks every package's
// imports against this list, and README.md carries the same list):
//
//	internal/decimal                     integers in decimal for the renderings, without allocating
//	internal/literal                     INT literals of the scenario language (FORMAT.md 3.1)
//	internal/stream                      the value stream of scenarios, benchmarks, demo and tests (FORMAT.md 9)
//	internal/alloctest                   the heap bytes a call allocates, for tests that bound them
//	internal/readmetest                  the README's Go snippets held equal to compiled function bodies
//	bsdrand                              BSD random(3), the source of t-digest and dice randomness
//	qmath                                Q numbers exactly as FreeBSD's qmath.h, with the reference's fixes
//	voi                                  the vocabulary: data and statistic types, numeric limits, flags, sentinel errors
//	internal/golden                      the scenario language's tokens and the golden files, read once
//	internal/lut                         the counter table of a histogram layout, built by hist, read by blob's updates
//	internal/trusted                     unchecked operations of hist and tdigest that blob may call on bytes it knows valid
//	internal/abi                         the blob format: STATS_ABI_V1 header, voi[], voistat[] offsets and sizes
//	hist                                 histograms: specs, buckets, in-blob layout, lookup, quantiles, merge
//	tdigest                              the in-blob t-digest: red-black tree, clustering add, merge, queries
//	tdigest/caiotd                       conversion to and from caio/go-tdigest
//	tdigest/tdigesttest                  checks of digest queries shared by tests
//	tpl                                  templates and the registry: VOIs, the template's bytes, hash, JSON
//	blob                                 the blob: update, fetch, iterate, query, clone, snapshot, reset, validate, merge
//	tostr                                freeform and JSON renderings, byte-identical to the C
//	sample                               sample rates and the seeded dice roll
//	family                               a family of blobs keyed by label values (the HistogramVec of statsblob)
//	ship                                 the shipper: periodic snapshots POSTed to a collector, retried, deduplicated
//	derive                               derived metrics computed on read: ratio, percent, average, variance, rate, difference
//	statdef                              Linux-style text definition: VOIs' statistics on/off and reset at run time
//	devstat                              devstat(9)-style transaction accounting and iostat's figures
//	history                              Linux-style history ring of per-period snapshots and raw sample ring
//	internal/tcpstats                    FreeBSD's TCP_DEFAULT template
//	internal/tcpsim                      simulated TCP connections: the demo's and benchmarks' workload
//	internal/accuracy                    rank errors of t-digests against exact samples
//	cmd/statsblob/internal/scenario/gen  the scenario generator
//	cmd/statsblob/internal/scenario      the conformance runner (FORMAT.md's language)
//	bench                                benchmark workloads: the C reference's cases, collector path, parallel scaling
//	bench/cmd/compare                    Go beside the C reference, interleaved
//	bench/cmd/accuracy                   rank-error tables of the t-digest merges
//	cmd/statsblob                        the CLI: demo, template, record, inspect, render, merge, quantile, plot, fetch, def, iostat, derive, run, gen, diff, version
//
// Nested modules sit on top and are not part of this list: bench/peers
// (the peer libraries, measured beside statsblob); export (the mapping to
// metrics, the Prometheus, OpenTelemetry and remote-write exporters, the
// collector's aggregation, write-ahead log and server, the
// statsblob-collector command); export/natsjs (blobs through NATS
// JetStream: the shipper's transport, the partitioned consumer and its
// statsblob-collector); export/e2e/otelcol (the end-to-end test's
// OpenTelemetry Collector).
package statsblob
