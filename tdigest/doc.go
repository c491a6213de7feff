// Package tdigest is the clustering t-digest that FreeBSD's stats(3) keeps
// inside a stats blob (VSD_DTYPE_TDGSTCLUST32 and VSD_DTYPE_TDGSTCLUST64),
// reproduced byte for byte, plus queries the C does not have.
//
// # Data layout
//
// A digest is a []byte of exactly the C's size for an LP64 little-endian
// host; every multi-byte field is little-endian. Nothing lives outside the
// bytes: a copy of the slice is a complete digest.
//
//	TDGSTCLUST32                          TDGSTCLUST64
//	 @0  u32 smplcnt                       @0  u64 smplcnt
//	 @4  u32 compcnt                       @8  u32 compcnt, @12 4 pad bytes
//	 @8  ARB16 head (12 bytes)             @16 ARB16 head (12 bytes), 4 pad
//	 @20 nodes, 16 bytes each              @32 nodes, 24 bytes each
//
// The ARB16 head (sys/arb.h) is six int16: curnodes, maxnodes, root, free,
// min, max. The last two cache the index of the smallest and largest node;
// the C updates them with cheap rules that can leave them stale (pointing at
// a node that is no longer the extreme), and the C then trusts them, so this
// package reproduces them exactly.
//
// A node (a centroid) starts with the ARB16 link: int16 parent, left, right,
// int8 color (0 black, 1 red, -1 free), one pad byte. Then the centroid: a
// 32-bit digest has an s32q mean at @8 and an int32 count at @12; a 64-bit
// digest has an s64q mean at @8 and an int64 count at @16. Free nodes form
// a list through their right index, headed by the head's free index; their
// parent and left fields keep whatever they held before (the C never clears
// them), and so do they here.
//
// The size of a digest with n centroids is 20+16n (32-bit) or 32+24n
// (64-bit) bytes.
//
// # Behaviour
//
// Build, Update and Reset are stats_vss_tdgst_hlpr, stats_v1_voi_update_tdgst
// (with stats_v1_vsd_tdgst_add and stats_v1_vsd_tdgst_compress) and the
// t-digest part of stats_v1_icb_reset_voistat of the conformance reference
// (testdata/conformance/FORMAT.md section 12): the same bytes, the same
// random() draws in the same order, the same errors. AppendText is
// stats_voistatdata_tdgst_tostr. The Q arithmetic of the update path is
// specialised to the s64q operations the digest uses (qs64.go); it follows
// FreeBSD's qmath.h with the reference's fixes and is checked against
// package qmath by the tests, and a slow transcription of the C's add built
// on package qmath serves as a differential oracle.
//
// The update path allocates nothing. Its hot loop, the walk in mean order
// to the centroids nearest to the sample, and the neighbour tests of the
// C's reinsert use what the walk learnt instead of walking again; the
// results are the C's for every digest Validate accepts. The update path
// is compiled once per node layout (a generic over the node type, see
// layout.go): it picks TDGSTCLUST32 or TDGSTCLUST64 once per update and
// reads nodes at constant offsets. Package blob keeps, beside each digest's
// bytes, a cache of its mean order as an array (through internal/trusted,
// not part of this package's API), so that the walk reads consecutive
// slots instead of following tree links (10-12% faster from 50 centroids,
// the same at 20); it costs 4 bytes per centroid slot, allocated by the
// digest's first update.
//
// # Randomness and time
//
// An add draws random() once per centroid that could absorb the sample; a
// compression draws the bits of a random permutation of the centroids. Both
// come from Env.Rand, a bsdrand.Source (the C's random(3)); in conformance
// runs it is the one source the whole run shares. The C reference does not
// reseed the generator inside a compression (no srandom call), which the
// conformance goldens confirm (see Env).
//
// # Beyond the C
//
// Validate checks bytes from elsewhere. Quantile, QuantileBounded, CDF,
// CDFBounded, Mean, Count, Iter and Centroids read a digest; MergeAll and
// MergeWeighted merge digests (and weighted samples) into a digest of the
// destination's geometry, exactly counted, independent of the order of
// the inputs and inside the samples' range (the C has no merge; see
// MergeAll); ReadInfo and ReadCentroid expose the raw layout.
//
// These are byte-level building blocks. A program holding blobs asks
// package blob: Blob.Quantile, Blob.CDF, Stat.Quantile and Stat.CDF (one
// answer for the library, the CLI and the exporters, bounded by the VOI's
// MIN and MAX when it keeps them, an integer for an integer VOI), and
// blob.MergeAll for merges.
// The caiotd subpackage converts to and from github.com/caio/go-tdigest.
//
// # The accurate mode
//
// The C's clustering is kept byte for byte, but it is not a good digest:
// its size bound has no compression factor, so a few heavy centroids
// absorb most samples of a long-lived digest, and sorted input collapses
// it. Mode Accurate clusters in the same layout as a merging t-digest
// (Dunning and Ertl, 2019), through the update cache package blob holds
// (internal/trusted; not this package's API): samples are buffered beside
// the bytes (32 per slot, at least 1024); a full buffer, or any view of the
// blob, is sorted and merged into finer centroids kept beside the bytes
// (32 per slot, their means at up to 32 more fractional bits than the
// digest's, so that a large centroid's mean keeps moving with the samples
// it takes in: rounded to the digest's precision at every flush it would
// stick, and over many flushes the centroids' ranks would drift from
// their means), which are then grouped into the digest's slots, each
// group spanning an equal step of the scale sqrt(q) (mirrored above the
// median), the step the smallest that fits the slots (bisection). The
// smallest and largest samples (or runs of equal ones) stay centroids of
// their own; spare slots split runs of equal samples so that discrete
// data is exact: pinned on both sides where the slots allow, else, for an
// integer VOI, into pieces matched with their neighbours' so that the
// answers rounded to integers (blob.Stat.Quantile) are exact (Zipf's law
// over 1..8 at 20 slots; see exactRuns). A group's "mean" starts as the finer centroids'
// quantile at the group's middle rank, where the queries read it (the
// exact mean of a group lies above that point where the distribution's
// quantile function is convex, as in latency tails, and the queries'
// interpolation between means then overestimates: rank errors fall by
// about a third), and is then moved three quarters of the way to the
// least-squares fit, in rank, of the queries' straight lines between
// groups to the finer centroids (the lines through points on a convex
// curve lie above it; fitted, they cross it: a quarter less again). So
// tdigest.Mean of such a digest is approximate (a VOI's SUM gives the
// exact mean). Counts are exact, every value lies within [min, max] of
// the samples, no randomness is drawn, and the bytes are a
// digest as Build and Update leave one: Validate accepts them, the C's
// update continues them, MergeAll merges them with digests of either
// mode. Values are accepted exactly when the digest's means can hold them
// (a TDGSTCLUST32 mean with 4 fractional bits holds integers up to
// 2^24-1). An update allocates nothing after a digest's first, which
// allocates about 1 KB per slot (at least about 22 KB); a flush borrows
// its working memory (about 2 KB per slot, at least about 55 KB) from a
// free list all digests share, so a process keeps one per flush running
// at once, not one per digest. Its cost is the C's (bench:
// BenchmarkUpdateMode).
package tdigest
