package blob

import (
	"iter"
	"sync/atomic"
	"unsafe"

	"github.com/statsblob/statsblob/hist"
	"github.com/statsblob/statsblob/internal/abi"
	"github.com/statsblob/statsblob/internal/lut"
	"github.com/statsblob/statsblob/internal/trusted"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// A plan is the update path's view of a blob's layout: for each VOI id its
// data type, where its state lives and its statistics in update order
// (highest slot first). It is derived from validated bytes once and never
// changes, because nothing a Blob does moves offsets: updates, resets,
// clones and merges only write data, error counts and flags. It is not
// state of the blob (the bytes stay complete and authoritative; a plan is
// rebuilt from them whenever bytes come from outside), and blobs of one
// template layout share one plan.
type plan struct {
	vois    []voiPlan     // indexed by VOI id; vacant ids have dtype 0
	stats   []statPlan    // every VOI's statistics, each VOI's in update order
	layouts []hist.Layout // histogram lookups, indexed by statPlan.layout
	// counters are the layouts' counter tables (empty without one), which
	// the typed update paths read inlined.
	counters []lut.Counters

	ndigests int // t-digest statistics, numbered by statPlan.digest

	// modes is which t-digests the plan's template declares
	// tdigest.Accurate (by statPlan.digest), worked out by the first blob
	// made from the template (see digestModes); nil in plans made from
	// bytes.
	modes atomic.Pointer[[]bool]
}

// voiPlan is 16 bytes, so a plan costs at most two bytes per blob byte even
// for a blob of thousands of vacant (8-byte) VOI slots. (Its fields fit 15;
// the padding makes indexing a shift instead of a multiply, measured 0.2 ns
// of a 3 ns SUM update.)
type voiPlan struct {
	dtype voi.DType
	n     uint8 // statistics, at stats[first:first+n], in the C's order (highest slot first)
	nc    uint8 // of which histograms and t-digests: the first nc (their slots are the highest)
	_     uint8
	first uint16 // index of the VOI's first statistic in plan.stats
	state uint16 // offset of the state record's data, 0 without state (offset 0 is the header)

	// The numeric statistics, which the typed update methods handle
	// without going through stats: the offset of the VOI's voistat table
	// and of each statistic's data, 0 where the VOI has no such statistic
	// (offset 0 is the blob header). A VOI has at most one of each: the
	// voistat table is indexed by statistic type.
	statsOff               uint16
	sumOff, maxOff, minOff uint16
}

type statPlan struct {
	stype   voi.SType
	dtype   voi.DType
	statOff uint16 // offset of the voistat entry
	dataOff uint16
	dsz     uint16
	layout  int32 // histograms: index into plan.layouts, -1 for the scan
	counter uint8 // histograms whose layout has a counter table: counter width (4 or 8), else 0
	digest  int16 // t-digests: index of the blob's order cache (Blob.digests)
}

// newPlan derives the plan of a blob that passed Validate.
func newPlan(b []byte) *plan {
	// Count the statistics (not the vacant slots, nor the VOI states,
	// which the plan does not list) and the histograms first, so that
	// nothing is allocated for what the blob does not hold.
	nslots := (abi.StatsDataOff(b) - abi.StatsOff(b)) / abi.StatSize
	nstats, nhist := 0, 0
	for i := range nslots {
		switch abi.ReadStat(b, abi.StatsOff(b)+abi.StatSize*i).SType {
		case voi.Hist:
			nhist++
			nstats++
		case -1, voi.StatVoiState:
		default:
			nstats++
		}
	}
	p := &plan{vois: make([]voiPlan, abi.NVOIs(b)), stats: make([]statPlan, 0, nstats)}
	// Histogram lookups (a Layout and its counter table) get at most one
	// and a half bytes per blob byte: bytes from elsewhere packed with
	// small histograms must not make decoding allocate out of proportion
	// (see TestResourceBounds). Histograms past the budget use the scan; a
	// template's few histograms stay far below it.
	budget := len(b) + len(b)/2
	if nhist > 0 {
		n := min(nhist, budget/layoutSize)
		p.layouts = make([]hist.Layout, 0, n)
		p.counters = make([]lut.Counters, 0, n)
		budget -= n * layoutSize
	}
	for id := range p.vois {
		v := abi.ReadVOI(b, abi.VOIAt(id))
		if v.ID < 0 {
			continue
		}
		vp := &p.vois[id]
		vp.dtype, vp.first, vp.statsOff = voi.DType(v.DType), uint16(len(p.stats)), v.StatsOff
		if v.Flags&voi.FlagReqState != 0 {
			vp.state = abi.ReadStat(b, int(v.StatsOff)).DataOff
		}
		for j := int(v.MaxID); j > 0; j-- {
			off := int(v.StatsOff) + abi.StatSize*j
			s := abi.ReadStat(b, off)
			if s.SType < 0 {
				continue
			}
			sp := statPlan{stype: voi.SType(s.SType), dtype: voi.DType(s.DType), statOff: uint16(off), dataOff: s.DataOff, dsz: s.DSz, layout: -1}
			if sp.stype == voi.Hist && len(p.layouts) < cap(p.layouts) {
				// A histogram's bounds never change after the blob is made
				// (updates, resets and merges touch counts only), so its
				// lookup can be analysed once.
				p.layouts = append(p.layouts, hist.Layout{})
				ct, err := trusted.HistLayout(&p.layouts[len(p.layouts)-1], b[s.DataOff:int(s.DataOff)+int(s.DSz)], sp.dtype, vp.dtype, budget)
				if err != nil {
					p.layouts = p.layouts[:len(p.layouts)-1]
				} else {
					budget -= ct.Bytes()
					sp.layout = int32(len(p.counters))
					p.counters = append(p.counters, ct)
					// A table's counter offsets lie inside the data the
					// layout was made from (this statistic's dsz bytes),
					// which makes the update path's unchecked counting safe.
					if _, ok := ct.Counter(0); ok {
						sp.counter = 8
						if g, _ := hist.GeometryOf(sp.dtype); g.Count32 {
							sp.counter = 4
						}
					}
				}
			}
			if sp.stype == voi.TDgst {
				sp.digest = int16(p.ndigests)
				p.ndigests++
			}
			p.stats = append(p.stats, sp)
			vp.n++
			switch sp.stype {
			case voi.Sum:
				vp.sumOff = sp.dataOff
			case voi.Max:
				vp.maxOff = sp.dataOff
			case voi.Min:
				vp.minOff = sp.dataOff
			default:
				vp.nc++ // slots are visited downwards: these come first
			}
		}
	}
	return p
}

// sameDigests reports whether plans p and q have their t-digests at the
// same voistat entries and data offsets, of the same types and sizes and
// numbered alike, so that a blob's order caches and clustering modes
// (indexed by statPlan.digest) serve either.
func sameDigests(p, q *plan) bool {
	if p.ndigests != q.ndigests {
		return false
	}
	i, j := 0, 0
	for {
		for i < len(p.stats) && p.stats[i].stype != voi.TDgst {
			i++
		}
		for j < len(q.stats) && q.stats[j].stype != voi.TDgst {
			j++
		}
		if i == len(p.stats) || j == len(q.stats) {
			return i == len(p.stats) && j == len(q.stats)
		}
		a, b := &p.stats[i], &q.stats[j]
		if a.dtype != b.dtype || a.statOff != b.statOff || a.dataOff != b.dataOff || a.dsz != b.dsz || a.digest != b.digest {
			return false
		}
		i, j = i+1, j+1
	}
}

// digestStats yields the plan's t-digest statistics with their VOI ids,
// in the order of statPlan.digest (a VOI keeps at most one).
func (p *plan) digestStats() iter.Seq2[int, *statPlan] {
	return func(yield func(int, *statPlan) bool) {
		for id := range p.vois {
			vp := &p.vois[id]
			for i := range int(vp.nc) {
				if sp := &p.stats[int(vp.first)+i]; sp.stype == voi.TDgst && !yield(id, sp) {
					return
				}
			}
		}
	}
}

// bytes is about what the plan takes in memory.
func (p *plan) bytes() int {
	n := int(unsafe.Sizeof(*p)) + int(unsafe.Sizeof(voiPlan{}))*cap(p.vois) +
		int(unsafe.Sizeof(statPlan{}))*cap(p.stats) + layoutSize*cap(p.layouts)
	for i := range p.counters {
		n += p.counters[i].Bytes()
	}
	return n
}

// templateBytes returns a copy of t's bytes, its hash and the plan of
// those bytes, which the template keeps for every blob made from this
// version of it (tpl.Template.AppendDerived): the plan lives and dies with
// the template.
func templateBytes(t *tpl.Template) ([]byte, uint32, *plan) {
	b, hash, p := t.AppendDerived(nil, derivePlan)
	return b, hash, p.(*plan)
}

func derivePlan(tb []byte) any { return newPlan(tb) }
