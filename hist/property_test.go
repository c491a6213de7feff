package hist

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/statsblob/statsblob/voi"
)

// specGen draws random histogram specs and values that stress the corners
// of the lookup: every histogram and VOI type, all schemes and flags, bounds
// near the types' extremes and around zero, 32-bit bounds with arbitrary
// high halves, Q bounds of mixed precisions, unsorted and overlapping user
// buckets.
type specGen struct{ r *rand.Rand }

var numericTypes = []voi.DType{voi.IntS32, voi.IntU32, voi.IntS64, voi.IntU64, voi.IntSLong,
	voi.IntULong, voi.QS32, voi.QU32, voi.QS64, voi.QU64}

// qraw returns the raw pattern of the Q type dt with control bits ctrl and
// combined integer/fraction value ifv (sign-magnitude, truncated to the
// type's field as the C's Q_SIFVAL would).
func qraw(dt voi.DType, ctrl uint64, ifv int64) uint64 {
	o := &orders[dt]
	mag := uint64(ifv)
	neg := ifv < 0
	if neg {
		mag = uint64(-ifv)
	}
	r := (mag<<3)&o.ifmask | ctrl
	if neg {
		r |= o.sign
	}
	return r
}

// value draws a pattern of type dt: a small number, an extreme, a random
// pattern, or one near a given pattern.
func (s *specGen) value(dt voi.DType, near []uint64, ctrl uint64) uint64 {
	r := s.r
	var v uint64
	switch x := r.IntN(10); {
	case x < 4 && len(near) > 0:
		v = near[r.IntN(len(near))]
		if dt.IsQ() {
			v += uint64(r.IntN(5)-2) << 3
		} else {
			v += uint64(r.IntN(5) - 2)
		}
	case x < 6:
		if dt.IsQ() {
			v = qraw(dt, ctrl, int64(r.IntN(2001)-1000))
		} else {
			v = uint64(r.IntN(2001) - 1000)
		}
	case x < 7:
		v = []uint64{voi.LimitMin(dt), voi.LimitMax(dt), 0, 1, ^uint64(0), 1 << 63, 1 << 31, 0x7FFFFFFF}[r.IntN(8)]
	default:
		v = r.Uint64()
	}
	if dt.IsQ() && r.IntN(8) != 0 {
		v = v&^7 | ctrl // mostly the histogram's precision
	}
	if dt.Is32() && r.IntN(2) == 0 {
		v = uint64(uint32(v)) | r.Uint64()<<32 // the high half must not matter
	}
	return v
}

// spec draws a spec for a VOI of type dt.
func (s *specGen) spec(dt voi.DType) Spec {
	r := s.r
	sp := Spec{DType: voi.CRHist32 + voi.DType(r.IntN(6))}
	if r.IntN(3) == 0 {
		sp.Flags = Flags(r.IntN(4))
		if r.IntN(10) == 0 {
			sp.Flags |= Flags(r.Uint32()) &^ 3 // ignored bits
		}
	}
	ctrl := uint64(r.IntN(8))
	num := func(v int64) uint64 {
		if dt.IsQ() {
			return qraw(dt, ctrl, v<<nfOf(dt, ctrl))
		}
		return uint64(v)
	}
	switch x := r.IntN(20); {
	case x < 8:
		sp.Scheme = Lin
		lb := int64(r.IntN(2001) - 1000)
		if r.IntN(4) == 0 {
			lb = int64(r.Uint64() >> (1 + r.IntN(63)))
		}
		step := int64(1 + r.IntN(50))
		sp.LB, sp.StepInc = num(lb), uint64(step)
		sp.UB = num(lb + step*int64(r.IntN(80)))
		if r.IntN(10) == 0 {
			sp.UB = num(lb - int64(r.IntN(100)))
		}
		if dt.Is32() && r.IntN(3) == 0 {
			sp.LB |= r.Uint64() << 32 // high halves travel with the bounds
		}
	case x < 10:
		sp.Scheme = Exp
		sp.LB = num(int64(r.IntN(200) - 100))
		sp.UB = num(int64(r.IntN(1 << 20)))
		sp.StepBase = []uint64{2, 3, 4, 10}[r.IntN(4)]
		if r.IntN(20) == 0 {
			sp.StepBase = uint64(r.IntN(2)) // degenerate bases
			sp.UB = num(int64(r.IntN(5000)))
		}
		sp.StepExp = uint64(r.IntN(4))
	case x < 12:
		sp.Scheme = LinExp
		sp.LB = num(int64(r.IntN(100)))
		sp.UB = num(int64(r.IntN(1 << 14)))
		sp.StepBase = uint64(2 + r.IntN(9))
		sp.LinStepDiv = uint64(1 + r.IntN(10))
	default:
		sp.Scheme = Usr
		n := 1 + r.IntN(40)
		sorted := r.IntN(3) != 0
		cur := int64(r.IntN(2001) - 1000)
		for range n {
			var lb int64
			if sorted {
				cur += int64(r.IntN(30))
				lb = cur
			} else {
				lb = int64(r.IntN(200) - 100)
			}
			w := int64(r.IntN(40))
			if r.IntN(10) == 0 {
				w = -w
			}
			b := Bound{num(lb), num(lb + w)}
			if sp.DType != voi.DRHist32 && sp.DType != voi.DRHist64 && r.IntN(2) == 0 {
				b.UB = b.LB
			}
			if dt.IsQ() && r.IntN(20) == 0 {
				b.LB = b.LB&^7 | uint64(r.IntN(8)) // mixed precisions
			}
			if dt.Is32() && r.IntN(4) == 0 {
				b.LB |= r.Uint64() << 32
			}
			if r.IntN(30) == 0 {
				b.LB = s.value(dt, nil, ctrl)
			}
			sp.Buckets = append(sp.Buckets, b)
		}
	}
	return sp
}

func nfOf(dt voi.DType, ctrl uint64) uint {
	if !dt.IsQ() {
		return 0
	}
	return uint(orders[dt].nf[ctrl])
}

// bounds returns every bound pattern of histogram data.
func bounds(data []byte, hdt, voiDT voi.DType) []uint64 {
	var bs []uint64
	for _, b := range Buckets(data, hdt, voiDT) {
		bs = append(bs, b.LB, b.UB)
	}
	return bs
}

// TestUpdateMatchesScan runs random (spec, value) pairs through every
// lookup (Update's scan, Layout.Find, Layout.Update) and holds them to the
// reference scan, bucket choice and final bytes. More than 10^6 pairs, in
// parallel shards.
func TestUpdateMatchesScan(t *testing.T) {
	const shards, specs, perSpec = 4, 7500, 50 // some specs fail to build
	nspecs := specs
	if testing.Short() {
		nspecs /= 10
	}
	var pairs, built, modes [3]atomic.Int64
	t.Run("shards", func(t *testing.T) {
		for shard := range uint64(shards) {
			t.Run(fmt.Sprint(shard), func(t *testing.T) {
				t.Parallel()
				s := specGen{rand.New(rand.NewPCG(1, 2+shard))}
				for range nspecs {
					dt := numericTypes[s.r.IntN(len(numericTypes))]
					sp := s.spec(dt)
					data, err := sp.Build(dt)
					if err != nil {
						continue
					}
					built[0].Add(1)
					l, err := NewLayout(data, sp.DType, dt)
					if err != nil {
						t.Fatal(err)
					}
					modes[l.mode].Add(1)
					g, _ := geomOf(sp.DType)
					o := orderOf(dt)
					ref, viaLayout, viaUpdate := bytes.Clone(data), bytes.Clone(data), bytes.Clone(data)
					near := bounds(data, sp.DType, dt)
					for range perSpec {
						v := s.value(dt, near, near[0]&7)
						want := scanRef(data, g, o, v)
						if got := g.scan(data, o, v); got != want {
							t.Fatalf("scan: %+v on %v, v=%#x: bucket %d, want %d", sp, dt, v, got, want)
						}
						if got := l.Find(data, v); got != want {
							t.Fatalf("Layout(mode %d): %+v on %v, v=%#x: bucket %d, want %d", l.mode, sp, dt, v, got, want)
						}
						g.add(ref, want)
						if err := l.Update(viaLayout, v); err != nil {
							t.Fatal(err)
						}
						if err := Update(viaUpdate, sp.DType, dt, v); err != nil {
							t.Fatal(err)
						}
					}
					pairs[0].Add(perSpec)
					if !bytes.Equal(viaLayout, ref) || !bytes.Equal(viaUpdate, ref) {
						t.Fatalf("%+v on %v: final bytes differ:\n ref    %x\n layout %x\n update %x", sp, dt, ref, viaLayout, viaUpdate)
					}
				}
			})
		}
	})
	t.Logf("%d pairs over %d built specs; layouts: %d scan, %d sorted, %d linear",
		pairs[0].Load(), built[0].Load(), modes[0].Load(), modes[1].Load(), modes[2].Load())
	if !testing.Short() && pairs[0].Load() < 1_000_000 {
		t.Errorf("only %d pairs", pairs[0].Load())
	}
}

// TestAcceptsMatchesQmath holds the package's bit-level comparisons of Q
// values to qmath's Q_QGEQ, Q_QLTQ and Q_QEQ, and its integer comparisons to
// Go's.
func TestAcceptsMatchesQmath(t *testing.T) {
	s := specGen{rand.New(rand.NewPCG(3, 4))}
	n := 200000
	if testing.Short() {
		n /= 10
	}
	for range n {
		dt := numericTypes[s.r.IntN(len(numericTypes))]
		ctrl := uint64(s.r.IntN(8))
		a := s.value(dt, nil, ctrl)
		b := s.value(dt, []uint64{a}, ctrl)
		ub := s.value(dt, []uint64{a, b}, ctrl)
		o := orderOf(dt)
		var ge, lt, eq bool
		switch dt {
		case voi.IntS32:
			ge, lt, eq = int32(a) >= int32(b), int32(a) < int32(ub), int32(a) == int32(b)
		case voi.IntU32:
			ge, lt, eq = uint32(a) >= uint32(b), uint32(a) < uint32(ub), uint32(a) == uint32(b)
		case voi.IntS64, voi.IntSLong:
			ge, lt, eq = int64(a) >= int64(b), int64(a) < int64(ub), a == b
		case voi.IntU64, voi.IntULong:
			ge, lt, eq = a >= b, a < ub, a == b
		default:
			qa, qb, qu := voi.AsQ(dt, a), voi.AsQ(dt, b), voi.AsQ(dt, ub)
			ge, lt, eq = qa.GE(qb), qa.LT(qu), qa.GE(qb) && qa.EQ(qb)
		}
		if got := o.accepts(kindCR, a, b, 0); got != ge {
			t.Fatalf("%v CR %#x >= %#x: %v, want %v", dt, a, b, got, ge)
		}
		if got := o.accepts(kindDR, a, b, ub); got != (ge && lt) {
			t.Fatalf("%v DR %#x in [%#x,%#x): %v, want %v", dt, a, b, ub, got, ge && lt)
		}
		if got := o.accepts(kindDV, a, b, 0); got != (ge && eq) {
			t.Fatalf("%v DV %#x == %#x: %v, want %v", dt, a, b, got, ge && eq)
		}
		if dt.IsQ() && a&7 == b&7 {
			// Same precision: the key order is the numeric order.
			if (o.qkey(a) >= o.qkey(b)) != ge {
				t.Fatalf("%v qkey(%#x) >= qkey(%#x) != %v", dt, a, b, ge)
			}
		}
	}
}
