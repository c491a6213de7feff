package abi

import "iter"

// IterFlags are the C's SB_IT_* flags of a walk over a blob
// (stats_v1_blob_iter): where a callback stands in the walk, and which
// vacant slots to include. Package blob's Go surface (Blob.Stats) has no
// flags; the renderings (tostr) and the conformance runner need them.
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

// Slot is one step of a walk: a statistic of a VOI, or a vacant VOI slot
// (Stat.SType -1, StatSlot -1, StatOff -1) when the walk includes them.
type Slot struct {
	Flags    IterFlags
	VOISlot  int // index into voi[]
	StatSlot int // index into the VOI's voistat[], -1 for a vacant VOI
	VOI      VOI
	Stat     Stat
	Data     []byte // the statistic's data, aliasing the blob; nil if vacant
	StatOff  int    // offset of the voistat entry, -1 for a vacant VOI
}

// Walk iterates over the statistics of the valid blob b in VOI slot order
// and, within a VOI, stat slot order, with the flags stats_v1_blob_iter
// computes. include may add NullVOI and NullStat to visit vacant slots
// too. As in the C, FirstVOI stays set on every VOI's callbacks unless a
// vacant VOI was reported, and LastVOI is only set once one was.
func Walk(b []byte, include IterFlags) iter.Seq[Slot] {
	return func(yield func(Slot) bool) {
		nvois := NVOIs(b)
		flags := FirstCB
		firstVOI := true
		for i := 0; i < nvois; i++ {
			v := ReadVOI(b, VOIAt(i))
			flags |= FirstStat
			if firstVOI {
				flags |= FirstVOI
			} else if i == nvois-1 {
				flags |= LastVOI | LastCB
			}
			if v.ID < 0 && include&NullVOI != 0 {
				if !yield(Slot{Flags: flags, VOISlot: i, StatSlot: -1, VOI: v, Stat: Stat{SType: -1}, StatOff: -1}) {
					return
				}
				firstVOI = false
				flags &^= FirstCB
			}
			for j := 0; j <= int(v.MaxID); j++ {
				off := int(v.StatsOff) + StatSize*j
				s := ReadStat(b, off)
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
				sl := Slot{Flags: flags, VOISlot: i, StatSlot: j, VOI: v, Stat: s, StatOff: off}
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
