package tostr_test

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/hist"
	"github.com/statsblob/statsblob/internal/tcpstats"
	"github.com/statsblob/statsblob/tdigest/tdigesttest"
	"github.com/statsblob/statsblob/tostr"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// FuzzDecodeRenderMergeQuery: a blob that passes validation renders in
// every format without a panic (JSON renderings are valid JSON), merges
// into a copy of itself keeping a valid blob (or, failing, leaving the copy
// as it was), and both answer histogram and
// t-digest queries within their domains (see tdigesttest.CheckQueries;
// histogram CDFs in [0, 1]).
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
		for _, s := range bl.Stats() {
			switch s.Type {
			case voi.Hist:
				_ = hist.Count(s.Data, s.DType)
				for _, x := range []float64{-1e19, -1, 0, 10, 1e6, 1e19} {
					if p, err := s.CDF(x); err == nil && !(p >= 0 && p <= 1) {
						t.Fatalf("VOI %d: histogram CDF(%v) = %v", s.VOI, x, p)
					}
				}
			case voi.TDgst:
				tdigesttest.CheckQueries(t, s.Data, s.DType)
			}
		}
		for id := range bl.VOIs() {
			for _, q := range []float64{0, 0.5, 1} {
				if x, err := bl.Quantile(id, q); err == nil && math.IsNaN(x) {
					t.Fatalf("VOI %d: Quantile(%v) is NaN", id, q)
				}
			}
		}
		c := bl.Clone()
		if err := blob.Compatible(c, bl); err != nil {
			t.Fatalf("a blob is incompatible with its clone: %v", err)
		}
		if err := blob.Merge(c, bl); err != nil && string(c.Bytes()) != string(bl.Bytes()) {
			t.Fatalf("a failed merge (%v) changed the blob", err)
		}
		if err := blob.Validate(c.Bytes()); err != nil {
			t.Fatalf("merged blob invalid: %v", err)
		}
		for _, s := range c.Stats() {
			if s.Type == voi.TDgst {
				tdigesttest.CheckQueries(t, s.Data, s.DType)
			}
		}
	})
}
