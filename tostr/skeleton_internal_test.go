package tostr

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/hist"
	"github.com/statsblob/statsblob/internal/tcpstats"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// skelTemplates are layouts with every kind of statistic and slot:
// TCP_DEFAULT, and one with VOI state, vacant VOI slots (also last), Q
// values, DR and DV histograms and a 64-bit digest.
func skelTemplates(t *testing.T, reg *tpl.Registry) []*tpl.Template {
	tcp, err := tcpstats.New(reg)
	require.NoError(t, err)
	mixed, err := reg.New("MIXED")
	require.NoError(t, err)
	require.NoError(t, mixed.AddVOI(tpl.VOIDef{ID: 1, Name: "rel", DType: voi.IntS64, Flags: voi.FlagRelUpdate,
		Stats: []tpl.StatSpec{tpl.Sum(), tpl.Min(), tpl.TDigest(voi.TDgstClust64, 9, 4)}}))
	require.NoError(t, mixed.AddVOI(tpl.VOIDef{ID: 3, Name: "q", DType: voi.QS64, Prec: 16,
		Stats: []tpl.StatSpec{tpl.Max(), tpl.Sum()}}))
	require.NoError(t, mixed.AddVOI(tpl.VOIDef{ID: 4, Name: "dr", DType: voi.IntS32,
		Stats: []tpl.StatSpec{tpl.Max(), tpl.Histogram(hist.Spec{DType: voi.DRHist32, Scheme: hist.Usr,
			Buckets: []hist.Bound{{LB: uint64(1<<64 - 500), UB: 0}, {LB: 0, UB: 500}, {LB: 600, UB: 700}}})}}))
	require.NoError(t, mixed.AddVOI(tpl.VOIDef{ID: 6, Name: "dv", DType: voi.IntU64,
		Stats: []tpl.StatSpec{tpl.Histogram(hist.Spec{DType: voi.DVHist64, Scheme: hist.Usr,
			Buckets: []hist.Bound{{LB: 1, UB: 1}, {LB: 5, UB: 5}}})}}))
	return []*tpl.Template{tcp, mixed}
}

// TestSkeletonsMatchTheWalk renders blobs of several layouts, with values
// and valid flags changing between renderings, through skeletons and
// through the walk, and holds the two to the same text.
func TestSkeletonsMatchTheWalk(t *testing.T) {
	reg := tpl.NewRegistry()
	r := rand.New(rand.NewPCG(1, 2))
	renders := 0
	for _, tp := range skelTemplates(t, reg) {
		for range 20 {
			bl := blob.New(tp, blob.NewEnv(func() int64 { return 1 << 32 }, r.Uint32()))
			for range 5 {
				for range r.IntN(40) {
					id := int32(r.IntN(10))
					_ = bl.UpdateU64(id, r.Uint64N(3000))
					_ = bl.UpdateU32(id, uint32(r.IntN(3000)))
					_ = bl.UpdateS32(id, int32(r.IntN(3000))-1500)
					_ = bl.UpdateS64(id, int64(r.IntN(3000))-1500)
				}
				if r.IntN(4) == 0 {
					bl.Reset()
				}
				for _, o := range []Options{
					{Format: JSON}, {Format: FreeForm},
					{Format: JSON, Flags: Meta, Registry: reg}, {Format: FreeForm, Flags: Meta, Registry: reg},
				} {
					noSkeletons = true
					want, err := Append([]byte("x"), bl, o)
					noSkeletons = false
					require.NoError(t, err)
					got, err := Append([]byte("x"), bl, o)
					require.NoError(t, err)
					require.Equal(t, string(want), string(got), "%s %v", tp.Name(), o)
					renders++
				}
			}
		}
	}
	require.Equal(t, 2*20*5*4, renders)

	// Blobs of one layout whose histogram bounds differ (FromBytes checks
	// sizes, not bounds) each render their own bounds.
	tcp := blob.New(skelTemplates(t, tpl.NewRegistry())[0], nil)
	require.NoError(t, tcp.UpdateU32(tcpstats.CSig, 2))
	require.NoError(t, tcp.UpdateU32(tcpstats.AckLen, 3))
	st, err := tcp.Fetch(tcpstats.AckLen, voi.Hist)
	require.NoError(t, err)
	for bump := range 3 {
		p := append([]byte(nil), tcp.Bytes()...)
		at := bytes.Index(p, st.Data) + 8 + 16*bump // bucket bump's lower bound
		p[at] += byte(bump + 1)
		bl, err := blob.FromBytes(p, nil)
		require.NoError(t, err)
		for _, f := range []Format{JSON, FreeForm} {
			noSkeletons = true
			want, err := Append(nil, bl, Options{Format: f})
			noSkeletons = false
			require.NoError(t, err)
			got, err := Append(nil, bl, Options{Format: f})
			require.NoError(t, err)
			require.Equal(t, string(want), string(got))
		}
	}
	// A blob without VOIs renders as nothing either way.
	empty, err := reg.New("EMPTY")
	require.NoError(t, err)
	got, err := Append(nil, blob.New(empty, nil), Options{Format: JSON})
	require.NoError(t, err)
	require.Empty(t, got)
}

func TestSkeletonRenderAllocatesNothing(t *testing.T) {
	reg := tpl.NewRegistry()
	bl := blob.New(skelTemplates(t, reg)[0], nil)
	require.NoError(t, bl.UpdateU32(tcpstats.RTT, 300))
	o := Options{Format: JSON, Flags: Meta, Registry: reg}
	buf, err := Append(nil, bl, o)
	require.NoError(t, err)
	require.Zero(t, testing.AllocsPerRun(50, func() { buf, _ = Append(buf[:0], bl, o) }))
}
