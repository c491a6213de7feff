package scenario

import (
	"fmt"
	"strings"

	"github.com/statsblob/statsblob/hist"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// parseStatSpec reads a STAT token of a voi line (FORMAT.md 3.5).
func parseStatSpec(tok string) (tpl.StatSpec, error) {
	name, args, hasArgs := strings.Cut(tok, "(")
	if hasArgs {
		if !strings.HasSuffix(args, ")") {
			return tpl.StatSpec{}, fmt.Errorf("%w: stat spec %q", errSyntax, tok)
		}
		args = args[:len(args)-1]
	}
	var fields []string
	if hasArgs {
		fields = strings.Split(args, ",")
	}
	up := strings.ToUpper(name)
	switch up {
	case "SUM":
		return tpl.Sum(), nil
	case "MAX":
		return tpl.Max(), nil
	case "MIN":
		return tpl.Min(), nil
	case "TDGSTCLUST32", "TDGSTCLUST64":
		if len(fields) != 2 {
			return tpl.StatSpec{}, fmt.Errorf("%w: %s needs 2 arguments", errSyntax, tok)
		}
		n, err := parseInt(fields[0])
		if err != nil {
			return tpl.StatSpec{}, err
		}
		p, err := parseInt(fields[1])
		if err != nil {
			return tpl.StatSpec{}, err
		}
		dt := voi.TDgstClust32
		if up == "TDGSTCLUST64" {
			dt = voi.TDgstClust64
		}
		return tpl.TDigest(dt, uint32(n), uint32(p)), nil
	}
	hs, err := parseHistSpec(up, fields)
	if err != nil {
		return tpl.StatSpec{}, fmt.Errorf("stat spec %q: %w", tok, err)
	}
	return tpl.Histogram(hs), nil
}

var histDTypes = map[string]voi.DType{
	"CRHIST32": voi.CRHist32, "DRHIST32": voi.DRHist32, "DVHIST32": voi.DVHist32,
	"CRHIST64": voi.CRHist64, "DRHIST64": voi.DRHist64, "DVHIST64": voi.DVHist64,
}

func parseHistSpec(name string, f []string) (hist.Spec, error) {
	base, scheme, ok := strings.Cut(name, "_")
	dt, known := histDTypes[base]
	if !ok || !known {
		return hist.Spec{}, fmt.Errorf("%w: unknown statistic %q", errSyntax, name)
	}
	s := hist.Spec{DType: dt}
	nargs := map[string]int{"LIN": 3, "EXP": 4, "LINEXP": 4, "USR": 1}[scheme]
	if nargs == 0 {
		return s, fmt.Errorf("%w: unknown bucket scheme %q", errSyntax, scheme)
	}
	if len(f) != nargs && len(f) != nargs+1 {
		return s, fmt.Errorf("%w: %s takes %d or %d arguments", errSyntax, scheme, nargs, nargs+1)
	}
	if len(f) == nargs+1 {
		fl, err := parseHistFlags(f[nargs])
		if err != nil {
			return s, err
		}
		s.Flags = fl
	}
	if scheme == "USR" {
		s.Scheme = hist.Usr
		for _, b := range strings.Split(f[0], "|") {
			lbs, ubs, isRange := strings.Cut(b, ":")
			lb, err := parseInt(lbs)
			if err != nil {
				return s, err
			}
			ub := lb
			if isRange {
				if ub, err = parseInt(ubs); err != nil {
					return s, err
				}
			}
			s.Buckets = append(s.Buckets, hist.Bound{LB: lb, UB: ub})
		}
		return s, nil
	}
	nums := make([]uint64, nargs)
	for i := range nums {
		v, err := parseInt(f[i])
		if err != nil {
			return s, err
		}
		nums[i] = v
	}
	s.LB, s.UB = nums[0], nums[1]
	switch scheme {
	case "LIN":
		s.Scheme, s.StepInc = hist.Lin, nums[2]
	case "EXP":
		s.Scheme, s.StepBase, s.StepExp = hist.Exp, nums[2], nums[3]
	case "LINEXP":
		s.Scheme, s.LinStepDiv, s.StepBase = hist.LinExp, nums[2], nums[3]
	}
	return s, nil
}

func parseHistFlags(tok string) (hist.Flags, error) {
	var fl hist.Flags
	for _, p := range strings.Split(tok, "+") {
		switch strings.ToLower(p) {
		case "lbinf":
			fl |= hist.LBoundInf
		case "ubinf":
			fl |= hist.UBoundInf
		default:
			v, err := parseInt(p)
			if err != nil {
				return 0, err
			}
			fl |= hist.Flags(v)
		}
	}
	return fl, nil
}
