package tostr_test

import (
	"encoding/json"
	"testing"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/hist"
	"github.com/statsblob/statsblob/internal/tcpstats"
	"github.com/statsblob/statsblob/tdigest"
	"github.com/statsblob/statsblob/tostr"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// FuzzDecodeRenderMergeQuery: a blob that passes validation renders in
// every format without a panic (JSON renderings are valid JSON), merges
// into a copy of itself keeping a valid blob, and answers histogram and
// t-digest queries.
func FuzzDecodeRenderMergeQuery(f *testing.F) {
	reg := tpl.NewRegistry()
	t, err := tcpstats.New(reg)
	if err != nil {
		f.Fatal(err)
	}
	env := blob.NewEnv(func() int64 { return blob.SBinTime(1000, 0) }, 1)
	b := blob.New(t, env)
	f.Add(append([]byte(nil), b.Bytes()...))
	for i := uint32(0); i < 500; i++ {
		_ = b.UpdateU32(tcpstats.RTT, i*37%1000)
		_ = b.UpdateU32(tcpstats.AckLen, i%14)
		_ = b.UpdateS32(tcpstats.GPutND, int32(i%200)-100)
	}
	f.Add(append([]byte(nil), b.Bytes()...))
	f.Fuzz(func(t *testing.T, p []byte) {
		bl, err := blob.FromBytes(p, env)
		if err != nil {
			return
		}
		for _, fm := range []tostr.Format{tostr.FreeForm, tostr.JSON} {
			for _, fl := range []tostr.Flags{0, tostr.Objdump, tostr.Meta, tostr.Objdump | tostr.Meta} {
				out, err := tostr.Append(nil, bl, tostr.Options{Format: fm, Flags: fl, Registry: reg})
				if err == nil && fm == tostr.JSON && len(out) > 0 && !json.Valid(out) {
					t.Fatalf("invalid JSON (%v): %s", fl, out)
				}
			}
		}
		if _, err := json.Marshal(tostr.JSONMarshaler{Blob: bl}); err != nil {
			t.Fatal(err)
		}
		for s := range bl.Walk(0) {
			switch s.Stat.Type {
			case voi.Hist:
				_ = hist.Count(s.Data, s.Stat.DType)
			case voi.TDgst:
				_, _ = tdigest.Quantile(s.Data, s.Stat.DType, 0.9)
				_, _ = tdigest.CDF(s.Data, s.Stat.DType, 10)
			}
		}
		c := bl.Clone()
		_ = blob.Merge(c, bl)
		if err := blob.Validate(c.Bytes()); err != nil {
			t.Fatalf("merged blob invalid: %v", err)
		}
	})
}
