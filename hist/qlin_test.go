package hist

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/voi"
)

// bruteQ runs the C's counting loop for a Q spec one step at a time with
// g.next, for at most limit steps: the number of buckets and the bound
// after the last, or the C's failure (EINVAL), or errEndless when a Lin or
// LinExp bound repeats, or errBudget when undecided.
func bruteQ(sp Spec, dt voi.DType, limit int) (n uint64, last uint64, err error) {
	g := newGen(&sp, dt)
	g.work = 1 << 62
	b := sp.LB
	seen := map[uint64]bool{}
	for k := range uint64(limit) {
		nb, _, err := g.next(k, b)
		if err != nil {
			return 0, 0, err
		}
		if g.above(nb) {
			return k + 1, nb, nil
		}
		if sp.Scheme != Exp {
			if seen[nb] {
				return 0, 0, errEndless
			}
			seen[nb] = true
		}
		b = nb
	}
	return 0, 0, errBudget
}

// randQBound draws a Q pattern of dt with control bits c: small and large
// magnitudes, either sign, sometimes a high half for 32-bit kinds.
func randQBound(r *rand.Rand, dt voi.DType, c uint64) uint64 {
	o := orderOf(dt)
	mbits := uint(64 - 3)
	if dt.Is32() {
		mbits = 32 - 3
	}
	if o.sign != 0 {
		mbits--
	}
	nf := uint(o.nf[c])
	var mag uint64
	switch r.IntN(4) {
	case 0:
		mag = uint64(r.IntN(3000)) << nf
	case 1:
		mag = uint64(r.IntN(300))<<nf | r.Uint64()&(1<<nf-1)
	case 2:
		mag = 1<<mbits - 1 - uint64(r.IntN(3000))<<nf
	default:
		mag = r.Uint64() >> (64 - 1 - r.IntN(int(mbits)))
	}
	v := c | mag&(1<<mbits-1)<<3
	if o.sign != 0 && r.IntN(2) == 0 {
		v |= o.sign
	}
	if dt.Is32() && r.IntN(6) == 0 {
		v |= r.Uint64() << 32
	}
	return v
}

// TestQGenerationExact checks Build's decisions for Q generations with
// constant steps (Lin, Exp with base 1) and LinExp, which it makes by runs
// of additions, closed forms and single stores, against the C's loop run
// step by step: the same buckets when they fit a blob, EFBIG when they do
// not (EINVAL if the bound of a +inf bucket fails), EINVAL when a step
// fails first or the bounds never exceed UB.
func TestQGenerationExact(t *testing.T) {
	r := rand.New(rand.NewPCG(12, 1))
	n, limit := 1500, 1<<15
	if testing.Short() {
		n = 200
	}
	decided := map[string]int{}
	for range n {
		dt := []voi.DType{voi.QS32, voi.QU32, voi.QS64, voi.QU64}[r.IntN(4)]
		c := uint64(r.IntN(8))
		if r.IntN(2) == 0 {
			c = uint64(r.IntN(4))
		}
		sp := Spec{DType: voi.CRHist64, Scheme: []Scheme{Lin, Lin, LinExp, Exp}[r.IntN(4)], Flags: Flags(r.IntN(4))}
		sp.LB = randQBound(r, dt, c)
		sp.UB = randQBound(r, dt, c)
		if r.IntN(5) == 0 {
			sp.UB = randQBound(r, dt, uint64(r.IntN(8)))
		}
		switch sp.Scheme {
		case Lin:
			sp.StepInc = []uint64{uint64(1 + r.IntN(50)), uint64(1 + r.IntN(1<<20)), r.Uint64() >> r.IntN(64), -uint64(1 + r.IntN(9)), 0xFFFFFFFF - uint64(r.IntN(9))}[r.IntN(5)]
		case Exp:
			sp.StepBase = 1
			sp.StepExp = uint64(r.IntN(5))
		case LinExp:
			sp.StepBase = []uint64{2, 3, 10, uint64(2 + r.IntN(30))}[r.IntN(4)]
			sp.LinStepDiv = []uint64{1, 2, 10, uint64(1 + r.IntN(1000)), 1000000}[r.IntN(5)]
		}
		capacity := (maxDataSize-hdrSize)/16 - int(sp.Flags&1) - int(sp.Flags>>1&1)
		want, last, werr := bruteQ(sp, dt, limit)
		data, err := sp.Build(dt)
		if werr == nil && sp.Flags&UBoundInf != 0 {
			// The C computes the +inf bucket's bound after the last one.
			g := newGen(&sp, dt)
			g.work = 1 << 62
			if _, _, xerr := g.next(want, last); xerr != nil {
				werr = xerr
			}
		}
		switch {
		case errors.Is(werr, errBudget):
			decided["undecided"]++
		case werr != nil:
			decided["EINVAL"]++
			require.ErrorIs(t, err, voi.ErrInvalid, "%v %+v: the C's loop: %v", dt, sp, werr)
		case int(want) <= capacity:
			decided["OK"]++
			require.NoError(t, err, "%v %+v: the C's loop makes %d buckets", dt, sp, want)
			require.Len(t, data, DataSize(sp.DType, int(want)+int(sp.Flags&1)+int(sp.Flags>>1&1)), "%v %+v", dt, sp)
		default:
			decided["EFBIG"]++
			require.ErrorIs(t, err, voi.ErrTooBig, "%v %+v: the C's loop makes %d buckets", dt, sp, want)
		}
	}
	t.Log(decided)
	require.Greater(t, decided["EFBIG"], n/100)
	require.Greater(t, decided["OK"], n/10)
}
