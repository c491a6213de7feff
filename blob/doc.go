// Package blob is the STATS_ABI_V1 stats blob: one contiguous []byte laid out
// exactly as FreeBSD's subr_stats.c lays it out on a 64-bit little-endian
// host, updated on the hot path, cloned, snapshotted, reset, iterated, queried and
// validated when it arrives from elsewhere.
//
// # Layout
//
// A blob is a 32-byte header, voi[] (8 bytes per VOI id), voistat[] (8
// bytes per statistic slot) and the statistics' data, all little-endian;
// package internal/abi documents every field and is the one place that
// reads and writes them. Header returns the header as Go values; Stats and
// Fetch give each statistic's data.
//
// # Use
//
// A Blob is a plain value for one goroutine at a time, like the C blob: it
// takes no locks. Updates are O(1) in the VOI id and allocate nothing,
// except that the first update of each t-digest statistic allocates the
// blob's cache of that digest's mean order (4 bytes per centroid slot, kept
// beside the bytes so that updates walk an array instead of tree links),
// which later updates and resets keep.
// Bytes that arrive from another host go through FromBytes, which accepts
// only a self-consistent blob (see Validate) and copies it, so later use can
// never read out of range.
//
// # T-digest modes
//
// A t-digest updates in the clustering mode its template declares
// (tpl.TDigestSpec.Mode): the C's (tdigest.C, byte-identical to FreeBSD's)
// or tdigest.Accurate, which buffers samples beside the bytes (its first
// update allocates about 2 KB per centroid slot (at least about 60 KB)) and writes them in
// before any view: Bytes, Buffer, AppendBinary, Clone, Snapshot, Fetch,
// Stats, Quantile, CDF, the merges and Sharded.Snapshot. Those calls
// therefore write to the blob. New, Init and NewSharded take the modes
// from the template, Clone and Snapshot from the blob; a blob made from
// bytes (FromBytes, Wrap) has no template and updates in the C's mode
// until UseModes gives it its template's. The mode is not in the bytes:
// blobs of either mode are the same layout and merge with each other.
package blob
