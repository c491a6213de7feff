// Package blob is the STATS_ABI_V1 stats blob: one contiguous []byte laid out
// exactly as FreeBSD's subr_stats.c lays it out on a 64-bit little-endian
// host, updated on the hot path, cloned, snapshotted, reset, walked and
// validated when it arrives from elsewhere.
//
// # Layout
//
// All multi-byte fields are little-endian. Offsets are from the start of
// the blob.
//
//	header (32 bytes, struct statsblobv1)
//	  0  u8   abi            1 (STATS_ABI_V1)
//	  1  u8   endian         1 (little-endian)
//	  2  u16  flags          0
//	  4  u16  maxsz          size of the buffer that holds the blob
//	  6  u16  cursz          bytes in use (the blob is b[:cursz])
//	  8  u32  tplhash        hash of the template it was made from
//	 12  u16  stats_off      start of voistat[]
//	 14  u16  statsdata_off  start of the statistics' data
//	 16  i64  created        sbintime_t (seconds<<32 + fraction)
//	 24  i64  lastrst        sbintime_t of the last reset
//	voi[] (8 bytes each, index = VOI id; (stats_off-32)/8 entries)
//	  0  i16  id             the VOI id, -1 for a vacant slot
//	  2  u8   dtype          the VOI's data type (voi.DType)
//	  3  i8   voistatmaxid   highest statistic slot, -1 when vacant
//	  4  u16  stats_off      offset of this VOI's voistat[0]
//	  6  u16  flags          0x0001: the VOI keeps state (relative updates)
//	voistat[] (8 bytes each; a VOI's slot j holds statistic type j)
//	  0  i8   stype          voi.SType, -1 for a vacant slot
//	  1  u8   dtype          data type of the statistic's data
//	  2  u16  data_off       offset of the data
//	  4  u16  dsz            size of the data
//	  6  u8   errs           errors counted by updates, saturating at 255
//	  7  u8   flags          0x01: updated since the last reset
//	data (statsdata_off .. cursz)
//	  numeric statistics: 4 or 8 bytes of the VOI's type;
//	  the VOI state (slot 0): the previous value, 8 bytes;
//	  histograms: see package hist; t-digests: see package tdigest.
//
// Adding a VOI to a template puts its voistats at the start of voistat[] and
// its data at the start of the data region, shifting what was there, so the
// regions are in reverse order of addition (package tpl).
//
// # Use
//
// A Blob is a plain value for one goroutine at a time, like the C blob: it
// takes no locks. Updates are O(1) in the VOI id and allocate nothing,
// except that the first update of each t-digest statistic allocates the
// blob's cache of that digest's mean order (4 bytes per centroid slot; see
// tdigest.Cache), which later updates keep.
// Bytes that arrive from another host go through FromBytes, which accepts
// only a self-consistent blob (see Validate) and copies it, so later use can
// never read out of range.
package blob
