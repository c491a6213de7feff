package hist

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/voi"
)

func TestLayoutModes(t *testing.T) {
	f := func(name string, sp Spec, dt voi.DType, want layoutMode) {
		t.Helper()
		data, err := sp.Build(dt)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		l, err := NewLayout(data, sp.DType, dt)
		if err != nil || l.mode != want {
			t.Errorf("%s: mode %d, %v; want %d", name, l.mode, err, want)
		}
	}
	lin := Spec{DType: voi.CRHist64, Scheme: Lin, UB: 990, StepInc: 10}
	f("lin", lin, voi.IntU64, modeLinear)
	f("lin lbinf ubinf", Spec{DType: voi.DRHist32, Scheme: Lin, LB: 1<<64 - 50, UB: 50, StepInc: 10, Flags: LBoundInf | UBoundInf}, voi.IntS32, modeLinear)
	f("lin on Q", Spec{DType: voi.CRHist32, Scheme: Lin, LB: 0x13, UB: 0x5013, StepInc: 1}, voi.QU32, modeLinear)
	f("exp", Spec{DType: voi.CRHist64, Scheme: Exp, LB: 1, UB: 1000, StepBase: 2}, voi.IntU64, modeSorted)
	f("dv values", Spec{DType: voi.DVHist32, Scheme: Usr, Buckets: []Bound{{1, 1}, {2, 2}, {4, 4}, {8, 8}}}, voi.IntU32, modeSorted)
	f("usr unsorted", Spec{DType: voi.CRHist64, Scheme: Usr, Buckets: []Bound{{10, 10}, {0, 0}}}, voi.IntU64, modeScan)
	f("dr overlapping", Spec{DType: voi.DRHist64, Scheme: Usr, Buckets: []Bound{{0, 10}, {5, 15}}}, voi.IntU64, modeScan)
	f("q mixed precision", Spec{DType: voi.CRHist64, Scheme: Usr, Buckets: []Bound{{0x13, 0}, {0x24, 0}}}, voi.QU64, modeScan)
	// The lookup compares the low half of 32-bit bounds only: a bound with
	// another high half still continues the progression.
	f("high halves", Spec{DType: voi.CRHist32, Scheme: Usr, Buckets: []Bound{{0, 0}, {1<<32 | 10, 0}, {20, 0}}}, voi.IntU32, modeLinear)
}

func TestLayoutMisuse(t *testing.T) {
	var zero Layout
	if err := zero.Update(make([]byte, 24), 1); !errors.Is(err, voi.ErrInvalid) {
		t.Errorf("zero Layout: %v", err)
	}
	if j := zero.Find(make([]byte, 24), 1); j != -1 {
		t.Errorf("zero Layout: bucket %d", j)
	}
	sp := Spec{DType: voi.CRHist32, Scheme: Lin, UB: 30, StepInc: 10}
	data, _ := sp.Build(voi.IntU32)
	l, _ := NewLayout(data, voi.CRHist32, voi.IntU32)
	// Data of another length: the scan, which reads the data's own bounds.
	other, _ := Spec{DType: voi.CRHist32, Scheme: Lin, UB: 30, StepInc: 5}.Build(voi.IntU32)
	if j := l.Find(other, 12); j != 2 {
		t.Errorf("other data: bucket %d, want 2", j)
	}
	if err := l.Update(other[:5], 12); !errors.Is(err, voi.ErrInvalid) {
		t.Errorf("short data: %v", err)
	}
	if _, err := NewLayout(data, voi.IntU32, voi.IntU32); !errors.Is(err, voi.ErrInvalid) {
		t.Errorf("not a histogram: %v", err)
	}
	if _, err := NewLayout(data, voi.CRHist32, voi.CRHist64); !errors.Is(err, voi.ErrInvalid) {
		t.Errorf("VOI type: %v", err)
	}
	allocs := testing.AllocsPerRun(1000, func() {
		l.Update(data, 17)
		Update(data, voi.CRHist32, voi.IntU32, 17)
	})
	if allocs != 0 {
		t.Errorf("updates allocate %v times", allocs)
	}
}

// TestCounterTable checks the counter table against Find for every key of
// the window and around its edges, and that layouts too wide for a table
// have none.
func TestCounterTable(t *testing.T) {
	cases := []struct {
		name  string
		sp    Spec
		dt    voi.DType
		table bool
	}{
		{"crhist64 lin 100", Spec{DType: voi.CRHist64, Scheme: Lin, UB: 990, StepInc: 10}, voi.IntU64, true},
		{"dvhist64 0..15", Spec{DType: voi.DVHist64, Scheme: Usr, Buckets: dvBounds(0, 15)}, voi.IntU64, true},
		{"dvhist32 powers", Spec{DType: voi.DVHist32, Scheme: Usr, Buckets: []Bound{{1, 1}, {2, 2}, {4, 4}, {8, 8}}}, voi.IntU32, true},
		{"crhist32 lin ubinf", Spec{DType: voi.CRHist32, Scheme: Lin, UB: 9, StepInc: 1, Flags: UBoundInf}, voi.IntU32, true},
		{"drhist32 around zero", Spec{DType: voi.DRHist32, Scheme: Lin, LB: 1<<64 - 50, UB: 50, StepInc: 10}, voi.IntS32, true},
		{"drhist64 gaps", Spec{DType: voi.DRHist64, Scheme: Usr, Buckets: []Bound{{3, 5}, {9, 9}, {20, 40}}}, voi.IntS64, true},
		{"exp", Spec{DType: voi.CRHist64, Scheme: Exp, LB: 1, UB: 64, StepBase: 2}, voi.IntU64, true},
		// A table may not outgrow its histogram: 10 buckets (168 bytes)
		// spanning 512 keys get none.
		{"exp wider than its data", Spec{DType: voi.CRHist64, Scheme: Exp, LB: 1, UB: 1000, StepBase: 2}, voi.IntU64, false},
		{"two bounds far apart", Spec{DType: voi.CRHist32, Scheme: Usr, Buckets: []Bound{{LB: 1}, {LB: 4095}}}, voi.IntU64, false},
		{"crhist32 lbinf", Spec{DType: voi.CRHist32, Scheme: Usr, Buckets: []Bound{{0, 0}}, Flags: LBoundInf}, voi.IntS32, true},
		{"crhist64 lin lbinf", Spec{DType: voi.CRHist64, Scheme: Lin, LB: 100, UB: 200, StepInc: 10, Flags: LBoundInf}, voi.IntS64, true},
		{"crhist32 from 0", Spec{DType: voi.CRHist32, Scheme: Lin, LB: 0, UB: 50, StepInc: 5}, voi.IntU32, true},
		{"drhist32 lbinf", Spec{DType: voi.DRHist32, Scheme: Lin, LB: 0, UB: 50, StepInc: 10, Flags: LBoundInf}, voi.IntS32, false},
		{"crhist64 lbinf wide", Spec{DType: voi.CRHist64, Scheme: Lin, LB: 0, UB: 1 << 20, StepInc: 1 << 16, Flags: LBoundInf}, voi.IntS64, false},
		{"wide", Spec{DType: voi.CRHist64, Scheme: Lin, UB: 1 << 20, StepInc: 1 << 16}, voi.IntU64, false},
		{"q", Spec{DType: voi.CRHist32, Scheme: Lin, LB: 0x13, UB: 0x5013, StepInc: 1}, voi.QU32, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data, err := c.sp.Build(c.dt)
			require.NoError(t, err)
			l, err := NewLayout(data, c.sp.DType, c.dt)
			require.NoError(t, err)
			_, ok := l.ct.Counter(0)
			require.Equal(t, c.table, ok)
			if !ok {
				return
			}
			// Values from below the lowest bound to above the highest, as
			// the VOI type sees them.
			var vals []uint64
			for _, b := range bounds(data, c.sp.DType, c.dt) {
				for d := -3; d <= 3; d++ {
					vals = append(vals, b+uint64(d))
				}
			}
			for x := l.ct.Lo; x < l.ct.Lo+uint64(len(l.ct.T)); x++ {
				vals = append(vals, x^l.flip)
			}
			vals = append(vals, 0, 1<<31, 1<<31-1, 1<<32-1, 1<<63, 1<<64-1)
			for _, v := range vals {
				off, _ := l.ct.Counter(v)
				want := 0
				if j := l.Find(data, v); j >= 0 {
					want = l.cnt0 + j*l.g.bsz
				}
				require.Equal(t, want, off, "v=%#x", v)
			}
		})
	}
}

func dvBounds(lo, hi uint64) []Bound {
	var b []Bound
	for v := lo; v <= hi; v++ {
		b = append(b, Bound{v, v})
	}
	return b
}
