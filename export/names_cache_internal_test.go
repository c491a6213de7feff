package export

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// Every input of Mapper.name changes the cache's key, and a cached result
// is what naming afresh gives.
func TestNameCacheKey(t *testing.T) {
	base := func() []*voiStats {
		a := &voiStats{id: 0, dt: voi.IntU32, name: "lat_us", voiMeta: voiMeta{meta: tpl.VOIMeta{Unit: "us"}}}
		a.stats[voi.Sum] = &blob.Stat{}
		a.unit = "us"
		b := &voiStats{id: 1, dt: voi.IntU64, name: "bytes"}
		b.stats[voi.Max] = &blob.Stat{}
		return []*voiStats{a, b}
	}
	ref := string(nameKey(nil, "T", base()))
	lvl := 1.0
	for name, change := range map[string]func(v []*voiStats){
		"id":     func(v []*voiStats) { v[1].id = 2 },
		"name":   func(v []*voiStats) { v[1].name = "bytes2" },
		"unit":   func(v []*voiStats) { v[0].unit = "ms" },
		"hidden": func(v []*voiStats) { v[1].hidden = true },
		"level":  func(v []*voiStats) { v[1].level = &lvl },
		"stat":   func(v []*voiStats) { v[1].stats[voi.Min] = &blob.Stat{} },
		"kind":   func(v []*voiStats) { v[0].meta.Kind = tpl.KindGauge },
		"hist":   func(v []*voiStats) { v[1].hv = &histView{shape: shapeCounters} },
		"vois":   func(v []*voiStats) { v[1] = v[0] },
	} {
		v := base()
		change(v)
		require.NotEqual(t, ref, string(nameKey(nil, "T", v)), name)
	}
	require.NotEqual(t, ref, string(nameKey(nil, "U", base())), "template")
	// Names holding the bytes a separator would be: still two keys.
	a, b := base(), base()
	a[0].name, a[0].unit = "x\x00", "y"
	b[0].name, b[0].unit = "x", "\x00y"
	require.NotEqual(t, string(nameKey(nil, "T", a)), string(nameKey(nil, "T", b)), "NUL in names")

	m, err := NewMapper(Options{})
	require.NoError(t, err)
	for range 2 { // made, then cached
		got, want := base(), base()
		require.NoError(t, m.cachedName("T", got))
		require.NoError(t, m.name("T", want))
		for i := range got {
			require.Equal(t, want[i].base, got[i].base)
			require.Equal(t, want[i].unit, got[i].unit)
		}
	}
	require.Len(t, m.names.m, 1)
}
