package tdigest

import "github.com/statsblob/statsblob/voi"

// Quantiles appends to out the estimates of Quantile at each of qs, in
// the order of qs, reading the digest once (Quantile reads it twice per
// quantile): the same values, for exporters that report several
// quantiles of many digests. With lo and hi not NaN, the estimates are
// QuantileBounded's. Errors are Quantile's (a q NaN or outside [0, 1]
// first); out is then returned unchanged.
func Quantiles(data []byte, dt voi.DType, qs []float64, lo, hi float64, out []float64) ([]float64, error) {
	for _, q := range qs {
		if !(q >= 0 && q <= 1) {
			return out, errQuantile
		}
	}
	// One walk reads the centroids and adds up their counts (populated
	// walks twice): a scrape reads thousands of digests.
	it, err := Iter(data, dt, MeanOrder)
	if err != nil {
		return out, err
	}
	var buf [128]meanCount
	cs := buf[:0]
	var total uint64
	for it.Next() {
		m, c := it.meanCount()
		if total, err = addCount(total, c); err != nil {
			return out, err
		}
		if c != 0 {
			cs = append(cs, meanCount{m, float64(c)})
		}
	}
	if total == 0 {
		return out, ErrEmpty
	}
	n := float64(total)
	for _, q := range qs {
		out = append(out, quantileOf(cs, n, q, lo, hi))
	}
	return out, nil
}

// meanCount is a centroid's mean and count.
type meanCount struct{ m, w float64 }

// quantileOf is quantile over centroids read into cs (non-empty ones, in
// mean order; n their total count): the same arithmetic in the same order.
func quantileOf(cs []meanCount, n, q, lo, hi float64) float64 {
	target := q * n
	var cum, prevRank, prevMean float64
	first := true
	for _, c := range cs {
		m, w := c.m, c.w
		rank := cum + w/2
		if target <= rank {
			if first {
				if lo <= m && rank > 0 { // lo known (not NaN) and below the mean
					return between(lo+target/rank*(m-lo), lo, m)
				}
				return m
			}
			if rank == prevRank {
				return m
			}
			return between(prevMean+(target-prevRank)/(rank-prevRank)*(m-prevMean), prevMean, m)
		}
		first = false
		prevRank, prevMean = rank, m
		cum += w
	}
	if hi >= prevMean && n > prevRank { // hi known and above the mean
		return between(prevMean+(target-prevRank)/(n-prevRank)*(hi-prevMean), prevMean, hi)
	}
	return prevMean
}
