package tdigest

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/statsblob/statsblob/bsdrand"
	"github.com/statsblob/statsblob/qmath"
	"github.com/statsblob/statsblob/voi"
)

// A slow oracle: stats_v1_voi_update_tdgst, stats_v1_vsd_tdgst_add and
// stats_v1_vsd_tdgst_compress written step by step with package qmath's
// general Q operations (instead of the specialised int64 arithmetic) and
// the plain tree methods (instead of the inlined scan). Random operation
// sequences must leave the same bytes, errors and random() draws in both.

type refDigest[N node] struct {
	digest[N]
}

func (d *refDigest[N]) mu(i int) qmath.Q {
	if is32[N]() {
		return qmath.New(qmath.S32, d.muRaw(i))
	}
	return qmath.New(qmath.S64, d.muRaw(i))
}

func (d *refDigest[N]) setMu(i int, q qmath.Q) {
	if is32[N]() {
		le.PutUint32(d.nodes[d.off(i)+8:], uint32(q.Raw))
	} else {
		le.PutUint64(d.nodes[d.off(i)+8:], q.Raw)
	}
}

// asS64 is the centroid mean as the search sees it: as is for 64-bit
// digests, Q_QCLONEQ'd for 32-bit ones (defect 5 fixed).
func (d *refDigest[N]) asS64(i int) qmath.Q {
	if !is32[N]() {
		return d.mu(i)
	}
	z, err := qmath.CloneQ(qmath.S64, d.mu(i))
	if err != nil {
		panic(err)
	}
	return z
}

func (d *refDigest[N]) add(x qmath.Q, weight uint64, attempt int) int {
	smpl := d.smplcnt()
	if is32[N]() && uint64(0xFFFFFFFF)-weight < smpl || !is32[N]() && ^uint64(0)-weight < smpl {
		return eOverflow
	}
	closest := null
	for {
		if attempt >= 5 {
			return eAgain
		}
		minz := qmath.New(qmath.S64, x.Ctrl()).SetIFVal(qmath.U64Int(qmath.IFMaxVal(qmath.S64)))
		ub := null
		closest = null
		var sum, tmpsum uint64
		lb := d.minNode()
		cur := lb
		if lb == null {
			lb = d.root()
		}
		for ; cur != null; cur = d.next(cur) {
			cnt := uint64(d.cnt(cur))
			z, err := d.asS64(cur).SubQ(x)
			if err != nil {
				return errnoOf(err)
			}
			z = z.Abs()
			if z.LT(minz) {
				minz, lb, sum = z, cur, tmpsum
				tmpsum += cnt
			} else if z.GT(minz) {
				ub = cur
				break
			}
		}
		n := 0
		for cur = lb; cur != ub; cur = d.next(cur) {
			cnt := uint64(d.cnt(cur))
			q := qmath.New(qmath.S64, uint64(qmath.CtrlIni(16)))
			var err error
			e := 0
			if smpl == 1 {
				q, err = q.FracI(qmath.I32(1), qmath.I32(2))
			} else {
				q, err = q.FracI(qmath.U64Int(sum<<1+cnt-1), qmath.U64Int((smpl-1)<<1))
			}
			if errnoOf(err) == eRange {
				err = nil // defect 7: q underflowed to 0, which is not an error
			}
			e |= errnoOf(err)
			k := q
			k, err = k.MulI(qmath.U64Int(4 * smpl * uint64(attempt)))
			e |= errnoOf(err)
			q, err = q.SubI(qmath.I32(1))
			e |= errnoOf(err)
			q = q.Abs()
			k, err = k.MulQ(q)
			e |= errnoOf(err)
			if e != 0 {
				return e
			}
			if uint64(d.cnt(cur))+weight <= k.IntVal() {
				n++
				if d.random() < int32(maxRandDiv/n) {
					closest = cur
				}
			}
			sum += cnt
		}
		if closest != null || !d.full() {
			break
		}
		if e := d.compress(attempt); e != 0 {
			return e
		}
		attempt++
	}
	if closest != null {
		c := closest
		mu := d.mu(c)
		// Q_QSUBQ(&x, mu), Q_QDIVI(&x, cnt+weight), Q_QADDQ(&mu, x); for a
		// 32-bit digest the operands are of different kinds, as in the C.
		x, err := x.SubQ(mu)
		if err == nil {
			x, err = x.DivI(qmath.U64Int(uint64(d.cnt(c)) + weight))
		}
		if err != nil && errnoOf(err) != eRange {
			return errnoOf(err)
		}
		if mu, err = mu.AddQ(x); err != nil {
			return errnoOf(err)
		}
		d.setMu(c, mu)
		d.setCnt(c, d.cnt(c)+int64(weight))
		d.reinsert(c)
	} else {
		e := d.getFree()
		if e == null {
			return eAgain
		}
		if is32[N]() {
			mu, err := d.mu(e).CpyValQ(x)
			if err != nil {
				return errnoOf(err)
			}
			d.setMu(e, mu)
		} else {
			d.setMu(e, x)
		}
		d.setCnt(e, int64(weight))
		d.insert(e)
	}
	d.setSmplcnt(d.smplcnt() + weight)
	return 0
}

func (d *refDigest[N]) compress(attempt int) int {
	if !d.full() {
		return 0
	}
	co := d.compOff()
	le.PutUint32(d.b[co:], le.Uint32(d.b[co:])+1)
	maxc := d.hget(hMax)
	d.resetHead(maxc)
	d.setSmplcnt(0)
	bitsPerIdx := 0
	for v := maxc; v > 0; v >>= 1 {
		bitsPerIdx++
	}
	var ebits uint64
	nebits := 0
	last := null
	for rem := maxc; rem > 0; rem-- {
		for nebits < bitsPerIdx {
			ebits |= uint64(d.random()) << nebits
			nebits = min(nebits+31, 64)
		}
		idx := int(ebits & (1<<bitsPerIdx - 1))
		nebits -= bitsPerIdx
		ebits >>= bitsPerIdx
		for {
			idx %= maxc
			if d.color(idx) != freeCol {
				break
			}
			idx++
		}
		d.returnFree(idx)
		last = idx
	}
	e := 0
	for cur := last; cur != null; {
		nxt := d.node(d.link(cur, lRight))
		x := d.asS64(cur)
		if te := d.add(x, uint64(d.cnt(cur)), attempt); te != 0 {
			e = te
		}
		cur = nxt
	}
	return e
}

func refUpdate(data []byte, dt, voiDT voi.DType, v uint64, src *bsdrand.Source) error {
	switch dt {
	case voi.TDgstClust32:
		return refUpdateLayout[node32](data, voiDT, v, src)
	case voi.TDgstClust64:
		return refUpdateLayout[node64](data, voiDT, v, src)
	}
	return errDType
}

func refUpdateLayout[N node](data []byte, voiDT voi.DType, v uint64, src *bsdrand.Source) error {
	var d refDigest[N]
	if err := d.init(data, src); err != nil {
		return err
	}
	if d.maxn == 0 {
		return errNoNodes
	}
	x := qmath.New(qmath.S64, uint64(qmath.CtrlIni(int(d.mu(0).NFBits()))))
	var err error
	switch voiDT {
	case voi.IntS32:
		x, err = x.CpyValI(qmath.I32(int32(v)))
	case voi.IntU32:
		x, err = x.CpyValI(qmath.U32Int(uint32(v)))
	case voi.IntS64, voi.IntSLong:
		x, err = x.CpyValI(qmath.I64(int64(v)))
	case voi.IntU64, voi.IntULong:
		x, err = x.CpyValI(qmath.U64Int(v))
	default:
		x, err = x.CpyValQ(voi.AsQ(voiDT, v))
	}
	if err != nil {
		return errorOf(errnoOf(err))
	}
	return errorOf(d.add(x, 1, 1))
}

// randomValue returns a VOI dtype and value pattern for a differential
// run, mostly plausible samples, sometimes extremes.
func randomValue(r *rand.Rand, voiDTs []voi.DType, scale uint64) (voi.DType, uint64) {
	dt := voiDTs[r.IntN(len(voiDTs))]
	var v uint64
	switch r.IntN(10) {
	case 0:
		v = r.Uint64()
	case 1:
		v = uint64(r.IntN(5)) // many duplicates
	case 2:
		v = -uint64(r.Int64N(int64(scale) + 1))
	default:
		v = r.Uint64N(scale + 1)
	}
	if dt.IsQ() {
		v = v<<6 | uint64(r.IntN(8))
		if dt.Signed() && r.IntN(3) == 0 {
			v |= 1 << 63
		}
	}
	if dt.Is32() {
		v = uint64(uint32(v))
		if dt == voi.QS32 && v>>31 == 0 && r.IntN(3) == 0 {
			v |= 1 << 31
		}
	}
	return dt, v
}

func TestDifferentialAgainstQmathOracle(t *testing.T) {
	runs := 300
	if !longTests() {
		runs = 40
	}
	ints := []voi.DType{voi.IntS32, voi.IntU32, voi.IntS64, voi.IntU64, voi.IntSLong, voi.IntULong}
	all := append(ints, voi.QS32, voi.QU32, voi.QS64, voi.QU64)
	for run := range runs {
		r := rand.New(rand.NewPCG(uint64(run), 99))
		dt := voi.TDgstClust64
		prec := uint32(r.IntN(64) + 1)
		if r.IntN(2) == 0 {
			dt, prec = voi.TDgstClust32, uint32(r.IntN(16)+1)
		}
		nctds := uint32(r.IntN(12) + 1)
		if r.IntN(4) == 0 {
			nctds = uint32(r.IntN(100) + 1)
		}
		vdts := ints
		if r.IntN(3) == 0 {
			vdts = all
		}
		scale := uint64(1) << uint(r.IntN(40))
		seed := r.Uint32()
		a, err := Build(dt, nctds, prec)
		if err != nil {
			t.Fatal(err)
		}
		b := bytes.Clone(a)
		sa, sb := bsdrand.New(seed), bsdrand.New(seed)
		env := &Env{Rand: sa}
		for op := range 3000 {
			vdt, v := randomValue(r, vdts, scale)
			ea := Update(a, dt, vdt, v, env)
			eb := refUpdate(b, dt, vdt, v, sb)
			if ea != eb || !bytes.Equal(a, b) || sa.Calls() != sb.Calls() {
				t.Fatalf("run %d (%v, %d centroids, prec %d) op %d: Update(%v, %#x): %v, oracle %v; calls %d vs %d; bytes equal %v\n%s",
					run, dt, nctds, prec, op, vdt, v, ea, eb, sa.Calls(), sb.Calls(), bytes.Equal(a, b), dumpDiff(a, b, dt))
			}
			if err := Validate(a, dt); err != nil {
				t.Fatalf("run %d op %d: %v", run, op, err)
			}
		}
	}
}

func dumpDiff(a, b []byte, dt voi.DType) string {
	var s string
	for _, x := range [][]byte{a, b} {
		s += string(AppendText(nil, x, dt, false, true)) + "\n"
		info, _ := ReadInfo(x, dt)
		s += fmt.Sprintf("%+v\n", info)
	}
	return s
}

// TestDifferentialRarePaths drives long runs into the paths short runs do
// not reach: the quantile q underflowing to zero (ERANGE from Q_QFRACI once
// smplcnt exceeds 32769, which since defect 7 is q = 0 and no error) and
// many compressions of a small digest.
func TestDifferentialRarePaths(t *testing.T) {
	if !longTests() {
		t.Skip("long runs: STATSBLOB_LONG=1")
	}
	for _, c := range []struct {
		name  string
		dt    voi.DType
		nctds uint32
		value func(r *rand.Rand, i int) uint64
		noErr bool // every update must succeed
	}{
		// A singleton minimum, then 70000 samples elsewhere, then samples
		// at the minimum: the second equal centroid's q = 1/(N-1) has no
		// bit in 16 fractional bits; the C dropped those samples (defect 7).
		{"singleton-min-underflow", voi.TDgstClust64, 100, func(r *rand.Rand, i int) uint64 {
			if i > 0 && i < 70000 {
				return 500
			}
			return 0
		}, true},
		{"tiny-digest-uniform", voi.TDgstClust32, 3, func(r *rand.Rand, i int) uint64 { return r.Uint64N(1000) }, false},
		{"logish-64", voi.TDgstClust64, 50, func(r *rand.Rand, i int) uint64 {
			x := r.Uint64()
			return (((x >> 32) & 1023) << ((x >> 16) & 15)) >> 4
		}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(11, 12))
			a, _ := Build(c.dt, c.nctds, 4)
			b := bytes.Clone(a)
			sa, sb := bsdrand.New(1), bsdrand.New(1)
			for i := range 100000 {
				v := c.value(r, i)
				ea := Update(a, c.dt, voi.IntU64, v, &Env{Rand: sa})
				eb := refUpdate(b, c.dt, voi.IntU64, v, sb)
				if ea != eb || sa.Calls() != sb.Calls() || !bytes.Equal(a, b) {
					t.Fatalf("update %d (%d): %v, oracle %v", i, v, ea, eb)
				}
				if c.noErr && ea != nil {
					t.Fatalf("update %d (%d): %v", i, v, ea)
				}
			}
			if err := Validate(a, c.dt); err != nil {
				t.Fatal(err)
			}
		})
	}
}
