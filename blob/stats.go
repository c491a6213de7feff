package blob

import (
	"encoding/binary"
	"fmt"
	"iter"

	"github.com/statsblob/statsblob/hist"
	"github.com/statsblob/statsblob/internal/abi"
	"github.com/statsblob/statsblob/tdigest"
	"github.com/statsblob/statsblob/voi"
)

// VOIs iterates over the blob's VOIs in id order, yielding each one's id
// and data type. Ids the template left out are skipped.
func (bl *Blob) VOIs() iter.Seq2[int32, voi.DType] {
	return func(yield func(int32, voi.DType) bool) {
		b := bl.b
		for i := range abi.NVOIs(b) {
			v := abi.ReadVOI(b, abi.VOIAt(i))
			if v.ID >= 0 && !yield(int32(i), v.DType) {
				return
			}
		}
	}
}

// Stats iterates over the blob's statistics, VOIs in id order and each
// VOI's statistics in type order (SUM, MAX, MIN, HIST, TDGST), yielding
// the VOI id and the statistic. The previous value a VOI keeps for
// relative updates is not a statistic and is skipped.
func (bl *Blob) Stats() iter.Seq2[int32, Stat] {
	return func(yield func(int32, Stat) bool) {
		bl.settle()
		b := bl.b
		for i := range abi.NVOIs(b) {
			v := abi.ReadVOI(b, abi.VOIAt(i))
			if v.ID < 0 {
				continue
			}
			for j := int(voi.Sum); j <= int(v.MaxID); j++ {
				s := statAt(b, int32(i), v, j)
				if s.Type >= 0 && !yield(int32(i), s) {
					return
				}
			}
		}
	}
}

// Value returns the value of a SUM, MAX or MIN statistic as a float64: an
// integer (exact up to 2^53) or a Q number's value. A histogram or
// t-digest gives voi.ErrTypeMismatch.
func (s Stat) Value() (float64, error) {
	var bits uint64
	switch {
	case !s.DType.IsNumeric() || len(s.Data) < s.DType.Size():
		return 0, s.errorf("value", "it is not a number", voi.ErrTypeMismatch)
	case s.DType.Is32():
		bits = uint64(binary.LittleEndian.Uint32(s.Data))
	default:
		bits = binary.LittleEndian.Uint64(s.Data)
	}
	return hist.Float64(s.DType, bits), nil
}

// Count returns the number of samples a histogram (oob excluded) or a
// t-digest holds; any other statistic gives voi.ErrTypeMismatch.
func (s Stat) Count() (uint64, error) {
	switch {
	case s.DType.IsHist():
		return hist.Count(s.Data, s.DType), nil
	case s.DType.IsTDigest():
		n, err := tdigest.Count(s.Data, s.DType)
		if err != nil {
			return 0, s.errorf("count", "", err)
		}
		return n, nil
	}
	return 0, s.errorf("count", "it is neither a histogram nor a t-digest", voi.ErrTypeMismatch)
}

// Quantile estimates the q-quantile (0 <= q <= 1) of the samples of a
// t-digest (tdigest.Quantile) or a histogram (hist.Quantile). Errors wrap
// voi.ErrEmpty (which wraps voi.ErrNotFound) when it holds no samples,
// voi.ErrInvalid for a q outside [0, 1], voi.ErrTypeMismatch for another
// statistic.
func (s Stat) Quantile(q float64) (float64, error) {
	return s.quantile(q, nil)
}

// quantile is Quantile, with the VOI's MIN and MAX for a t-digest when
// bounds is not nil and they hold samples.
func (s Stat) quantile(q float64, bounds *[2]Stat) (x float64, err error) {
	switch {
	case s.DType.IsTDigest() && bounds != nil:
		lo, _ := bounds[0].Value()
		hi, _ := bounds[1].Value()
		x, err = tdigest.QuantileBounded(s.Data, s.DType, q, lo, hi)
	case s.DType.IsTDigest():
		x, err = tdigest.Quantile(s.Data, s.DType, q)
	case s.DType.IsHist():
		x, err = hist.Quantile(s.Data, s.DType, s.VOIDType, q)
	default:
		err = voi.ErrTypeMismatch
	}
	if err != nil {
		return 0, s.errorf("quantile", "", err)
	}
	return x, nil
}

// CDF estimates the fraction of a t-digest's (tdigest.CDF) or histogram's
// (hist.CDF) samples that are at most x. Errors as for Quantile (a NaN x is
// voi.ErrInvalid).
func (s Stat) CDF(x float64) (float64, error) {
	var p float64
	var err error
	switch {
	case s.DType.IsTDigest():
		p, err = tdigest.CDF(s.Data, s.DType, x)
	case s.DType.IsHist():
		p, err = hist.CDF(s.Data, s.DType, s.VOIDType, x)
	default:
		err = voi.ErrTypeMismatch
	}
	if err != nil {
		return 0, s.errorf("CDF", "", err)
	}
	return p, nil
}

// errorf wraps err with the operation and the statistic.
func (s Stat) errorf(op, reason string, err error) error {
	if reason != "" {
		return fmt.Errorf("blob: %s of VOI %d %v: %s: %w", op, s.VOI, s.Type, reason, err)
	}
	return fmt.Errorf("blob: %s of VOI %d %v: %w", op, s.VOI, s.Type, err)
}

// Quantile estimates the q-quantile (0 <= q <= 1) of VOI id's samples from
// its t-digest or, if it keeps none, its histogram. A t-digest's estimate
// below its first and above its last centroid reaches towards the VOI's
// MIN and MAX when the VOI keeps both and they were updated since the last
// reset (tdigest.QuantileBounded). Use Fetch and Stat.Quantile to choose
// the statistic.
//
// Errors wrap voi.ErrNotFound for an id that names no VOI or a VOI with
// neither statistic, voi.ErrEmpty (which wraps voi.ErrNotFound) when the
// statistic holds no samples, and voi.ErrInvalid for a q outside [0, 1];
// they name the VOI.
func (bl *Blob) Quantile(id int32, q float64) (float64, error) {
	s, err := bl.distribution(id, "quantile")
	if err != nil {
		return 0, err
	}
	if s.Type == voi.TDgst {
		if bounds, ok := bl.minMax(id); ok {
			return s.quantile(q, &bounds)
		}
	}
	return s.Quantile(q)
}

// CDF estimates the fraction of VOI id's samples that are at most x, from
// its t-digest or, if it keeps none, its histogram. Errors as for
// Quantile (a NaN x wraps voi.ErrInvalid).
func (bl *Blob) CDF(id int32, x float64) (float64, error) {
	s, err := bl.distribution(id, "CDF")
	if err != nil {
		return 0, err
	}
	return s.CDF(x)
}

// distribution returns VOI id's t-digest, or else its histogram.
func (bl *Blob) distribution(id int32, op string) (Stat, error) {
	bl.settle() // accurate-mode t-digests' buffered samples (accurate.go)
	b := bl.b
	if id < 0 || int(id) >= abi.NVOIs(b) {
		return Stat{}, fmt.Errorf("blob: %s of VOI %d: no such VOI: %w", op, id, voi.ErrNotFound)
	}
	v := abi.ReadVOI(b, abi.VOIAt(int(id)))
	if v.ID < 0 {
		return Stat{}, fmt.Errorf("blob: %s of VOI %d: no such VOI: %w", op, id, voi.ErrNotFound)
	}
	for _, st := range [...]voi.SType{voi.TDgst, voi.Hist} {
		if int(st) <= int(v.MaxID) {
			if s := statAt(b, id, v, int(st)); s.Type == st {
				return s, nil
			}
		}
	}
	return Stat{}, fmt.Errorf("blob: %s of VOI %d: it keeps neither a t-digest nor a histogram: %w", op, id, voi.ErrNotFound)
}

// minMax returns VOI id's MIN and MAX if it keeps both and both were
// updated since the last reset.
func (bl *Blob) minMax(id int32) (mm [2]Stat, ok bool) {
	v := abi.ReadVOI(bl.b, abi.VOIAt(int(id)))
	if int(v.MaxID) < int(voi.Min) {
		return mm, false
	}
	mm[0], mm[1] = statAt(bl.b, id, v, int(voi.Min)), statAt(bl.b, id, v, int(voi.Max))
	return mm, mm[0].Type == voi.Min && mm[0].Valid && mm[1].Type == voi.Max && mm[1].Valid
}
