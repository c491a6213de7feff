//go:build go1.24

package blob

import (
	"math/rand/v2"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/bsdrand"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// TestVOIPlanSize pins the size the decoding bound relies on: a plan
// entry per 8-byte VOI slot, two bytes per blob byte
// (tostr.TestResourceBounds checks the whole decode).
func TestVOIPlanSize(t *testing.T) {
	require.Equal(t, uintptr(16), unsafe.Sizeof(voiPlan{}))
}

// TestDigestCachesFollowTheBytes runs one sequence of updates, resets,
// merges and unmarshals on two blobs, one keeping its t-digest order caches
// and one dropping them before every operation, and holds them to the same
// bytes: whatever rewrites a digest outside an update must drop its cache.
func TestDigestCachesFollowTheBytes(t *testing.T) {
	reg := tpl.NewRegistry()
	tp, err := reg.New("caches")
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "a", DType: voi.IntU64,
		Stats: []tpl.StatSpec{tpl.Max(), tpl.TDigest(voi.TDgstClust64, 12, 4)}}))
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 1, Name: "b", DType: voi.IntS32,
		Stats: []tpl.StatSpec{tpl.TDigest(voi.TDgstClust32, 7, 4)}}))
	clock := func() int64 { return 1 << 32 }
	kept := New(tp, &Env{Rand: bsdrand.New(1), Clock: clock})
	fresh := New(tp, &Env{Rand: bsdrand.New(1), Clock: clock})
	other := New(tp, &Env{Rand: bsdrand.New(7), Clock: clock})
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 4000 {
		fresh.digests = nil
		var op string
		switch x := r.IntN(200); {
		case x == 0:
			op = "reset"
			kept.Reset()
			fresh.Reset()
		case x == 1:
			op = "merge"
			require.NoError(t, other.UpdateU64(0, r.Uint64N(500)))
			require.NoError(t, other.UpdateS32(1, int32(r.IntN(500))-250))
			errK, errF := Merge(kept, other), Merge(fresh, other)
			require.Equal(t, errF, errK)
		case x == 2:
			op = "unmarshal"
			p := other.Bytes()
			require.NoError(t, kept.UnmarshalBinary(p))
			require.NoError(t, fresh.UnmarshalBinary(p))
		default:
			op = "update"
			v, w := r.Uint64N(500), int32(r.IntN(500))-250
			require.Equal(t, fresh.UpdateU64(0, v), kept.UpdateU64(0, v))
			require.Equal(t, fresh.UpdateS32(1, w), kept.UpdateS32(1, w))
		}
		require.Equal(t, fresh.Bytes(), kept.Bytes(), "op %d (%s)", i, op)
	}
	require.NotNil(t, kept.digests)
}

// TestPlansLiveWithTheirTemplate: blobs of one version of a template share
// its plan, a VOI added makes a new one, and nothing global keeps a
// template (or its plan) alive once it is no longer used.
func TestPlansLiveWithTheirTemplate(t *testing.T) {
	tp, err := tpl.NewRegistry().New("plans")
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "a", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}))
	a, b := New(tp, nil), New(tp, nil)
	buf := make([]byte, 200)
	buf[4] = 200 // maxsz
	c, err := Init(buf, tp, nil)
	require.NoError(t, err)
	require.Same(t, a.plan, b.plan)
	require.Same(t, a.plan, c.plan)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 1, Name: "b", DType: voi.IntU32, Stats: []tpl.StatSpec{tpl.Max()}}))
	d := New(tp, nil)
	require.NotSame(t, a.plan, d.plan)
	require.Len(t, d.plan.vois, 2)
	require.Len(t, a.plan.vois, 1, "blobs made earlier keep their plan")
	require.NoError(t, d.UpdateU32(1, 5))

	collected := make(chan struct{})
	func() {
		tp, err := tpl.NewRegistry().New("gone")
		require.NoError(t, err)
		require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "a", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}))
		bl := New(tp, nil)
		runtime.AddCleanup(bl.plan, func(ch chan struct{}) { close(ch) }, collected)
	}()
	for range 20 {
		runtime.GC()
		select {
		case <-collected:
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatal("a plan outlived its template and blobs")
}
