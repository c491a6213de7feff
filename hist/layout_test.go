package hist

import (
	"errors"
	"testing"

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
