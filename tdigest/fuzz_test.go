package tdigest_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/statsblob/statsblob/bsdrand"
	"github.com/statsblob/statsblob/tdigest"
	"github.com/statsblob/statsblob/tdigest/tdigesttest"
	"github.com/statsblob/statsblob/voi"
)

// FuzzUpdateMerge drives two digests through updates and merges chosen by
// the fuzzer and asserts the invariants after every operation: the digest
// validates (a red-black tree, means ascending, counts summing to smplcnt,
// a consistent free list), a successful update adds exactly one sample, a
// merge without error adds exactly the source's samples, and the failures
// are the documented ones.
func FuzzUpdateMerge(f *testing.F) {
	f.Add([]byte{0, 8, 4, 1, 0, 100, 0, 50, 0, 150, 0, 75})
	f.Add([]byte{1, 3, 16, 7, 1, 5, 2, 0xff, 0xff, 3, 9, 4, 1, 4, 2})
	f.Add([]byte{1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 4, 0, 4, 0})
	f.Add([]byte{0, 40, 9, 3, 2, 0x80, 0, 0, 0, 1, 2, 0xff})
	vdts := []voi.DType{voi.IntS32, voi.IntU32, voi.IntS64, voi.IntU64, voi.QS32, voi.QU32, voi.QS64, voi.QU64}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) < 4 {
			return
		}
		dt := voi.TDgstClust32
		if in[0]&1 == 1 {
			dt = voi.TDgstClust64
		}
		nctds := uint32(in[1]%48) + 1
		prec := uint32(in[2]%64) + 1
		if dt == voi.TDgstClust32 {
			prec = uint32(in[2]%16) + 1
		}
		env := &tdigest.Env{Rand: bsdrand.New(uint32(in[3]))}
		a, _ := tdigest.Build(dt, nctds, prec)
		b, _ := tdigest.Build(dt, nctds/2+1, prec)
		ops := in[4:]
		for len(ops) >= 2 {
			op, arg := ops[0], ops[1]
			ops = ops[2:]
			target := a
			if op&0x80 != 0 {
				target = b
			}
			switch op & 0x0f {
			case 15: // merge b into a
				before, _ := tdigest.Count(a, dt)
				add, _ := tdigest.Count(b, dt)
				err := tdigest.MergeAll(a, dt, b)
				after, _ := tdigest.Count(a, dt)
				if err == nil && after != before+add {
					t.Fatalf("merge of %d samples into %d gave %d", add, before, after)
				}
				if err != nil && !errors.Is(err, voi.ErrOverflow) && !errors.Is(err, voi.ErrAgain) &&
					!errors.Is(err, voi.ErrRange) {
					t.Fatalf("Merge: %v", err)
				}
			case 14: // reset
				tdigest.Reset(target, dt)
			default:
				vdt := vdts[int(op&0x0f)%len(vdts)]
				var v uint64
				if n := min(len(ops), int(arg%9)); n > 0 {
					var buf [8]byte
					copy(buf[:], ops[:n])
					v = binary.LittleEndian.Uint64(buf[:])
					ops = ops[n:]
				} else {
					v = uint64(arg)
				}
				before, _ := tdigest.Count(target, dt)
				err := tdigest.Update(target, dt, vdt, v, env)
				after, _ := tdigest.Count(target, dt)
				if err == nil && after != before+1 {
					t.Fatalf("update of %d gave %d samples", before, after)
				}
				if err != nil && !errors.Is(err, voi.ErrOverflow) && !errors.Is(err, voi.ErrAgain) &&
					!errors.Is(err, voi.ErrRange) {
					t.Fatalf("Update(%v, %#x): %v", vdt, v, err)
				}
			}
			for _, d := range [][]byte{a, b} {
				if err := tdigest.Validate(d, dt); err != nil {
					t.Fatalf("after op %#x: %v", op, err)
				}
			}
		}
		// The queries answer within their domains.
		tdigesttest.CheckQueries(t, a, dt)
		tdigesttest.CheckQueries(t, b, dt)
	})
}

// FuzzValidate feeds arbitrary bytes to the queries (a CDF stays in
// [0, 1]) and Validate and, when they pass, checks the queries' domains
// (tdigesttest.CheckQueries) and feeds them to Update, which must not panic and
// must leave a valid digest.
func FuzzValidate(f *testing.F) {
	env := &tdigest.Env{Rand: bsdrand.New(1)}
	for _, dt := range []voi.DType{voi.TDgstClust32, voi.TDgstClust64} {
		d, _ := tdigest.Build(dt, 5, 4)
		for _, v := range []uint64{3, 1, 4, 1, 5, 9, 2, 6} {
			_ = tdigest.Update(d, dt, voi.IntU32, v, env)
		}
		f.Add(byte(dt), d)
	}
	f.Fuzz(func(t *testing.T, kind byte, data []byte) {
		dt := voi.TDgstClust32
		if kind&1 == 1 {
			dt = voi.TDgstClust64
		}
		_ = tdigest.AppendText(nil, data, dt, kind&2 != 0, kind&4 != 0)
		_, _ = tdigest.Quantile(data, dt, 0.5)
		if p, err := tdigest.CDF(data, dt, 10); err == nil && !(p >= 0 && p <= 1) {
			t.Fatalf("CDF = %v", p)
		}
		if tdigest.Validate(data, dt) != nil {
			return
		}
		tdigesttest.CheckQueries(t, data, dt)
		for v := range uint64(20) {
			_ = tdigest.Update(data, dt, voi.IntU32, v*uint64(kind), env)
			if err := tdigest.Validate(data, dt); err != nil {
				t.Fatalf("a valid digest became invalid: %v", err)
			}
		}
	})
}

// FuzzMergeAll builds up to five digests of one geometry from the fuzzer's
// samples and merges them in two orders, with two choices of destination,
// asserting that the merge holds exactly their samples in a valid digest
// of the destination's geometry, that every merged centroid's mean lies
// between the least and the greatest sample, and that its bytes do not
// depend on the order.
func FuzzMergeAll(f *testing.F) {
	f.Add([]byte{0, 8, 4, 3, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})
	f.Add([]byte{1, 3, 16, 1, 0xff, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80, 0x90})
	f.Add([]byte{1, 20, 2, 4, 200, 1, 200, 2, 200, 3, 9, 9, 9, 9, 1, 1, 1, 7, 7, 7, 7, 7})
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) < 4 {
			return
		}
		dt := voi.TDgstClust32
		if in[0]&1 == 1 {
			dt = voi.TDgstClust64
		}
		nctds := uint32(in[1]%40) + 1
		prec := uint32(in[2]%16) + 1
		k := int(in[3]%5) + 1
		ds := make([][]byte, k)
		var want uint64
		lo, hi := math.Inf(1), math.Inf(-1)
		env := &tdigest.Env{Rand: bsdrand.New(1)}
		for i := range ds {
			ds[i], _ = tdigest.Build(dt, nctds, prec)
		}
		for i, b := range in[4:] {
			d := ds[i%k]
			// Spread small values over a wide range: b's low bits scaled by
			// its high bits.
			v := uint64(b&0x1f) << (b >> 5 * 3)
			if tdigest.Update(d, dt, voi.IntU32, v, env) == nil {
				want++
				lo, hi = min(lo, float64(v)), max(hi, float64(v))
			}
		}
		merge := func(order []int) []byte {
			dst := bytes.Clone(ds[order[0]])
			srcs := make([][]byte, 0, k-1)
			for _, i := range order[1:] {
				srcs = append(srcs, ds[i])
			}
			if err := tdigest.MergeAll(dst, dt, srcs...); err != nil {
				t.Fatalf("MergeAll: %v", err)
			}
			if err := tdigest.Validate(dst, dt); err != nil {
				t.Fatal(err)
			}
			if n, _ := tdigest.Count(dst, dt); n != want {
				t.Fatalf("merged %d samples into %d", want, n)
			}
			for c := range tdigest.Centroids(dst, dt) {
				if m := c.Mean(); m < lo || m > hi {
					t.Fatalf("merged centroid %v (of %d samples) outside the samples' [%v, %v]", m, c.Count, lo, hi)
				}
			}
			return dst
		}
		fwd := make([]int, k)
		for i := range fwd {
			fwd[i] = i
		}
		rev := slices.Clone(fwd)
		slices.Reverse(rev)
		if a, b := merge(fwd), merge(rev); !bytes.Equal(a, b) {
			t.Fatalf("MergeAll depends on the order of its inputs")
		}
	})
}
