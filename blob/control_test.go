package blob_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/hist"
	"github.com/statsblob/statsblob/qmath"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// ctlTemplate has a plain counter (0), a VOI with every kind of statistic
// (1), a relative-update level (2) and a Q VOI (3).
func ctlTemplate(t testing.TB) *tpl.Template {
	t.Helper()
	tp, err := tpl.NewRegistry().New("CTL")
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "bytes", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}))
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 1, Name: "rtt", DType: voi.IntU32, Stats: []tpl.StatSpec{
		tpl.Sum(), tpl.Max(), tpl.Min(),
		tpl.Histogram(hist.Spec{DType: voi.CRHist32, Scheme: hist.Lin, LB: 0, UB: 1000, StepInc: 100}),
		tpl.TDigest(voi.TDgstClust32, 20, 4)}}))
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 2, Name: "inflight", DType: voi.IntS64, Flags: voi.FlagRelUpdate, Stats: []tpl.StatSpec{tpl.Max()}}))
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 3, Name: "ratio", DType: voi.QS64, Prec: 16, Stats: []tpl.StatSpec{tpl.Sum()}}))
	return tp
}

func fixedClock() int64 { return blob.SBinTime(1_700_000_000, 0) }

// statData returns a copy of every statistic's data, errors and flag of VOI id.
func statData(bl *blob.Blob, id int32) []blob.Stat {
	var out []blob.Stat
	for v, s := range bl.Stats() {
		if v == id {
			s.Data = append([]byte(nil), s.Data...)
			s.Offset = 0
			out = append(out, s)
		}
	}
	return out
}

func feedCtl(t *testing.T, bl *blob.Blob, rtts ...uint32) {
	t.Helper()
	for _, v := range rtts {
		require.NoError(t, bl.UpdateU64(0, uint64(v)*10))
		require.NoError(t, bl.UpdateU32(1, v))
		require.NoError(t, bl.UpdateRelS64(2, 1))
		require.NoError(t, bl.UpdateFloat(3, 1.5))
	}
}

func TestControlOffSkipsStatisticsKeepsLevel(t *testing.T) {
	tp := ctlTemplate(t)
	var c blob.Control
	ctl := blob.New(tp, blob.NewEnv(fixedClock, 1))
	ctl.SetControl(&c)
	ref := blob.New(tp, blob.NewEnv(fixedClock, 1))

	feedCtl(t, ctl, 100, 250)
	feedCtl(t, ref, 100, 250)
	require.NoError(t, c.Set(1, false))
	require.NoError(t, c.Set(2, false))
	require.NoError(t, c.Set(3, false))
	require.False(t, c.On(1))
	require.True(t, c.On(0))
	feedCtl(t, ctl, 900, 5) // VOI 0 counts, 1 is off, 2 and 3 keep their level only
	for _, v := range []uint32{900, 5} {
		require.NoError(t, ref.UpdateU64(0, uint64(v)*10))
	}
	require.Equal(t, statData(ref, 1), statData(ctl, 1))
	require.Equal(t, statData(ref, 2), statData(ctl, 2)) // MAX still 2
	require.Equal(t, statData(ref, 0), statData(ctl, 0))
	// The levels moved on while off: on again, the next +1 makes 5.
	require.NoError(t, c.Set(2, true))
	require.NoError(t, c.Set(3, true))
	require.NoError(t, ctl.UpdateRelS64(2, 1))
	require.NoError(t, ctl.UpdateQ(3, qmath.Ini(qmath.S64, 1, 16)))
	mx, err := ctl.Fetch(2, voi.Max)
	require.NoError(t, err)
	v, err := mx.Value()
	require.NoError(t, err)
	require.Equal(t, 5.0, v)
	sum, err := ctl.Fetch(3, voi.Sum)
	require.NoError(t, err)
	v, err = sum.Value()
	require.NoError(t, err)
	require.Equal(t, 1.5+1.5+1.0, v) // two before, one after; two were off

	// All off at once: nothing changes, not even VOI 0; on again, VOI 1
	// stays off (its own setting).
	before := append([]byte(nil), ctl.Bytes()...)
	c.SetAll(false)
	require.False(t, c.On(0))
	require.NoError(t, ctl.UpdateU64(0, 7))
	require.NoError(t, ctl.UpdateU32(1, 7))
	require.Equal(t, before, ctl.Bytes())
	c.SetAll(true)
	require.True(t, c.On(0))
	require.False(t, c.On(1))

	// Detached: everything counts again.
	ctl.SetControl(nil)
	require.NoError(t, ctl.UpdateU32(1, 7))
	require.NotEqual(t, statData(ref, 1), statData(ctl, 1))

	// Errors are still reported for updates of an off VOI.
	ctl.SetControl(&c)
	require.ErrorIs(t, ctl.UpdateU64(1, 7), voi.ErrInvalid)
	require.ErrorIs(t, c.Set(-1, false), voi.ErrInvalid)
	require.ErrorIs(t, c.Set(blob.MaxControlID+1, false), voi.ErrInvalid)
}

func TestControlTimes(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	c := blob.Control{Clock: func() time.Time { now = now.Add(time.Second); return now }}
	require.Equal(t, blob.VOIState{On: true}, c.State(4))
	require.NoError(t, c.Set(4, false)) // 12:00:01
	require.NoError(t, c.Set(4, false)) // no change: no time
	require.NoError(t, c.Set(4, true))  // 12:00:02
	c.SetAll(false)                     // 12:00:03
	c.SetAll(true)                      // 12:00:04
	sec := func(s int) time.Time { return time.Date(2026, 11, 27, 12, 0, s, 0, time.UTC) }
	require.Equal(t, blob.VOIState{On: true, Started: sec(2), Stopped: sec(1)}, c.State(4))
	require.Equal(t, blob.VOIState{On: true, Started: sec(4), Stopped: sec(3)}, c.AllState())
	require.Equal(t, blob.VOIState{On: true}, c.State(0))
}

// ResetVOI gives a VOI's statistics exactly the bytes Reset (the C's
// reset) gives them, and leaves every other byte alone.
func TestResetVOIMatchesReset(t *testing.T) {
	tp := ctlTemplate(t)
	bl := blob.New(tp, blob.NewEnv(fixedClock, 1))
	feedCtl(t, bl, 100, 250, 5000, 3)
	whole := bl.Clone()
	whole.Reset()
	before := bl.Clone()
	require.NoError(t, bl.ResetVOI(1))
	require.Equal(t, statData(whole, 1), statData(bl, 1))
	require.NotEqual(t, statData(before, 1), statData(bl, 1))
	for _, id := range []int32{0, 2, 3} {
		require.Equal(t, statData(before, id), statData(bl, id))
	}
	require.Equal(t, before.Header().LastResetRaw, bl.Header().LastResetRaw)
	// The t-digest takes updates again after its reset, as after Reset.
	for _, v := range []uint32{10, 20, 30} {
		require.NoError(t, bl.UpdateU32(1, v))
		require.NoError(t, whole.UpdateU32(1, v))
	}
	require.Equal(t, statData(whole, 1), statData(bl, 1))

	require.NoError(t, bl.ResetVOI(2))
	require.Equal(t, statData(whole, 2), statData(bl, 2))

	snap := append([]byte(nil), bl.Bytes()...)
	for _, id := range []int32{-1, 4, 1 << 20} {
		require.ErrorIs(t, bl.ResetVOI(id), voi.ErrInvalid)
	}
	require.Equal(t, snap, bl.Bytes())
}

// SetAll while writers run: every update lands either before the switch
// (counted) or after it (not), none half.
func TestControlShardedConcurrent(t *testing.T) {
	tp := ctlTemplate(t)
	s := blob.NewSharded(tp, 4, fixedClock)
	var c blob.Control
	s.SetControl(&c)
	const writers, per = 4, 2000
	var wg sync.WaitGroup
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range per {
				if err := s.UpdateU64(0, 1); err != nil {
					panic(err)
				}
			}
		}()
	}
	for i := range 50 {
		c.SetAll(i%2 == 1)
	}
	wg.Wait()
	c.SetAll(true)
	require.NoError(t, s.UpdateU64(0, 1))
	snap, err := s.Snapshot(false)
	require.NoError(t, err)
	got, err := snap.Fetch(0, voi.Sum)
	require.NoError(t, err)
	v, err := got.Value()
	require.NoError(t, err)
	require.LessOrEqual(t, v, float64(writers*per+1))
	require.GreaterOrEqual(t, v, 1.0)

	require.NoError(t, s.ResetVOI(0))
	snap, err = s.Snapshot(false)
	require.NoError(t, err)
	got, err = snap.Fetch(0, voi.Sum)
	require.NoError(t, err)
	v, err = got.Value()
	require.NoError(t, err)
	require.Equal(t, 0.0, v)
	require.ErrorIs(t, s.ResetVOI(9), voi.ErrInvalid)
}
