package blob

import (
	"encoding/binary"

	"github.com/statsblob/statsblob/internal/abi"
	"github.com/statsblob/statsblob/voi"
)

// Stat is a view of one statistic of a blob: which VOI and statistic it
// is, its data and its status (what stats_voistat_fetch_dptr returns, with
// the VOI beside it). Fetch and Stats return it; its methods read the
// value, the count and estimates. A histogram's or t-digest's Stat from
// Fetch or Stats also sees the blob's bytes, so that Quantile and CDF are
// bounded by the VOI's MIN and MAX as they are when updated; a Stat built
// by hand answers without them.
type Stat struct {
	VOI      int32     // the VOI's id
	VOIDType voi.DType // the VOI's data type
	Type     voi.SType // voi.Sum, voi.Max, voi.Min, voi.Hist, voi.TDgst (voi.StatVoiState: the VOI's previous value; -1: a vacant slot)
	DType    voi.DType // the data type of the statistic's data
	Offset   int       // byte offset of the data in the blob
	Data     []byte    // the data; aliases the blob, read-only, changes with updates
	Errs     uint8     // errors counted by updates, saturating at 255
	Valid    bool      // updated since the last reset (VS_VSDVALID)

	// blob is the blob's bytes, for a histogram or t-digest: Quantile and
	// CDF read the VOI's MIN and MAX from it.
	blob []byte
}

// Fetch returns statistic st of VOI id (stats_voistat_fetch_dptr). A slot
// below the VOI's highest statistic that holds none is not an error: it
// returns DType voi.VoiState and no data, as the C does. Errors are
// *VOIError wrapping voi.ErrInvalid: a negative id or one beyond the blob,
// a vacant VOI, or a statistic type outside 0..the VOI's highest slot.
// Fetch allocates nothing unless it fails.
func (bl *Blob) Fetch(id int32, st voi.SType) (Stat, error) {
	bl.settle()
	b := bl.b
	vo := abi.VOIAt(int(id))
	if id < 0 || vo >= abi.StatsOff(b) {
		return Stat{}, bl.fetchError(id, st, 0, voi.ErrInvalid)
	}
	v := abi.ReadVOI(b, vo)
	if st < 0 || int(st) > int(v.MaxID) {
		return Stat{}, bl.fetchError(id, st, 0, voi.ErrInvalid)
	}
	return statAt(b, id, v, int(st)), nil
}

// statAt is the view of stat slot j of VOI id, whose entry is v.
func statAt(b []byte, id int32, v abi.VOI, j int) Stat {
	s := abi.ReadStat(b, int(v.StatsOff)+abi.StatSize*j)
	st := Stat{VOI: id, VOIDType: v.DType, Type: s.SType, DType: s.DType, Offset: int(s.DataOff)}
	if s.SType >= 0 {
		st.Data = b[s.DataOff : int(s.DataOff)+int(s.DSz)]
		st.Errs = s.Errs
		st.Valid = s.Flags&voi.StatValid != 0
		if s.SType == voi.Hist || s.SType == voi.TDgst {
			st.blob = b
		}
	}
	return st
}

func (bl *Blob) fetchTyped(id int32, st voi.SType, want voi.DType) ([]byte, error) {
	s, err := bl.Fetch(id, st)
	if err != nil {
		return nil, err
	}
	if s.DType != want || len(s.Data) < want.Size() {
		return nil, bl.fetchError(id, st, want, voi.ErrTypeMismatch)
	}
	return s.Data, nil
}

// FetchS32 returns an INT_S32 statistic's value (stats_voistat_fetch_s32).
// The errors are Fetch's, and a *VOIError wrapping voi.ErrTypeMismatch (as
// the C returns EFTYPE) if the VOI keeps no such statistic or keeps it with
// another data type.
func (bl *Blob) FetchS32(id int32, st voi.SType) (int32, error) {
	d, err := bl.fetchTyped(id, st, voi.IntS32)
	if err != nil {
		return 0, err
	}
	return int32(binary.LittleEndian.Uint32(d)), nil
}

// FetchU32 is FetchS32 for INT_U32.
func (bl *Blob) FetchU32(id int32, st voi.SType) (uint32, error) {
	d, err := bl.fetchTyped(id, st, voi.IntU32)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(d), nil
}

// FetchS64 is FetchS32 for INT_S64.
func (bl *Blob) FetchS64(id int32, st voi.SType) (int64, error) {
	d, err := bl.fetchTyped(id, st, voi.IntS64)
	if err != nil {
		return 0, err
	}
	return int64(binary.LittleEndian.Uint64(d)), nil
}

// FetchU64 is FetchS32 for INT_U64.
func (bl *Blob) FetchU64(id int32, st voi.SType) (uint64, error) {
	d, err := bl.fetchTyped(id, st, voi.IntU64)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(d), nil
}

// FetchSLong is FetchS32 for INT_SLONG.
func (bl *Blob) FetchSLong(id int32, st voi.SType) (int64, error) {
	d, err := bl.fetchTyped(id, st, voi.IntSLong)
	if err != nil {
		return 0, err
	}
	return int64(binary.LittleEndian.Uint64(d)), nil
}

// FetchULong is FetchS32 for INT_ULONG.
func (bl *Blob) FetchULong(id int32, st voi.SType) (uint64, error) {
	d, err := bl.fetchTyped(id, st, voi.IntULong)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(d), nil
}
