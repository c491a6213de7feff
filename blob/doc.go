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
// # The C-shaped layer
//
// Init, Wrap, CloneInto, SnapshotInto and the untyped Update take the C's
// buffers, sizes and bit patterns (stats_blob_init, stats_blob_clone,
// stats_blob_snapshot, stats_voi_update); they live in cshaped.go and
// their docs start "(C-shaped layer: ...)". They serve the conformance
// runner and readers of FreeBSD's stats(3); Go code uses New, FromBytes,
// Clone, Snapshot and the typed updates (or typed handles, U32Of, ...).
package blob
