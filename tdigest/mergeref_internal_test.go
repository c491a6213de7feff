package tdigest

// The t-digest merge as it was before its hot loops were optimised
// (commit 42ed3b9), kept as the reference the optimised merge must equal
// byte for byte (TestMergeAllMatchesReference).

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/bsdrand"
	"github.com/statsblob/statsblob/qmath"
	"github.com/statsblob/statsblob/voi"
)

func mergeAllRef(dst []byte, dt voi.DType, srcs ...[]byte) error {
	if err := Validate(dst, dt); err != nil {
		return fmt.Errorf("tdigest: merge destination: %w", err)
	}
	for i, s := range srcs {
		if err := Validate(s, dt); err != nil {
			return fmt.Errorf("tdigest: merge source %d: %w", i, err)
		}
	}
	if dt == voi.TDgstClust32 {
		return mergeAllRefLayout[node32](dst, srcs)
	}
	return mergeAllRefLayout[node64](dst, srcs)
}

func mergeAllRefLayout[N node](dst []byte, srcs [][]byte) error {
	dt := dtypeOf[N]()
	var d digest[N]
	_ = d.init(dst, nil)
	if d.maxn == 0 {
		return errNoNodes
	}
	g := d.geometry()
	// Read every input before writing dst (a source may be dst).
	all := append([][]byte{dst}, srcs...)
	ins := make([]inputRef, 0, len(all))
	nonEmpty, last := 0, 0
	for i, in := range all {
		info, _ := ReadInfo(in, dt)
		if info.CurNodes == 0 {
			continue
		}
		nonEmpty, last = nonEmpty+1, i
		ins = append(ins, g.readRef(in, dt))
	}
	switch {
	case nonEmpty == 0:
		d.rebuild(g.ctrl, nil, 0, 0)
		return nil
	case nonEmpty == 1 && last == 0:
		return nil
	case nonEmpty == 1 && len(all[last]) == len(dst) && ReadCentroid(all[last], dt, 0).Mu.Raw&ctrlMask == g.ctrl:
		copy(dst, all[last])
		return nil
	}
	return d.mergeInputsRef(g, ins)
}

func (g geometry) readRef(in []byte, dt voi.DType) inputRef {
	info, _ := ReadInfo(in, dt)
	r := inputRef{cs: make([]item, 0, info.CurNodes), comp: info.CompCnt, maxn: int(info.MaxNodes)}
	for c := range Centroids(in, dt) {
		r.cs = append(r.cs, item{g.rescaleRef(c), c.Count})
		r.total += c.Count
	}
	return r
}

func (d *digest[N]) mergeInputsRef(g geometry, ins []inputRef) error {
	var total uint64
	var comp uint32
	ncs, heavy := 0, false
	for _, in := range ins {
		heavy = heavy || in.total > uint64(len(in.cs))
		n, carry := bits.Add64(total, in.total, 0)
		if carry != 0 || n > g.maxTotal {
			return g.errTooMany()
		}
		total = n
		comp = uint32(min(uint64(comp)+uint64(in.comp), math.MaxUint32))
		ncs += len(in.cs)
	}
	var items []item
	var pooled bool
	isPart := map[int]bool{} // the indices of spread centroids' parts
	if len(ins) > 1 && (ncs > d.maxn || heavy) {
		pooled = true
		items = make([]item, 0, 4*ncs)
		// The range of the inputs' means, written out.
		lo, hi := g.lim, -g.lim
		for _, in := range ins {
			lo, hi = min(lo, in.cs[0].v), max(hi, in.cs[len(in.cs)-1].v)
		}
		for _, in := range ins {
			items = splitCentroids(items, in.cs, lo, hi, in.maxn >= d.maxn)
		}
		for i := range items {
			if items[i].n&partBit != 0 {
				items[i].n &^= partBit
				isPart[i] = true
			}
		}
	} else {
		items = make([]item, 0, ncs)
		for _, in := range ins {
			items = append(items, in.cs...)
		}
	}
	type tagged struct {
		item
		part bool
	}
	tg := make([]tagged, len(items))
	for i, it := range items {
		tg[i] = tagged{it, isPart[i]}
	}
	// By mean, the centroids before the parts, then by count.
	slices.SortFunc(tg, func(a, b tagged) int {
		if c := cmp.Compare(a.v, b.v); c != 0 {
			return c
		}
		if a.part != b.part {
			if a.part {
				return 1
			}
			return -1
		}
		return cmp.Compare(a.n, b.n)
	})
	for i, t := range tg {
		items[i] = t.item
	}
	if pooled {
		// The centroids (not parts) of each run of equal means that
		// holds a single sample as one item (within the largest count),
		// exact; the run's parts apart.
		var co []item
		var exact []bool
		for i := 0; i < len(tg); {
			j := i
			single := false
			for ; j < len(tg) && tg[j].v == tg[i].v; j++ {
				single = single || !tg[j].part && tg[j].n == 1
			}
			cur := item{tg[i].v, 0}
			for ; i < j; i++ {
				if !single || tg[i].part {
					co = append(co, tg[i].item)
					exact = append(exact, false)
					continue
				}
				if cur.n+tg[i].n > g.maxCnt {
					co = append(co, cur)
					exact = append(exact, true)
					cur.n = 0
				}
				cur.n += tg[i].n
				if i+1 == j || tg[i+1].part {
					co = append(co, cur)
					exact = append(exact, true)
				}
			}
		}
		items = co
		if len(items) > d.maxn {
			var groups [][]int
			items, groups = combineRef(items, total, d.maxn)
			ex := make([]bool, len(groups))
			for r, members := range groups {
				ex[r] = len(members) == 1 && exact[members[0]]
			}
			exact = ex
		}
		// Pinned runs: the heaviest exact run of at least 3 samples
		// first, while slots remain (2 for an inner run, 1 at an end).
		spare := d.maxn - len(items)
		pin := make([]bool, len(items))
		tried := make([]bool, len(items))
		for spare > 0 {
			best := -1
			for i, it := range items {
				if exact[i] && !tried[i] && it.n >= 3 && (best < 0 || it.n > items[best].n) {
					best = i
				}
			}
			if best < 0 {
				break
			}
			tried[best] = true
			cost := 2
			if best == 0 || best == len(items)-1 {
				cost = 1
			}
			if cost <= spare {
				pin[best], spare = true, spare-cost
			}
		}
		var out []item
		for i, it := range items {
			switch {
			case !pin[i]:
				out = append(out, it)
			case i == 0:
				out = append(out, item{it.v, it.n - 1}, item{it.v, 1})
			case i == len(items)-1:
				out = append(out, item{it.v, 1}, item{it.v, it.n - 1})
			default:
				out = append(out, item{it.v, 1}, item{it.v, it.n - 2}, item{it.v, 1})
			}
		}
		items = out
	}
	for _, c := range items {
		if c.n > g.maxCnt {
			return fmt.Errorf("tdigest: merge: a centroid of %d samples: %w", c.n, voi.ErrOverflow)
		}
	}
	d.rebuild(g.ctrl, items, total, comp)
	return nil
}

func combineRef(items []item, total uint64, slots int) ([]item, [][]int) {
	h := make([]float64, len(items))
	var cum uint64
	ft := float64(total)
	for i, it := range items {
		mid := float64(cum) + float64(it.n)/2
		h[i] = scale(float64(mid / ft))
		cum += it.n
	}
	// Mode gaps, written out: a gap wider than range/slots and gapFactor
	// times both neighbouring gaps, with more than gapRank of the samples
	// on each side, starts a segment; slots/2 or more such gaps: none.
	seg := make([]int, len(items))
	var gaps []int
	below := uint64(0)
	for i := range items {
		if i > 1 && i+1 < len(items) {
			r := float64(below) / ft
			g := float64(items[i].v - items[i-1].v)
			width := float64(items[len(items)-1].v-items[0].v) / float64(slots)
			left, right := float64(items[i-1].v-items[i-2].v), float64(items[i+1].v-items[i].v)
			if r > gapRank && r < 1-gapRank && g > width && g > gapFactor*left && g > gapFactor*right {
				gaps = append(gaps, i)
			}
		}
		below += items[i].n
	}
	if len(gaps) < slots/2 {
		for _, at := range gaps {
			for i := at; i < len(items); i++ {
				seg[i]++
			}
		}
	}
	groupOf := func(c int, i int) int {
		return seg[i]*(c+1) + min(int(float64(float64(c)*h[i])), c-1)
	}
	populated := func(c int) int {
		n, prev := 0, -1
		for i := range h {
			if g := groupOf(c, i); g != prev {
				n, prev = n+1, g
			}
		}
		return n
	}
	// populated(slots) <= slots; find the largest c with that property
	// (populated is nearly monotone in c; the search keeps the best c seen
	// that fits).
	lo := slots
	if populated(lo) > slots {
		lo = 1
	}
	best, hi := lo, slots*64
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		if populated(mid) <= slots {
			best, lo = mid, mid
		} else {
			hi = mid - 1
		}
	}
	out := make([]item, 0, slots)
	var groups [][]int
	var members []int
	var sum sum128
	var n uint64
	prev := groupOf(best, 0)
	for i, it := range items {
		if g := groupOf(best, i); g != prev {
			out = append(out, item{sum.mean(n), n})
			groups = append(groups, members)
			sum, n, prev, members = sum128{}, 0, g, nil
		}
		sum.add(it.v, it.n)
		n += it.n
		members = append(members, i)
	}
	return append(out, item{sum.mean(n), n}), append(groups, members)
}

// TestMergeAllMatchesReference holds MergeAll to the reference merge on
// random fleets: both widths, 1 to 50 slots, mixed precisions, 1 to 400
// inputs, empty ones, negative and equal means, values at the edges of the
// means' range, counts that overflow, and a source that is dst itself.
type inputRef struct {
	cs    []item
	total uint64
	comp  uint32
	maxn  int
}

func (g geometry) rescaleRef(c Centroid) int64 {
	raw := c.Mu.Raw
	v, from := ifvS64(raw), nfS64(raw)
	if c.Mu.Kind == qmath.S32 {
		v, from = ifvS32(raw), nfS32(raw)
	}
	return g.rescaleParts(v, from)
}

func TestMergeAllMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	cases := 400
	if !longTests() {
		cases = 60
	}
	for i := range cases {
		dt := voi.TDgstClust32
		if r.IntN(2) == 1 {
			dt = voi.TDgstClust64
		}
		slots := []uint32{1, 2, 3, 10, 20, 50}[r.IntN(6)]
		prec := func() uint32 { return []uint32{1, 4, 8, 16}[r.IntN(4)] }
		p0 := prec()
		n := 1 + r.IntN([]int{3, 30, 400}[r.IntN(3)])
		mk := func(prec uint32) []byte {
			d, err := Build(dt, slots, prec)
			require.NoError(t, err)
			env := &Env{Rand: bsdrand.New(r.Uint32())}
			kind := r.IntN(5)
			for range r.IntN([]int{1, 30, 700}[r.IntN(3)]) {
				var v uint64
				switch kind {
				case 0:
					v = r.Uint64N(1000)
				case 1:
					v = uint64(r.ExpFloat64() * 30000)
				case 2:
					v = uint64(r.IntN(5)) * 100 // equal means
				case 3:
					v = uint64(int64(r.IntN(2000)) - 1000) // negative, as IntS64
				default:
					v = r.Uint64() >> r.IntN(64) // all magnitudes
				}
				vdt := voi.IntU64
				if kind == 3 {
					vdt = voi.IntS64
				}
				_ = Update(d, dt, vdt, v, env)
			}
			return d
		}
		dst := mk(p0)
		srcs := make([][]byte, n)
		for j := range srcs {
			p := p0
			if r.IntN(10) == 0 {
				p = prec() // another precision, or the same
			}
			srcs[j] = mk(p)
			if r.IntN(50) == 0 {
				srcs[j] = dst // dst itself
			}
		}
		// A source that is dst is, in each merge, that merge's destination.
		want, got := bytes.Clone(dst), bytes.Clone(dst)
		srcsWant, srcsGot := slices.Clone(srcs), slices.Clone(srcs)
		for j, s := range srcs {
			if &s[0] == &dst[0] {
				srcsWant[j], srcsGot[j] = want, got
			}
		}
		errWant := mergeAllRef(want, dt, srcsWant...)
		errGot := MergeAll(got, dt, srcsGot...)
		if errWant != nil || errGot != nil {
			require.Error(t, errGot, "case %d", i)
			require.EqualError(t, errGot, errWant.Error(), "case %d", i)
		}
		require.Equal(t, want, got, "case %d: %v, %d slots, %d inputs", i, dt, slots, n)
	}
}
