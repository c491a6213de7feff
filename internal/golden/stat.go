package golden

import (
	"fmt"
	"strings"

	"github.com/statsblob/statsblob/internal/literal"
	"github.com/statsblob/statsblob/voi"
)

// Histogram flags of a STAT token, with the values of hist.LBoundInf and
// hist.UBoundInf (VSD_HIST_LBOUND_INF, VSD_HIST_UBOUND_INF).
const (
	LBInf = 0x01
	UBInf = 0x02
)

// Stat is a STAT token of a voi line (FORMAT.md 3.5), read but not
// checked against the engine's rules.
type Stat struct {
	Type  voi.SType // voi.Sum, voi.Max, voi.Min, voi.Hist or voi.TDgst
	DType voi.DType // TDgstClust32/64 or the histogram's type; 0 for SUM, MAX, MIN

	NCtds, Prec uint64 // t-digests: centroids and precision

	// Histograms, named as hist.Spec names them: the scheme ("LIN",
	// "EXP", "LINEXP" or "USR") and its numbers (LIN(lb,ub,stepinc),
	// EXP(lb,ub,stepbase,stepexp), LINEXP(lb,ub,nlinsteps,stepbase)),
	// USR's buckets as {lb, ub} pairs ({lb, lb} for a single bound), and
	// the flags (LBInf, UBInf and numeric flags OR'ed in).
	Scheme                                      string
	LB, UB, StepInc, StepBase, StepExp, LinStep uint64
	Buckets                                     [][2]uint64
	Flags                                       uint32
}

var histDTypes = map[string]voi.DType{
	"CRHIST32": voi.CRHist32, "DRHIST32": voi.DRHist32, "DVHIST32": voi.DVHist32,
	"CRHIST64": voi.CRHist64, "DRHIST64": voi.DRHist64, "DVHIST64": voi.DVHist64,
}

var schemeArgs = map[string]int{"LIN": 3, "EXP": 4, "LINEXP": 4, "USR": 1}

// ParseStat reads a STAT token: SUM, MAX, MIN, TDGSTCLUST32(N,P),
// TDGSTCLUST64(N,P) or HISTTYPE_SCHEME(ARGS[,FLAGS]), names in any case.
// Errors wrap ErrSyntax.
func ParseStat(tok string) (Stat, error) {
	name, args, hasArgs := strings.Cut(tok, "(")
	if hasArgs {
		if !strings.HasSuffix(args, ")") {
			return Stat{}, fmt.Errorf("%w: stat spec %q", ErrSyntax, tok)
		}
		args = args[:len(args)-1]
	}
	var f []string
	if hasArgs {
		f = strings.Split(args, ",")
	}
	up := strings.ToUpper(name)
	switch up {
	case "SUM":
		return Stat{Type: voi.Sum}, nil
	case "MAX":
		return Stat{Type: voi.Max}, nil
	case "MIN":
		return Stat{Type: voi.Min}, nil
	case "TDGSTCLUST32", "TDGSTCLUST64":
		if len(f) != 2 {
			return Stat{}, fmt.Errorf("%w: %s needs 2 arguments", ErrSyntax, tok)
		}
		s := Stat{Type: voi.TDgst, DType: voi.TDgstClust32}
		if up == "TDGSTCLUST64" {
			s.DType = voi.TDgstClust64
		}
		var err error
		if s.NCtds, err = literal.Int(f[0]); err != nil {
			return Stat{}, err
		}
		if s.Prec, err = literal.Int(f[1]); err != nil {
			return Stat{}, err
		}
		return s, nil
	}
	s, err := parseHist(up, f)
	if err != nil {
		return Stat{}, fmt.Errorf("stat spec %q: %w", tok, err)
	}
	return s, nil
}

func parseHist(name string, f []string) (Stat, error) {
	base, scheme, ok := strings.Cut(name, "_")
	dt, known := histDTypes[base]
	if !ok || !known {
		return Stat{}, fmt.Errorf("%w: unknown statistic %q", ErrSyntax, name)
	}
	s := Stat{Type: voi.Hist, DType: dt, Scheme: scheme}
	nargs := schemeArgs[scheme]
	if nargs == 0 {
		return s, fmt.Errorf("%w: unknown bucket scheme %q", ErrSyntax, scheme)
	}
	if len(f) != nargs && len(f) != nargs+1 {
		return s, fmt.Errorf("%w: %s takes %d or %d arguments", ErrSyntax, scheme, nargs, nargs+1)
	}
	if len(f) == nargs+1 {
		for _, p := range strings.Split(f[nargs], "+") {
			switch strings.ToLower(p) {
			case "lbinf":
				s.Flags |= LBInf
			case "ubinf":
				s.Flags |= UBInf
			default:
				v, err := literal.Int(p)
				if err != nil {
					return s, err
				}
				s.Flags |= uint32(v)
			}
		}
	}
	if scheme == "USR" {
		for _, b := range strings.Split(f[0], "|") {
			lbs, ubs, isRange := strings.Cut(b, ":")
			lb, err := literal.Int(lbs)
			if err != nil {
				return s, err
			}
			ub := lb
			if isRange {
				if ub, err = literal.Int(ubs); err != nil {
					return s, err
				}
			}
			s.Buckets = append(s.Buckets, [2]uint64{lb, ub})
		}
		return s, nil
	}
	a := make([]uint64, nargs)
	for i := range a {
		v, err := literal.Int(f[i])
		if err != nil {
			return s, err
		}
		a[i] = v
	}
	s.LB, s.UB = a[0], a[1]
	switch scheme {
	case "LIN":
		s.StepInc = a[2]
	case "EXP":
		s.StepBase, s.StepExp = a[2], a[3]
	case "LINEXP":
		s.LinStep, s.StepBase = a[2], a[3]
	}
	return s, nil
}
