// Package sample chooses which template, if any, a flow is sampled with:
// per-template sample rates and FreeBSD's seeded dice roll
// (stats_tpl_sample_rollthedice).
package sample

import (
	"github.com/statsblob/statsblob/bsdrand"
	"github.com/statsblob/statsblob/internal/abi"
)

// Rate is one entry of a rates list: a template slot id and the percentage
// of flows to sample with it (struct stats_tpl_sample_rate).
type Rate struct {
	TplID int32
	Pct   uint32
}

// Percent returns the roll's percentage for a seed: hash32 of the seed
// bytes divided by UINT32_MAX/100, so 0..100.
func Percent(seed []byte) uint32 { return abi.Hash32(0, seed) / (0xFFFFFFFF / 100) }

// RollPercent returns an unseeded roll's percentage from src: random()
// divided by INT32_MAX/100 (one draw).
func RollPercent(src *bsdrand.Source) uint32 { return uint32(src.Int31()) / (0x7FFFFFFF / 100) }

// Pick maps a rolled percentage onto rates as the C does: rates are summed
// in order, an entry is chosen when the running sum reaches pct and its own
// percentage is not 0; -1 when the roll falls past the sum (no template).
func Pick(rates []Rate, pct uint32) int32 {
	var cum uint32
	for _, r := range rates {
		cum += r.Pct
		if pct > cum || r.Pct == 0 {
			continue
		}
		return r.TplID
	}
	return -1
}

// Roll is stats_tpl_sample_rollthedice: with a seed (non-nil, possibly
// empty) the choice depends only on the seed bytes; without one it draws
// from src. It returns the chosen template slot id or -1.
func Roll(rates []Rate, seed []byte, src *bsdrand.Source) int32 {
	if seed == nil {
		return Pick(rates, RollPercent(src))
	}
	return Pick(rates, Percent(seed))
}
