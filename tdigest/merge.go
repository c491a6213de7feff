package tdigest

import (
	"math"
	"math/bits"

	"github.com/statsblob/statsblob/voi"
)

// Merge adds the samples of digest src to digest dst, both of type dt
// (beyond the C, which has no merge): every centroid of src, its mean
// weighted by its count, goes through the path an update takes
// (stats_v1_vsd_tdgst_add with that weight), so dst stays a digest of its
// own size and compresses when it must. The centroids are added in a
// random order drawn from env.Rand the way the C's compression draws its
// permutation (adding them in mean order would bias the clustering), so the
// result is deterministic for a given state of env.Rand. A mean is carried
// into dst's precision exactly, or truncated toward zero if dst has fewer
// fractional bits.
//
// Errors: those of Validate for src, the type and size errors of Update for
// dst, and the errors of the adds. Merge adds every centroid it can and
// returns the first error; dst is then merged partially. src and dst may
// be the same digest (its samples are then counted twice).
func Merge(dst, src []byte, dt voi.DType, env *Env) error {
	if err := Validate(src, dt); err != nil {
		return err
	}
	var d digest
	if err := d.init(dst, dt, env); err != nil {
		return err
	}
	if d.maxn == 0 {
		return errNoNodes
	}
	ctrl := d.sampleCtrl()
	var s digest
	_ = s.init(src, dt, nil)
	xs := make([]uint64, 0, s.cur())
	ws := make([]uint64, 0, s.cur())
	var firstErr error
	for c, n := s.extreme(lLeft), 0; c != null && n < s.cur(); c, n = s.next(c), n+1 {
		sc, sv := s.muS64(c)
		nf := nfS64(sc)
		if s.is32 {
			nf = nfS32(sc)
		}
		x, errno := rescale(sv, nf, ctrl)
		w := uint64(s.cnt(c))
		if s.is32 {
			w = uint64(uint32(w))
		}
		if errno != eOK {
			if firstErr == nil {
				firstErr = errorOf(errno)
			}
			continue
		}
		xs, ws = append(xs, x), append(ws, w)
	}
	if err := d.addAll(xs, ws); firstErr == nil {
		firstErr = err
	}
	return firstErr
}

// MergeWeighted adds weighted samples to digest data of type dt through the
// update path, as Merge does: value i with weight weights[i], in a random
// order drawn from env.Rand. A value is converted to the digest's
// precision truncating toward zero. Samples of weight 0 are skipped. It
// adds every sample it can and returns the first error: voi.ErrInvalid for
// a NaN or infinite value (or len(values) != len(weights)),
// voi.ErrOverflow for one out of range, and those of Update.
func MergeWeighted(data []byte, dt voi.DType, values []float64, weights []uint64, env *Env) error {
	if len(values) != len(weights) {
		return errInvalid
	}
	var d digest
	if err := d.init(data, dt, env); err != nil {
		return err
	}
	if d.maxn == 0 {
		return errNoNodes
	}
	ctrl := d.sampleCtrl()
	nf := nfS64(ctrl)
	xs := make([]uint64, 0, len(values))
	ws := make([]uint64, 0, len(values))
	var firstErr error
	for i, v := range values {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			if firstErr == nil {
				firstErr = errNaN
			}
			continue
		}
		f := math.Trunc(math.Ldexp(v, int(nf)))
		if math.Abs(f) >= 1<<60 {
			if firstErr == nil {
				firstErr = errOverflow
			}
			continue
		}
		xs, ws = append(xs, setS64(ctrl, int64(f))), append(ws, weights[i])
	}
	if err := d.addAll(xs, ws); firstErr == nil {
		firstErr = err
	}
	return firstErr
}

// sampleCtrl returns the control bits of the s64q samples of d: those
// selecting the fractional bits of node 0's mean (as Update does).
func (d *digest) sampleCtrl() uint64 {
	mu0 := d.muRaw(0)
	if d.is32 {
		return ctrlIni(uint32(nfS32(mu0)))
	}
	return ctrlIni(uint32(nfS64(mu0)))
}

// rescale converts the combined value v with nf fractional bits to an s64q
// with control bits ctrl, truncating toward zero.
func rescale(v int64, nf uint, ctrl uint64) (uint64, int) {
	to := nfS64(ctrl)
	neg := v < 0
	m := uint64(v)
	if neg {
		m = -m
	}
	if to >= nf {
		if m != 0 && bits.Len64(m)+int(to-nf) > 60 {
			return 0, eOverflow
		}
		m <<= to - nf
	} else {
		m >>= nf - to
	}
	if m > ifMaxS64 {
		return 0, eOverflow
	}
	if neg {
		return setS64(ctrl, -int64(m)), eOK
	}
	return setS64(ctrl, int64(m)), eOK
}

// addAll adds the samples xs (s64q raws) with weights ws in the random
// order of the C's compression: each pick takes bits.Len(n) bits of a
// reservoir of random() bits and moves forward to the first sample not yet
// added.
func (d *digest) addAll(xs, ws []uint64) error {
	n := len(xs)
	if n == 0 {
		return nil
	}
	done := make([]bool, n)
	bitsPerIdx := uint(bits.Len(uint(n)))
	mask := uint64(1)<<bitsPerIdx - 1
	var reservoir uint64
	var have uint
	var firstErr error
	for range n {
		for have < bitsPerIdx {
			reservoir |= uint64(d.random()) << have
			have = min(have+31, 64)
		}
		i := int(reservoir&mask) % n
		have -= bitsPerIdx
		reservoir >>= bitsPerIdx
		for done[i] {
			if i++; i == n {
				i = 0
			}
		}
		done[i] = true
		if ws[i] == 0 {
			continue
		}
		if errno := d.add(xs[i], ws[i], 1); errno != eOK && firstErr == nil {
			firstErr = errorOf(errno)
		}
	}
	return firstErr
}
