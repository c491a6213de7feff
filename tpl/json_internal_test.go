package tpl

import (
	"encoding/json"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/hist"
	"github.com/statsblob/statsblob/voi"
)

// TestAddVOIsMatchesAddVOI: the in-place growth of addVOIs (ReadJSON's)
// gives the bytes, hash and names of AddVOI called once per VOI, on VOIs
// added out of id order with gaps and every kind of statistic.
func TestAddVOIsMatchesAddVOI(t *testing.T) {
	var defs []VOIDef
	for i := range 300 {
		id := int32((i * 7919) % 450) // out of order, with vacant ids
		d := VOIDef{ID: id, Name: "v" + string(rune('a'+i%26)), DType: voi.IntU64, Stats: []StatSpec{Sum()}}
		switch i % 4 {
		case 1:
			d.Stats = []StatSpec{Max(), Min(), Histogram(hist.Spec{DType: voi.CRHist32, Scheme: hist.Lin, LB: 0, UB: 40, StepInc: 10})}
		case 2:
			d.DType, d.Stats = voi.IntU32, []StatSpec{TDigest(voi.TDgstClust32, 3, 4)}
		case 3:
			d.DType, d.Prec, d.Flags = voi.QS64, 16, voi.FlagRelUpdate
		}
		defs = append(defs, d)
	}
	one, err := NewRegistry().New("T")
	require.NoError(t, err)
	for _, d := range defs {
		require.NoError(t, one.AddVOI(d))
	}
	bulk, err := NewRegistry().New("T")
	require.NoError(t, err)
	require.NoError(t, bulk.addVOIs(defs))
	require.Equal(t, one.Bytes(), bulk.Bytes())
	require.Equal(t, one.Hash(), bulk.Hash())
	require.Equal(t, one.VOIs(), bulk.VOIs())
	for id := range int32(450) {
		n1, ok1 := one.VOIName(id)
		n2, ok2 := bulk.VOIName(id)
		require.Equal(t, ok1, ok2)
		require.Equal(t, n1, n2)
	}
	// And it fails as AddVOI does, at the VOI that fails.
	again, err := NewRegistry().New("T")
	require.NoError(t, err)
	err = again.addVOIs(append(defs[:3:3], defs[0]))
	require.ErrorIs(t, err, voi.ErrVOIExists)
	require.ErrorContains(t, err, `add VOI 0 ("va"): VOI 0 is already defined`)
}

// TestReadJSONLargestTemplate: reading the largest template (2,339 VOIs)
// allocates about 3 MB; before, its VOIs were added one by one, each
// copying the template blob and the name table, 139 MB in all.
func TestReadJSONLargestTemplate(t *testing.T) {
	if raceEnabled {
		t.Skip("building the largest template takes 15 s under -race; go test ./tpl runs it")
	}
	var defs []VOIDef
	for id := range int32(MaxJSONVOIs) {
		defs = append(defs, VOIDef{ID: id, Name: "v", DType: voi.IntU32, Stats: []StatSpec{Sum()}})
	}
	big, err := NewRegistry().New("BIG")
	require.NoError(t, err)
	require.NoError(t, big.addVOIs(defs))
	require.ErrorIs(t, big.AddVOI(VOIDef{ID: MaxJSONVOIs, Name: "v", DType: voi.IntU32, Stats: []StatSpec{Sum()}}), voi.ErrTooBig)
	data, err := json.Marshal(big)
	require.NoError(t, err)

	var got *Template
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	got, err = ReadJSON(NewRegistry(), data)
	runtime.ReadMemStats(&after)
	require.NoError(t, err)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("largest template: %d bytes of JSON, %d allocated", len(data), alloc)
	require.Less(t, alloc, uint64(6*len(data)+8<<20))
	require.Equal(t, big.Bytes(), got.Bytes())
	require.Equal(t, big.Hash(), got.Hash())
}
