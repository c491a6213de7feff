package tdigest

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/bsdrand"
	"github.com/statsblob/statsblob/internal/trusted"
	"github.com/statsblob/statsblob/voi"
)

// cacheTwin runs the same operations on two copies of a digest, one
// through Update and one through an update cache (trusted.TDigestUpdate,
// package blob's path), each with its own random()
// source seeded alike, and fails at the first difference in bytes, errors
// or random() draws, or when the cache no longer holds the tree's order.
type cacheTwin struct {
	t           *testing.T
	dt          voi.DType
	plain, fast []byte
	envP, envF  *Env
	cache       trusted.TDigestCache
	ops         int
}

func newCacheTwin(t *testing.T, dt voi.DType, nctds, prec, seed uint32) *cacheTwin {
	b, err := Build(dt, nctds, prec)
	require.NoError(t, err)
	return &cacheTwin{t: t, dt: dt, plain: b, fast: bytes.Clone(b),
		envP: &Env{Rand: bsdrand.New(seed)}, envF: &Env{Rand: bsdrand.New(seed)}}
}

func (c *cacheTwin) update(vdt voi.DType, v uint64) {
	c.t.Helper()
	errP := Update(c.plain, c.dt, vdt, v, c.envP)
	errF := updateTrusted(&c.cache, c.fast, c.dt, vdt, v, c.envF.Rand)
	c.check(fmt.Sprintf("update %v %#x", vdt, v), errP, errF)
}

func (c *cacheTwin) reset() {
	Reset(c.plain, c.dt)
	Reset(c.fast, c.dt)
	c.cache.Invalidate()
	c.check("reset", nil, nil)
}

func (c *cacheTwin) merge(src []byte) {
	c.t.Helper()
	errP := Merge(c.plain, src, c.dt)
	errF := Merge(c.fast, src, c.dt)
	c.cache.Invalidate()
	c.check("merge", errP, errF)
}

func (c *cacheTwin) check(op string, errP, errF error) {
	c.t.Helper()
	c.ops++
	if !errors.Is(errF, errP) && (errP != nil || errF != nil) {
		c.t.Fatalf("op %d %s: error %v through the cache, %v without", c.ops, op, errF, errP)
	}
	if !bytes.Equal(c.plain, c.fast) {
		c.t.Fatalf("op %d %s: bytes differ\n plain %x\n cache %x", c.ops, op, c.plain, c.fast)
	}
	if c.envP.Rand.Calls() != c.envF.Rand.Calls() {
		c.t.Fatalf("op %d %s: %d random() draws through the cache, %d without", c.ops, op, c.envF.Rand.Calls(), c.envP.Rand.Calls())
	}
	got := orderIn(&c.cache)
	if got == nil || !got.valid {
		return
	}
	// The cache must hold exactly the tree's in-order walk.
	w := treeOrder(c.t, c.fast, c.dt)
	require.True(c.t, w.valid, "op %d %s: tree", c.ops, op)
	if !slices.Equal(w.seq, got.seq) || !slices.Equal(w.pos, got.pos) {
		c.t.Fatalf("op %d %s: cached order %v, tree %v", c.ops, op, got.seq, w.seq)
	}
}

// treeOrder is the order a cache filled from data holds.
func treeOrder(t *testing.T, data []byte, dt voi.DType) *orderCache {
	if dt == voi.TDgstClust32 {
		return treeOrderLayout[node32](t, data)
	}
	return treeOrderLayout[node64](t, data)
}

func treeOrderLayout[N node](t *testing.T, data []byte) *orderCache {
	var d digest[N]
	require.NoError(t, d.init(data, nil))
	var c cache[N]
	c.fill(&d)
	return &c.orderCache
}

// orderIn returns the order kept in c, nil if none.
func orderIn(c *trusted.TDigestCache) *orderCache {
	switch cc := c.C.(type) {
	case *cache[node32]:
		return &cc.orderCache
	case *cache[node64]:
		return &cc.orderCache
	}
	return nil
}

// TestCacheMatchesUpdate holds updates through a Cache to Update's bytes,
// errors and random() draws, over both digest types, digests of 1 to 50
// centroids, value streams with many equal means and stale cached minima,
// negative and Q values, resets and merges.
func TestCacheMatchesUpdate(t *testing.T) {
	streams := []struct {
		name string
		vdt  voi.DType
		next func(r *rand.Rand) uint64
	}{
		{"uniform", voi.IntU64, func(r *rand.Rand) uint64 { return r.Uint64N(1000) }},
		{"few values", voi.IntU32, func(r *rand.Rand) uint64 { return r.Uint64N(5) }},
		{"logish", voi.IntU64, func(r *rand.Rand) uint64 { x := r.Uint64(); return ((x >> 32 & 1023) << (x >> 16 & 15)) >> 4 }},
		{"signed", voi.IntS32, func(r *rand.Rand) uint64 { return uint64(uint32(int32(r.IntN(2001) - 1000))) }},
		{"rising", voi.IntS64, func() func(*rand.Rand) uint64 {
			n := uint64(0)
			return func(r *rand.Rand) uint64 { n += r.Uint64N(3); return n }
		}()},
		{"q", voi.QS64, func(r *rand.Rand) uint64 { return uint64(r.IntN(4000)-2000)<<6 | r.Uint64N(8)<<3 | 4 }},
	}
	for _, dt := range []voi.DType{voi.TDgstClust32, voi.TDgstClust64} {
		for _, nctds := range []uint32{1, 2, 3, 5, 10, 20, 50} {
			for si, s := range streams {
				t.Run(fmt.Sprintf("%v/%d/%s", dt, nctds, s.name), func(t *testing.T) {
					r := rand.New(rand.NewPCG(uint64(nctds), uint64(si)))
					c := newCacheTwin(t, dt, nctds, 4, uint32(si+1))
					other := newCacheTwin(t, dt, nctds/2+1, 4, 99)
					n := 3000
					if !longTests() {
						n = 600
					}
					for i := range n {
						switch x := r.IntN(100); {
						case x == 0 && i > n/2:
							c.reset()
						case x == 1:
							other.update(s.vdt, s.next(r))
							c.merge(other.plain)
						default:
							c.update(s.vdt, s.next(r))
						}
					}
				})
			}
		}
	}
}

// A cache filled from another digest (misuse) is refilled when the sizes
// differ; a cache over links that are no tree stays off.
func TestCacheFallsBack(t *testing.T) {
	a, _ := Build(voi.TDgstClust64, 8, 4)
	b, _ := Build(voi.TDgstClust64, 4, 4)
	var c trusted.TDigestCache
	require.NoError(t, updateTrusted(&c, a, voi.TDgstClust64, voi.IntU64, 5, nil))
	require.NoError(t, updateTrusted(&c, b, voi.TDgstClust64, voi.IntU64, 7, nil))
	require.Len(t, orderIn(&c).pos, 4)
	// A cache of the other layout is replaced.
	a32, _ := Build(voi.TDgstClust32, 3, 4)
	require.NoError(t, updateTrusted(&c, a32, voi.TDgstClust32, voi.IntU32, 5, nil))
	require.IsType(t, &cache[node32]{}, c.C)
	require.Len(t, orderIn(&c).pos, 3)

	var d digest[node64]
	require.NoError(t, d.init(b, nil))
	d.hset(hCur, 3) // one node in the tree, three counted
	var cc cache[node64]
	cc.fill(&d)
	require.False(t, cc.valid)
}

// FuzzCacheUpdate drives a digest and its cached twin (cacheTwin) through
// updates, resets and merges chosen by the fuzzer: bytes, errors and
// random() draws must agree after every operation, and the cache must hold
// the tree's order.
func FuzzCacheUpdate(f *testing.F) {
	f.Add([]byte{0, 8, 4, 1, 0, 100, 0, 50, 0, 150, 0, 75})
	f.Add([]byte{1, 3, 16, 7, 1, 5, 2, 0xff, 0xff, 3, 9, 4, 1, 4, 2})
	f.Add([]byte{1, 20, 4, 2, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 0xe0, 0, 3, 3, 3, 3})
	vdts := []voi.DType{voi.IntS32, voi.IntU32, voi.IntS64, voi.IntU64, voi.QS32, voi.QU32, voi.QS64, voi.QU64}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) < 4 {
			return
		}
		dt := voi.TDgstClust32
		if in[0]&1 == 1 {
			dt = voi.TDgstClust64
		}
		nctds, prec := uint32(in[1]%48)+1, uint32(in[2]%16)+1
		c := newCacheTwin(t, dt, nctds, prec, uint32(in[3]))
		src := newCacheTwin(t, dt, nctds/2+1, prec, 5)
		for ops := in[4:]; len(ops) >= 2; ops = ops[2:] {
			op, arg := ops[0], ops[1]
			switch {
			case op == 0xe0:
				c.reset()
			case op == 0xe1:
				c.merge(src.plain)
			case op >= 0xf0:
				src.update(voi.IntU32, uint64(arg))
			default:
				c.update(vdts[int(op)%len(vdts)], uint64(arg)|uint64(op>>3)<<8)
			}
		}
	})
}
