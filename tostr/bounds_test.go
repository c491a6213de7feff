package tostr_test

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/hist"
	"github.com/statsblob/statsblob/tdigest"
	"github.com/statsblob/statsblob/tostr"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// maximal returns blobs near the 65535-byte limit that stress decoding and
// rendering: thousands of vacant VOI slots, a histogram of thousands of
// buckets, a t-digest of thousands of centroids.
func maximal(t *testing.T) map[string]*blob.Blob {
	t.Helper()
	reg := tpl.NewRegistry()
	env := blob.NewEnv(func() int64 { return blob.SBinTime(1000, 0) }, 1)
	out := map[string]*blob.Blob{}
	add := func(name string, d tpl.VOIDef) {
		tp, err := reg.New(name)
		require.NoError(t, err)
		require.NoError(t, tp.AddVOI(d))
		out[name] = blob.New(tp, env)
	}
	add("sparse", tpl.VOIDef{ID: 8100, Name: "v", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum(), tpl.Max(), tpl.Min()}})
	add("hist", tpl.VOIDef{ID: 0, Name: "v", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Histogram(hist.Spec{DType: voi.CRHist64, Scheme: hist.Lin, LB: 0, UB: 4000, StepInc: 1})}})
	add("tdigest", tpl.VOIDef{ID: 0, Name: "v", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.TDigest(voi.TDgstClust64, 2700, 4)}})
	for i := uint64(0); i < 5000; i++ {
		require.NoError(t, out["hist"].UpdateU64(0, i))
		require.NoError(t, out["tdigest"].UpdateU64(0, i*7919%100000))
	}
	return out
}

// TestResourceBounds pins the documented limits (README, Untrusted input):
// decoding allocates less than 4 bytes per input byte, and every rendering
// of a blob is shorter than 3 bytes of text per blob byte.
func TestResourceBounds(t *testing.T) {
	for name, bl := range maximal(t) {
		p := bl.Bytes()
		require.Greater(t, len(p), 60000, name)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		got, err := blob.FromBytes(p, nil)
		runtime.ReadMemStats(&after)
		require.NoError(t, err, name)
		alloc := after.TotalAlloc - before.TotalAlloc
		t.Logf("%s: %d bytes, decoding allocated %d bytes (%.1f per byte)", name, len(p), alloc, float64(alloc)/float64(len(p)))
		require.Less(t, alloc, uint64(4*len(p)), name)
		for _, f := range []tostr.Format{tostr.FreeForm, tostr.JSON} {
			text, err := tostr.Append(nil, got, tostr.Options{Format: f, Flags: tostr.Objdump})
			require.NoError(t, err)
			t.Logf("%s %v objdump: %d bytes of text (%.2f per byte)", name, f, len(text), float64(len(text))/float64(len(p)))
			require.Less(t, len(text), 3*len(p), name)
		}
		if name == "tdigest" {
			st, _ := got.Fetch(0, voi.TDgst)
			n, _ := tdigest.Count(st.Data, st.DType)
			require.Equal(t, uint64(5000), n)
		}
	}
}
