package natsjs

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/statsblob/statsblob/export/internal/hashfmt"
	"github.com/statsblob/statsblob/internal/abi"
	"github.com/statsblob/statsblob/ship"
	"github.com/statsblob/statsblob/voi"
)

// Message is one blob taken from the stream, as a Partition merges it.
type Message struct {
	StreamSeq    uint64       // its sequence number in the stream
	TplHash      uint32       // the blob's template hash (from its header)
	Labels       []ship.Label // sorted by name
	Sender       string       // ship.HeaderSender
	Seq          uint64       // ship.HeaderSeq
	SettledBelow uint64       // ship.HeaderSettledBelow
	Body         []byte       // the blob's bytes; valid during Merge only
}

// Store is what a collector keeps of the partitions it owns: it opens a
// partition from its stored state when the collector takes it.
type Store interface {
	// Open starts partition p from state, what Save returned last (nil for
	// a partition never saved). An error leaves the partition to others.
	Open(p int, state []byte) (Partition, error)
}

// Partition is one owned partition's aggregates. Its methods are called
// from one goroutine.
type Partition interface {
	// Merge adds a message. An error wrapping ErrUnknownTemplate leaves
	// the message waiting for its template (see Config.TemplateRetry); any other
	// error refuses it for good (bad bytes, labels no export can carry):
	// it is counted and acknowledged, never retried.
	Merge(m Message) error
	// Save returns the state covering every merged message.
	Save() ([]byte, error)
	// Close drops the partition (it moved to another collector, or the
	// consumer stopped): it must no longer be exported.
	Close()
}

// Config configures a Consumer. JS, ID and Store are required.
type Config struct {
	Setup                          // the stream's (as given to Setup.Ensure)
	JS         jetstream.JetStream //
	ID         string              // this collector's id, unique in the fleet
	Store      Store               // where the owned partitions' aggregates live
	Checkpoint time.Duration       // how often an owner stores its state and acknowledges; 0 is 2 seconds or a quarter of LeaseTTL if shorter, else at least MinCheckpoint and at most half LeaseTTL
	Batch      int                 // messages fetched at once; 0 is 256
	// MaxMarks bounds the sequence marks an owner keeps per partition,
	// one per sender and label set (32 bytes each of the partition's
	// state): a message of a sender and label set without a mark past it
	// is merged without the check for late copies, and counted
	// (Stats.Unchecked). 0 is DefaultMaxMarks.
	MaxMarks int
	// MaxWaiting bounds the messages per partition that wait for their
	// template (8 bytes each of the partition's state); past it, a
	// message of an unknown template is acknowledged and dropped, and
	// counted (Stats.WaitFull). 0 is DefaultMaxWaiting.
	MaxWaiting int
	// TemplateRetry is how often the waiting messages of a template are
	// tried again (one read from the stream each time, until the template
	// is known); 0 is 10 seconds, else at least MinTemplateRetry.
	TemplateRetry time.Duration
	Logf          func(format string, args ...any)
}

// MinCheckpoint is the shortest Config.Checkpoint and MinTemplateRetry
// the shortest Config.TemplateRetry: an owner's loop fetches for at most
// a checkpoint's time, stores a state every checkpoint and reads a
// waiting message from the stream every retry, so a shorter one (1ns)
// would spin, writing states and reading messages as fast as the stream
// answers.
const (
	MinCheckpoint    = 100 * time.Millisecond
	MinTemplateRetry = 100 * time.Millisecond
)

// Defaults of Config.
const (
	DefaultMaxMarks   = 1 << 16 // 65,536 per partition: 2 MiB of its state
	DefaultMaxWaiting = 1 << 16 // 65,536 per partition: 512 KiB of its state
)

// ErrUnknownTemplate is what a Partition's Merge wraps for a blob of a
// template it does not know (yet): the message waits, as an HTTP post of
// it gets a 422 and is retried.
var ErrUnknownTemplate = errors.New("natsjs: unknown template")

// ErrNotReady is what Consumer.Ready wraps while the consumer cannot do
// its work.
var ErrNotReady = errors.New("natsjs: not ready")

// Stats counts a Consumer's work.
type Stats struct {
	Merged  uint64 // messages merged
	Refused uint64 // messages a Partition refused
	Skipped uint64 // redelivered messages a stored state already covered
	// Duplicates counts the copies of a message merged before that the
	// stream stored again after its duplicate window (a shipper's retry
	// whose acknowledgement was lost, published after
	// Setup.Duplicates), recognised by their sender's sequence and not
	// merged.
	Duplicates uint64
	// Unchecked counts the messages merged without that check, for want
	// of Config.MaxMarks: a late copy of one of them would be merged again.
	Unchecked uint64
	// Waiting is how many messages of templates their Partition does not
	// know wait in the owned partitions, acknowledged and kept in the
	// stream, for the template (see Config.TemplateRetry).
	Waiting int
	// Expired counts the waiting messages the stream removed (its MaxAge
	// or other limits) before their template was known: never merged.
	Expired uint64
	// WaitFull counts the messages of an unknown template that could not
	// wait, Config.MaxWaiting waiting already: acknowledged, never merged.
	WaitFull uint64
	// Gaps counts the times a partition found that the stream had
	// removed messages (its MaxAge or other limits) before the
	// partition's consumer read them: those of the partition among them
	// were never merged (how many cannot be told; the log line says
	// which stream sequences).
	Gaps        uint64
	Checkpoints uint64 // states stored
	// CheckpointFailures counts the checkpoints that failed for another
	// reason than a lost lease (the stream unreachable, a state past
	// Setup.MaxState or the server's max_payload): the messages since the last stored state stay
	// unacknowledged, and are redelivered until one succeeds. The first
	// of a run of failures of a partition is logged.
	CheckpointFailures uint64
	// Unacked is how many messages the owned partitions hold for
	// acknowledgement once a stored state holds them (each once, however
	// often redelivered meanwhile).
	Unacked  int
	Taken    uint64 // partitions taken
	Lost     uint64 // partitions lost to another collector
	Released uint64 // partitions handed back
}

// Consumer takes its share of a stream's partitions and merges their
// messages into its Store (see the package documentation).
type Consumer struct {
	cfg                     Config
	owners, members, states jetstream.KeyValue

	mu       sync.Mutex
	owned    map[int]*owned
	notReady error // Ready's answer

	hbFailures int // heartbeats failed in a row (balance's, which logs the first and the end of a run)

	merged, refused, skipped, checkpoints, taken, lost, released atomic.Uint64
	ckptFailed, duplicates, unchecked, expired, waitFull, gaps   atomic.Uint64
}

// owned is a partition this consumer holds: its lease and its worker.
type owned struct {
	leaseRev atomic.Uint64 // the lease's revision (balance renews it)
	renewed  atomic.Int64  // when the lease's latest write that succeeded was sent, Unix nanoseconds
	cancel   context.CancelFunc
	done     chan struct{}
	release  atomic.Bool  // checkpoint and hand back (not lost)
	lostWhy  string       // why the worker stopped on its own, for abandon's log line; set before done closes
	unacked  atomic.Int64 // the worker's messages held for acknowledgement
	waiting  atomic.Int64 // the worker's messages waiting for their template

	renewFailures int // renewals failed in a row (balance's, which logs the first of a run)
}

// NewConsumer checks cfg and opens the stream's buckets (Setup.Ensure must
// have made them). A cfg without JS, ID or Store, or with a LeaseTTL
// below MinLeaseTTL, a Checkpoint below MinCheckpoint or over half the
// LeaseTTL, or a TemplateRetry below MinTemplateRetry (0 or negative is
// the default), is an error wrapping voi.ErrInvalid. (A message is
// acknowledged at the checkpoint after it is merged, and JetStream
// redelivers one not acknowledged within the LeaseTTL, its AckWait: a
// checkpoint at half the lease leaves the other half for the state's
// write.)
func NewConsumer(ctx context.Context, cfg Config) (*Consumer, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	cfg.Setup = cfg.Setup.withDefaults()
	if cfg.Checkpoint <= 0 {
		cfg.Checkpoint = min(2*time.Second, cfg.LeaseTTL/4)
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 256
	}
	if cfg.MaxMarks <= 0 {
		cfg.MaxMarks = DefaultMaxMarks
	}
	if cfg.MaxWaiting <= 0 {
		cfg.MaxWaiting = DefaultMaxWaiting
	}
	if cfg.TemplateRetry <= 0 {
		cfg.TemplateRetry = 10 * time.Second
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	c := &Consumer{cfg: cfg, owned: map[int]*owned{}, notReady: fmt.Errorf("%w: not running yet", ErrNotReady)}
	var err error
	if c.owners, err = cfg.JS.KeyValue(ctx, cfg.ownersBucket()); err != nil {
		return nil, fmt.Errorf("natsjs: %w", err)
	}
	if c.members, err = cfg.JS.KeyValue(ctx, cfg.membersBucket()); err != nil {
		return nil, fmt.Errorf("natsjs: %w", err)
	}
	if c.states, err = cfg.JS.KeyValue(ctx, cfg.stateBucket()); err != nil {
		return nil, fmt.Errorf("natsjs: %w", err)
	}
	return c, nil
}

// check refuses the settings no consumer can work with. Errors wrap
// voi.ErrInvalid.
func (cfg *Config) check() error {
	if cfg.JS == nil || cfg.ID == "" || cfg.Store == nil {
		return fmt.Errorf("natsjs: a consumer needs JS, ID and Store: %w", voi.ErrInvalid)
	}
	if err := cfg.Setup.check(); err != nil {
		return err
	}
	if cfg.Checkpoint > 0 && cfg.Checkpoint < MinCheckpoint {
		return fmt.Errorf("natsjs: checkpoint every %v, more often than every %v: %w", cfg.Checkpoint, MinCheckpoint, voi.ErrInvalid)
	}
	if lease := cfg.Setup.withDefaults().LeaseTTL; cfg.Checkpoint > lease/2 {
		return fmt.Errorf("natsjs: checkpoint every %v, over half the lease of %v (messages would be redelivered before their acknowledgement): %w",
			cfg.Checkpoint, lease, voi.ErrInvalid)
	}
	if cfg.TemplateRetry > 0 && cfg.TemplateRetry < MinTemplateRetry {
		return fmt.Errorf("natsjs: template retry every %v, more often than every %v: %w", cfg.TemplateRetry, MinTemplateRetry, voi.ErrInvalid)
	}
	return nil
}

// Owned returns the partitions this consumer holds, ascending.
func (c *Consumer) Owned() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Sorted(maps.Keys(c.owned))
}

// Stats returns the consumer's counters.
func (c *Consumer) Stats() Stats {
	c.mu.Lock()
	unacked, waiting := 0, 0
	for _, o := range c.owned {
		unacked += int(o.unacked.Load())
		waiting += int(o.waiting.Load())
	}
	c.mu.Unlock()
	return Stats{Merged: c.merged.Load(), Refused: c.refused.Load(), Skipped: c.skipped.Load(),
		Duplicates: c.duplicates.Load(), Unchecked: c.unchecked.Load(), Waiting: waiting,
		Expired: c.expired.Load(), WaitFull: c.waitFull.Load(), Gaps: c.gaps.Load(),
		Checkpoints: c.checkpoints.Load(), CheckpointFailures: c.ckptFailed.Load(), Unacked: unacked,
		Taken: c.taken.Load(), Lost: c.lost.Load(), Released: c.released.Load()}
}

// Ready returns nil while the consumer does its work: from the first
// round of Run that reaches the stream's buckets (its heartbeat to the
// members' bucket is stored), until a round fails to or Run stops. Else
// it returns an error wrapping ErrNotReady that says why: Run not
// started, the buckets unreachable (with the heartbeat's error: the
// partitions owned are given up once their leases pass), or stopping.
// A consumer that owns no partition (a fleet of more collectors than
// partitions) is ready: it takes one as soon as one is free.
func (c *Consumer) Ready() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.notReady
}

func (c *Consumer) setReady(err error) {
	c.mu.Lock()
	c.notReady = err
	c.mu.Unlock()
}

// Run takes and keeps partitions until ctx ends, then stores every owned
// partition's state, acknowledges what it covers and hands the partitions
// back, so that the others take them at once. While the stream is
// unreachable it keeps trying (and its Store keeps serving what it has).
func (c *Consumer) Run(ctx context.Context) error {
	tick := time.NewTicker(c.cfg.LeaseTTL / 4)
	defer tick.Stop()
	for {
		c.balance(ctx)
		select {
		case <-ctx.Done():
			c.setReady(fmt.Errorf("%w: stopping: handing the partitions back", ErrNotReady))
			c.releaseAll()
			c.setReady(fmt.Errorf("%w: stopped", ErrNotReady))
			return nil
		case <-tick.C:
		}
	}
}

// balance renews the owned leases, counts the members, takes partitions up
// to a fair share and hands back those above it.
func (c *Consumer) balance(parent context.Context) {
	// One round of lease work is bounded, so that an unreachable or
	// leaderless cluster cannot hold the renewals back past the lease.
	ctx, cancel := context.WithTimeout(parent, c.cfg.LeaseTTL/2)
	defer cancel()
	// Failures are logged at the first of a run and when it ends: an
	// outage fails every round (a quarter of the lease), and a line a
	// round would bury the lines that tell what changed.
	if _, err := c.members.Put(ctx, c.cfg.ID, []byte(time.Now().UTC().Format(time.RFC3339))); err != nil {
		if c.hbFailures++; c.hbFailures == 1 {
			c.cfg.Logf("natsjs: heartbeat: %v (retried every round; logged again when one succeeds)", err)
		}
		if parent.Err() == nil {
			c.setReady(fmt.Errorf("%w: the stream's buckets are unreachable: heartbeat: %w", ErrNotReady, err))
		}
	} else {
		if c.hbFailures > 0 {
			c.cfg.Logf("natsjs: heartbeat stored again after %d failed rounds", c.hbFailures)
			c.hbFailures = 0
		}
		c.setReady(nil)
	}
	c.mu.Lock()
	held := make(map[int]*owned, len(c.owned))
	for p, o := range c.owned {
		held[p] = o
	}
	c.mu.Unlock()
	for p, o := range held {
		sent := time.Now()
		rev, err := c.owners.Update(ctx, partitionKey(p), []byte(c.cfg.ID), o.leaseRev.Load())
		if err != nil {
			if errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyNotFound) || isWrongSeq(err) {
				c.drop(p, false, fmt.Sprintf("its lease is another collector's: %v", err))
				continue
			}
			if o.renewFailures++; o.renewFailures == 1 { // unreachable: retried next tick
				c.cfg.Logf("natsjs: partition %d: renew: %v (retried every round until the lease runs out)", p, err)
			}
			continue
		}
		o.renewFailures = 0
		o.leaseRev.Store(rev)
		o.renewed.Store(sent.UnixNano())
	}
	members, err := c.members.Keys(ctx)
	if err != nil || len(members) == 0 {
		members = []string{c.cfg.ID}
	}
	share := (c.cfg.Partitions + len(members) - 1) / len(members)
	c.mu.Lock()
	n := len(c.owned)
	c.mu.Unlock()
	if n > share {
		for _, p := range c.Owned()[share:] {
			c.drop(p, true, fmt.Sprintf("above this collector's share of %d partitions among %d collectors", share, len(members)))
		}
		return
	}
	// Try the partitions in an order of this collector's own, so that
	// collectors starting together do not all race for partition 0.
	h := fnv.New32a()
	h.Write([]byte(c.cfg.ID))
	off := int(h.Sum32() % uint32(c.cfg.Partitions))
	for i := 0; i < c.cfg.Partitions && n < share; i++ {
		p := (off + i) % c.cfg.Partitions
		c.mu.Lock()
		_, have := c.owned[p]
		c.mu.Unlock()
		if have {
			continue
		}
		sent := time.Now()
		rev, err := c.owners.Create(ctx, partitionKey(p), []byte(c.cfg.ID))
		if err != nil {
			if !errors.Is(err, jetstream.ErrKeyExists) {
				c.cfg.Logf("natsjs: partition %d: take: %v", p, err)
			}
			continue // owned by another collector (or unreachable)
		}
		why := fmt.Sprintf("its lease was free, this collector below its share of %d partitions among %d collectors", share, len(members))
		if err := c.start(parent, p, rev, sent, why); err != nil {
			c.cfg.Logf("natsjs: partition %d: %v", p, err)
			_ = c.owners.Delete(ctx, partitionKey(p), jetstream.LastRevision(rev))
			continue
		}
		n++
	}
}

func isWrongSeq(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence
}

// drop stops partition p's worker: with release, after a last checkpoint
// and giving its lease back; without, at once (the lease is lost: another
// collector owns the partition and its state). It logs the change and
// why.
func (c *Consumer) drop(p int, release bool, why string) {
	c.mu.Lock()
	o := c.owned[p]
	delete(c.owned, p)
	c.mu.Unlock()
	if o == nil {
		return
	}
	o.release.Store(release)
	o.cancel()
	<-o.done
	if release {
		ctx, cancel := context.WithTimeout(context.Background(), c.cfg.LeaseTTL)
		_ = c.owners.Delete(ctx, partitionKey(p), jetstream.LastRevision(o.leaseRev.Load()))
		cancel()
		c.released.Add(1)
		c.cfg.Logf("natsjs: partition %d: handed back (%s)", p, why)
	} else {
		c.lost.Add(1)
		c.cfg.Logf("natsjs: partition %d: lost (%s): no longer exported", p, why)
	}
}

// abandon forgets partition p, whose worker o stopped on its own, and
// gives its lease back.
func (c *Consumer) abandon(p int, o *owned) {
	c.mu.Lock()
	mine := c.owned[p] == o
	if mine {
		delete(c.owned, p)
	}
	c.mu.Unlock()
	if !mine {
		return
	}
	c.lost.Add(1)
	c.cfg.Logf("natsjs: partition %d: lost (%s): no longer exported", p, o.lostWhy)
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.LeaseTTL)
	defer cancel()
	_ = c.owners.Delete(ctx, partitionKey(p), jetstream.LastRevision(o.leaseRev.Load()))
}

func (c *Consumer) releaseAll() {
	var wg sync.WaitGroup
	for _, p := range c.Owned() {
		wg.Add(1)
		go func() { defer wg.Done(); c.drop(p, true, "stopping") }()
	}
	wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.LeaseTTL)
	_ = c.members.Delete(ctx, c.cfg.ID)
	cancel()
}

// start opens partition p from its stored state and starts its worker;
// its lease (revision leaseRev) was written by a request sent at leased.
// It logs the change and why.
func (c *Consumer) start(parent context.Context, p int, leaseRev uint64, leased time.Time, why string) error {
	ctx, cancel := context.WithTimeout(parent, c.cfg.LeaseTTL)
	defer cancel()
	l, stateRev, state, err := c.loadState(ctx, p)
	if err != nil {
		return err
	}
	from := "no stored state"
	if stateRev != 0 {
		from = "from its stored state"
	}
	// Write the state back at once: a previous owner still running finds
	// the revision moved and stops before it stores anything.
	if stateRev, err = c.storeState(ctx, p, stateRev, l, state); err != nil {
		return err
	}
	part, err := c.cfg.Store.Open(p, state)
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	cons, err := c.cfg.JS.CreateOrUpdateConsumer(ctx, c.cfg.Stream, c.cfg.consumerConfig(p))
	if err != nil {
		part.Close()
		return fmt.Errorf("consumer: %w", err)
	}
	wctx, cancel := context.WithCancel(context.Background())
	o := &owned{cancel: cancel, done: make(chan struct{})}
	o.leaseRev.Store(leaseRev)
	o.renewed.Store(leased.UnixNano())
	o.waiting.Store(int64(l.nWaiting))
	c.mu.Lock()
	c.owned[p] = o
	c.mu.Unlock()
	c.taken.Add(1)
	c.cfg.Logf("natsjs: partition %d: taken (%s), %s", p, why, from)
	// dirty for a state taken over: the first checkpoint stores it again
	// as this version's Partition writes it (a SetStore's carries its
	// templates), while the collector knows them, even if no message
	// comes.
	w := &worker{c: c, p: p, o: o, part: part, cons: cons, l: l, stateRev: stateRev, held: map[uint64]int{}, dirty: state != nil}
	// Before the first fetch moves the consumer on: messages the stream
	// removed while nobody read the partition.
	w.checkGap(ctx, cons.CachedInfo().Delivered.Stream)
	go w.run(wctx)
	return nil
}

// loadState reads partition p's stored state: the consumer's ledger (see
// ledger.go), then the Partition's own bytes.
func (c *Consumer) loadState(ctx context.Context, p int) (l *ledger, rev uint64, state []byte, err error) {
	e, err := c.states.Get(ctx, partitionKey(p))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return newLedger(), 0, nil, nil
	}
	if err != nil {
		return nil, 0, nil, fmt.Errorf("state: %w", err)
	}
	l, state, err = readLedger(e.Value(), time.Now())
	if err != nil {
		return nil, 0, nil, err
	}
	if len(state) == 0 {
		state = nil
	}
	return l, e.Revision(), state, nil
}

// storeState writes a partition's state if its revision is still rev (0:
// the key must not exist), returning the new revision.
func (c *Consumer) storeState(ctx context.Context, p int, rev uint64, l *ledger, state []byte) (uint64, error) {
	v := append(l.append(nil), state...)
	var err error
	if rev == 0 {
		rev, err = c.states.Create(ctx, partitionKey(p), v)
	} else {
		rev, err = c.states.Update(ctx, partitionKey(p), v, rev)
	}
	if err != nil {
		if errors.Is(err, jetstream.ErrKeyExists) || isWrongSeq(err) {
			return 0, fmt.Errorf("%w: %w", errLost, err)
		}
		return 0, fmt.Errorf("state: %w", err)
	}
	return rev, nil
}

// worker consumes one owned partition.
type worker struct {
	c        *Consumer
	p        int
	o        *owned
	part     Partition
	cons     jetstream.Consumer
	stream   jetstream.Stream // for the waiting messages and the stream's first sequence; made on first use
	l        *ledger          // what the state holds beside the Partition's bytes
	dirty    bool             // processed since the stored state
	stateRev uint64           // the stored state's revision
	toAck    []jetstream.Msg  // messages to acknowledge once the state holding them is stored
	held     map[uint64]int   // their index in toAck, by stream sequence: a redelivery replaces its message
	failures int              // checkpoints failed in a row
	gapTo    uint64           // the last stream sequence of the gaps counted
}

func (w *worker) run(ctx context.Context) {
	defer close(w.o.done)
	defer func() {
		w.part.Close()
		if ctx.Err() == nil {
			// Stopped on its own: the stored state moved on (another
			// owner, or a write of ours that timed out after it was
			// applied). Give the partition up, so that it is taken again
			// from the state as it is.
			w.c.abandon(w.p, w.o)
		}
	}()
	next := time.Now().Add(w.c.cfg.Checkpoint)
	for ctx.Err() == nil {
		if w.leaseLeft() <= 0 {
			w.giveUp()
			return
		}
		wait := min(w.c.cfg.Checkpoint, time.Second)
		if w.retry() {
			wait = 50 * time.Millisecond // more waiting messages to merge: fetch what is there and go on
		}
		batch, err := w.cons.Fetch(w.c.cfg.Batch, jetstream.FetchMaxWait(wait))
		if err == nil {
			if !w.takeAll(batch) {
				w.giveUp()
				return
			}
			err = batch.Error()
		}
		if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, jetstream.ErrNoMessages) {
			w.c.cfg.Logf("natsjs: partition %d: fetch: %v", w.p, err)
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
		if time.Now().After(next) {
			err := w.checkpoint()
			if errors.Is(err, errLost) {
				w.o.lostWhy = fmt.Sprintf("its state was stored by another collector: %v", err)
				return
			}
			w.noteCheckpoint(err)
			next = time.Now().Add(w.c.cfg.Checkpoint)
		}
	}
	if w.o.release.Load() {
		if err := w.checkpoint(); err != nil {
			w.c.cfg.Logf("natsjs: partition %d: last checkpoint: %v", w.p, err)
		}
	}
}

// leaseGiveUp is the share of the lease time after the last renewal
// that succeeded at which an owner gives a partition up: another
// collector may take it once the whole lease time has passed (counted
// from when the server stored the renewal, after it was sent), so the
// owner stops exporting it before then. Nothing a worker waits for
// outlasts that point: a batch being fetched is given up there (on a
// link that answers nothing, a Fetch lasts its wait and then the
// client's own second), and waiting messages are tried, and checkpoints
// written, within the lease left.
const leaseGiveUp = 0.75

// giveUp notes that the worker gives its partition up for want of a
// renewed lease (abandon logs it); the worker then returns, which stops
// the export.
func (w *worker) giveUp() {
	w.o.lostWhy = fmt.Sprintf("lease not renewed for %v, before another collector may take it",
		time.Since(time.Unix(0, w.o.renewed.Load())).Round(time.Millisecond))
}

// takeAll takes the messages of batch until it ends; false if the
// lease's give-up point (leaseLeft, which renewals move on meanwhile)
// passes first: the messages taken and the batch's others are
// acknowledged by nobody, and redelivered to the next owner.
func (w *worker) takeAll(batch jetstream.MessageBatch) bool {
	deadline := time.NewTimer(max(w.leaseLeft(), 0))
	defer deadline.Stop()
	msgs := batch.Messages()
	for {
		select {
		case msg, ok := <-msgs:
			if !ok {
				return true
			}
			w.take(msg)
		case <-deadline.C:
			left := w.leaseLeft()
			if left <= 0 {
				return false
			}
			deadline.Reset(left)
		}
	}
}

// leaseLeft is how long the worker may go on before its lease could have
// passed to another collector (less the margin of leaseGiveUp).
func (w *worker) leaseLeft() time.Duration {
	end := time.Unix(0, w.o.renewed.Load()).Add(time.Duration(leaseGiveUp * float64(w.c.cfg.LeaseTTL)))
	return time.Until(end)
}

// noteCheckpoint counts a checkpoint's failure, logging the first of a
// run of them, and logs the success that ends one.
func (w *worker) noteCheckpoint(err error) {
	switch {
	case err != nil:
		w.c.ckptFailed.Add(1)
		if w.failures++; w.failures == 1 {
			w.c.cfg.Logf("natsjs: partition %d: checkpoint failed (its messages stay unacknowledged and are redelivered; retried every checkpoint interval): %v", w.p, err)
		}
	case w.failures > 0:
		w.c.cfg.Logf("natsjs: partition %d: checkpoint stored again after %d failures", w.p, w.failures)
		w.failures = 0
	}
}

// take processes one message unless the state already holds it; either
// way the message is acknowledged after the next stored state. A message
// of a template whose messages wait waits behind them, so that its
// sender's label set is merged in stream order.
func (w *worker) take(msg jetstream.Msg) {
	md, err := msg.Metadata()
	if err != nil {
		return // not a JetStream message: nothing to acknowledge
	}
	seq := md.Sequence.Stream
	if i, ok := w.held[seq]; ok {
		w.toAck[i] = msg // redelivered: acknowledge the latest delivery
	} else {
		w.held[seq] = len(w.toAck)
		w.toAck = append(w.toAck, msg)
		w.o.unacked.Store(int64(len(w.toAck)))
	}
	if _, ok := w.l.done[seq]; ok {
		w.c.skipped.Add(1)
		return
	}
	w.dirty = true
	w.l.clock(md.Timestamp)
	m, err := parse(msg.Headers(), msg.Data(), seq)
	if err != nil {
		w.l.processed(seq, 0)
		w.refuse(seq, err)
		return
	}
	if _, ok := w.l.waiting[m.TplHash]; ok || !w.merge(m, md.Timestamp) {
		w.wait(m)
	}
}

// merge merges m unless a copy of it was merged (by its sender's
// sequence), and records it as processed; false (nothing recorded) if
// the Partition does not know its template.
func (w *worker) merge(m Message, stored time.Time) bool {
	id, checked := markOf(m)
	if checked && w.l.seen(id, m.Seq) {
		w.l.touch(id, stored)
		w.l.processed(m.StreamSeq, m.TplHash)
		w.c.duplicates.Add(1)
		return true
	}
	err := w.part.Merge(m)
	switch {
	case errors.Is(err, ErrUnknownTemplate):
		return false
	case err != nil:
		w.l.processed(m.StreamSeq, m.TplHash)
		w.refuse(m.StreamSeq, err)
	case checked && w.l.room(id, w.c.cfg.MaxMarks):
		w.l.merged(m.StreamSeq, id, m.Seq, m.TplHash, stored)
		w.c.merged.Add(1)
	default:
		w.l.processed(m.StreamSeq, m.TplHash)
		w.c.merged.Add(1)
		if checked {
			w.c.unchecked.Add(1)
		}
	}
	return true
}

func (w *worker) refuse(seq uint64, err error) {
	w.c.refused.Add(1)
	w.c.cfg.Logf("natsjs: partition %d: message %d refused: %v", w.p, seq, err)
}

// wait keeps m, of a template the Partition does not know, for a retry:
// it is acknowledged with the state that holds its stream sequence, and
// read from the stream again when it is tried.
func (w *worker) wait(m Message) {
	w.l.processed(m.StreamSeq, m.TplHash)
	if w.l.nWaiting >= w.c.cfg.MaxWaiting {
		if w.c.waitFull.Add(1) == 1 {
			w.c.cfg.Logf("natsjs: partition %d: message %d of unknown template %s dropped: %d messages wait already (Config.MaxWaiting; counted from now on, not logged)",
				w.p, m.StreamSeq, hashfmt.String(m.TplHash), w.l.nWaiting)
		}
		return
	}
	if w.l.waiting[m.TplHash] == nil {
		w.c.cfg.Logf("natsjs: partition %d: template %s unknown: its messages wait for it in the stream (tried every %v)",
			w.p, hashfmt.String(m.TplHash), w.c.cfg.TemplateRetry)
	}
	w.l.wait(m.StreamSeq, m.TplHash, time.Now().Add(w.c.cfg.TemplateRetry))
	w.o.waiting.Store(int64(w.l.nWaiting))
}

// retry tries the waiting messages of the templates due, each
// template's in stream order, for at most a tenth of the lease time (and
// a second, and the lease left); it reports whether it stopped with
// messages to merge left.
func (w *worker) retry() (more bool) {
	if w.l.nWaiting == 0 {
		return false
	}
	defer func() { w.o.waiting.Store(int64(w.l.nWaiting)) }()
	ctx, cancel := context.WithTimeout(context.Background(), max(min(time.Second, w.c.cfg.LeaseTTL/10, w.leaseLeft()), 0))
	defer cancel()
	now := time.Now()
	for _, h := range slices.Sorted(maps.Keys(w.l.waiting)) {
		if q := w.l.waiting[h]; !now.Before(q.due) && w.drain(ctx, h, q) {
			return true
		}
	}
	return false
}

// drain merges the waiting messages of template hash (queue q) while
// the template is known, until ctx ends (reporting true).
func (w *worker) drain(ctx context.Context, hash uint32, q *waitQueue) (more bool) {
	expired := 0
	defer func() {
		if expired > 0 {
			w.c.cfg.Logf("natsjs: partition %d: %d waiting messages of template %s removed by the stream (its MaxAge) before the template was known: never merged",
				w.p, expired, hashfmt.String(hash))
		}
	}()
	for w.l.waiting[hash] != nil {
		merged, gone, err := w.retryOne(ctx, hash, q.seqs[0])
		if err != nil {
			if ctx.Err() != nil {
				return true
			}
			w.c.cfg.Logf("natsjs: partition %d: waiting message %d: %v (tried again in %v)", w.p, q.seqs[0], err, w.c.cfg.TemplateRetry)
			q.due = time.Now().Add(w.c.cfg.TemplateRetry)
			return false
		}
		if !merged && !gone {
			q.due = time.Now().Add(w.c.cfg.TemplateRetry) // still unknown
			return false
		}
		if gone {
			expired++
		}
		w.l.unwait(hash)
		w.dirty = true
	}
	return false
}

// retryOne reads waiting message seq of template hash from the stream
// and merges it if its template is known now: merged is false if it is
// not, gone true if the stream no longer has the message (counted).
func (w *worker) retryOne(ctx context.Context, hash uint32, seq uint64) (merged, gone bool, err error) {
	st, err := w.streamHandle(ctx)
	if err != nil {
		return false, false, err
	}
	raw, err := st.GetMsg(ctx, seq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		w.c.expired.Add(1)
		return false, true, nil
	}
	if err != nil {
		return false, false, err
	}
	m, err := parse(raw.Header, raw.Data, seq)
	if err == nil && m.TplHash != hash {
		err = fmt.Errorf("template %s, waited for %s", hashfmt.String(m.TplHash), hashfmt.String(hash))
	}
	if err != nil {
		w.refuse(seq, err)
		return true, false, nil
	}
	w.l.clock(raw.Time)
	return w.merge(m, raw.Time), false, nil
}

func (w *worker) streamHandle(ctx context.Context) (jetstream.Stream, error) {
	if w.stream == nil {
		st, err := w.c.cfg.JS.Stream(ctx, w.c.cfg.Stream)
		if err != nil {
			return nil, err
		}
		w.stream = st
	}
	return w.stream, nil
}

// checkGap counts a gap between the last stream sequence the partition's
// consumer read (delivered) and the stream's first: messages the stream
// removed unread. The partition's own among them cannot be told from
// the others'.
func (w *worker) checkGap(ctx context.Context, delivered uint64) {
	st, err := w.streamHandle(ctx)
	if err != nil {
		return
	}
	info, err := st.Info(ctx)
	if err != nil {
		return
	}
	first := info.State.FirstSeq
	if first <= delivered+1 || first-1 <= w.gapTo {
		return
	}
	from := max(delivered, w.gapTo) + 1
	w.gapTo = first - 1
	w.c.gaps.Add(1)
	w.c.cfg.Logf("natsjs: partition %d: the stream removed its sequences %d to %d (its MaxAge or other limits) before this partition read them: the partition's messages among them were never merged",
		w.p, from, first-1)
}

// checkpoint stores the state if it changed, then acknowledges the
// messages it holds. Messages at or below the consumer's acknowledgement
// floor leave the ledger first (folded into their marks): they are never
// delivered again.
func (w *worker) checkpoint() error {
	if len(w.toAck) == 0 && !w.dirty {
		return nil
	}
	// Within the lease left: an unreachable stream must not hold the
	// worker (and the export of the partition) past it.
	ctx, cancel := context.WithTimeout(context.Background(), max(min(w.c.cfg.LeaseTTL, w.leaseLeft()), 0))
	defer cancel()
	if w.dirty {
		if info, err := w.cons.Info(ctx); err == nil {
			w.l.fold(info.AckFloor.Stream, w.c.cfg.MaxAge)
			w.checkGap(ctx, info.Delivered.Stream)
		}
		state, err := w.part.Save()
		if err != nil {
			return fmt.Errorf("save: %w", err)
		}
		rev, err := w.c.storeState(ctx, w.p, w.stateRev, w.l, state)
		if err != nil {
			return err
		}
		w.stateRev, w.dirty = rev, false
		w.c.checkpoints.Add(1)
	}
	for _, m := range w.toAck {
		if err := m.Ack(); err != nil && !errors.Is(err, jetstream.ErrMsgAlreadyAckd) {
			return fmt.Errorf("ack: %w", err) // redelivered later, and skipped
		}
	}
	clear(w.toAck)
	w.toAck = w.toAck[:0]
	clear(w.held)
	w.o.unacked.Store(0)
	return nil
}

// parse reads a message's headers and body.
func parse(h nats.Header, body []byte, seq uint64) (Message, error) {
	if len(body) < abi.HeaderSize {
		return Message{}, fmt.Errorf("a %d-byte body is no blob", len(body))
	}
	labels, err := decodeLabels(h.Get(HeaderLabels))
	if err != nil {
		return Message{}, err
	}
	m := Message{StreamSeq: seq, TplHash: binary.LittleEndian.Uint32(body[abi.OffTplHash:]), Labels: labels,
		Sender: h.Get(ship.HeaderSender), Body: body}
	if s := h.Get(ship.HeaderSeq); s != "" {
		if m.Seq, err = strconv.ParseUint(s, 10, 64); err != nil {
			return Message{}, fmt.Errorf("%s %q: %w", ship.HeaderSeq, s, err)
		}
	}
	if s := h.Get(ship.HeaderSettledBelow); s != "" {
		if m.SettledBelow, err = strconv.ParseUint(s, 10, 64); err != nil {
			return Message{}, fmt.Errorf("%s %q: %w", ship.HeaderSettledBelow, s, err)
		}
	}
	return m, nil
}
