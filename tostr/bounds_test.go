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
// buckets, a t-digest of thousands of centroids, and as many one-statistic
// VOIs as fit (tiny histograms and digests, sums, Q values).
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
	// As many small histograms as fit: each has a plan entry and a lookup;
	// "spanning" ones have bounds 4095 keys apart (the widest window that
	// still gets a counter table, were tables not bounded by data size).
	many := func(name string, dt voi.DType, prec int, stats ...tpl.StatSpec) {
		tp, err := reg.New(name)
		require.NoError(t, err)
		gap := int32(1)
		if name == "hists among vacant slots" {
			gap = 8 // about as many bytes of vacant VOI slots as of histograms
		}
		for id := int32(0); ; id += gap {
			err := tp.AddVOI(tpl.VOIDef{ID: id, Name: "h", DType: dt, Prec: prec, Stats: stats})
			if err != nil {
				require.ErrorIs(t, err, voi.ErrTooBig)
				break
			}
		}
		out[name] = blob.New(tp, env)
	}
	many("tiny hists", voi.IntU64, 0, tpl.Histogram(hist.Spec{DType: voi.DVHist32, Scheme: hist.Usr, Buckets: []hist.Bound{{LB: 7, UB: 7}}}))
	many("hists among vacant slots", voi.IntU64, 0, tpl.Histogram(hist.Spec{DType: voi.DVHist32, Scheme: hist.Usr, Buckets: []hist.Bound{{LB: 7, UB: 7}}}))
	many("spanning hists", voi.IntU64, 0, tpl.Histogram(hist.Spec{DType: voi.CRHist32, Scheme: hist.Usr, Buckets: []hist.Bound{{LB: 1}, {LB: 4095}}}))
	many("sums", voi.IntU64, 0, tpl.Sum())
	many("q sums", voi.QU64, 64, tpl.Sum())
	many("q min max", voi.QS64, 64, tpl.Max(), tpl.Min())
	many("tiny digests", voi.IntU64, 0, tpl.TDigest(voi.TDgstClust32, 1, 4))
	for i := uint64(0); i < 5000; i++ {
		require.NoError(t, out["hist"].UpdateU64(0, i))
		require.NoError(t, out["tdigest"].UpdateU64(0, i*7919%100000))
	}
	return out
}

// TestResourceBounds pins the documented limits (README, Untrusted input):
// decoding allocates less than 4 bytes per input byte, validating
// allocates nothing, and every rendering
// of a blob (without META's names) is shorter than 12 bytes of text per
// blob byte. The worst shapes are blobs packed with one-statistic VOIs
// (each VOI costs a header line and a vacant slot) whose values are Q
// numbers of 64 fractional bits (up to 85 characters for 8 bytes): about 9.
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
		require.Zero(t, testing.AllocsPerRun(5, func() { require.NoError(t, blob.Validate(p)) }), name)
		for _, f := range []tostr.Format{tostr.FreeForm, tostr.JSON} {
			text, err := tostr.Append(nil, got, tostr.Options{Format: f, Flags: tostr.Objdump})
			require.NoError(t, err)
			t.Logf("%s %v objdump: %d bytes of text (%.2f per byte)", name, f, len(text), float64(len(text))/float64(len(p)))
			require.Less(t, len(text), 12*len(p), name)
		}
		if name == "tdigest" {
			st, _ := got.Fetch(0, voi.TDgst)
			n, _ := tdigest.Count(st.Data, st.DType)
			require.Equal(t, uint64(5000), n)
		}
	}
}
