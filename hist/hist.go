// Package hist holds the histogram statistics of statsblob, byte for byte as
// FreeBSD's stats(3) keeps them (sys/kern/subr_stats.c): the bucket schemes
// (linear, exponential, exponential with linear sub-steps, user-defined) and
// their construction, the in-blob layout of the six histogram data types,
// bucket lookup and counting, reset, and read-only queries (buckets, counts,
// quantile and CDF estimates, merging) that the C does not have.
//
// # Data layout
//
// A histogram statistic's data is dsz bytes inside a blob, little-endian:
//
//	CRHIST32  oob u32, 4 bytes padding, then per bucket {lb num, cnt u32, 4 bytes padding}   (16 bytes)
//	CRHIST64  oob u64,                  then per bucket {lb num, cnt u64}                    (16 bytes)
//	DRHIST32  oob u32, 4 bytes padding, then per bucket {lb num, ub num, cnt u32, 4 padding} (24 bytes)
//	DRHIST64  oob u64,                  then per bucket {lb num, ub num, cnt u64}            (24 bytes)
//	DVHIST32  like CRHIST32, with the bucket's value in place of lb
//	DVHIST64  like CRHIST64, with the bucket's value in place of lb
//
// where num is the C's 8-byte struct voistatdata_numeric holding a value of
// the VOI's data type: a VOI of a 32-bit type uses its low half only, and
// the high half keeps whatever the bucket construction left there (see
// Spec.Build). The number of buckets is (dsz-8)/bucket size
// (HIST_VSDSZ2NBKTS). Counters of 32-bit histograms wrap, as in the C.
//
// # Semantics of a lookup
//
// A value v of the VOI's type falls into the highest-numbered bucket that
// accepts it (the C scans from the last bucket down), else it is counted as
// out of band (oob):
//
//	CRHIST  lb <= v            (a CR bucket has no upper bound of its own)
//	DRHIST  lb <= v && v < ub
//	DVHIST  v == val           (for Q types the C's Q_QEQ, which compares
//	                            integer parts only, after v >= val)
//
// Comparisons use the VOI's type: signed or unsigned integers of its width,
// or the C's Q-number comparisons (integer parts, then raw fraction values,
// each with its own precision).
//
// Update finds the bucket from the bytes alone, as the C does. A Layout,
// computed once from a histogram's bytes, finds it in constant time for
// linear layouts and by binary search for other sorted ones, and through a
// table of counter offsets when the bounds span few keys; see Layout.
package hist

import (
	"encoding/binary"
	"fmt"
	"iter"

	"github.com/statsblob/statsblob/voi"
)

// Scheme is how a histogram's buckets are generated (enum hist_bkt_alloc).
type Scheme uint8

// The bucket schemes, numbered as in the C.
const (
	Lin    Scheme = iota // BKT_LIN: constant steps of StepInc
	Exp                  // BKT_EXP: bucket k is StepBase^(StepExp+k) wide
	LinExp               // BKT_LINEXP: StepBase^e / LinStepDiv wide, e the first power above the bucket's lower bound
	Usr                  // BKT_USR: the buckets listed in Spec.Buckets
)

// String returns the C name without its BKT_ prefix ("LIN"), or "Scheme(N)".
func (s Scheme) String() string {
	switch s {
	case Lin:
		return "LIN"
	case Exp:
		return "EXP"
	case LinExp:
		return "LINEXP"
	case Usr:
		return "USR"
	}
	return fmt.Sprintf("Scheme(%d)", uint8(s))
}

// Flags are a histogram spec's flags (the VSD_HIST_* bits). Bits other than
// the two defined ones are kept but ignored, as in the C.
type Flags uint32

// The histogram flags.
const (
	// LBoundInf (VSD_HIST_LBOUND_INF) adds a first bucket from the VOI
	// type's minimum up to the first generated bound.
	LBoundInf Flags = 0x01
	// UBoundInf (VSD_HIST_UBOUND_INF) adds a last bucket from the last
	// generated bound up to the VOI type's maximum.
	UBoundInf Flags = 0x02
)

// Bound is one user-defined bucket (Usr scheme) as two numeric patterns:
// the C's CRBKT(x) and DVBKT(x) are {x, x}, DRBKT(lb, ub) is {lb, ub}. A CR
// histogram uses LB only, a DV histogram uses LB as the bucket's value.
type Bound struct{ LB, UB uint64 }

// Spec describes a histogram statistic as the C's struct
// vss_hist_hlpr_info does. Numbers are 8-byte numeric patterns
// (stats_ctor_vsd_numeric: the uint64 stored as is), interpreted with the
// VOI's data type when the histogram is built: the low half for 32-bit
// types, raw Q bits for Q types. The zero value is a CRHIST of dtype 0,
// which Build rejects. A Spec is read, never modified, by Build. This is
// the C-shaped form; tpl.HistLin, HistExp, HistLinExp, HistBuckets and
// HistRanges make a Spec from values of the VOI's Go type (-100, 2.5).
type Spec struct {
	DType      voi.DType // CRHist32 .. DVHist64
	Scheme     Scheme
	Flags      Flags
	LB, UB     uint64  // Lin, Exp and LinExp: the first bucket's lower bound; generation stops after the first bucket whose upper bound exceeds UB
	StepInc    uint64  // Lin: the width of every bucket
	StepBase   uint64  // Exp and LinExp
	StepExp    uint64  // Exp: the first bucket is StepBase^StepExp wide
	LinStepDiv uint64  // LinExp (the scenario language's "nlinsteps")
	Buckets    []Bound // Usr: the buckets in order
}

// kind is the family of a histogram data type.
type kind uint8

const (
	kindCR kind = iota // continuous range: lower bounds only
	kindDR             // discrete range: lower and upper bounds
	kindDV             // discrete value
)

// geom is the shape of a histogram data type's buckets.
type geom struct {
	bsz  int  // bytes per bucket: 16, or 24 for DR
	coff int  // offset of the counter inside a bucket: 8, or 16 for DR
	is32 bool // 32-bit counters (and oob)
	kind kind
}

// hdrSize is the size of every histogram's header (the oob counter, padded
// to the 8-byte alignment of the buckets).
const hdrSize = 8

// maxDataSize is the largest data size a statistic can have: a blob is at
// most 65535 bytes (SB_V1_MAXSZ) and dsz is a uint16.
const maxDataSize = 65535

// geoms is indexed by data type; only the histogram types have entries.
var geoms = [voi.NumDTypes]geom{
	voi.CRHist32: {16, 8, true, kindCR},
	voi.DRHist32: {24, 16, true, kindDR},
	voi.DVHist32: {16, 8, true, kindDV},
	voi.CRHist64: {16, 8, false, kindCR},
	voi.DRHist64: {24, 16, false, kindDR},
	voi.DVHist64: {16, 8, false, kindDV},
}

// geomOf returns the bucket shape of the histogram type hdt.
func geomOf(hdt voi.DType) (geom, bool) {
	if !hdt.IsHist() {
		return geom{}, false
	}
	return geoms[hdt], true
}

// NumBuckets is HIST_VSDSZ2NBKTS: the number of buckets in dsz bytes of
// histogram data of type hdt. It is 0 for a type that is not a histogram
// and for dsz < 8; trailing bytes short of a bucket are not counted.
func NumBuckets(hdt voi.DType, dsz int) int {
	g, ok := geomOf(hdt)
	if !ok || dsz < hdrSize {
		return 0
	}
	return (dsz - hdrSize) / g.bsz
}

// DataSize is HIST_NBKTS2VSDSZ: the data size of a histogram of type hdt
// with n buckets (0 for a type that is not a histogram).
func DataSize(hdt voi.DType, n int) int {
	g, ok := geomOf(hdt)
	if !ok {
		return 0
	}
	return hdrSize + n*g.bsz
}

// loadCount reads a 32- or 64-bit counter at off.
func loadCount(data []byte, off int, is32 bool) uint64 {
	if is32 {
		return uint64(binary.LittleEndian.Uint32(data[off:]))
	}
	return binary.LittleEndian.Uint64(data[off:])
}

// storeCount writes a 32- or 64-bit counter at off (a 32-bit counter keeps
// the low half of c).
func storeCount(data []byte, off int, is32 bool, c uint64) {
	if is32 {
		binary.LittleEndian.PutUint32(data[off:], uint32(c))
		return
	}
	binary.LittleEndian.PutUint64(data[off:], c)
}

// numBuckets is NumBuckets for data that must hold the header.
func (g geom) numBuckets(data []byte) int {
	if len(data) < hdrSize {
		return 0
	}
	return (len(data) - hdrSize) / g.bsz
}

// OOB returns the out-of-band counter of histogram data of type hdt (0 for
// a type that is not a histogram or data shorter than the counter).
func OOB(data []byte, hdt voi.DType) uint64 {
	g, ok := geomOf(hdt)
	if !ok || len(data) < hdrSize {
		return 0
	}
	return loadCount(data, 0, g.is32)
}

// BucketCount returns the count of bucket i of histogram data of type hdt, or
// its out-of-band count for i = -1; 0 for a type that is not a histogram
// or an index that is not a bucket's.
func BucketCount(data []byte, hdt voi.DType, i int) uint64 {
	g, ok := geomOf(hdt)
	if !ok || i < -1 || i >= g.numBuckets(data) {
		return 0
	}
	if i < 0 {
		return loadCount(data, 0, g.is32)
	}
	return loadCount(data, hdrSize+i*g.bsz+g.coff, g.is32)
}

// Bucket returns bucket i's lower bound, upper bound and count as the C
// renders them (stats_voistatdata_hist_tostr): for CRHIST the upper bound
// is the next bucket's lower bound, or voi.LimitMax(voiDT) for the last
// bucket; for DRHIST the bucket's own upper bound; for DVHIST lb = ub = the
// bucket's value. Bounds are the stored 8-byte patterns. It panics if i is
// not a bucket of data (0 <= i < NumBuckets(hdt, len(data))).
func Bucket(data []byte, hdt, voiDT voi.DType, i int) (lb, ub, cnt uint64) {
	g, ok := geomOf(hdt)
	n := g.numBuckets(data)
	if !ok || i < 0 || i >= n {
		panic(fmt.Sprintf("hist: bucket %d of %d (%v)", i, n, hdt))
	}
	return g.bucket(data, voiDT, i, n)
}

// bucket is Bucket for a valid index of n buckets.
func (g geom) bucket(data []byte, voiDT voi.DType, i, n int) (lb, ub, cnt uint64) {
	off := hdrSize + i*g.bsz
	lb = binary.LittleEndian.Uint64(data[off:])
	switch g.kind {
	case kindCR:
		if i+1 < n {
			ub = binary.LittleEndian.Uint64(data[off+g.bsz:])
		} else {
			ub = voi.LimitMax(voiDT)
		}
	case kindDR:
		ub = binary.LittleEndian.Uint64(data[off+8:])
	default:
		ub = lb
	}
	return lb, ub, loadCount(data, off+g.coff, g.is32)
}

// BucketInfo is one bucket as Bucket returns it.
type BucketInfo struct{ LB, UB, Cnt uint64 }

// Buckets returns an iterator over the buckets of histogram data in index
// order, each as Bucket returns it. It yields nothing for a type that is not
// a histogram. Ranging over it does not allocate.
func Buckets(data []byte, hdt, voiDT voi.DType) iter.Seq2[int, BucketInfo] {
	return func(yield func(int, BucketInfo) bool) {
		g, ok := geomOf(hdt)
		if !ok {
			return
		}
		n := g.numBuckets(data)
		for i := range n {
			lb, ub, cnt := g.bucket(data, voiDT, i, n)
			if !yield(i, BucketInfo{lb, ub, cnt}) {
				return
			}
		}
	}
}

// Count returns the sum of the bucket counts (oob excluded), saturating at
// the largest uint64.
func Count(data []byte, hdt voi.DType) uint64 {
	g, ok := geomOf(hdt)
	if !ok {
		return 0
	}
	var sum uint64
	for i := range g.numBuckets(data) {
		c := loadCount(data, hdrSize+i*g.bsz+g.coff, g.is32)
		if sum+c < sum {
			return ^uint64(0)
		}
		sum += c
	}
	return sum
}

// Reset zeroes the oob counter and every bucket count, as the C's reset of a
// histogram statistic does; bounds and padding are left as they are. Data
// of a type that is not a histogram is left alone.
func Reset(data []byte, hdt voi.DType) {
	g, ok := geomOf(hdt)
	if !ok || len(data) < hdrSize {
		return
	}
	storeCount(data, 0, g.is32, 0)
	for i := range g.numBuckets(data) {
		storeCount(data, hdrSize+i*g.bsz+g.coff, g.is32, 0)
	}
}
