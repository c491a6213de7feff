package sample_test

import (
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/bsdrand"
	"github.com/statsblob/statsblob/internal/abi"
	"github.com/statsblob/statsblob/sample"
)

// pcts builds a rates list with slot ids 0, 1, 2, ... as the dice command
// of the conformance scenarios does for a bare "PCT,PCT,..." list.
func pcts(p ...uint32) []sample.Rate {
	rates := make([]sample.Rate, len(p))
	for i, v := range p {
		rates[i] = sample.Rate{TplID: int32(i), Pct: v}
	}
	return rates
}

// TestSeededRollGolden checks seeded rolls against scenario 27
// (testdata/conformance/golden/27_dice.out): hash32_buf, rnd_pct and the
// chosen slot of every seeded line.
func TestSeededRollGolden(t *testing.T) {
	for _, c := range []struct {
		seed  string
		rates []sample.Rate
		hash  uint32
		pct   uint32
		want  int32
	}{
		{"00", pcts(100), 0, 0, 0},
		{"00", pcts(0, 100), 0, 0, 1},
		{"01020304", pcts(50, 50), 38218, 0, 0},
		{"deadbeef", pcts(50, 50), 8172920, 0, 0},
		{"0a0b0c0d0e0f", pcts(10, 20, 30), 404844939, 9, 0},
		{"0a0b0c0d0e0e", pcts(10, 20, 30), 404844938, 9, 0},
		{"0a0b0c0d0e0d", pcts(10, 20, 30), 404844937, 9, 0},
		{"0a0b0c0d0e0c", pcts(10, 20, 30), 404844936, 9, 0},
		{"6c6f63616c686f7374", pcts(25, 25, 25, 25), 1139942121, 26, 1},
		{"0000000000000000", []sample.Rate{{5, 30}, {9, 30}}, 0, 0, 5},
		{"ffffffffffffffff", []sample.Rate{{5, 30}, {9, 30}}, 1749001336, 40, 9},
		{"3132333435", pcts(0, 0, 0), 59964287, 1, -1},
		{"3132333435", pcts(1, 0, 99), 59964287, 1, 0},
		{"c0a80001c0a80002", pcts(1, 1, 1), 3054875475, 71, -1},
		{"00112233445566778899aabbccddeeff", pcts(100), 2943360504, 68, 0},
	} {
		seed, err := hex.DecodeString(c.seed)
		require.NoError(t, err)
		require.Equal(t, c.hash, abi.Hash32(0, seed), "hash32_buf(%s)", c.seed)
		require.Equal(t, c.pct, sample.Percent(seed), "rnd_pct(%s)", c.seed)

		src := bsdrand.New(1)
		require.Equal(t, c.want, sample.Roll(c.rates, seed, src), "Roll(%s, %v)", c.seed, c.rates)
		require.Zero(t, src.Calls(), "a seeded roll must not draw from random()")

		tab := newTable(t, c.rates)
		require.Equal(t, c.want, tab.Roll(seed), "Table.Roll(%s, %v)", c.seed, c.rates)
	}
}

// TestUnseededRollGolden replays the unseeded lines of scenario 27: each
// roll draws exactly one random() value from the shared generator.
func TestUnseededRollGolden(t *testing.T) {
	type roll struct {
		rates []sample.Rate
		want  int32
	}
	for _, c := range []struct {
		seed  uint32
		rolls []roll
	}{
		{1, []roll{
			{pcts(50, 50), 1},
			{pcts(50, 50), 0},
			{pcts(10, 10, 10), -1},
			{pcts(33, 33, 34), 2},
		}},
		{99, []roll{{pcts(50, 50), 0}}},
	} {
		src := bsdrand.New(c.seed)
		tabSrc := bsdrand.New(c.seed)
		for i, r := range c.rolls {
			require.Equal(t, r.want, sample.Roll(r.rates, nil, src), "seed %d roll %d", c.seed, i)
			require.Equal(t, uint64(i+1), src.Calls())
			require.Equal(t, r.want, newTable(t, r.rates).RollFrom(tabSrc), "seed %d Table.RollFrom %d", c.seed, i)
		}
	}
}

func TestRollPercentIsOneRandomDraw(t *testing.T) {
	// seed 1: random() = 1804289383, 846930886, 1681692777 (FORMAT.md §10).
	src := bsdrand.New(1)
	for _, v := range []uint32{1804289383, 846930886, 1681692777} {
		require.Equal(t, v/21474836, sample.RollPercent(src))
	}
	require.Equal(t, uint64(3), src.Calls())
}

func TestPick(t *testing.T) {
	f := func(rates []sample.Rate, pct uint32, want int32) {
		t.Helper()
		require.Equal(t, want, sample.Pick(rates, pct), "Pick(%v, %d)", rates, pct)
	}
	f(nil, 0, -1)
	f(pcts(0), 0, -1)               // 0% entries are never chosen
	f(pcts(0, 0, 5), 0, 2)          // ... even when the roll is 0
	f(pcts(10, 20), 10, 0)          // the running sum reaching pct chooses
	f(pcts(10, 20), 11, 1)          //
	f(pcts(10, 20), 30, 1)          //
	f(pcts(10, 20), 31, -1)         // past the sum: no template
	f(pcts(100), 100, 0)            // 100 is a possible roll
	f(pcts(50, 50), 100, 1)         //
	f([]sample.Rate{{7, 1}}, 1, 7)  // slot ids are returned as given
	f([]sample.Rate{{7, 1}}, 2, -1) //
	// The C's uint32_t sum wraps: 10, then 10+0xFFFFFFFF = 9, then 14.
	f(pcts(10, 0xFFFFFFFF, 5), 10, 0)
	f(pcts(10, 0xFFFFFFFF, 5), 11, 2)
	f(pcts(10, 0xFFFFFFFF, 5), 14, 2)
	f(pcts(10, 0xFFFFFFFF, 5), 15, -1)
}

func TestFastPercentRange(t *testing.T) {
	var seen [101]bool
	for range 100000 {
		p := sample.FastPercent()
		require.LessOrEqual(t, p, uint32(100))
		seen[p] = true
	}
	for p := range 100 { // 100 itself has probability 48/2^31
		require.True(t, seen[p], "percentage %d never rolled", p)
	}
}
