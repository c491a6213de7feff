// Package caiotd converts between statsblob t-digests (package tdigest) and
// the digests of github.com/caio/go-tdigest/v4, a clustering t-digest of
// the same lineage (both follow Dunning's AVLTreeDigest) kept in Go memory.
//
// ToCaio exports a digest's centroids exactly; FromCaio merges a caio
// digest's centroids into a blob's digest, which keeps its own size. The package is built with the
// "caio" build tag until the module requires github.com/caio/go-tdigest/v4.
package caiotd

import (
	"fmt"
	"math"

	caio "github.com/caio/go-tdigest/v4"

	"github.com/statsblob/statsblob/tdigest"
	"github.com/statsblob/statsblob/voi"
)

// ToCaio returns a caio digest holding exactly the centroids of data, a
// digest of type dt: the same means (as float64, exact for means of up to
// 53 significant bits) and counts, in mean order. compression (at least 1)
// is the caio digest's setting for what is added to it afterwards; the
// centroids themselves are not re-clustered, however many there are.
// Errors wrap voi.ErrInvalid (bad compression, bytes that are not a
// digest).
func ToCaio(data []byte, dt voi.DType, compression float64) (*caio.TDigest, error) {
	if !(compression >= 1) {
		return nil, fmt.Errorf("caiotd: compression %v below 1: %w", compression, voi.ErrInvalid)
	}
	if err := tdigest.Validate(data, dt); err != nil {
		return nil, err
	}
	td, err := caio.New(caio.Compression(compression))
	if err != nil {
		return nil, fmt.Errorf("caiotd: %v: %w", err, voi.ErrInvalid)
	}
	// With an unbounded compression caio neither merges an added centroid
	// into a neighbour nor compresses, so the centroids arrive unchanged;
	// the caller's compression is set afterwards (options are plain
	// setters).
	_ = caio.Compression(math.MaxFloat64)(td)
	it, err := tdigest.Iter(data, dt, tdigest.MeanOrder)
	if err != nil {
		return nil, err
	}
	for it.Next() {
		c := it.Centroid()
		if c.Count == 0 {
			continue
		}
		if err := td.AddWeighted(c.Mean(), c.Count); err != nil {
			return nil, fmt.Errorf("caiotd: centroid %d: %v: %w", c.Index, err, voi.ErrInvalid)
		}
	}
	_ = caio.Compression(compression)(td)
	return td, nil
}

// FromCaio merges the centroids of td into dst, a digest of type dt, with
// tdigest.MergeWeighted: as tdigest.MergeAll merges a digest, each mean
// converted to dst's precision truncating toward zero. The errors are
// MergeWeighted's.
func FromCaio(dst []byte, dt voi.DType, td *caio.TDigest) error {
	var means []float64
	var counts []uint64
	td.ForEachCentroid(func(mean float64, count uint64) bool {
		means = append(means, mean)
		counts = append(counts, count)
		return true
	})
	return tdigest.MergeWeighted(dst, dt, means, counts)
}
