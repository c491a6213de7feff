package blob_test

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/hist"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// TestMarshalJSON: json.Marshal of a *Blob gives its structure and values,
// never "{}". The last CR bucket reaches the type's maximum; the C's
// clustering keeps the two 60s apart in a digest with free slots.
func TestMarshalJSON(t *testing.T) {
	tp, err := tpl.NewRegistry().New("J")
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "n", DType: voi.IntS32, Stats: []tpl.StatSpec{tpl.Sum(), tpl.Min()}}))
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 2, Name: "h", DType: voi.IntU32, Stats: []tpl.StatSpec{
		tpl.Histogram(hist.Spec{DType: voi.CRHist32, Scheme: hist.Lin, LB: 0, UB: 100, StepInc: 50}),
		tpl.TDigest(voi.TDgstClust32, 4, 4)}}))
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 3, Name: "q", DType: voi.QS64, Prec: 16, Stats: []tpl.StatSpec{tpl.Max()}}))
	b := blob.New(tp, fixedEnv())
	require.NoError(t, b.UpdateS32(0, -7))
	require.NoError(t, b.UpdateU32(2, 60))
	require.NoError(t, b.UpdateU32(2, 60))
	require.NoError(t, b.UpdateU32(2, 5))
	require.NoError(t, b.UpdateFloat(3, -1.25))

	got, err := json.Marshal(struct{ B *blob.Blob }{b})
	require.NoError(t, err)
	require.True(t, json.Valid(got))
	require.Equal(t, `{"B":{"tplhash":`+jsonHash(tp)+`,"created":"1970-01-01T00:16:40Z","lastreset":"1970-01-01T00:16:40Z","vois":[`+
		`{"id":0,"dtype":"INT_S32","stats":[{"type":"SUM","dtype":"INT_S32","value":-7},{"type":"MIN","dtype":"INT_S32","value":-7}]},`+
		`{"id":2,"dtype":"INT_U32","stats":[{"type":"HIST","dtype":"CRHIST32","oob":0,"buckets":[{"lb":0,"ub":50,"count":1},{"lb":50,"ub":100,"count":2},{"lb":100,"ub":4294967295,"count":0}]},`+
		`{"type":"TDGST","dtype":"TDGSTCLUST32","count":3,"centroids":[{"mean":5,"count":1},{"mean":60,"count":1},{"mean":60,"count":1}]}]},`+
		`{"id":3,"dtype":"Q_S64","stats":[{"type":"MAX","dtype":"Q_S64","value":-1.25}]}]}}`, string(got))
}

func jsonHash(t *tpl.Template) string { return strconv.FormatUint(uint64(t.Hash()), 10) }

// TestShardedMarshalJSON: json.Marshal of a *Sharded is its snapshot's
// JSON form, and leaves the shards as they are.
func TestShardedMarshalJSON(t *testing.T) {
	tp, err := tpl.NewRegistry().New("S")
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "n", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}))
	s := blob.NewSharded(tp, 2, func() int64 { return blob.SBinTime(1000, 0) })
	require.NoError(t, s.UpdateU64(0, 5))
	require.NoError(t, s.UpdateU64(0, 7))
	got, err := json.Marshal(s)
	require.NoError(t, err)
	require.Equal(t, `{"tplhash":`+jsonHash(tp)+`,"created":"1970-01-01T00:16:40Z","lastreset":"1970-01-01T00:16:40Z","vois":[`+
		`{"id":0,"dtype":"INT_U64","stats":[{"type":"SUM","dtype":"INT_U64","value":12}]}]}`, string(got))
	again, err := json.Marshal(s)
	require.NoError(t, err)
	require.Equal(t, got, again, "the shards are not reset")
}
