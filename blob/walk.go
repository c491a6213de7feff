package blob

import (
	"iter"

	"github.com/statsblob/statsblob/internal/abi"
	"github.com/statsblob/statsblob/voi"
)

// IterFlags are the SB_IT_* flags of a walk over a blob: where a callback
// stands in the walk, and which vacant slots to include.
type IterFlags uint32

// The SB_IT_* flags.
const (
	FirstCB   IterFlags = 0x01 // first callback of the walk
	LastCB    IterFlags = 0x02 // last callback of the walk
	FirstVOI  IterFlags = 0x04 // first callback for a VOI (see Walk)
	LastVOI   IterFlags = 0x08 // last VOI (see Walk)
	FirstStat IterFlags = 0x10 // first callback within a VOI
	LastStat  IterFlags = 0x20 // the VOI's highest stat slot
	NullVOI   IterFlags = 0x40 // include vacant VOI slots (Walk argument)
	NullStat  IterFlags = 0x80 // include vacant stat slots (Walk argument)
)

var iterFlagNames = [...]string{"FIRST_CB", "LAST_CB", "FIRST_VOI", "LAST_VOI", "FIRST_VOISTAT", "LAST_VOISTAT", "NULLVOI", "NULLVOISTAT"}

// String returns the names of the set flags joined by '|' in bit order
// ("FIRST_CB|FIRST_VOI"), or "0".
func (f IterFlags) String() string {
	if f == 0 {
		return "0"
	}
	s := ""
	for i, n := range iterFlagNames {
		if f&(1<<i) != 0 {
			if s != "" {
				s += "|"
			}
			s += n
		}
	}
	return s
}

// VOIEntry is a decoded voi[] entry.
type VOIEntry struct {
	ID       int16     // VOI id, -1 for a vacant slot
	DType    voi.DType // the VOI's data type
	MaxStat  int8      // highest stat slot, -1 for a vacant VOI
	StatsOff uint16    // offset of voistat[0]
	Flags    uint16    // voi.FlagReqState
}

// StatEntry is a decoded voistat entry.
type StatEntry struct {
	Type    voi.SType // statistic type, -1 for a vacant slot
	DType   voi.DType // data type of the data
	DataOff uint16
	DSz     uint16
	Errs    uint8
	Flags   uint8 // voi.StatValid
}

// Slot is one step of a walk: a statistic of a VOI, or a vacant VOI slot
// (Stat.Type -1 and StatSlot -1) when the walk includes them.
type Slot struct {
	Flags    IterFlags
	VOISlot  int // index into voi[]
	StatSlot int // index into the VOI's voistat[], -1 for a vacant VOI
	VOI      VOIEntry
	Stat     StatEntry
	Data     []byte // the statistic's data, aliasing the blob; nil if vacant
	statOff  int    // offset of the voistat entry, -1 for a vacant VOI
}

// Walk iterates over the blob's statistics in VOI slot order and, within a
// VOI, stat slot order, with the flags stats_v1_blob_iter computes.
// include may add NullVOI and NullStat to visit vacant slots too. As in the
// C, FirstVOI stays set on every VOI's callbacks unless a vacant VOI was
// reported, and LastVOI is only set once one was.
func (bl *Blob) Walk(include IterFlags) iter.Seq[Slot] {
	return func(yield func(Slot) bool) {
		b := bl.b
		nvois := abi.NVOIs(b)
		flags := FirstCB
		firstVOI := true
		for i := 0; i < nvois; i++ {
			v := abi.ReadVOI(b, abi.VOIAt(i))
			ve := VOIEntry{ID: v.ID, DType: voi.DType(v.DType), MaxStat: v.MaxID, StatsOff: v.StatsOff, Flags: v.Flags}
			flags |= FirstStat
			if firstVOI {
				flags |= FirstVOI
			} else if i == nvois-1 {
				flags |= LastVOI | LastCB
			}
			if v.ID < 0 && include&NullVOI != 0 {
				if !yield(Slot{Flags: flags, VOISlot: i, StatSlot: -1, VOI: ve, Stat: StatEntry{Type: -1}, statOff: -1}) {
					return
				}
				firstVOI = false
				flags &^= FirstCB
			}
			for j := 0; j <= int(v.MaxID); j++ {
				off := int(v.StatsOff) + abi.StatSize*j
				s := abi.ReadStat(b, off)
				if s.SType < 0 && include&NullStat == 0 {
					continue
				}
				if j == int(v.MaxID) {
					flags |= LastStat
					if i == nvois-1 {
						flags |= LastCB
					}
				} else {
					flags &^= LastCB
				}
				sl := Slot{
					Flags: flags, VOISlot: i, StatSlot: j, VOI: ve,
					Stat:    StatEntry{Type: voi.SType(s.SType), DType: voi.DType(s.DType), DataOff: s.DataOff, DSz: s.DSz, Errs: s.Errs, Flags: s.Flags},
					statOff: off,
				}
				if s.SType >= 0 {
					sl.Data = b[s.DataOff : int(s.DataOff)+int(s.DSz)]
				}
				if !yield(sl) {
					return
				}
				flags &^= FirstCB | FirstStat | LastStat
			}
			flags &^= FirstVOI | LastVOI
		}
	}
}

// Visit is what a visitor sees of one statistic (struct sb_visit).
type Visit struct {
	TplHash  uint32
	VOIID    int16
	VOIDType voi.DType
	SType    voi.SType
	DType    voi.DType
	DSz      uint16
	Errs     uint8
	Flags    IterFlags // FirstCB .. LastStat
	Data     []byte    // aliases the blob, read-only
}

// Visits iterates over the blob's statistics (stats_blob_visit), skipping
// vacant slots; breaking out of the loop stops the walk. It includes the
// VOI state records (SType voi.StatVoiState) as the C does.
func (bl *Blob) Visits() iter.Seq[Visit] {
	return func(yield func(Visit) bool) {
		h := bl.TplHash()
		for s := range bl.Walk(0) {
			if !yield(Visit{
				TplHash: h, VOIID: s.VOI.ID, VOIDType: s.VOI.DType,
				SType: s.Stat.Type, DType: s.Stat.DType, DSz: s.Stat.DSz, Errs: s.Stat.Errs,
				Flags: s.Flags & (FirstCB | LastCB | FirstVOI | LastVOI | FirstStat | LastStat),
				Data:  s.Data,
			}) {
				return
			}
		}
	}
}
