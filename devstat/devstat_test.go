package devstat_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/derive"
	"github.com/statsblob/statsblob/devstat"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// fakeClock is a simulated monotonic clock in nanoseconds.
type fakeClock struct{ now int64 }

func (c *fakeClock) read() int64 { return c.now }

func newDevice(t *testing.T, c *fakeClock) *devstat.Device {
	t.Helper()
	tp, err := devstat.Template(tpl.NewRegistry())
	require.NoError(t, err)
	d, err := devstat.New(tp, devstat.Options{Clock: c.read, Env: blob.NewEnv(c.read, 1)})
	require.NoError(t, err)
	return d
}

func sum(t *testing.T, b *blob.Blob, id int32) uint64 {
	t.Helper()
	v, err := b.FetchU64(id, voi.Sum)
	require.NoError(t, err)
	return v
}

func TestTransactions(t *testing.T) {
	c := &fakeClock{}
	d := newDevice(t, c)
	c.now = 100
	a := d.Start()
	c.now = 150
	b := d.Start()
	require.Equal(t, int64(2), d.Outstanding())
	c.now = 300
	require.NoError(t, d.End(a, 4096, devstat.Read, devstat.TagSimple))
	c.now = 400
	require.NoError(t, d.End(b, 8192, devstat.Write, devstat.TagOrdered))
	c.now = 1000
	s := d.Snapshot(false)

	// busy from 100 (first start) to 400 (last end); elapsed since New at 0
	require.Equal(t, uint64(300), sum(t, s, devstat.VOIBusy))
	require.Equal(t, uint64(1000), sum(t, s, devstat.VOIElapsed))
	require.Equal(t, uint64(4096), sum(t, s, devstat.VOIBytes+int32(devstat.Read)))
	require.Equal(t, uint64(8192), sum(t, s, devstat.VOIBytes+int32(devstat.Write)))
	require.Equal(t, uint64(1), sum(t, s, devstat.VOIOps+int32(devstat.Read)))
	require.Equal(t, uint64(200), sum(t, s, devstat.VOIDuration+int32(devstat.Read)))
	require.Equal(t, uint64(250), sum(t, s, devstat.VOIDuration+int32(devstat.Write)))
	require.Equal(t, uint64(1), sum(t, s, devstat.VOITags+int32(devstat.TagSimple)))
	require.Equal(t, uint64(1), sum(t, s, devstat.VOITags+int32(devstat.TagOrdered)))
	require.Equal(t, uint64(0), sum(t, s, devstat.VOITags+int32(devstat.TagHead)))
	mx, err := s.FetchS64(devstat.VOIOutstanding, voi.Max)
	require.NoError(t, err)
	require.Equal(t, int64(2), mx)
	lo, err := s.FetchU64(devstat.VOILatency, voi.Min)
	require.NoError(t, err)
	hi, err := s.FetchU64(devstat.VOILatency, voi.Max)
	require.NoError(t, err)
	require.Equal(t, []uint64{200, 250}, []uint64{lo, hi})

	st, err := devstat.Compute(nil, s)
	require.NoError(t, err)
	require.Equal(t, time.Duration(1000), st.Elapsed)
	require.Equal(t, time.Duration(300), st.Busy)
	require.InDelta(t, 30.0, st.BusyPercent, 1e-12)
	require.InDelta(t, 2e6, st.TPS, 1e-6) // 2 transactions in 1 µs
	require.InDelta(t, 6.0, st.KBPerTransfer, 1e-12)
	require.InDelta(t, 12288.0/(1<<20)/1e-6, st.MBPerSec, 1e-6)
	require.InDelta(t, 0.0002, st.MsPerOp(devstat.Read), 1e-15)
	require.InDelta(t, 1e6, st.OpsPerSec(devstat.Write), 1e-6)
	require.Equal(t, int64(2), st.MaxOutstanding)
}

// A transaction across a window boundary is busy in both windows for the part
// it spent in each, so the windows' busy time adds up to the total.
func TestBusyAcrossWindows(t *testing.T) {
	c := &fakeClock{}
	d := newDevice(t, c)
	c.now = 900
	tx := d.Start()
	c.now = 1000
	w1 := d.Snapshot(true)
	c.now = 1200
	require.NoError(t, d.End(tx, 512, devstat.Read, devstat.TagNone))
	c.now = 1500
	tx2 := d.Start()
	c.now = 2000
	w2 := d.Snapshot(true)
	c.now = 2100
	require.NoError(t, d.End(tx2, 512, devstat.Free, devstat.TagHead))
	c.now = 3000
	w3 := d.Snapshot(true)

	require.Equal(t, []uint64{100, 200 + 500, 100},
		[]uint64{sum(t, w1, devstat.VOIBusy), sum(t, w2, devstat.VOIBusy), sum(t, w3, devstat.VOIBusy)})
	require.Equal(t, []uint64{1000, 1000, 1000},
		[]uint64{sum(t, w1, devstat.VOIElapsed), sum(t, w2, devstat.VOIElapsed), sum(t, w3, devstat.VOIElapsed)})
	// the queue depth outstanding at a window's start is its first sample
	for _, w := range []*blob.Blob{w2, w3} {
		mx, err := w.FetchS64(devstat.VOIOutstanding, voi.Max)
		require.NoError(t, err)
		require.Equal(t, int64(1), mx)
	}
	st, err := devstat.Compute(nil, w2)
	require.NoError(t, err)
	require.InDelta(t, 70.0, st.BusyPercent, 1e-12)
	require.Equal(t, uint64(1), st.Ops[devstat.Read])
	require.Equal(t, [3]uint64{}, st.Tags) // TagNone counts none
	require.Equal(t, time.Duration(300), st.LatencyP50)
}

// Two cumulative readings give the period between them, latency quantiles
// from the difference of the histograms.
func TestComputeCumulative(t *testing.T) {
	c := &fakeClock{}
	d := newDevice(t, c)
	run := func(n int, lat int64, bytes uint64) {
		for range n {
			tx := d.Start()
			c.now += lat
			require.NoError(t, d.End(tx, bytes, devstat.Write, devstat.TagSimple))
			c.now += lat // idle as long as busy
		}
	}
	run(100, 5000, 4096) // 100 transactions of 5 µs
	old := d.Snapshot(false)
	run(1000, 300_000, 65536) // 1000 of 300 µs
	cur := d.Snapshot(false)

	st, err := devstat.Compute(old, cur)
	require.NoError(t, err)
	require.Equal(t, uint64(1000), st.Ops[devstat.Write])
	require.Equal(t, uint64(1000*65536), st.Bytes[devstat.Write])
	require.Equal(t, time.Duration(600_000_000), st.Elapsed)
	require.InDelta(t, 50.0, st.BusyPercent, 1e-9)
	require.InDelta(t, 1000/0.6, st.TPS, 1e-9)
	require.InDelta(t, 64.0, st.KBPerTransfer, 1e-12)
	require.InDelta(t, 0.3, st.MsPerOp(devstat.Write), 1e-12)
	// 300 µs lies in the histogram's bucket [261120, 523264) ns; the
	// earlier 5 µs transactions are not in the difference
	for _, p := range []time.Duration{st.LatencyP50, st.LatencyP99} {
		require.GreaterOrEqual(t, p, time.Duration(261120))
		require.Less(t, p, time.Duration(523264))
	}

	_, err = devstat.Compute(cur, old)
	require.ErrorIs(t, err, voi.ErrInvalid)
	require.ErrorIs(t, err, devstat.ErrWrongOrder)
	require.False(t, st.SinceReset)

	// A reset between two readings (a restarted driver; readings taken
	// with reset): the later reading stands alone, said so. Before, its
	// fallen counters were an error.
	_ = d.Snapshot(true)
	run(10, 1000, 512)
	after := d.Snapshot(false)
	st, err = devstat.Compute(cur, after)
	require.NoError(t, err)
	alone, err := devstat.Compute(nil, after)
	require.NoError(t, err)
	require.True(t, st.SinceReset)
	st.SinceReset = false
	require.Equal(t, alone, st)
	require.Equal(t, uint64(10), st.Ops[devstat.Write])
	_, err = devstat.Compute(after, cur)
	require.ErrorIs(t, err, voi.ErrInvalid, "the wrong order is still refused")
	require.ErrorIs(t, err, devstat.ErrWrongOrder)
	require.ErrorContains(t, err, "the earlier reading was reset after the later one")
	run(2000, 1000, 512) // after's counters now pass cur's: the order is still told by the resets
	_, err = devstat.Compute(d.Snapshot(false), cur)
	require.ErrorIs(t, err, devstat.ErrWrongOrder)
	require.ErrorContains(t, err, "readings in the wrong order")
}

func TestRefusals(t *testing.T) {
	c := &fakeClock{}
	d := newDevice(t, c)
	before := d.Snapshot(false).Bytes()
	require.ErrorIs(t, d.End(devstat.Txn{}, 1, devstat.Read, devstat.TagSimple), devstat.ErrUnmatched)
	tx := d.Start()
	require.ErrorIs(t, d.End(tx, 1, devstat.Op(4), devstat.TagSimple), voi.ErrInvalid)
	require.ErrorIs(t, d.End(tx, 1, devstat.Read, devstat.Tag(4)), voi.ErrInvalid)
	require.Equal(t, int64(1), d.Outstanding())
	after := d.Snapshot(false)
	require.Equal(t, uint64(0), sum(t, after, devstat.VOIOps+int32(devstat.Read)))
	require.Len(t, after.Bytes(), len(before))

	other, err := tpl.NewRegistry().New("OTHER")
	require.NoError(t, err)
	_, err = devstat.New(other, devstat.Options{})
	require.ErrorIs(t, err, voi.ErrInvalid)
	_, err = devstat.Compute(nil, blob.New(other, nil))
	require.ErrorIs(t, err, voi.ErrInvalid)
}

func TestConcurrent(t *testing.T) {
	tp, err := devstat.Template(tpl.NewRegistry())
	require.NoError(t, err)
	d, err := devstat.New(tp, devstat.Options{})
	require.NoError(t, err)
	var wg sync.WaitGroup
	const g, n = 8, 500
	for i := range g {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range n {
				tx := d.Start()
				if err := d.End(tx, 100, devstat.Op(i%4), devstat.TagSimple); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	s := d.Snapshot(false)
	var ops uint64
	for op := range 4 {
		ops += sum(t, s, devstat.VOIOps+int32(op))
	}
	require.Equal(t, uint64(g*n), ops)
	require.Equal(t, int64(0), d.Outstanding())
	require.LessOrEqual(t, sum(t, s, devstat.VOIBusy), sum(t, s, devstat.VOIElapsed))
}

func TestNoAllocations(t *testing.T) {
	c := &fakeClock{}
	d := newDevice(t, c)
	tx := d.Start()
	require.NoError(t, d.End(tx, 1, devstat.Read, devstat.TagSimple)) // the digest's cache
	allocs := testing.AllocsPerRun(1000, func() {
		c.now += 1000
		tx := d.Start()
		c.now += 1000
		_ = d.End(tx, 4096, devstat.Read, devstat.TagSimple)
	})
	require.Zero(t, allocs)
}

func BenchmarkTransaction(b *testing.B) {
	tp, err := devstat.Template(tpl.NewRegistry())
	require.NoError(b, err)
	d, err := devstat.New(tp, devstat.Options{})
	require.NoError(b, err)
	b.ReportAllocs()
	for range b.N { // not b.Loop: the module says go 1.23
		tx := d.Start()
		_ = d.End(tx, 4096, devstat.Read, devstat.TagSimple)
	}
}

// The totals over directions do not wrap at 2^64: each direction's count
// fits in a uint64, their sum need not (devstat's u_int64_t totals wrap).
func TestComputeHugeTotals(t *testing.T) {
	tp, err := devstat.Template(tpl.NewRegistry())
	require.NoError(t, err)
	b := blob.New(tp, nil)
	for _, op := range []devstat.Op{devstat.Read, devstat.Write} {
		require.NoError(t, b.UpdateU64(devstat.VOIOps+int32(op), 1<<63))
		require.NoError(t, b.UpdateU64(devstat.VOIBytes+int32(op), 1<<63))
	}
	require.NoError(t, b.UpdateU64(devstat.VOIElapsed, 1e9))
	st, err := devstat.Compute(nil, b)
	require.NoError(t, err)
	require.Equal(t, 0x1p64, st.TPS)
	require.Equal(t, 0x1p64/(1<<20), st.MBPerSec)
	require.Equal(t, 1/1024.0, st.KBPerTransfer)
}

// A Txn that Start did not return (its zero value) is no transaction: End
// refuses it even while others are outstanding, and counts nothing.
func TestEndZeroTxn(t *testing.T) {
	c := &fakeClock{now: 5e9}
	d := newDevice(t, c)
	tx := d.Start()
	c.now += 1000
	require.ErrorIs(t, d.End(devstat.Txn{}, 512, devstat.Read, devstat.TagSimple), devstat.ErrUnmatched)
	require.Equal(t, int64(1), d.Outstanding())
	require.NoError(t, d.End(tx, 512, devstat.Read, devstat.TagSimple))
	s := d.Snapshot(false)
	require.Equal(t, uint64(1), sum(t, s, devstat.VOIOps+int32(devstat.Read)))
	hi, err := s.FetchU64(devstat.VOILatency, voi.Max)
	require.NoError(t, err)
	require.Equal(t, uint64(1000), hi)
}

// One sentinel for readings given the wrong way round, whichever package
// computed from them.
func TestErrWrongOrderIsDerives(t *testing.T) {
	require.ErrorIs(t, devstat.ErrWrongOrder, derive.ErrWrongOrder)
}
