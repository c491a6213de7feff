package blob

import (
	"encoding/binary"
	"encoding/json"
	"strconv"
	"time"

	"github.com/statsblob/statsblob/hist"
	"github.com/statsblob/statsblob/tdigest"
	"github.com/statsblob/statsblob/voi"
)

// MarshalJSON returns the blob's structure and values as JSON, so that
// json.Marshal of a *Blob (or of a struct holding one) says what the blob
// holds instead of "{}":
//
//	{"tplhash": 2933984922, "created": "2026-…Z", "lastreset": "2026-…Z",
//	 "vois": [{"id": 0, "dtype": "INT_U64", "stats": [
//	   {"type": "SUM", "dtype": "INT_U64", "value": 1448},
//	   {"type": "HIST", "dtype": "CRHIST32", "oob": 0, "buckets": [{"lb": 0, "ub": 50, "count": 1}, …]},
//	   {"type": "TDGST", "dtype": "TDGSTCLUST32", "count": 3, "centroids": [{"mean": 95, "count": 1}, …]}]}]}
//
// VOIs are in id order and statistics in type order, as Stats yields them;
// "errs" appears when a statistic counted errors. Integers are exact, Q
// values and t-digest means are float64 values. A blob does not know its
// VOIs' names (its template does): for a rendering with names, and for the
// C's JSON form, use package tostr (tostr.JSONMarshaler).
func (bl *Blob) MarshalJSON() ([]byte, error) {
	return bl.AppendJSON(nil), nil
}

// AppendJSON appends MarshalJSON's form to dst.
func (bl *Blob) AppendJSON(dst []byte) []byte {
	h := bl.Header()
	dst = append(dst, `{"tplhash":`...)
	dst = strconv.AppendUint(dst, uint64(h.TplHash), 10)
	dst = append(dst, `,"created":`...)
	dst = appendTime(dst, h.Created)
	dst = append(dst, `,"lastreset":`...)
	dst = appendTime(dst, h.LastReset)
	dst = append(dst, `,"vois":[`...)
	cur := int32(-1)
	for id, s := range bl.Stats() {
		if id != cur {
			if cur >= 0 {
				dst = append(dst, "]},"...)
			}
			cur = id
			dst = append(dst, `{"id":`...)
			dst = strconv.AppendInt(dst, int64(id), 10)
			dst = append(dst, `,"dtype":"`...)
			dst = append(dst, s.VOIDType.String()...)
			dst = append(dst, `","stats":[`...)
		} else {
			dst = append(dst, ',')
		}
		dst = s.appendJSON(dst)
	}
	if cur >= 0 {
		dst = append(dst, "]}"...)
	}
	return append(dst, "]}"...)
}

func appendTime(dst []byte, t time.Time) []byte {
	b, _ := json.Marshal(t.UTC()) // cannot fail for a time from a blob (years 1970..2262)
	return append(dst, b...)
}

// appendNumber appends the value of a numeric type dt held in bits.
func appendNumber(dst []byte, dt voi.DType, bits uint64) []byte {
	switch {
	case dt.IsQ():
		return strconv.AppendFloat(dst, hist.Float64(dt, bits), 'g', -1, 64)
	case dt == voi.IntS32:
		return strconv.AppendInt(dst, int64(int32(bits)), 10)
	case dt == voi.IntU32:
		return strconv.AppendUint(dst, uint64(uint32(bits)), 10)
	case dt.Signed():
		return strconv.AppendInt(dst, int64(bits), 10)
	}
	return strconv.AppendUint(dst, bits, 10)
}

func (s Stat) appendJSON(dst []byte) []byte {
	dst = append(dst, `{"type":"`...)
	dst = append(dst, s.Type.String()...)
	dst = append(dst, `","dtype":"`...)
	dst = append(dst, s.DType.String()...)
	dst = append(dst, '"')
	if s.Errs > 0 {
		dst = append(dst, `,"errs":`...)
		dst = strconv.AppendUint(dst, uint64(s.Errs), 10)
	}
	switch {
	case s.DType.IsNumeric() && len(s.Data) >= s.DType.Size():
		var bits uint64
		if s.DType.Is32() {
			bits = uint64(binary.LittleEndian.Uint32(s.Data))
		} else {
			bits = binary.LittleEndian.Uint64(s.Data)
		}
		dst = append(dst, `,"value":`...)
		dst = appendNumber(dst, s.DType, bits)
	case s.DType.IsHist():
		dst = append(dst, `,"oob":`...)
		dst = strconv.AppendUint(dst, hist.OOB(s.Data, s.DType), 10)
		dst = append(dst, `,"buckets":[`...)
		for i, b := range hist.Buckets(s.Data, s.DType, s.VOIDType) {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"lb":`...)
			dst = appendNumber(dst, s.VOIDType, b.LB)
			dst = append(dst, `,"ub":`...)
			dst = appendNumber(dst, s.VOIDType, b.UB)
			dst = append(dst, `,"count":`...)
			dst = strconv.AppendUint(dst, b.Cnt, 10)
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	case s.DType.IsTDigest():
		n, _ := tdigest.Count(s.Data, s.DType) // a blob's digests are valid
		dst = append(dst, `,"count":`...)
		dst = strconv.AppendUint(dst, n, 10)
		dst = append(dst, `,"centroids":[`...)
		first := true
		for c := range tdigest.Centroids(s.Data, s.DType) {
			if !first {
				dst = append(dst, ',')
			}
			first = false
			dst = append(dst, `{"mean":`...)
			dst = strconv.AppendFloat(dst, c.Mu.Float64(), 'g', -1, 64)
			dst = append(dst, `,"count":`...)
			dst = strconv.AppendUint(dst, c.Count, 10)
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	return append(dst, '}')
}

// MarshalJSON returns the JSON form (see Blob.MarshalJSON) of a snapshot
// of s that leaves the shards as they are, so that json.Marshal of a
// *Sharded says what it holds. Snapshot's merge errors (overflows, counted
// in the snapshot) are returned.
func (s *Sharded) MarshalJSON() ([]byte, error) {
	snap, err := s.Snapshot(false)
	if err != nil {
		return nil, err
	}
	return snap.AppendJSON(nil), nil
}
