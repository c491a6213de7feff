package sample

import (
	"math/rand/v2"

	"github.com/statsblob/statsblob/bsdrand"
	"github.com/statsblob/statsblob/internal/abi"
)

// Divisors that map a 32-bit hash or a 31-bit random() value onto 0..100,
// as the C computes them (integer division, so 100 is rare but possible).
const (
	hashDiv   = 0xFFFFFFFF / 100 // UINT32_MAX / 100 = 42949672
	randomDiv = 0x7FFFFFFF / 100 // INT32_MAX / 100 = 21474836
)

// Percent returns a seeded roll's percentage: hash32_buf of the seed bytes
// (starting from 0) divided by UINT32_MAX/100, so 0..100. It does not
// allocate.
func Percent(seed []byte) uint32 { return abi.Hash32(0, seed) / hashDiv }

// RollPercent returns an unseeded roll's percentage from src: one random()
// draw divided by INT32_MAX/100, so 0..100. It advances src by exactly one
// value, as the C advances random().
func RollPercent(src *bsdrand.Source) uint32 { return uint32(src.Int31()) / randomDiv }

// FastPercent returns an unseeded roll's percentage like RollPercent, from
// a 31-bit value of math/rand/v2's global generator instead of random(3):
// the same distribution over 0..100, not the C's sequence. It is safe for
// concurrent use, never blocks and does not allocate (math/rand/v2's
// top-level functions draw from the runtime's per-thread ChaCha8 state).
func FastPercent() uint32 { return (rand.Uint32() >> 1) / randomDiv }

// Pick maps a rolled percentage onto rates as the C does: rates are summed
// in order, an entry is chosen when the running sum reaches pct and its own
// percentage is not 0; -1 when the roll falls past the sum (no template).
// The running sum wraps modulo 2^32 as the C's uint32_t does; lists that
// Parse and Table accept never get near that.
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
// one value from src, even when rates is empty, as the C does. It returns
// the chosen template slot id or -1. This is the reference-exact roll the
// conformance runner uses; a Table's methods are the hot-path versions.
func Roll(rates []Rate, seed []byte, src *bsdrand.Source) int32 {
	if seed == nil {
		return Pick(rates, RollPercent(src))
	}
	return Pick(rates, Percent(seed))
}
