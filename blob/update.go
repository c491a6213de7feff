package blob

import (
	"encoding/binary"

	"github.com/statsblob/statsblob/hist"
	"github.com/statsblob/statsblob/internal/abi"
	"github.com/statsblob/statsblob/qmath"
	"github.com/statsblob/statsblob/tdigest"
	"github.com/statsblob/statsblob/voi"
)

// Updates feed one value of a VOI to every statistic the VOI keeps, from the
// highest stat slot down, as stats_v1_voi_update does.
//
// The method must match the VOI's data type (UpdateU64 for an INT_U64 VOI,
// UpdateULong for INT_ULONG, ...): a VOI id that is negative, vacant or
// beyond the blob, or a data type that differs from the VOI's, gives
// voi.ErrInvalid and changes nothing. The Rel variants add the value to the
// VOI's previous value first; they need a VOI added with voi.FlagRelUpdate.
//
// A statistic that fails (a Q overflow, a t-digest that cannot place the
// sample) counts the error in its voistat (saturating at 255); the other
// statistics still update and the call returns the error, as the C does.
// Errors are returned unwrapped (voi sentinels), so the call allocates
// nothing.

// UpdateS32 updates an INT_S32 VOI with v.
func (bl *Blob) UpdateS32(id int32, v int32) error { return updateInt32(bl, id, voi.IntS32, v, false) }

// UpdateU32 updates an INT_U32 VOI with v.
func (bl *Blob) UpdateU32(id int32, v uint32) error { return updateInt32(bl, id, voi.IntU32, v, false) }

// UpdateS64 updates an INT_S64 VOI with v.
func (bl *Blob) UpdateS64(id int32, v int64) error { return updateInt64(bl, id, voi.IntS64, v, false) }

// UpdateU64 updates an INT_U64 VOI with v.
func (bl *Blob) UpdateU64(id int32, v uint64) error { return updateInt64(bl, id, voi.IntU64, v, false) }

// UpdateSLong updates an INT_SLONG VOI with v.
func (bl *Blob) UpdateSLong(id int32, v int64) error {
	return updateInt64(bl, id, voi.IntSLong, v, false)
}

// UpdateULong updates an INT_ULONG VOI with v.
func (bl *Blob) UpdateULong(id int32, v uint64) error {
	return updateInt64(bl, id, voi.IntULong, v, false)
}

// UpdateQ updates a Q VOI with q; q's kind selects the VOI data type
// (qmath.S64 for Q_S64, ...).
func (bl *Blob) UpdateQ(id int32, q qmath.Q) error { return updateQ(bl, id, qDType(q.Kind), q, false) }

// UpdateRelS32 adds v to an INT_S32 VOI's previous value and updates with
// the sum.
func (bl *Blob) UpdateRelS32(id int32, v int32) error {
	return updateInt32(bl, id, voi.IntS32, v, true)
}

// UpdateRelU32 is UpdateRelS32 for an INT_U32 VOI.
func (bl *Blob) UpdateRelU32(id int32, v uint32) error {
	return updateInt32(bl, id, voi.IntU32, v, true)
}

// UpdateRelS64 is UpdateRelS32 for an INT_S64 VOI.
func (bl *Blob) UpdateRelS64(id int32, v int64) error {
	return updateInt64(bl, id, voi.IntS64, v, true)
}

// UpdateRelU64 is UpdateRelS32 for an INT_U64 VOI.
func (bl *Blob) UpdateRelU64(id int32, v uint64) error {
	return updateInt64(bl, id, voi.IntU64, v, true)
}

// UpdateRelSLong is UpdateRelS32 for an INT_SLONG VOI.
func (bl *Blob) UpdateRelSLong(id int32, v int64) error {
	return updateInt64(bl, id, voi.IntSLong, v, true)
}

// UpdateRelULong is UpdateRelS32 for an INT_ULONG VOI.
func (bl *Blob) UpdateRelULong(id int32, v uint64) error {
	return updateInt64(bl, id, voi.IntULong, v, true)
}

// UpdateRelQ is UpdateRelS32 for a Q VOI.
func (bl *Blob) UpdateRelQ(id int32, q qmath.Q) error {
	return updateQ(bl, id, qDType(q.Kind), q, true)
}

// Update updates VOI id with a value of data type dt given as its bit
// pattern (the low 32 bits for 32-bit types), absolutely or relatively.
// It is the untyped form of the typed methods; a dt other than the VOI's
// gives voi.ErrInvalid.
func (bl *Blob) Update(id int32, dt voi.DType, bits uint64, rel bool) error {
	switch dt {
	case voi.IntS32:
		return updateInt32(bl, id, dt, int32(bits), rel)
	case voi.IntU32:
		return updateInt32(bl, id, dt, uint32(bits), rel)
	case voi.IntS64, voi.IntSLong:
		return updateInt64(bl, id, dt, int64(bits), rel)
	case voi.IntU64, voi.IntULong:
		return updateInt64(bl, id, dt, bits, rel)
	case voi.QS32, voi.QU32, voi.QS64, voi.QU64:
		return updateQ(bl, id, dt, voi.AsQ(dt, bits), rel)
	}
	return voi.ErrInvalid
}

func qDType(k qmath.Kind) voi.DType {
	switch k {
	case qmath.S32:
		return voi.QS32
	case qmath.U32:
		return voi.QU32
	case qmath.S64:
		return voi.QS64
	}
	return voi.QU64
}

// voiRef locates a VOI's statistics for one update.
type voiRef struct {
	so    int // offset of voistat[0]
	maxID int // highest stat slot
	state int // offset of the VOI state's data, -1 without state
}

// locate checks that VOI id exists with data type dt (and keeps state if
// rel) and returns where its statistics are. The voi[] entry is read as
// one little-endian word: id (bits 0-15), dtype (16-23), voistatmaxid
// (24-31), stats_off (32-47), flags (48-63).
func (bl *Blob) locate(id int32, dt voi.DType, rel bool) (voiRef, error) {
	b := bl.b
	vo := abi.HeaderSize + abi.VOISize*int(id)
	if id < 0 || len(b) < abi.HeaderSize || vo >= int(binary.LittleEndian.Uint16(b[abi.OffStatsOff:])) {
		return voiRef{}, voi.ErrInvalid
	}
	e := binary.LittleEndian.Uint64(b[vo:])
	if uint8(e>>16) != uint8(dt) || int16(e) < 0 || rel && e>>48&voi.FlagReqState == 0 {
		return voiRef{}, voi.ErrInvalid
	}
	v := voiRef{so: int(uint16(e >> 32)), maxID: int(int8(e >> 24)), state: -1}
	if e>>48&voi.FlagReqState != 0 {
		v.state = int(binary.LittleEndian.Uint16(b[v.so+abi.StatOffDataOff:]))
	}
	return v, nil
}

// statData returns the data of the voistat entry se.
func statData(b, se []byte) []byte {
	off := int(binary.LittleEndian.Uint16(se[abi.StatOffDataOff:]))
	return b[off : off+int(binary.LittleEndian.Uint16(se[abi.StatOffDSz:]))]
}

// compound updates a histogram or t-digest statistic and records the
// outcome in its voistat.
func compound(bl *Blob, off int, voiDT voi.DType, bits uint64) error {
	b := bl.b
	se := b[off : off+abi.StatSize]
	d := statData(b, se)
	sdt := voi.DType(se[abi.StatOffDType])
	var err error
	switch voi.SType(se[abi.StatOffSType]) {
	case voi.Hist:
		err = hist.Update(d, sdt, voiDT, bits)
	case voi.TDgst:
		err = tdigest.Update(d, sdt, voiDT, bits, bl.Env())
	}
	finish(se, err)
	return err
}

// finish records a statistic's outcome: the updated flag on success, a
// saturating error count otherwise.
func finish(se []byte, err error) {
	if err == nil {
		se[abi.StatOffFlags] |= voi.StatValid
	} else if se[abi.StatOffErrs] < abi.MaxErrs {
		se[abi.StatOffErrs]++
	}
}

// The stat loops below read a voistat's fields one by one rather than as
// one word: updates store to the flags byte, and a wider load overlapping
// that recent store stalls the CPU's store forwarding (measured: 6.6 ns
// against 4.7 ns per update). For the same reason the flag is only stored
// when it changes.

func updateInt32[T int32 | uint32](bl *Blob, id int32, dt voi.DType, x T, rel bool) error {
	v, err := bl.locate(id, dt, rel)
	if err != nil {
		return err
	}
	b := bl.b
	if rel {
		x += T(binary.LittleEndian.Uint32(b[v.state:]))
	}
	for i := v.maxID; i > 0; i-- {
		off := v.so + abi.StatSize*i
		se := b[off : off+abi.StatSize : off+abi.StatSize]
		st := voi.SType(se[abi.StatOffSType])
		if st < 0 {
			continue
		}
		if st > voi.Min {
			if serr := compound(bl, off, dt, uint64(uint32(x))); serr != nil {
				err = serr
			}
			continue
		}
		d := b[binary.LittleEndian.Uint16(se[abi.StatOffDataOff:]):]
		cur := T(binary.LittleEndian.Uint32(d))
		switch {
		case st == voi.Sum:
			binary.LittleEndian.PutUint32(d, uint32(cur+x))
		case st == voi.Max && cur < x, st == voi.Min && cur > x:
			binary.LittleEndian.PutUint32(d, uint32(x))
		default:
			continue
		}
		if se[abi.StatOffFlags]&voi.StatValid == 0 {
			se[abi.StatOffFlags] |= voi.StatValid
		}
	}
	if v.state >= 0 {
		binary.LittleEndian.PutUint32(b[v.state:], uint32(x))
	}
	return err
}

func updateInt64[T int64 | uint64](bl *Blob, id int32, dt voi.DType, x T, rel bool) error {
	v, err := bl.locate(id, dt, rel)
	if err != nil {
		return err
	}
	b := bl.b
	if rel {
		x += T(binary.LittleEndian.Uint64(b[v.state:]))
	}
	for i := v.maxID; i > 0; i-- {
		off := v.so + abi.StatSize*i
		se := b[off : off+abi.StatSize : off+abi.StatSize]
		st := voi.SType(se[abi.StatOffSType])
		if st < 0 {
			continue
		}
		if st > voi.Min {
			if serr := compound(bl, off, dt, uint64(x)); serr != nil {
				err = serr
			}
			continue
		}
		d := b[binary.LittleEndian.Uint16(se[abi.StatOffDataOff:]):]
		cur := T(binary.LittleEndian.Uint64(d))
		switch {
		case st == voi.Sum:
			binary.LittleEndian.PutUint64(d, uint64(cur+x))
		case st == voi.Max && cur < x, st == voi.Min && cur > x:
			binary.LittleEndian.PutUint64(d, uint64(x))
		default:
			continue
		}
		if se[abi.StatOffFlags]&voi.StatValid == 0 {
			se[abi.StatOffFlags] |= voi.StatValid
		}
	}
	if v.state >= 0 {
		binary.LittleEndian.PutUint64(b[v.state:], uint64(x))
	}
	return err
}

// loadQ reads a Q of kind k from d; storeQ writes one.
func loadQ(k qmath.Kind, d []byte) qmath.Q {
	if k.Bits() == 32 {
		return qmath.Q{Raw: uint64(binary.LittleEndian.Uint32(d)), Kind: k}
	}
	return qmath.Q{Raw: binary.LittleEndian.Uint64(d), Kind: k}
}

func storeQ(d []byte, q qmath.Q) {
	if q.Kind.Bits() == 32 {
		binary.LittleEndian.PutUint32(d, uint32(q.Raw))
	} else {
		binary.LittleEndian.PutUint64(d, q.Raw)
	}
}

// updateQ updates the statistics of a Q VOI through qmath, with the C's
// overflow and precision errors.
func updateQ(bl *Blob, id int32, dt voi.DType, x qmath.Q, rel bool) error {
	v, err := bl.locate(id, dt, rel)
	if err != nil {
		return err
	}
	b := bl.b
	if rel {
		sum, err := x.AddQ(loadQ(x.Kind, b[v.state:]))
		if err != nil {
			return err
		}
		x = sum
	}
	for i := v.maxID; i > 0; i-- {
		off := v.so + abi.StatSize*i
		se := b[off : off+abi.StatSize]
		st := voi.SType(se[abi.StatOffSType])
		if st < 0 {
			continue
		}
		var serr error
		switch st {
		case voi.Sum:
			d := statData(b, se)
			var sum qmath.Q
			if sum, serr = loadQ(x.Kind, d).AddQ(x); serr == nil {
				storeQ(d, sum)
			}
		case voi.Max, voi.Min:
			d := statData(b, se)
			cur := loadQ(x.Kind, d)
			if st == voi.Max && !cur.LT(x) || st == voi.Min && !cur.GT(x) {
				continue
			}
			var nv qmath.Q
			if nv, serr = cur.CpyValQ(x); serr == nil {
				storeQ(d, nv)
			}
		default:
			if serr = compound(bl, off, dt, x.Raw); serr != nil {
				err = serr
			}
			continue
		}
		if serr != nil {
			err = serr
		}
		finish(se, serr)
	}
	if v.state >= 0 {
		// The C assigns the result of storing the state to its return
		// value, replacing (even with success) any statistic's error.
		var prev qmath.Q
		if prev, err = loadQ(x.Kind, b[v.state:]).CpyValQ(x); err == nil {
			storeQ(b[v.state:], prev)
		}
	}
	return err
}
