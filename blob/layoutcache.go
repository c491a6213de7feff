package blob

import (
	"encoding/binary"
	"sync/atomic"
	"unsafe"

	"github.com/statsblob/statsblob/hist"
	"github.com/statsblob/statsblob/internal/abi"
	"github.com/statsblob/statsblob/tdigest"
	"github.com/statsblob/statsblob/voi"
)

// A collector decodes many blobs of few layouts. Everything Validate
// checks but the t-digests depends only on the layout bytes (the header
// but for maxsz and the times, voi[], voistat[] but for error counts and
// flags), and the plan depends on those and the histograms' bounds. The
// layout cache keeps, per layout recently decoded, those bytes and the
// plan made from them: a blob whose layout bytes and bounds equal a cached
// entry's needs only its voistat flags, its maxsz and its t-digests
// checked, and takes the entry's plan (plans are immutable and shared).
//
// Entries are immutable once published and live in a fixed table of
// layoutSets sets of layoutWays each, found by a hash of the header's
// layout fields; inserting one replaces the set's older entry. Only blobs
// of at most layoutMaxSz bytes are cached, and only if the entry takes at
// most 2.5 bytes per blob byte together with the plan, so that decoding
// a blob still allocates less than 4 bytes per byte (README, Untrusted
// input): the table holds at most layoutSets*layoutWays entries of 20 KiB
// each, plans included.
const (
	layoutSets  = 32
	layoutWays  = 2
	layoutMaxSz = 8 << 10
)

// layoutEntry is one cached layout.
type layoutEntry struct {
	head0  uint64   // header bytes 0..7 with maxsz (bytes 4..5) zeroed
	head1  uint64   // header bytes 8..15: tplhash, stats_off, statsdata_off
	words  []uint64 // voi[] and voistat[] as little-endian words, voistat errs and flags zeroed
	nvoi   int      // words of voi[]
	bounds []uint64 // the histograms' bound words
	boffs  []uint16 // and their offsets
	tdgsts []dataRef
	plan   *plan
}

// dataRef locates one t-digest's data.
type dataRef struct {
	off, dsz uint16
	dt       voi.DType
}

var layoutTable [layoutSets][layoutWays]atomic.Pointer[layoutEntry]

const (
	head0Mask = 0xffff_0000_ffff_ffff // all but maxsz
	// statMask selects what a voistat entry's word must have as cached:
	// all but the error count and the valid flag, which a blob's updates
	// change (a vacant entry's word must match in full).
	statMask = 0xfe00_ffff_ffff_ffff
)

// layoutSet returns the set a header's layout fields select.
func layoutSet(p []byte) *[layoutWays]atomic.Pointer[layoutEntry] {
	h := binary.LittleEndian.Uint64(p[8:]) ^ uint64(abi.CurSz(p))<<48
	return &layoutTable[(h*0x9E3779B97F4A7C15)>>(64-5)]
}

// cachedPlan returns the plan of p (len(p) >= HeaderSize) if a cached
// layout matches it and p passes the checks left after the match; nil
// otherwise (p may still be valid).
func cachedPlan(p []byte) *plan {
	if len(p) > layoutMaxSz {
		return nil
	}
	set := layoutSet(p)
	for w := range set {
		if e := set[w].Load(); e != nil && e.matches(p) {
			return e.plan
		}
	}
	return nil
}

// matches reports whether p has e's layout and passes what Validate checks
// beyond it.
func (e *layoutEntry) matches(p []byte) bool {
	h0 := binary.LittleEndian.Uint64(p)
	if h0&head0Mask != e.head0 || binary.LittleEndian.Uint64(p[8:]) != e.head1 ||
		len(p) != abi.CurSz(p) || abi.MaxSz(p) < len(p) {
		return false
	}
	// The header says where voi[] and voistat[] are, and it matched: the
	// words lie inside p. Differences are gathered, not branched on.
	w := p[abi.HeaderSize : abi.HeaderSize+8*len(e.words)]
	var diff uint64
	for i, want := range e.words[:e.nvoi] {
		diff |= binary.LittleEndian.Uint64(w[8*i:]) ^ want
	}
	for i := e.nvoi; i < len(e.words); i++ {
		want := e.words[i]
		vacant := uint64(int64(int8(want)) >> 63) // stat type -1: all ones
		diff |= (binary.LittleEndian.Uint64(w[8*i:]) ^ want) & (statMask | vacant)
	}
	boffs := e.boffs[:len(e.bounds)]
	for i, want := range e.bounds {
		diff |= binary.LittleEndian.Uint64(p[boffs[i]:]) ^ want
	}
	return diff == 0 && e.digestsValid(p)
}

func (e *layoutEntry) digestsValid(p []byte) bool {
	for _, d := range e.tdgsts {
		if !tdigest.Valid(p[d.off:int(d.off)+int(d.dsz)], d.dt) {
			return false
		}
	}
	return true
}

// cacheLayout records the layout of b, a blob that passed Validate with
// len(b) == cursz, and its plan p, if it is small enough.
func cacheLayout(b []byte, p *plan) {
	if len(b) > layoutMaxSz {
		return
	}
	statsOff, dataOff := abi.StatsOff(b), abi.StatsDataOff(b)
	e := &layoutEntry{
		head0: binary.LittleEndian.Uint64(b) & head0Mask,
		head1: binary.LittleEndian.Uint64(b[8:]),
		plan:  p,
	}
	nb, nd := 0, 0
	for off := statsOff; off < dataOff; off += abi.StatSize {
		s := abi.ReadStat(b, off)
		switch voi.SType(s.SType) {
		case voi.Hist:
			g, _ := hist.GeometryOf(s.DType)
			nb += hist.NumBuckets(s.DType, int(s.DSz)) * g.Bounds
		case voi.TDgst:
			nd++
		}
	}
	entry := int(unsafe.Sizeof(*e)) + dataOff + 10*nb + int(unsafe.Sizeof(dataRef{}))*nd
	if entry+p.bytes() > 5*len(b)/2 {
		return // the decode that pays for the entry would allocate too much
	}
	e.nvoi = (statsOff - abi.HeaderSize) / 8
	e.words = make([]uint64, 0, (dataOff-abi.HeaderSize)/8)
	e.bounds = make([]uint64, 0, nb)
	e.boffs = make([]uint16, 0, nb)
	e.tdgsts = make([]dataRef, 0, nd)
	for off := abi.HeaderSize; off < statsOff; off += 8 {
		e.words = append(e.words, binary.LittleEndian.Uint64(b[off:]))
	}
	for off := statsOff; off < dataOff; off += abi.StatSize {
		w := binary.LittleEndian.Uint64(b[off:])
		if int8(w) != -1 {
			w &= statMask
		}
		e.words = append(e.words, w)
		s := abi.ReadStat(b, off)
		dt := voi.DType(s.DType)
		switch voi.SType(s.SType) {
		case voi.Hist:
			// Each bucket starts with its bound (CR, DV) or bounds (DR).
			g, _ := hist.GeometryOf(dt)
			for at := int(s.DataOff) + g.Header; at < int(s.DataOff)+int(s.DSz); at += g.Size {
				for j := 0; j < g.Bounds; j++ {
					e.bounds = append(e.bounds, binary.LittleEndian.Uint64(b[at+8*j:]))
					e.boffs = append(e.boffs, uint16(at+8*j))
				}
			}
		case voi.TDgst:
			e.tdgsts = append(e.tdgsts, dataRef{off: s.DataOff, dsz: s.DSz, dt: dt})
		}
	}
	set := layoutSet(b)
	set[1].Store(set[0].Load())
	set[0].Store(e)
}
