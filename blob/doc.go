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
//
// # Overflow
//
// Every field of a blob has the fixed width of its C type, and one policy
// says what happens when a value does not fit:
//
//   - Updates (Blob.Update*, the C's stats_voi_update) do what the C does,
//     byte for byte, as conformance requires: an integer SUM and a
//     histogram counter wrap at their width without an error; a Q SUM or
//     MAX/MIN that qmath cannot represent, and a t-digest that cannot
//     place a sample, count an error in the statistic's voistat (errs,
//     saturating at 255) and keep their old value.
//   - Everything else is ours and never wraps nor drops silently. A merge
//     whose result has the inputs' own width refuses what does not fit,
//     loudly: Merge fails with voi.ErrOverflow and changes nothing;
//     MergeAll leaves that input out and reports it (*InputError). An
//     operation that must produce a result holding all its inputs
//     saturates instead: Sharded snapshots and Fold set a SUM or
//     histogram counter that would not fit to its type's limit (a Q SUM
//     keeps its value; a t-digest leaves out the samples whose count would
//     not fit) and count one error in that statistic's voistat, which
//     Fold also returns as its count of saturated statistics.
//   - To add up without loss, widen: tpl.Widen derives a template whose
//     integer VOIs, histogram counters and t-digests are 64 bits wide
//     (and whose digests have more slots), Widen converts a blob to it
//     exactly and Fold adds the narrow blobs into it, so an INT_U32 SUM
//     keeps counting past 2^32. `statsblob merge` merges into the wide
//     template when a narrow merge would leave an input out for overflow,
//     and the collector aggregates in the wide template; what passes even
//     64 bits saturates and is counted as above.
//
// # T-digest modes
//
// A t-digest updates in the clustering mode its template declares
// (tpl.TDigestSpec.Mode): the C's (tdigest.C, byte-identical to FreeBSD's)
// or tdigest.Accurate, which buffers samples beside the bytes (its first
// update allocates about 1 KB per centroid slot, at least about 22 KB;
// flushes borrow their working memory from a free list all digests share)
// and writes them in
// before any view: Bytes, Buffer, AppendBinary, Clone, Snapshot, Fetch,
// Stats, Quantile, CDF, the merges and Sharded.Snapshot. Those calls
// therefore write to the blob. New, Init and NewSharded take the modes
// from the template, Clone and Snapshot from the blob; a blob made from
// bytes (FromBytes, Wrap) has no template and updates in the C's mode
// until UseModes gives it its template's. The mode is not in the bytes:
// blobs of either mode are the same layout and merge with each other.
package blob
