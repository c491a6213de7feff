//go:build go1.25

package sample_test

import (
	"encoding"
	"flag"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/bsdrand"
	"github.com/statsblob/statsblob/sample"
	"github.com/statsblob/statsblob/tpl"
)

var (
	_ flag.Value               = (*sample.Table)(nil)
	_ encoding.TextAppender    = (*sample.Table)(nil)
	_ encoding.TextMarshaler   = (*sample.Table)(nil)
	_ encoding.TextUnmarshaler = (*sample.Table)(nil)
)

// uniform is the kind of list the concurrency test installs: every entry
// names template k mod nTpl and the percentages add up to exactly 100, so
// a reader that saw a half-built or mixed list would notice.
func uniform(k, nTpl int) []sample.Rate {
	n := 1 + k%5
	rates := make([]sample.Rate, n)
	for i := range rates {
		rates[i] = sample.Rate{TplID: int32(k % nTpl), Pct: 100 / uint32(n)}
	}
	rates[n-1].Pct += 100 % uint32(n)
	return rates
}

func checkUniform(rates []sample.Rate) error {
	if len(rates) == 0 {
		return fmt.Errorf("empty list")
	}
	var sum uint32
	for _, r := range rates {
		if r.TplID != rates[0].TplID {
			return fmt.Errorf("mixed list %v", rates)
		}
		sum += r.Pct
	}
	if sum != 100 {
		return fmt.Errorf("list %v sums to %d", rates, sum)
	}
	return nil
}

// TestConcurrentSwapAndRoll has writers replace the list (Swap and Set)
// while readers roll, snapshot and print it. Run it with -race.
func TestConcurrentSwapAndRoll(t *testing.T) {
	const nTpl, nWriters, nReaders, swaps = 4, 2, 4, 5000
	reg := tpl.NewRegistry()
	for i := range nTpl {
		_, err := reg.New(fmt.Sprint("t", i))
		require.NoError(t, err)
	}
	tab := sample.NewTable(reg)
	_, err := tab.Swap(uniform(0, nTpl))
	require.NoError(t, err)

	var (
		done             atomic.Bool
		writers, readers sync.WaitGroup
	)
	for w := range nWriters {
		writers.Go(func() {
			for k := range swaps {
				list := uniform(k*nWriters+w, nTpl)
				if k%2 == 0 {
					if _, err := tab.Swap(list); err != nil {
						t.Error(err)
						return
					}
					continue
				}
				text, err := sample.AppendRates(nil, reg, list)
				if err == nil {
					err = tab.Set(string(text))
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	for r := range nReaders {
		readers.Go(func() {
			seed := []byte{byte(r), 0, 0, 0}
			src := bsdrand.New(uint32(r) + 1)
			valid := func(what string, id int32) bool {
				if id < 0 || id >= nTpl {
					t.Errorf("%s = %d: a full list always chooses a template", what, id)
					return false
				}
				return true
			}
			for i := 0; i < 100 || !done.Load(); i++ {
				seed[1], seed[2] = byte(i), byte(i>>8)
				if !valid("Roll", tab.Roll(seed)) || !valid("RollRandom", tab.RollRandom()) ||
					!valid("RollFrom", tab.RollFrom(src)) {
					return
				}
				if err := checkUniform(tab.Rates()); err != nil {
					t.Errorf("Rates: %v", err)
					return
				}
				if i%8 == 0 {
					parsed, err := sample.Parse(reg, tab.String())
					if err == nil {
						err = checkUniform(parsed)
					}
					if err != nil {
						t.Errorf("String: %v", err)
						return
					}
				}
			}
		})
	}
	writers.Wait()
	done.Store(true)
	readers.Wait()
	require.NoError(t, checkUniform(tab.Rates()))
}

// TestRatesSnapshotIsStable checks that a snapshot taken before a Set is
// neither changed by it nor able to change the table.
func TestRatesSnapshotIsStable(t *testing.T) {
	tab := newTable(t, pcts(10, 20))
	snap := tab.Rates()
	require.NoError(t, tab.Set("t0=100"))
	require.Equal(t, pcts(10, 20), snap)
	grown := append(snap, sample.Rate{TplID: 1, Pct: 1}) // must copy, not write into the table
	grown[0].Pct = 99
	require.Equal(t, pcts(10, 20), snap)
	require.Equal(t, []sample.Rate{{0, 100}}, tab.Rates())
}

func TestTableRollsMatchRoll(t *testing.T) {
	rates := pcts(10, 0, 25, 30)
	tab := newTable(t, rates)
	a, b := bsdrand.New(7), bsdrand.New(7)
	for i := range 1000 {
		seed := []byte(fmt.Sprint("flow-", i))
		require.Equal(t, sample.Roll(rates, seed, nil), tab.Roll(seed))
		require.Equal(t, sample.Roll(rates, nil, a), tab.RollFrom(b))
		got := tab.RollRandom()
		require.Contains(t, []int32{-1, 0, 2, 3}, got) // never the 0% entry
	}
	require.Equal(t, a.Calls(), b.Calls())

	// An empty table does not draw (tcp_stats_sample_rollthedice skips the
	// roll); the plain Roll does, as stats_tpl_sample_rollthedice does.
	empty := sample.NewTable(tpl.NewRegistry())
	src := bsdrand.New(1)
	require.Equal(t, int32(-1), empty.RollFrom(src))
	require.Zero(t, src.Calls())
	require.Equal(t, int32(-1), sample.Roll(nil, nil, src))
	require.Equal(t, uint64(1), src.Calls())
}

func TestHotPathDoesNotAllocate(t *testing.T) {
	tab := newTable(t, pcts(10, 20, 30))
	seed := []byte{192, 168, 0, 1, 192, 168, 0, 2, 0x01, 0xbb, 0xc3, 0x50}
	src := bsdrand.New(1)
	buf := make([]byte, 0, 256)
	var sink int32
	for name, f := range map[string]func(){
		"Roll":       func() { sink += tab.Roll(seed) },
		"RollRandom": func() { sink += tab.RollRandom() },
		"RollFrom":   func() { sink += tab.RollFrom(src) },
		"Rates":      func() { sink += int32(len(tab.Rates())) },
		"AppendText": func() { buf, _ = tab.AppendText(buf[:0]) },
	} {
		require.Zero(t, testing.AllocsPerRun(100, f), name)
	}
	_ = sink
}
