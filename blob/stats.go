package blob

import (
	"encoding/binary"
	"fmt"
	"iter"
	"math"

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
// t-digest or a histogram: the answer of the library, the CLI (statsblob
// quantile) and the exporters. When the VOI keeps MIN and MAX, both were
// updated since the last reset and neither counted an error, they bound
// the answer: a t-digest's estimate below its first centroid and above
// its last reaches out to them (tdigest.QuantileBounded), so q = 0 gives
// MIN and q = 1 MAX; either's estimate (a histogram's, hist.Quantile) is
// clamped to [MIN, MAX]. Without them it is tdigest.Quantile's or hist.Quantile's.
//
// A t-digest of an integer VOI answers an integer: the estimate rounded
// to the nearest one (voi.DType.Round). Its samples are integers,
// so every true quantile is one, and the rounded estimate is never
// further from q in rank than the unrounded one (a value strictly
// between two integers has the rank of the lower one; the nearer integer
// has that rank or a range of ranks that reaches it). Where many samples
// share each integer (10^6 latencies in µs put about 300 on each µs
// around the median) a fraction of a µs is 300 ppm of rank.
//
// Errors wrap voi.ErrEmpty (which wraps voi.ErrNotFound) when it holds no
// samples, voi.ErrInvalid for a q outside [0, 1], voi.ErrTypeMismatch for
// another statistic.
func (s Stat) Quantile(q float64) (x float64, err error) {
	lo, hi, bounded := s.bounds()
	switch {
	case s.DType.IsTDigest() && bounded:
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
	return s.answer(x, lo, hi, bounded), nil
}

// Quantiles appends to out Quantile's answer at each of qs, a t-digest's
// from one read of its centroids (tdigest.Quantiles), for exporters that
// report several quantiles of many digests. Errors are Quantile's; out is
// then returned as it was.
func (s Stat) Quantiles(out, qs []float64) ([]float64, error) {
	lo, hi, bounded := s.bounds()
	start := len(out)
	if s.DType.IsTDigest() {
		blo, bhi := math.NaN(), math.NaN() // (tdigest.Quantile's where unknown)
		if bounded {
			blo, bhi = lo, hi
		}
		var err error
		if out, err = tdigest.Quantiles(s.Data, s.DType, qs, blo, bhi, out); err != nil {
			return out, s.errorf("quantile", "", err)
		}
		for i := start; i < len(out); i++ {
			out[i] = s.answer(out[i], lo, hi, bounded)
		}
		return out, nil
	}
	for _, q := range qs {
		x, err := s.Quantile(q)
		if err != nil {
			return out[:start], err
		}
		out = append(out, x)
	}
	return out, nil
}

// answer is Quantile's answer from a digest's or histogram's estimate x:
// a t-digest's of an integer VOI rounded, and either clamped to [lo, hi]
// (MIN and MAX) when bounded, since a digest's means can lie outside them
// (a C-mode digest finer than its Q VOI holds the VOI's raw fraction
// bits).
func (s Stat) answer(x, lo, hi float64, bounded bool) float64 {
	if s.DType.IsTDigest() {
		x = s.VOIDType.Round(x)
	}
	if bounded {
		x = min(max(x, lo), hi)
	}
	return x
}

// CDF estimates the fraction of a t-digest's or histogram's samples that
// are at most x, the inverse of Quantile: bounded by the VOI's MIN and MAX
// in the same way (0 below MIN, 1 at or above MAX; a t-digest's estimate
// below its first centroid and above its last interpolates from and to
// them, tdigest.CDFBounded), else tdigest.CDF's or hist.CDF's. A t-digest
// of an integer VOI, whose Quantile answers the nearest integer, answers
// its estimate at floor(x) + 1/2: the fraction of samples at most
// floor(x), each integer's samples taken as spread over the half-open
// unit around it. Errors as for Quantile (a NaN x is voi.ErrInvalid).
func (s Stat) CDF(x float64) (float64, error) {
	if !s.DType.IsTDigest() {
		return s.histCDF(x)
	}
	var buf [1]float64
	ps, err := s.digestCDFs(buf[:0], []float64{x})
	if err != nil {
		return 0, err
	}
	return ps[0], nil
}

// CDFs appends to out the CDF of each of xs, which must ascend: CDF's
// answers, a t-digest's in one walk of its centroids (a histogram's bucket
// bounds at the cost of one query). Errors as for CDF, and for an x below
// its predecessor (voi.ErrInvalid); out is then returned as it was.
func (s Stat) CDFs(out, xs []float64) ([]float64, error) {
	if s.DType.IsTDigest() {
		return s.digestCDFs(out, xs)
	}
	start := len(out)
	for i, x := range xs {
		if i > 0 && x < xs[i-1] {
			return out[:start], s.errorf("CDF", "xs not ascending", voi.ErrInvalid)
		}
		p, err := s.histCDF(x)
		if err != nil {
			return out[:start], err
		}
		out = append(out, p)
	}
	return out, nil
}

// digestCDFs is CDFs of a t-digest: the one place its answers are bounded
// by the VOI's MIN and MAX and, for an integer VOI, taken at floor(x) + 1/2.
func (s Stat) digestCDFs(out, xs []float64) ([]float64, error) {
	start, given := len(out), xs
	if s.VOIDType.IsInt() {
		var one [1]float64 // (CDF's one point, without an allocation)
		at := one[:]
		if len(xs) != 1 {
			at = make([]float64, len(xs))
		}
		for i, x := range xs {
			at[i] = math.Floor(x) + 0.5
		}
		xs = at
	}
	lo, hi, bounded := s.bounds()
	if !bounded {
		lo, hi = math.NaN(), math.NaN()
	}
	out, err := tdigest.CDFs(out, s.Data, s.DType, xs, lo, hi)
	if err != nil {
		return out, s.errorf("CDF", "", err)
	}
	if bounded { // (means outside [MIN, MAX]: see Quantile)
		for i, x := range given {
			switch {
			case x < lo:
				out[start+i] = 0
			case x >= hi:
				out[start+i] = 1
			}
		}
	}
	return out, nil
}

// histCDF is CDF of a histogram (or the error of another type).
func (s Stat) histCDF(x float64) (float64, error) {
	if !s.DType.IsHist() {
		return 0, s.errorf("CDF", "", voi.ErrTypeMismatch)
	}
	p, err := hist.CDF(s.Data, s.DType, s.VOIDType, x)
	if err != nil {
		return 0, s.errorf("CDF", "", err)
	}
	if lo, hi, bounded := s.bounds(); bounded {
		switch {
		case x < lo:
			p = 0
		case x >= hi:
			p = 1
		}
	}
	return p, nil
}

// bounds returns the MIN and MAX of the statistic's VOI, read from the
// blob now, if they bound its samples (see knownSamples).
func (s Stat) bounds() (lo, hi float64, ok bool) {
	if s.blob == nil {
		return 0, 0, false
	}
	k := knownSamples(s.blob, s.VOI)
	return k.Lo, k.Hi, !math.IsNaN(k.Lo)
}

// errorf wraps err with the operation and the statistic.
func (s Stat) errorf(op, reason string, err error) error {
	if reason != "" {
		return fmt.Errorf("blob: %s of VOI %d %v: %s: %w", op, s.VOI, s.Type, reason, err)
	}
	return fmt.Errorf("blob: %s of VOI %d %v: %w", op, s.VOI, s.Type, err)
}

// Quantile estimates the q-quantile (0 <= q <= 1) of VOI id's samples from
// its t-digest or, if it keeps none, its histogram, as Stat.Quantile does:
// bounded by the VOI's MIN and MAX when it keeps them. Use Fetch and
// Stat.Quantile to choose the statistic.
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
	return s.Quantile(q)
}

// CDF estimates the fraction of VOI id's samples that are at most x, from
// its t-digest or, if it keeps none, its histogram, as Stat.CDF does.
// Errors as for Quantile (a NaN x wraps voi.ErrInvalid).
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
