// Package accuracy measures t-digests against the exact quantiles of the
// samples they were fed: seeded sample streams, fleets of per-connection
// digests, rank errors, and caio/go-tdigest digests of equal centroid count
// for comparison. The tests of tdigest and blob assert bounds with it and
// `make accuracy` prints its tables.
package accuracy

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"

	caio "github.com/caio/go-tdigest/v4"

	"github.com/statsblob/statsblob/bsdrand"
	"github.com/statsblob/statsblob/internal/trusted"
	"github.com/statsblob/statsblob/tdigest"
	"github.com/statsblob/statsblob/tdigest/caiotd"
	"github.com/statsblob/statsblob/voi"
)

// Quantiles are the quantiles every table and bound is about.
var Quantiles = []float64{0.5, 0.9, 0.99, 0.999}

// Dist draws one sample (a non-negative integer, as an INT_U32 VOI holds)
// for a blob whose per-blob parameter is base.
type Dist struct {
	Name string
	// Base draws a blob's parameter (for example a connection's typical
	// RTT); nil means every blob draws from the same distribution.
	Base func(r *rand.Rand) float64
	// Sample draws a sample of a blob with parameter base.
	Sample func(r *rand.Rand, base float64) uint32
}

func lognormal(r *rand.Rand, mu, sigma float64) float64 { return math.Exp(mu + sigma*r.NormFloat64()) }

func clampU32(v float64) uint32 { return uint32(min(max(v, 0), math.MaxUint32>>8)) }

// Dists are the sample streams of the tables: connection RTTs as the demo
// simulates them (a lognormal base per connection times a lognormal jitter),
// the 200 + Exp(3000), a uniform, a lognormal and a Pareto stream
// shared by all blobs, and a bimodal mix of fast blobs and 15% slow ones.
var Dists = []Dist{
	{"conn-rtt", func(r *rand.Rand) float64 { return lognormal(r, math.Log(30000), 0.8) },
		func(r *rand.Rand, b float64) uint32 { return clampU32(b * lognormal(r, 0, 0.3)) }},
	{"exp", nil, func(r *rand.Rand, _ float64) uint32 { return clampU32(200 + r.ExpFloat64()*3000) }},
	{"uniform", nil, func(r *rand.Rand, _ float64) uint32 { return uint32(r.IntN(100000)) }},
	{"lognormal", nil, func(r *rand.Rand, _ float64) uint32 { return clampU32(lognormal(r, math.Log(1000), 1)) }},
	{"pareto", nil, func(r *rand.Rand, _ float64) uint32 { return clampU32(1000 / math.Pow(1-r.Float64(), 1/1.5)) }},
	{"bimodal", func(r *rand.Rand) float64 {
		if r.IntN(20) < 3 {
			return 200000
		}
		return 2000
	}, func(r *rand.Rand, b float64) uint32 { return clampU32(b * lognormal(r, 0, 0.2)) }},
}

// DistByName returns the Dist of that name.
func DistByName(name string) Dist {
	for _, d := range Dists {
		if d.Name == name {
			return d
		}
	}
	panic("accuracy: no distribution " + name)
}

// Geometry is a digest's type, centroid slots and precision.
type Geometry struct {
	DType voi.DType
	Slots uint32
	Prec  uint32
}

// The two geometries of the bounds.
var (
	Small = Geometry{voi.TDgstClust32, 20, 4} // TCP_DEFAULT's TDGSTCLUST32(20,4)
	Large = Geometry{voi.TDgstClust64, 50, 8} // TDGSTCLUST64(50,8)
)

// Build returns an empty digest of g.
func (g Geometry) Build() []byte {
	d, err := tdigest.Build(g.DType, g.Slots, g.Prec)
	if err != nil {
		panic(err)
	}
	return d
}

// Fleet is a set of digests and the samples they were fed.
type Fleet struct {
	Digests [][]byte
	Sorted  []float64 // every sample, sorted
	Lost    int       // updates that failed (must be 0)
}

// BlobSize draws a blob's sample count: 20 to 419, as the demo's
// connections send packets.
func BlobSize(r *rand.Rand) int { return 20 + r.IntN(400) }

// NewFleet returns n digests of geometry g fed from dist, blob i with
// size(r) samples, all seeded by seed.
func NewFleet(g Geometry, dist Dist, n int, size func(r *rand.Rand) int, seed uint64) Fleet {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	return newFleet(g, n, seed, func() []uint32 {
		base := 0.0
		if dist.Base != nil {
			base = dist.Base(r)
		}
		vals := make([]uint32, size(r))
		for i := range vals {
			vals[i] = dist.Sample(r, base)
		}
		return vals
	})
}

// newFleet returns n digests of geometry g, each fed the values of one
// call of batch, drawing random() from a source seeded by seed.
func newFleet(g Geometry, n int, seed uint64, batch func() []uint32) Fleet {
	return newFleetMode(g, tdigest.C, n, seed, batch)
}

// newFleetMode is newFleet with digests fed in mode m.
func newFleetMode(g Geometry, m tdigest.Mode, n int, seed uint64, batch func() []uint32) Fleet {
	env := &tdigest.Env{Rand: bsdrand.New(uint32(seed))}
	var f Fleet
	for range n {
		d := g.Build()
		// The update path blobs use, buffered samples written at the end.
		c := trusted.TDigestCache{Accurate: m == tdigest.Accurate}
		for _, v := range batch() {
			if err := trusted.TDigestUpdate(&c, d, g.DType, voi.IntU32, uint64(v), env.Rand); err != nil {
				f.Lost++
				continue
			}
			f.Sorted = append(f.Sorted, float64(v))
		}
		trusted.TDigestFlush(&c, d, g.DType)
		f.Digests = append(f.Digests, d)
	}
	slices.Sort(f.Sorted)
	return f
}

// Feed returns one digest of g fed n samples of dist (one blob's base),
// with the sorted samples.
func Feed(g Geometry, dist Dist, n int, seed uint64) Fleet {
	return NewFleet(g, dist, 1, func(*rand.Rand) int { return n }, seed)
}

// RankError returns how far, as a fraction of the samples, the estimate v
// lies from rank q among the sorted samples: 0 if some sample equal to v
// (or the gap v falls in) has rank q.
func RankError(sorted []float64, q, v float64) float64 {
	lo := sort.SearchFloat64s(sorted, v)
	hi := sort.Search(len(sorted), func(i int) bool { return sorted[i] > v })
	n := float64(len(sorted))
	switch rank := q * n; {
	case rank < float64(lo):
		return (float64(lo) - rank) / n
	case rank > float64(hi):
		return (rank - float64(hi)) / n
	}
	return 0
}

// Exact returns the q-quantile of the sorted samples (the sample of rank
// floor(q·n), the last for q = 1).
func Exact(sorted []float64, q float64) float64 {
	return sorted[min(int(q*float64(len(sorted))), len(sorted)-1)]
}

// Errors returns the rank errors of the digest at Quantiles.
func Errors(sorted []float64, d []byte, dt voi.DType) []float64 {
	return errorsOf(sorted, d, dt, func(v float64) float64 { return v })
}

// IntErrors is Errors of the digest's answers rounded to the nearest
// integer, as blob.Stat.Quantile answers an integer VOI's digest.
func IntErrors(sorted []float64, d []byte, dt voi.DType) []float64 {
	return errorsOf(sorted, d, dt, math.Round)
}

// errorsOf returns the rank errors of the digest's answers at Quantiles,
// each passed through answer first; nil if the digest has none.
func errorsOf(sorted []float64, d []byte, dt voi.DType, answer func(float64) float64) []float64 {
	errs := make([]float64, len(Quantiles))
	for i, q := range Quantiles {
		v, err := tdigest.Quantile(d, dt, q)
		if err != nil {
			return nil
		}
		errs[i] = RankError(sorted, q, answer(v))
	}
	return errs
}

// CaioErrors returns the rank errors of a caio digest at Quantiles.
func CaioErrors(sorted []float64, td *caio.TDigest) []float64 {
	errs := make([]float64, len(Quantiles))
	for i, q := range Quantiles {
		errs[i] = RankError(sorted, q, td.Quantile(q))
	}
	return errs
}

// Max returns the largest of errs.
func Max(errs []float64) float64 {
	m := 0.0
	for _, e := range errs {
		m = max(m, e)
	}
	return m
}

// CaioMerged returns the digests merged in caio/go-tdigest (each converted
// exactly with its centroids, then merged into one caio digest) at the
// largest compression whose result holds at most centroids centroids, and
// that compression.
func CaioMerged(ds [][]byte, dt voi.DType, centroids int) (*caio.TDigest, float64) {
	return caioAt(Centroids, centroids, caioMerge(ds, dt))
}

// CaioMergedBytes is CaioMerged at the largest compression whose result
// serializes (AsBytes) to at most size bytes.
func CaioMergedBytes(ds [][]byte, dt voi.DType, size int) (*caio.TDigest, float64) {
	return caioAt(Bytes, size, caioMerge(ds, dt))
}

// CaioFedBytes returns a caio digest fed the samples in order at the
// largest compression that serializes to at most size bytes, and that
// compression.
func CaioFedBytes(samples []float64, size int) (*caio.TDigest, float64) {
	return caioAt(Bytes, size, func(c float64) *caio.TDigest {
		td, _ := caio.New(caio.Compression(c), caio.LocalRandomNumberGenerator(1))
		for _, v := range samples {
			_ = td.Add(v)
		}
		return td
	})
}

// Centroids returns the number of centroids of a caio digest.
func Centroids(td *caio.TDigest) int {
	n := 0
	td.ForEachCentroid(func(float64, uint64) bool { n++; return true })
	return n
}

// Bytes returns the size of a caio digest's serialization.
func Bytes(td *caio.TDigest) int {
	b, _ := td.AsBytes()
	return len(b)
}

func caioMerge(ds [][]byte, dt voi.DType) func(c float64) *caio.TDigest {
	srcs := make([]*caio.TDigest, len(ds))
	for i, d := range ds {
		s, err := caiotd.ToCaio(d, dt, 100)
		if err != nil {
			panic(err)
		}
		// A merge visits a source's centroids in an order drawn from the
		// source's generator: seeded, so that the tables repeat.
		_ = caio.LocalRandomNumberGenerator(int64(i + 1))(s)
		srcs[i] = s
	}
	return func(c float64) *caio.TDigest {
		td, _ := caio.New(caio.Compression(c), caio.LocalRandomNumberGenerator(1))
		for _, s := range srcs {
			_ = td.Merge(s)
		}
		return td
	}
}

// caioAt returns the digest build gives at the largest compression (found
// by bisection) whose measure is at most limit, and the compression.
func caioAt(measure func(*caio.TDigest) int, limit int, build func(c float64) *caio.TDigest) (*caio.TDigest, float64) {
	at := func(c float64) *caio.TDigest {
		td := build(c)
		_ = td.Compress()
		return td
	}
	lo, hi := 1.0, 2.0
	for measure(at(hi)) <= limit && hi < 1e4 {
		lo, hi = hi, 2*hi
	}
	for range 12 {
		mid := (lo + hi) / 2
		if measure(at(mid)) > limit {
			hi = mid
		} else {
			lo = mid
		}
	}
	return at(lo), lo
}

// FeedMode returns a digest of g fed the samples in order through the
// update path blobs use, in mode m, with every buffered sample written
// into the bytes, and the samples sorted as float64s. Lost counts the
// updates that failed.
func FeedMode(g Geometry, m tdigest.Mode, samples []uint32, seed uint64) Fleet {
	d := g.Build()
	c := trusted.TDigestCache{Accurate: m == tdigest.Accurate}
	src := bsdrand.New(uint32(seed))
	f := Fleet{Sorted: make([]float64, 0, len(samples))}
	for _, v := range samples {
		if err := trusted.TDigestUpdate(&c, d, g.DType, voi.IntU32, uint64(v), src); err != nil {
			f.Lost++
			continue
		}
		f.Sorted = append(f.Sorted, float64(v))
	}
	trusted.TDigestFlush(&c, d, g.DType)
	slices.Sort(f.Sorted)
	f.Digests = [][]byte{d}
	return f
}

// CaioFedBytesU32 is CaioFedBytes of uint32 samples.
func CaioFedBytesU32(samples []uint32, size int) (*caio.TDigest, float64) {
	fs := make([]float64, len(samples))
	for i, v := range samples {
		fs[i] = float64(v)
	}
	return CaioFedBytes(fs, size)
}

// MergeTwoLevels merges a fleet's digests of geometry g as a collector
// tier would: in groups of 8, then the groups, each step with
// tdigest.MergeAll. Its error is MergeAll's.
func MergeTwoLevels(g Geometry, digests [][]byte) ([]byte, error) {
	var groups [][]byte
	for i := 0; i < len(digests); i += 8 {
		d := g.Build()
		if err := tdigest.MergeAll(d, g.DType, digests[i:min(i+8, len(digests))]...); err != nil {
			return nil, err
		}
		groups = append(groups, d)
	}
	two := g.Build()
	if err := tdigest.MergeAll(two, g.DType, groups...); err != nil {
		return nil, err
	}
	return two, nil
}
