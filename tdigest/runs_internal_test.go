package tdigest

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/voi"
)

// runChain is a test's chain of runs: their counts, whether each
// boundary is between consecutive integers (matched) or not (pinned), and
// whether a group stands before and after it.
type runChain struct {
	n             []uint64
	match         []bool // len(n)-1
	before, after bool
	unit          int64
}

// items returns the chain as a flush's items: runs at integer values
// (unit apart where matched, 3 units where not), between groups if set.
func (rc runChain) items() []accItem {
	var src []accItem
	v := int64(100) * rc.unit
	if rc.before {
		src = append(src, accItemOf(v-rc.unit/2, 7, false))
	}
	for i, n := range rc.n {
		if i > 0 {
			if rc.match[i-1] {
				v += rc.unit
			} else {
				v += 3 * rc.unit
			}
		}
		src = append(src, accItemOf(v, n, true))
	}
	if rc.after {
		src = append(src, accItemOf(v+rc.unit/2, 7, false))
	}
	return src
}

// fewestPieces returns, by trying every split, the fewest spare slots that
// make the chain exact (as exactRuns defines it), -1 if none does.
func fewestPieces(rc runChain) int {
	opts := func(n uint64, whole bool) [][3]uint64 { // pieces, x, h
		var o [][3]uint64
		if whole {
			o = append(o, [3]uint64{1, n, n})
		}
		for x := uint64(1); x < n; x++ {
			o = append(o, [3]uint64{2, x, n - x})
		}
		for x := uint64(1); x+1 < n; x++ {
			for h := uint64(1); x+h < n; h++ {
				o = append(o, [3]uint64{3, x, h})
			}
		}
		return o
	}
	m := len(rc.n)
	whole := m == 1 && !rc.before && !rc.after
	best := -1
	var walk func(r int, cost int, prevH uint64)
	walk = func(r int, cost int, prevH uint64) {
		if r == m {
			if !rc.after || prevH == 1 {
				if best < 0 || cost < best {
					best = cost
				}
			}
			return
		}
		for _, o := range opts(rc.n[r], whole) {
			x := o[1]
			switch {
			case r == 0 && rc.before && x != 1:
				continue
			case r > 0 && rc.match[r-1] && x != prevH:
				continue
			case r > 0 && !rc.match[r-1] && (x != 1 || prevH != 1):
				continue
			}
			walk(r+1, cost+int(o[0])-1, o[2])
		}
	}
	walk(0, 0, 0)
	return best
}

// checkPieces asserts that out is src with each run split into pieces of
// its value whose counts meet exactRuns' conditions, and returns the
// spare slots used.
func checkPieces(t *testing.T, src, out []accItem, unit int64) int {
	t.Helper()
	type run struct {
		v      int64
		pieces []uint64
		exact  bool
	}
	var runs []run
	for _, it := range out {
		if k := len(runs) - 1; k >= 0 && runs[k].exact && it.exact() && runs[k].v == it.v {
			runs[k].pieces = append(runs[k].pieces, it.n())
			continue
		}
		runs = append(runs, run{it.v, []uint64{it.n()}, it.exact()})
	}
	require.Len(t, runs, len(src), "one run per item")
	for i, r := range runs {
		var n uint64
		for _, p := range r.pieces {
			require.NotZero(t, p)
			n += p
		}
		require.Equal(t, src[i].v, r.v)
		require.Equal(t, src[i].n(), n, "item %d's count", i)
		if !isRun(src[i], unit) {
			require.Len(t, r.pieces, 1)
			continue
		}
		require.LessOrEqual(t, len(r.pieces), 3)
		if len(src) > 1 {
			require.GreaterOrEqual(t, len(r.pieces), 2, "run %d kept whole", i)
		}
		low, high := r.pieces[0], r.pieces[len(r.pieces)-1]
		if i > 0 {
			prev := runs[i-1]
			if isRun(src[i-1], unit) && unit > 0 && src[i].v-src[i-1].v == unit {
				require.Equal(t, prev.pieces[len(prev.pieces)-1], low, "matched boundary before item %d", i)
			} else {
				require.Equal(t, uint64(1), low, "pin before item %d", i)
			}
		}
		if i+1 < len(src) && !isRun(src[i+1], unit) {
			require.Equal(t, uint64(1), high, "pin after item %d", i)
		}
	}
	return len(out) - len(src)
}

// TestExactRunsFewestSlots: exactRuns finds the fewest spare slots that
// make every run exact, as trying every split finds them, on random chains
// of up to 4 runs of up to 7 samples, matched and pinned boundaries,
// between groups or at the digest's ends; and gives up when the slots
// are fewer.
func TestExactRunsFewestSlots(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	var p runPlan
	for i := range 3000 {
		m := 1 + r.IntN(4)
		rc := runChain{n: make([]uint64, m), match: make([]bool, m-1), before: r.IntN(2) == 0, after: r.IntN(2) == 0, unit: 16}
		for k := range rc.n {
			rc.n[k] = uint64(2 + r.IntN(6))
		}
		for k := range rc.match {
			rc.match[k] = r.IntN(4) != 0
		}
		src := rc.items()
		want := fewestPieces(rc)
		require.GreaterOrEqual(t, want, 0, "case %d: every chain can be pinned", i)
		out, ok := p.exactRuns(nil, src, len(src)+want, rc.unit)
		require.True(t, ok, "case %d: %+v, %d spare slots", i, rc, want)
		require.Equal(t, want, checkPieces(t, src, out, rc.unit), "case %d: %+v", i, rc)
		if want > 0 {
			out, ok = p.exactRuns(out[:0], src, len(src)+want-1, rc.unit)
			require.False(t, ok, "case %d: one slot fewer", i)
			require.Empty(t, out)
		}
		// Without integers (unit 0) every boundary is pinned.
		out, ok = p.exactRuns(nil, src, 4*len(src), 0)
		require.True(t, ok)
		checkPieces(t, src, out, 0)
	}
}

// TestExactRunsZipf: the runs of Zipf's law over 1..8 (P(k) ∝ 1/k, 1,000
// samples) need 22 slots pinned on every side, 16 matched; and one long
// chain, of more runs than runStates allows for, is left to splitRuns.
func TestExactRunsZipf(t *testing.T) {
	const unit = 16
	var src []accItem
	for k := int64(1); k <= 8; k++ {
		src = append(src, accItemOf(k*unit, uint64(math.Round(1000/(2.717857*float64(k)))), true))
	}
	var p runPlan
	_, ok := p.exactRuns(nil, src, 21, 0)
	require.False(t, ok)
	out, ok := p.exactRuns(nil, src, 22, 0)
	require.True(t, ok)
	require.Equal(t, 14, checkPieces(t, src, out, 0))
	_, ok = p.exactRuns(nil, src, 15, unit)
	require.False(t, ok)
	out, ok = p.exactRuns(nil, src, 16, unit)
	require.True(t, ok)
	require.Equal(t, 8, checkPieces(t, src, out, unit))

	long := make([]accItem, 100)
	for i := range long {
		long[i] = accItemOf(int64(i)*unit, 5, true)
	}
	_, ok = p.exactRuns(nil, long, 300, unit)
	require.False(t, ok, "past runStates")
}

// TestAccurateDiscreteExact: digests of a few integers (random counts,
// consecutive or apart) whose runs exactRuns can make exact answer every
// quantile within half a sample of rank, rounded to the nearest integer as
// blob.Stat answers an integer VOI; and unrounded within a sample when
// the slots pin every side.
func TestAccurateDiscreteExact(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	checked := 0
	for i := range 300 {
		k := 2 + r.IntN(9)
		slots := uint32(k + r.IntN(2*k+3))
		vals := make([]int64, 0, 4096)
		v := int64(r.IntN(1000))
		var distinct []int64
		for range k {
			distinct = append(distinct, v)
			v += 1 + int64(r.IntN(4)/3)*int64(1+r.IntN(5)) // mostly consecutive
		}
		n := 50 + r.IntN(3000)
		for range n {
			vals = append(vals, distinct[min(k-1, int(float64(k)*math.Pow(r.Float64(), 1.5+r.Float64())))])
		}
		dt := []voi.DType{voi.TDgstClust32, voi.TDgstClust64}[r.IntN(2)]
		d, samples := accFeed(t, dt, slots, vals, 0)
		checkAccurate(t, d, dt, samples)
		sorted := slices.Clone(samples)
		slices.Sort(sorted)
		// The runs as the flush sees them.
		var src []accItem
		for _, x := range sorted {
			if j := len(src) - 1; j >= 0 && src[j].v == x {
				src[j].w++
				continue
			}
			src = append(src, accItemOf(x, 1, true))
		}
		var p runPlan
		pinned := false
		if _, ok := p.exactRuns(nil, src, int(slots), 0); ok {
			pinned = true
		} else if _, ok := p.exactRuns(nil, src, int(slots), 1); !ok {
			continue
		}
		checked++
		for j := 0; j <= 2*len(sorted); j++ {
			q := float64(j) / float64(2*len(sorted))
			x, err := Quantile(d, dt, q)
			require.NoError(t, err)
			require.LessOrEqual(t, rankErr(sorted, q, math.Round(x)), 0.5, "case %d (%d values, %d slots): q %v: %v", i, k, slots, q, x)
			if pinned { // (a run of two kept whole: within a sample)
				require.LessOrEqual(t, rankErr(sorted, q, x), 1.0, "case %d unrounded: q %v: %v", i, q, x)
			}
		}
	}
	require.Greater(t, checked, 150)
}

// rankErr is how many samples of sorted the estimate x's ranks lie from
// q·n.
func rankErr(sorted []int64, q, x float64) float64 {
	lo, _ := slices.BinarySearchFunc(sorted, x, func(s int64, x float64) int {
		if float64(s) < x {
			return -1
		}
		return 1
	})
	hi, _ := slices.BinarySearchFunc(sorted, x, func(s int64, x float64) int {
		if float64(s) <= x {
			return -1
		}
		return 1
	})
	rank := q * float64(len(sorted))
	return max(float64(lo)-rank, rank-float64(hi), 0)
}

// FuzzExactRuns: on any items, exactRuns either fits the slots, each run
// split into pieces that meet its conditions (checkPieces), or leaves dst
// as it was; pinning every side (unit 0), it writes what splitRuns writes
// when the slots suffice for that.
func FuzzExactRuns(f *testing.F) {
	f.Add([]byte{3, 0, 5, 1, 7, 1, 2, 2, 9}, uint8(4), true)
	f.Add([]byte{8, 1, 8, 1, 8, 1, 8, 1, 8, 1}, uint8(2), false)
	f.Fuzz(func(t *testing.T, b []byte, spare uint8, integers bool) {
		const unit = 16
		var src []accItem
		v := int64(0)
		for i := 0; i+1 < len(b) && len(src) < 40; i += 2 {
			v += unit * int64(1+b[i]>>6) // 1 to 4 integers apart
			n := uint64(1 + b[i+1]&31)
			src = append(src, accItemOf(v, n, b[i]&1 == 0 || n == 1))
		}
		u := int64(0)
		if integers {
			u = unit
		}
		maxn := len(src) + int(spare%48)
		var p runPlan
		head := []accItem{accItemOf(-1, 1, true)}
		out, ok := p.exactRuns(head, src, maxn, u)
		require.Equal(t, head[0], out[0], "dst's items kept")
		if !ok {
			require.Len(t, out, 1)
			return
		}
		out = out[1:]
		require.LessOrEqual(t, len(out), maxn)
		checkPieces(t, src, out, u)
		if u == 0 {
			mark := make([]int8, len(src))
			want := splitRuns(nil, src, maxn, mark)
			require.True(t, slices.Equal(want, out), "splitRuns: %v, exactRuns: %v", want, out)
		}
	})
}
