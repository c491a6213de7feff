package hist

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/statsblob/statsblob/voi"
)

// FuzzBuildUpdate builds random specs and counts random values: Build never
// panics and fails only with EINVAL or EFBIG; built data has the size its
// buckets need; every lookup (Update's scan, Layout) picks the bucket of
// the reference scan; each update adds exactly one count; the estimates do
// not panic.
func FuzzBuildUpdate(f *testing.F) {
	le := func(vs ...uint64) []byte {
		b := make([]byte, 8*len(vs))
		for i, v := range vs {
			binary.LittleEndian.PutUint64(b[8*i:], v)
		}
		return b
	}
	f.Add(uint8(voi.CRHist64), uint8(voi.IntU64), uint8(Lin), uint32(0), uint64(0), uint64(990), uint64(10), uint64(0), []byte(nil), le(0, 5, 990, 1000, 1<<63))
	f.Add(uint8(voi.CRHist32), uint8(voi.IntS32), uint8(Lin), uint32(3), uint64(1<<64-20), uint64(20), uint64(10), uint64(0), []byte(nil), le(1<<64-21, 0, 19, 20))
	f.Add(uint8(voi.DRHist32), uint8(voi.QS32), uint8(Lin), uint32(3), uint64(0x5003), uint64(0xA003), uint64(1), uint64(0), []byte(nil), le(0x5803, 0x80005803, 0x5004))
	f.Add(uint8(voi.CRHist64), uint8(voi.IntU32), uint8(Exp), uint32(0), uint64(1), uint64(100000), uint64(10), uint64(1), []byte(nil), le(0, 9, 10, 11, 99999))
	f.Add(uint8(voi.CRHist32), uint8(voi.QU32), uint8(LinExp), uint32(2), uint64(0x13), uint64(0x5013), uint64(10), uint64(4), []byte(nil), le(0x23, 0x4013))
	f.Add(uint8(voi.DRHist64), uint8(voi.IntS64), uint8(Usr), uint32(1), uint64(0), uint64(0), uint64(0), uint64(0), le(5, 10, 0, 7, 1<<64-3, 3), le(6, 4, 1<<64-4))
	f.Add(uint8(voi.DVHist32), uint8(voi.QS64), uint8(Usr), uint32(0), uint64(0), uint64(0), uint64(0), uint64(0), le(0x13, 0x13, 0x8000000000000013, 0, 0x14, 0), le(0x13, 0x17, 0x8000000000000013))
	f.Fuzz(func(t *testing.T, hdt, vdt, scheme uint8, flags uint32, lb, ub, a, b uint64, bkts, vals []byte) {
		hdt = uint8(voi.CRHist32) + hdt%6
		dt := voi.DType(vdt % 12) // mostly numeric, 0 and 11 invalid
		sp := Spec{DType: voi.DType(hdt), Scheme: Scheme(scheme % 5), Flags: Flags(flags), LB: lb, UB: ub}
		switch sp.Scheme {
		case Lin:
			sp.StepInc = a
		case Exp:
			sp.StepBase, sp.StepExp = a, b
		case LinExp:
			sp.StepBase, sp.LinStepDiv = a, b
		}
		for i := 0; i+16 <= len(bkts); i += 16 {
			sp.Buckets = append(sp.Buckets, Bound{binary.LittleEndian.Uint64(bkts[i:]), binary.LittleEndian.Uint64(bkts[i+8:])})
		}
		data, err := sp.Build(dt)
		if err != nil {
			if !errors.Is(err, voi.ErrInvalid) && !errors.Is(err, voi.ErrTooBig) {
				t.Fatalf("%+v on %v: %v", sp, dt, err)
			}
			return
		}
		g, _ := geomOf(sp.DType)
		n := NumBuckets(sp.DType, len(data))
		if n == 0 || len(data) != DataSize(sp.DType, n) || len(data) > maxDataSize {
			t.Fatalf("%+v on %v: %d bytes", sp, dt, len(data))
		}
		l, err := NewLayout(data, sp.DType, dt)
		if err != nil {
			t.Fatal(err)
		}
		o := orderOf(dt)
		viaLayout := bytes.Clone(data)
		for i := 0; i+8 <= len(vals); i += 8 {
			v := binary.LittleEndian.Uint64(vals[i:])
			want := scanRef(data, g, o, v)
			if got := g.scan(data, o, v); got != want {
				t.Fatalf("scan %+v on %v, v=%#x: %d, want %d", sp, dt, v, got, want)
			}
			if got := l.Find(data, v); got != want {
				t.Fatalf("layout %+v on %v, v=%#x: %d, want %d", sp, dt, v, got, want)
			}
			before := Count(data, sp.DType) + OOB(data, sp.DType)
			if err := Update(data, sp.DType, dt, v); err != nil {
				t.Fatal(err)
			}
			if after := Count(data, sp.DType) + OOB(data, sp.DType); after != before+1 {
				t.Fatalf("%+v: counts %d -> %d", sp, before, after)
			}
			if err := l.Update(viaLayout, v); err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.Equal(data, viaLayout) {
			t.Fatalf("%+v on %v: Layout.Update and Update differ", sp, dt)
		}
		for _, q := range []float64{0, 0.5, 1} {
			if _, err := Quantile(data, sp.DType, dt, q); err != nil && !errors.Is(err, ErrEmpty) {
				t.Fatal(err)
			}
		}
		if _, err := CDF(data, sp.DType, dt, 1); err != nil && !errors.Is(err, ErrEmpty) {
			t.Fatal(err)
		}
	})
}
