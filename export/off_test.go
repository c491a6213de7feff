package export_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/export"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// TestNamedOff: the VOIs Off reports, and the derived metrics that read
// them, are left out; the others are exported as without Off.
func TestNamedOff(t *testing.T) {
	tp, err := tpl.NewRegistry().New("C")
	require.NoError(t, err)
	for id, name := range []string{"hits", "lookups", "bytes"} {
		require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: int32(id), Name: name, DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}))
	}
	require.NoError(t, tp.SetDerived([]tpl.Derived{{Name: "hit_ratio", Op: tpl.OpRatio, Of: "hits", By: "lookups"}}))
	b := blob.New(tp, blob.NewEnv(func() int64 { return blob.SBinTime(1_700_000_000, 0) }, 1))
	for id, v := range []uint64{3, 4, 1500} {
		require.NoError(t, b.UpdateU64(int32(id), v))
	}
	m, err := export.NewMapper(export.Options{})
	require.NoError(t, err)
	names := func(off func(int32) bool) map[string]float64 {
		ms, err := m.Append(nil, export.Named{Blob: b, Template: tp, Off: off})
		require.NoError(t, err)
		out := map[string]float64{}
		for _, mt := range ms {
			out[mt.Name] = mt.Value
		}
		return out
	}
	require.Equal(t, map[string]float64{"c_hits": 3, "c_lookups": 4, "c_bytes": 1500, "c_hit_ratio": 0.75}, names(nil))
	require.Equal(t, map[string]float64{"c_hits": 3, "c_lookups": 4, "c_hit_ratio": 0.75}, names(func(id int32) bool { return id == 2 }))
	require.Equal(t, map[string]float64{"c_hits": 3, "c_bytes": 1500}, names(func(id int32) bool { return id == 1 }))
	require.Empty(t, names(func(int32) bool { return true }))
}
