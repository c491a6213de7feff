package scenario

import (
	"github.com/statsblob/statsblob/hist"
	"github.com/statsblob/statsblob/internal/golden"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// parseStatSpec reads a STAT token of a voi line (FORMAT.md 3.5).
func parseStatSpec(tok string) (tpl.StatSpec, error) {
	s, err := golden.ParseStat(tok)
	if err != nil {
		return tpl.StatSpec{}, err
	}
	switch s.Type {
	case voi.Sum:
		return tpl.Sum(), nil
	case voi.Max:
		return tpl.Max(), nil
	case voi.Min:
		return tpl.Min(), nil
	case voi.TDgst:
		return tpl.TDigest(s.DType, uint32(s.NCtds), uint32(s.Prec)), nil
	}
	return tpl.Histogram(histSpec(s)), nil
}

// histSpec is the histogram spec of a histogram STAT token.
func histSpec(s golden.Stat) hist.Spec {
	h := hist.Spec{DType: s.DType, Flags: hist.Flags(s.Flags), LB: s.LB, UB: s.UB,
		StepInc: s.StepInc, StepBase: s.StepBase, StepExp: s.StepExp, LinStepDiv: s.LinStep}
	h.Scheme = map[string]hist.Scheme{"LIN": hist.Lin, "EXP": hist.Exp, "LINEXP": hist.LinExp, "USR": hist.Usr}[s.Scheme]
	for _, b := range s.Buckets {
		h.Buckets = append(h.Buckets, hist.Bound{LB: b[0], UB: b[1]})
	}
	return h
}
