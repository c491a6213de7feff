package aggregate_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/export"
	"github.com/statsblob/statsblob/export/aggregate"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// TestResetVOIs: a reset aggregate is what blob.ResetVOI makes of it,
// queued blobs included; other templates and VOIs keep their statistics,
// and later adds count from the reset.
func TestResetVOIs(t *testing.T) {
	reg := tpl.NewRegistry()
	conn, err := reg.New("CONN")
	require.NoError(t, err)
	require.NoError(t, conn.AddVOI(tpl.VOIDef{ID: 0, Name: "bytes", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}))
	require.NoError(t, conn.AddVOI(tpl.VOIDef{ID: 1, Name: "lat", DType: voi.IntU32,
		Stats: []tpl.StatSpec{tpl.Max(), tpl.TDigest(voi.TDgstClust32, 20, 4)}}))
	other := latTpl(t)
	s, err := aggregate.New(aggregate.Config{Batch: 4}, time.Unix(1_700_000_000, 0))
	require.NoError(t, err)
	add := func(key string, tp *tpl.Template, i int) {
		b := blob.New(tp, blob.NewEnv(nil, uint32(i)))
		if tp == conn {
			require.NoError(t, b.UpdateU64(0, uint64(100*i)))
			require.NoError(t, b.UpdateU32(1, uint32(1000+i)))
		} else {
			require.NoError(t, b.UpdateU32(0, uint32(i)))
		}
		d, err := blob.FromBytes(b.Bytes(), nil)
		require.NoError(t, err)
		require.NoError(t, s.Add(key, tp, []export.Label{{Name: "k", Value: key}}, d))
	}
	for i := 1; i <= 10; i++ { // two folded batches and two queued blobs
		add("a", conn, i)
	}
	add("b", conn, 11)
	add("c", other, 12)
	before := s.Blobs()
	merged := s.Merged()

	n, err := s.ResetVOIs(func(wide *tpl.Template) []int32 {
		if wide.Name() == "CONN" {
			return []int32{1}
		}
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, 2, n)
	after := s.Blobs()
	require.Len(t, after, 3)
	for i, a := range after {
		want := before[i].Blob
		if a.Template.Name() == "CONN" {
			want = want.Clone()
			require.NoError(t, want.ResetVOI(1))
		}
		require.Equal(t, want.Bytes(), a.Blob.Bytes(), a.Labels)
	}
	require.Equal(t, merged, s.Merged(), "the blobs added are still counted")

	add("a", conn, 20)
	got := s.Blobs()[0].Blob
	sum, err := got.Fetch(0, voi.Sum)
	require.NoError(t, err)
	v, _ := sum.Value()
	require.Equal(t, float64(100*(55+20)), v, "bytes kept")
	mx, err := got.Fetch(1, voi.Max)
	require.NoError(t, err)
	v, _ = mx.Value()
	require.Equal(t, 1020.0, v, "lat counts from the reset")

	_, err = s.ResetVOIs(func(*tpl.Template) []int32 { return []int32{7} })
	require.ErrorIs(t, err, voi.ErrInvalid)
}
