// Package devstat accounts the I/O transactions of devices as FreeBSD's
// devstat(9) does, in a statsblob blob: Start and End bracket each
// transaction, and the device's blob of the stock template (Template) keeps
// bytes, operations and time per direction, busy time, the deepest queue,
// a latency histogram and t-digest, and tag counts. Compute turns two
// readings (or one window) into what iostat(8) and systat(1) show:
// transfers per second, KB per transfer, MB/s, %busy and latency quantiles.
//
// Busy time is devstat's: the time during which at least one transaction
// was outstanding. It is folded into the blob at every End and at every
// Snapshot, so the busy time of consecutive snapshot windows adds up to the
// device's total, with a transaction that spans a window boundary counted
// in both windows for the part it spent in each.
package devstat

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/statsblob/statsblob/derive"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/hist"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// Op is the direction of a transaction (devstat_trans_flags).
type Op uint8

// The directions, in devstat's order.
const (
	NoData Op = iota // no data moved, such as a cache flush (DEVSTAT_NO_DATA)
	Read             // DEVSTAT_READ
	Write            // DEVSTAT_WRITE
	Free             // a trim or delete (DEVSTAT_FREE)
	numOps
)

var opNames = [numOps]string{"nodata", "read", "write", "free"}

// String returns the direction's name as the template's VOIs use it.
func (o Op) String() string {
	if o < numOps {
		return opNames[o]
	}
	return fmt.Sprintf("Op(%d)", uint8(o))
}

// Tag is the queueing tag a transaction was sent with (devstat_tag_type).
type Tag uint8

// The tags, in devstat's order. TagNone is not counted.
const (
	TagSimple  Tag = iota // DEVSTAT_TAG_SIMPLE
	TagHead               // DEVSTAT_TAG_HEAD
	TagOrdered            // DEVSTAT_TAG_ORDERED
	TagNone               // DEVSTAT_TAG_NONE
)

var tagNames = [TagNone]string{"simple", "head", "ordered"}

// The VOI ids of the stock template. Byte, operation and duration VOIs are
// indexed by Op: VOIBytes+Read is the bytes read.
const (
	VOIBytes       = 0  // bytes per direction, 4 VOIs (SUM of uint64)
	VOIOps         = 4  // transactions per direction, 4 VOIs (SUM of uint64)
	VOIDuration    = 8  // time spent in transactions per direction, ns, 4 VOIs (SUM of uint64)
	VOIBusy        = 12 // busy time, ns (SUM of uint64)
	VOIElapsed     = 13 // time the blob covers, ns (SUM of uint64)
	VOIOutstanding = 14 // transactions outstanding (MAX of int64): the deepest queue
	VOILatency     = 15 // transaction latency, ns (MAX, MIN, histogram, t-digest of uint64)
	VOITags        = 16 // transactions per tag, 3 VOIs (SUM of uint64)
)

// TemplateName is the stock template's name.
const TemplateName = "DEVSTAT"

// Defs returns the stock template's VOIs. The latency histogram's buckets
// double from 1.024 µs (its first bucket is [0, 1024) ns) up to about
// 2^37 ns (137 s), with every longer transaction in its last bucket.
func Defs() []tpl.VOIDef {
	sum := []tpl.StatSpec{tpl.Sum()}
	var d []tpl.VOIDef
	for op := range numOps {
		d = append(d, tpl.VOIDef{ID: VOIBytes + int32(op), Name: "bytes_" + opNames[op], DType: voi.IntU64, Stats: sum})
	}
	for op := range numOps {
		d = append(d, tpl.VOIDef{ID: VOIOps + int32(op), Name: "ops_" + opNames[op], DType: voi.IntU64, Stats: sum})
	}
	for op := range numOps {
		d = append(d, tpl.VOIDef{ID: VOIDuration + int32(op), Name: "duration_ns_" + opNames[op], DType: voi.IntU64, Stats: sum})
	}
	d = append(d,
		tpl.VOIDef{ID: VOIBusy, Name: "busy_ns", DType: voi.IntU64, Stats: sum},
		tpl.VOIDef{ID: VOIElapsed, Name: "elapsed_ns", DType: voi.IntU64, Stats: sum},
		tpl.VOIDef{ID: VOIOutstanding, Name: "outstanding", DType: voi.IntS64, Stats: []tpl.StatSpec{tpl.Max()}},
		tpl.VOIDef{ID: VOILatency, Name: "latency_ns", DType: voi.IntU64, Stats: []tpl.StatSpec{
			tpl.Max(), tpl.Min(),
			tpl.Histogram(hist.Spec{DType: voi.CRHist64, Scheme: hist.Exp, LB: 0, UB: 1 << 37, StepBase: 2, StepExp: 10}),
			tpl.TDigest(voi.TDgstClust64, 50, 8),
		}},
	)
	for tag := range TagNone {
		d = append(d, tpl.VOIDef{ID: VOITags + int32(tag), Name: "tag_" + tagNames[tag], DType: voi.IntU64, Stats: sum})
	}
	return d
}

// Template registers the stock template in reg under TemplateName.
func Template(reg *tpl.Registry) (*tpl.Template, error) {
	t, err := reg.New(TemplateName)
	if err != nil {
		return nil, fmt.Errorf("devstat: %w", err)
	}
	for _, d := range Defs() {
		if err := t.AddVOI(d); err != nil {
			return nil, fmt.Errorf("devstat: %w", err)
		}
	}
	return t, nil
}

var stock = sync.OnceValue(func() uint32 {
	t, err := Template(tpl.NewRegistry())
	if err != nil {
		panic(err) // the stock definitions are constants
	}
	return t.Hash()
})

// StockHash returns the hash of the stock template.
func StockHash() uint32 { return stock() }

// ErrUnmatched is returned by End when no transaction is outstanding, or
// for a Txn that Start did not return.
var ErrUnmatched = fmt.Errorf("devstat: End without a Start: %w", voi.ErrInvalid)

// ErrWrongOrder is wrapped by Compute's error for two readings given in
// the wrong order (the later one first): the earlier reading's last reset
// is after the later one's, or its counters exceed the later one's
// without a reset between them. It is derive.ErrWrongOrder (one sentinel
// for readings of a blob given the wrong way round), which wraps
// voi.ErrInvalid.
var ErrWrongOrder = derive.ErrWrongOrder

// Txn is an outstanding transaction: what Start returns and End takes.
// Its zero value is not a transaction.
type Txn struct {
	start int64
	ok    bool // made by Start
}

// Options configure a Device. The zero value is the defaults.
type Options struct {
	// Clock returns a monotonic time in nanoseconds; nil: time since the
	// device was made, from the Go runtime's monotonic clock.
	Clock func() int64
	// Env is the blob's clock and random source (blob.Env); nil: a fresh one.
	Env *blob.Env
}

// A Device accounts the transactions of one device. It is safe for
// concurrent use; Start and End allocate nothing.
type Device struct {
	mu          sync.Mutex
	b           *blob.Blob
	clock       func() int64
	outstanding int64 // Start calls not yet Ended
	busyFrom    int64 // when busy time was last folded in (while outstanding > 0)
	lastFold    int64 // when elapsed time was last folded in
}

// New makes a device whose blob is made from t, which must be the stock
// template (its hash equal to StockHash); otherwise the error wraps
// voi.ErrInvalid.
func New(t *tpl.Template, opts Options) (*Device, error) {
	if t == nil || t.Hash() != StockHash() {
		return nil, fmt.Errorf("devstat: the template is not the stock %s template: %w", TemplateName, voi.ErrInvalid)
	}
	clock := opts.Clock
	if clock == nil {
		base := time.Now()
		clock = func() int64 { return int64(time.Since(base)) }
	}
	d := &Device{b: blob.New(t, opts.Env), clock: clock}
	d.lastFold = clock()
	return d, nil
}

// Start begins a transaction (devstat_start_transaction): the device is busy
// from now until the last outstanding transaction ends.
func (d *Device) Start() Txn {
	d.mu.Lock()
	now := d.clock()
	if d.outstanding == 0 {
		d.busyFrom = now
	}
	d.outstanding++
	_ = d.b.UpdateS64(VOIOutstanding, d.outstanding) // a MAX of int64 cannot fail
	d.mu.Unlock()
	return Txn{start: now, ok: true}
}

// End completes a transaction begun by Start (devstat_end_transaction): it
// counts the bytes and the operation in direction op, the time since Start
// as the operation's duration and latency, and the tag (TagNone counts
// none), and folds the busy time in. An op or tag out of range gives an
// error wrapping voi.ErrInvalid, and an End with no transaction outstanding
// or a Txn that Start did not return ErrUnmatched; then nothing is counted.
func (d *Device) End(tx Txn, bytes uint64, op Op, tag Tag) error {
	if op >= numOps || tag > TagNone {
		return fmt.Errorf("devstat: op %d, tag %d: %w", op, tag, voi.ErrInvalid)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.outstanding == 0 || !tx.ok {
		return ErrUnmatched
	}
	now := d.clock()
	lat := uint64(max(now-tx.start, 0))
	// The SUMs and the latency statistics of uint64 VOIs take any value
	// (SUMs wrap as the C's do after 2^64); errors are counted in the blob.
	_ = d.b.UpdateU64(VOIBytes+int32(op), bytes)
	_ = d.b.UpdateU64(VOIOps+int32(op), 1)
	_ = d.b.UpdateU64(VOIDuration+int32(op), lat)
	_ = d.b.UpdateU64(VOILatency, lat)
	if tag < TagNone {
		_ = d.b.UpdateU64(VOITags+int32(tag), 1)
	}
	d.foldBusy(now)
	d.outstanding--
	return nil
}

// foldBusy adds the busy time since busyFrom (devstat's busy_time += now -
// busy_from; busy_from = now). Called with d.mu held.
func (d *Device) foldBusy(now int64) {
	if d.outstanding > 0 && now > d.busyFrom {
		_ = d.b.UpdateU64(VOIBusy, uint64(now-d.busyFrom))
		d.busyFrom = now
	}
}

// Outstanding returns the number of transactions started and not yet ended.
func (d *Device) Outstanding() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.outstanding
}

// Snapshot folds the busy and elapsed time up to now into the blob and
// returns a copy of it (blob.Blob.Snapshot). With reset the device's blob
// starts a new window, which records the current queue depth as its first
// outstanding sample.
func (d *Device) Snapshot(reset bool) *blob.Blob {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.clock()
	d.foldBusy(now)
	if now > d.lastFold {
		_ = d.b.UpdateU64(VOIElapsed, uint64(now-d.lastFold))
		d.lastFold = now
	}
	s := d.b.Snapshot(reset)
	if reset {
		_ = d.b.UpdateS64(VOIOutstanding, d.outstanding)
	}
	return s
}

// Stats is what Compute derives from two readings of a device: the
// figures of iostat(8) and devstat_compute_statistics(3).
type Stats struct {
	Elapsed time.Duration // the time between the readings
	Busy    time.Duration // time with at least one transaction outstanding

	Ops      [4]uint64        // transactions per direction, indexed by Op
	Bytes    [4]uint64        // bytes per direction
	Duration [4]time.Duration // time spent in transactions per direction
	Tags     [3]uint64        // transactions per tag (TagSimple, TagHead, TagOrdered)

	MaxOutstanding int64 // the deepest queue (the later reading's window only)

	// SinceReset reports that the device's blob was reset between the
	// readings (the later one's last reset is after the earlier one's: a
	// restarted driver or process, or readings taken with reset): the
	// figures are the later reading's own, since that reset.
	SinceReset bool

	TPS           float64 // transactions per second, all directions
	KBPerTransfer float64 // KiB per transaction
	MBPerSec      float64 // MiB per second
	BusyPercent   float64 // 100 * Busy / Elapsed

	// Latency quantiles: from the t-digest for a single window, from the
	// difference of the histograms for two cumulative readings (then within
	// a bucket's width, a factor of 2). Zero without transactions.
	LatencyP50, LatencyP99 time.Duration
}

// OpsPerSec returns the transactions per second of one direction.
func (s Stats) OpsPerSec(op Op) float64 { return perSec(float64(s.Ops[op]), s.Elapsed) }

// MsPerOp returns the mean time per transaction of one direction, in
// milliseconds (iostat's ms/r, ms/w), or 0 without transactions.
func (s Stats) MsPerOp(op Op) float64 {
	if s.Ops[op] == 0 {
		return 0
	}
	return float64(s.Duration[op]) / 1e6 / float64(s.Ops[op])
}

func perSec(x float64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return x / d.Seconds()
}

// Compute derives a device's statistics between two readings of its blob:
// prev and cur are snapshots of one device, prev the earlier (cumulative
// readings, as devstat's readers take them). With prev nil, cur is one
// window (a snapshot taken with reset, or a collector's closed window) and
// stands alone. When cur's last reset is after prev's, the blob was reset
// in between (iostat(8)'s counters would wrap): cur stands alone, and
// Stats.SinceReset says so. Blobs of another template give an error
// wrapping voi.ErrInvalid; a prev reset after cur, or a prev whose
// counters exceed cur's without a reset between them (readings given in
// the wrong order), one wrapping ErrWrongOrder (which wraps
// voi.ErrInvalid).
func Compute(prev, cur *blob.Blob) (Stats, error) {
	var s Stats
	for _, b := range []*blob.Blob{prev, cur} {
		if b != nil && b.TplHash() != StockHash() {
			return s, fmt.Errorf("devstat: a blob of template hash %d, not the stock %s template: %w", b.TplHash(), TemplateName, voi.ErrInvalid)
		}
	}
	if cur == nil {
		return s, fmt.Errorf("devstat: no reading: %w", voi.ErrInvalid)
	}
	if prev != nil {
		switch p, c := prev.Header().LastResetRaw, cur.Header().LastResetRaw; {
		case c > p:
			prev, s.SinceReset = nil, true
		case c < p:
			return s, fmt.Errorf("devstat: the earlier reading was reset after the later one: %w", ErrWrongOrder)
		}
	}
	delta := func(id int32) (uint64, error) {
		c, err := cur.FetchU64(id, voi.Sum)
		if err != nil {
			return 0, err
		}
		if prev == nil {
			return c, nil
		}
		p, err := prev.FetchU64(id, voi.Sum)
		if err != nil {
			return 0, err
		}
		if p > c {
			return 0, fmt.Errorf("devstat: VOI %d: the earlier reading counts %d, the later %d: %w", id, p, c, ErrWrongOrder)
		}
		return c - p, nil
	}
	var errs []error
	get := func(id int32) uint64 {
		v, err := delta(id)
		errs = append(errs, err)
		return v
	}
	for op := range numOps {
		s.Ops[op] = get(VOIOps + int32(op))
		s.Bytes[op] = get(VOIBytes + int32(op))
		s.Duration[op] = time.Duration(get(VOIDuration + int32(op)))
	}
	for tag := range TagNone {
		s.Tags[tag] = get(VOITags + int32(tag))
	}
	s.Busy = time.Duration(get(VOIBusy))
	s.Elapsed = time.Duration(get(VOIElapsed))
	if err := errors.Join(errs...); err != nil {
		return Stats{}, err
	}
	if m, err := cur.FetchS64(VOIOutstanding, voi.Max); err == nil {
		s.MaxOutstanding = m
	}
	var ops, bytes float64 // the sums of uint64s may not fit one
	for op := range numOps {
		ops += float64(s.Ops[op])
		bytes += float64(s.Bytes[op])
	}
	s.TPS = perSec(ops, s.Elapsed)
	s.MBPerSec = perSec(bytes/(1<<20), s.Elapsed)
	if ops > 0 {
		s.KBPerTransfer = bytes / 1024 / ops
	}
	if s.Elapsed > 0 {
		s.BusyPercent = 100 * float64(s.Busy) / float64(s.Elapsed)
	}
	if ops > 0 {
		p50, p99, err := latency(prev, cur)
		if err != nil {
			return Stats{}, err
		}
		s.LatencyP50, s.LatencyP99 = p50, p99
	}
	return s, nil
}

// latency returns p50 and p99 of the transactions between the readings.
func latency(prev, cur *blob.Blob) (p50, p99 time.Duration, err error) {
	q := func(x float64, err error) time.Duration {
		if err != nil {
			return 0
		}
		return time.Duration(x)
	}
	if prev == nil {
		p50 = q(cur.Quantile(VOILatency, 0.5))
		p99 = q(cur.Quantile(VOILatency, 0.99))
		return p50, p99, nil
	}
	c, err := cur.Fetch(VOILatency, voi.Hist)
	if err != nil {
		return 0, 0, err
	}
	p, err := prev.Fetch(VOILatency, voi.Hist)
	if err != nil {
		return 0, 0, err
	}
	h := append([]byte(nil), c.Data...)
	if err := hist.Sub(h, p.Data, c.DType); err != nil {
		return 0, 0, fmt.Errorf("devstat: latency: %w", err)
	}
	p50 = q(hist.Quantile(h, c.DType, voi.IntU64, 0.5))
	p99 = q(hist.Quantile(h, c.DType, voi.IntU64, 0.99))
	return p50, p99, nil
}
