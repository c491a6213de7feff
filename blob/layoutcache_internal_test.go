//go:build go1.25

package blob

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/hist"
	"github.com/statsblob/statsblob/internal/abi"
	"github.com/statsblob/statsblob/internal/tcpstats"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// cacheTemplates are layouts with every kind of statistic: TCP_DEFAULT
// (t-digests, CR and DV histograms, vacant statistic slots), and one with
// VOI state, a vacant VOI slot, a DR histogram and a 64-bit digest.
func cacheTemplates(t *testing.T) []*tpl.Template {
	reg := tpl.NewRegistry()
	tcp, err := tcpstats.New(reg)
	require.NoError(t, err)
	mixed, err := reg.New("MIXED")
	require.NoError(t, err)
	require.NoError(t, mixed.AddVOI(tpl.VOIDef{ID: 0, Name: "rel", DType: voi.IntS64, Flags: voi.FlagRelUpdate,
		Stats: []tpl.StatSpec{tpl.Sum(), tpl.Min(), tpl.TDigest(voi.TDgstClust64, 9, 4)}}))
	require.NoError(t, mixed.AddVOI(tpl.VOIDef{ID: 2, Name: "dr", DType: voi.IntS32,
		Stats: []tpl.StatSpec{tpl.Max(), tpl.Histogram(hist.Spec{DType: voi.DRHist32, Scheme: hist.Usr,
			Buckets: []hist.Bound{{LB: uint64(1<<64 - 500), UB: 0}, {LB: 0, UB: 500}, {LB: 600, UB: 700}}})}}))
	return []*tpl.Template{tcp, mixed}
}

func fillForCache(bl *Blob, r *rand.Rand) {
	for range 300 {
		id := int32(r.IntN(10))
		_ = bl.Update(id, bl.plan.vois[min(int(id), len(bl.plan.vois)-1)].dtype, r.Uint64N(3000)-1000, false)
	}
}

// fullDecode is FromBytes without the layout cache.
func fullDecode(p []byte) (*plan, error) {
	if err := Validate(p); err != nil {
		return nil, err
	}
	if len(p) != abi.CurSz(p) {
		return nil, fmt.Errorf("size: %w", voi.ErrInvalid)
	}
	return newPlan(p), nil
}

// TestLayoutCacheMatchesValidation decodes mutated blobs of cached layouts
// and holds FromBytes to the verdict of the full validation, and its plan
// to the one made from scratch: the shortcut may only be faster.
func TestLayoutCacheMatchesValidation(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	hits, accepted, rejected := 0, 0, 0
	for _, tp := range cacheTemplates(t) {
		for range 40 {
			bl := New(tp, NewEnv(func() int64 { return 1 << 32 }, uint32(r.Uint32())))
			fillForCache(bl, r)
			good := append([]byte(nil), bl.Bytes()...)
			_, err := FromBytes(good, nil) // caches the layout
			require.NoError(t, err)
			require.NotNil(t, cachedPlan(good), tp.Name())
			for range 300 {
				p := append([]byte(nil), good...)
				for range 1 + r.IntN(3) {
					var off int
					switch r.IntN(4) {
					case 0: // anywhere
						off = r.IntN(len(p))
					case 1: // header, voi[], voistat[]
						off = r.IntN(abi.StatsDataOff(good))
					default: // a statistic's data start: digest heads, bounds
						off = abi.StatsDataOff(good) + r.IntN(min(200, len(p)-abi.StatsDataOff(good)))
					}
					p[off] = []byte{0, 1, 0xff, 0xfe, 2, byte(r.Uint32())}[r.IntN(6)]
				}
				if r.IntN(8) == 0 {
					binary.LittleEndian.PutUint64(p[abi.OffCreated:], r.Uint64()) // times are free
				}
				fromCache := cachedPlan(p)
				if fromCache != nil {
					hits++
				}
				want, wantErr := fullDecode(p)
				got, gotErr := FromBytes(p, nil)
				require.Equal(t, wantErr, gotErr, "template %s, blob %x", tp.Name(), p)
				if wantErr != nil {
					rejected++
					require.Nil(t, fromCache)
					continue
				}
				accepted++
				require.Equal(t, want, got.plan)
				require.Equal(t, p, got.Bytes())
			}
		}
	}
	t.Logf("%d accepted (%d by the cache), %d rejected", accepted, hits, rejected)
	require.Greater(t, hits, 1000)
	require.Greater(t, rejected, 1000)
}

// TestLayoutCacheConcurrent decodes blobs of several layouts from several
// goroutines (go test -race checks the table's publication).
func TestLayoutCacheConcurrent(t *testing.T) {
	var wires [][]byte
	r := rand.New(rand.NewPCG(5, 6))
	for _, tp := range cacheTemplates(t) {
		bl := New(tp, nil)
		fillForCache(bl, r)
		wires = append(wires, bl.Bytes())
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			var b Blob
			for i := range 2000 {
				w := wires[(g+i)%len(wires)]
				if err := b.UnmarshalBinary(w); err != nil {
					t.Error(err)
					return
				}
				if string(b.Bytes()) != string(w) {
					t.Error("decoded bytes differ")
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestUnmarshalBinaryReusesBuffer(t *testing.T) {
	tp := cacheTemplates(t)[0]
	a, b := New(tp, nil), New(tp, nil)
	r := rand.New(rand.NewPCG(7, 8))
	fillForCache(a, r)
	fillForCache(b, r)
	var bl Blob
	require.NoError(t, bl.UnmarshalBinary(a.Bytes()))
	buf := bl.Buffer()
	require.Zero(t, testing.AllocsPerRun(50, func() {
		// The same layout keeps the plan, and the t-digests' order caches
		// (refilled by the update) keep their storage.
		require.NoError(t, bl.UnmarshalBinary(b.Bytes()))
		require.NoError(t, bl.UpdateU32(tcpstats.RTT, 5))
	}))
	require.Equal(t, &buf[0], &bl.Buffer()[0])
	// A failed call changes nothing.
	before := append([]byte(nil), bl.Bytes()...)
	bad := append([]byte(nil), a.Bytes()...)
	bad[abi.OffFlags] = 1
	require.ErrorIs(t, bl.UnmarshalBinary(bad), voi.ErrInvalid)
	require.Equal(t, before, bl.Bytes())
}

// TestCompatibleBlobsMatchesCompatible: blobs that share a plan (decoded
// through the layout cache) but whose Q statistics or t-digests differ in
// precision get compatible's verdict and error from compatibleBlobs.
func TestCompatibleBlobsMatchesCompatible(t *testing.T) {
	reg := tpl.NewRegistry()
	tp, err := reg.New("PREC")
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "q", DType: voi.QS64, Prec: 8, Stats: []tpl.StatSpec{tpl.Sum(), tpl.Max()}}))
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 1, Name: "d", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.TDigest(voi.TDgstClust64, 5, 8), tpl.Max()}}))
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 2, Name: "e", DType: voi.IntU32, Stats: []tpl.StatSpec{tpl.TDigest(voi.TDgstClust32, 4, 4)}}))
	base := New(tp, nil)
	require.NoError(t, base.UpdateU64(1, 7))
	a, err := FromBytes(base.Bytes(), nil)
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(1, 1))
	differ := 0
	for range 300 {
		p := append([]byte(nil), base.Bytes()...)
		// Change the control bits of a Q statistic or of every slot of a
		// digest (a digest's slots share one precision).
		switch r.IntN(3) {
		case 0:
			sp := &a.plan.stats[r.IntN(len(a.plan.stats))]
			if sp.dtype.IsQ() {
				p[sp.dataOff] = p[sp.dataOff]&^7 | byte(r.IntN(8))
			}
		default:
			for i := range a.plan.stats {
				sp := &a.plan.stats[i]
				if sp.stype != voi.TDgst || r.IntN(2) == 0 {
					continue
				}
				base, nsz := 32, 24
				if sp.dtype == voi.TDgstClust32 {
					base, nsz = 20, 16
				}
				c := byte(r.IntN(8))
				for at := int(sp.dataOff) + base + 8; at < int(sp.dataOff)+int(sp.dsz); at += nsz {
					p[at] = p[at]&^7 | c
				}
			}
		}
		b, err := FromBytes(p, nil)
		if err != nil {
			continue // a precision the digest's means cannot have
		}
		require.Same(t, a.plan, b.plan)
		want, got := compatible(a.b, b.b), compatibleBlobs(a, b)
		require.Equal(t, want, got)
		if want != nil {
			differ++
		}
	}
	require.Greater(t, differ, 30)
}

// FuzzLayoutCache holds FromBytes (through the layout cache, primed with
// the seeds' layouts) to the full validation's verdict and plan on any
// bytes.
func FuzzLayoutCache(f *testing.F) {
	r := rand.New(rand.NewPCG(1, 2))
	var seeds [][]byte
	for _, tp := range cacheTemplates(&testing.T{}) {
		bl := New(tp, NewEnv(func() int64 { return 1 << 32 }, 1))
		fillForCache(bl, r)
		seeds = append(seeds, append([]byte(nil), bl.Bytes()...))
		f.Add(bl.Bytes())
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		for _, s := range seeds {
			if _, err := FromBytes(s, nil); err != nil {
				t.Fatal(err)
			}
		}
		want, wantErr := fullDecode(p)
		got, gotErr := FromBytes(p, nil)
		if (wantErr == nil) != (gotErr == nil) || wantErr != nil && wantErr.Error() != gotErr.Error() {
			t.Fatalf("full validation: %v, FromBytes: %v", wantErr, gotErr)
		}
		if wantErr == nil {
			require.Equal(t, want, got.plan)
			require.Equal(t, p, got.Bytes())
		}
	})
}
