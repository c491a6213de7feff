package tpl_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/tdigest"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// TestTDigestModeOutsideBytes: the clustering mode is a spec and JSON
// field that leaves the template's bytes and hash as the C's.
func TestTDigestModeOutsideBytes(t *testing.T) {
	mk := func(r *tpl.Registry, mode tdigest.Mode) *tpl.Template {
		tp, err := r.New("RTT")
		require.NoError(t, err)
		require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "rtt", DType: voi.IntU32, Stats: []tpl.StatSpec{
			tpl.TDigestOf(tpl.TDigestSpec{DType: voi.TDgstClust32, NCtds: 20, Prec: 4, Mode: mode}),
		}}))
		return tp
	}
	c, acc := mk(tpl.NewRegistry(), tdigest.C), mk(tpl.NewRegistry(), tdigest.Accurate)
	require.Equal(t, c.Bytes(), acc.Bytes())
	require.Equal(t, c.Hash(), acc.Hash())
	require.Equal(t, tpl.TDigest(voi.TDgstClust32, 20, 4), c.VOIs()[0].Stats[0])
	require.Equal(t, tdigest.Accurate, acc.VOIs()[0].Stats[0].TDigest.Mode)

	data, err := json.Marshal(acc)
	require.NoError(t, err)
	require.Contains(t, string(data), `"mode":"accurate"`)
	got, err := tpl.ReadJSON(tpl.NewRegistry(), data)
	require.NoError(t, err)
	require.Equal(t, acc.VOIs(), got.VOIs())

	data, err = json.Marshal(c)
	require.NoError(t, err)
	require.NotContains(t, string(data), `"mode"`)

	bad := strings.Replace(string(mustJSON(t, acc)), `"accurate"`, `"fast"`, 1)
	_, err = tpl.ReadJSON(tpl.NewRegistry(), []byte(bad))
	require.ErrorIs(t, err, voi.ErrInvalid)
	require.ErrorContains(t, err, `t-digest mode "fast" (valid: c, accurate)`)

	tp, err := tpl.NewRegistry().New("X")
	require.NoError(t, err)
	err = tp.AddVOI(tpl.VOIDef{ID: 0, DType: voi.IntU32, Stats: []tpl.StatSpec{
		tpl.TDigestOf(tpl.TDigestSpec{DType: voi.TDgstClust32, NCtds: 20, Prec: 4, Mode: 7}),
	}})
	require.ErrorIs(t, err, voi.ErrInvalid)
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

// A t-digest declared in the accurate mode: the template's bytes and hash
// are those of the C-mode declaration, and the mode travels in the JSON.
func ExampleTDigestOf() {
	decl := func(m tdigest.Mode) *tpl.Template {
		t, _ := tpl.NewRegistry().New("LAT")
		_ = t.AddVOI(tpl.VOIDef{ID: 0, Name: "lat_us", DType: voi.IntU32, Stats: []tpl.StatSpec{
			tpl.TDigestOf(tpl.TDigestSpec{DType: voi.TDgstClust32, NCtds: 50, Prec: 4, Mode: m}),
		}})
		return t
	}
	acc, c := decl(tdigest.Accurate), decl(tdigest.C)
	js, _ := json.Marshal(acc)
	fmt.Println(acc.Hash() == c.Hash(), acc.VOIs()[0].Stats[0].TDigest.Mode)
	fmt.Println(strings.Contains(string(js), `"tdigest":{"dtype":"TDGSTCLUST32","nctds":50,"prec":4,"mode":"accurate"}`))
	// Output:
	// true accurate
	// true
}
