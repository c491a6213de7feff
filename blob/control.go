package blob

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/statsblob/statsblob/hist"
	"github.com/statsblob/statsblob/internal/abi"
	"github.com/statsblob/statsblob/tdigest"
	"github.com/statsblob/statsblob/voi"
)

// Control turns the statistics of VOIs off and on at run time, as Linux's
// statistics infrastructure does per statistic and per interface (`on=0`).
// While a VOI is off its updates change none of its statistics and return
// nil; a VOI that takes relative updates still keeps its previous value, so
// a level (in-flight requests) stays right across an off period. Attach one
// Control to any number of blobs (SetControl, Sharded.SetControl); every
// change is published to them in one atomic store, and the update path pays
// one atomic load for it (none for a blob without a Control).
//
// Control is safe for concurrent use; the zero value has every VOI on and
// reads the wall clock. It must not be copied after first use.
type Control struct {
	mask atomic.Pointer[ctlMask] // nil: everything on

	mu      sync.Mutex
	allOff  bool
	off     []bool      // per VOI id
	started []time.Time // per VOI id: when it was last turned on (zero: on since the start)
	stopped []time.Time // per VOI id: when it was last turned off
	allOn   time.Time   // when SetAll(true) last ran
	allStop time.Time   // when SetAll(false) last ran
	// Clock, if set before first use, gives the started and stopped
	// times (default time.Now).
	Clock func() time.Time
}

// ctlMask is an immutable picture of what is off: all, or the VOIs whose
// off[id] is set.
type ctlMask struct {
	all bool
	off []bool
}

// skip reports whether updates of VOI i are off. A nil c has all on.
func (c *Control) skip(i uint) bool {
	m := c.mask.Load()
	return m != nil && (m.all || i < uint(len(m.off)) && m.off[i])
}

func (c *Control) now() time.Time {
	if c.Clock != nil {
		return c.Clock()
	}
	return time.Now()
}

// grow makes the per-VOI slices hold id (c.mu held).
func (c *Control) grow(id int) {
	for len(c.off) <= id {
		c.off = append(c.off, false)
		c.started = append(c.started, time.Time{})
		c.stopped = append(c.stopped, time.Time{})
	}
}

// publish stores the new picture (c.mu held).
func (c *Control) publish() {
	anyOff := c.allOff
	for _, o := range c.off {
		anyOff = anyOff || o
	}
	if !anyOff {
		c.mask.Store(nil)
		return
	}
	c.mask.Store(&ctlMask{all: c.allOff, off: append([]bool(nil), c.off...)})
}

// MaxControlID is the highest VOI id a Control takes (a blob's voi[] holds
// at most 65,535 bytes' worth of 8-byte entries).
const MaxControlID = abi.MaxBlobSz / abi.VOISize

// Set turns VOI id's statistics on or off and records when. Turning on a
// VOI that is on (or off one that is off) changes nothing, not even the
// times. Errors wrap voi.ErrInvalid for an id outside 0..MaxControlID.
func (c *Control) Set(id int32, on bool) error {
	if id < 0 || id > MaxControlID {
		return fmt.Errorf("blob: control of VOI %d: id outside 0..%d: %w", id, MaxControlID, voi.ErrInvalid)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.grow(int(id))
	if c.off[id] == !on {
		return nil
	}
	c.off[id] = !on
	if on {
		c.started[id] = c.now()
	} else {
		c.stopped[id] = c.now()
	}
	c.publish()
	return nil
}

// SetAll turns every VOI's statistics on or off at once (Linux's
// per-interface on/off): one store, so an update sees either the old or
// the new setting of all of them. A VOI switched off with Set stays off
// after SetAll(true).
func (c *Control) SetAll(on bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.allOff == !on {
		return
	}
	c.allOff = !on
	if on {
		c.allOn = c.now()
	} else {
		c.allStop = c.now()
	}
	c.publish()
}

// On reports whether updates of VOI id change its statistics: neither it
// nor all are off.
func (c *Control) On(id int32) bool { return id >= 0 && !c.skip(uint(id)) }

// VOIState is what a Control knows of one VOI (or, from AllState, of all).
type VOIState struct {
	On bool // the setting of this VOI (AllState: of the interface)
	// Started and Stopped are when it was last turned on and off; zero
	// if never.
	Started, Stopped time.Time
}

// State returns VOI id's own setting and times (whether it is effectively
// on also depends on AllState: see On).
func (c *Control) State(id int32) VOIState {
	c.mu.Lock()
	defer c.mu.Unlock()
	if id < 0 || int(id) >= len(c.off) {
		return VOIState{On: true}
	}
	return VOIState{On: !c.off[id], Started: c.started[id], Stopped: c.stopped[id]}
}

// AllState returns the all-at-once setting and its times.
func (c *Control) AllState() VOIState {
	c.mu.Lock()
	defer c.mu.Unlock()
	return VOIState{On: !c.allOff, Started: c.allOn, Stopped: c.allStop}
}

// SetControl attaches c to the blob (nil detaches: every VOI on). Clones
// and snapshots do not inherit it.
func (bl *Blob) SetControl(c *Control) { bl.ctl = c }

// ResetVOI returns the statistics of VOI id to their initial state, the
// bytes Reset gives them (the C's reset, stats_v1_blob_iter with
// stats_v1_icb_reset_voistat, applied to that VOI alone): SUM 0, MAX and
// MIN the data type's extremes, histograms and t-digests emptied, error
// counts and updated flags cleared. The VOI's state (previous value for
// relative updates), the other VOIs and the header's lastrst are kept.
// Errors wrap voi.ErrInvalid for an id that names no VOI; the blob is
// then unchanged.
func (bl *Blob) ResetVOI(id int32) error {
	p := bl.plan
	if p == nil || uint(id) >= uint(len(p.vois)) || p.vois[id].dtype == 0 {
		return fmt.Errorf("blob: reset of VOI %d: no such VOI: %w", id, voi.ErrInvalid)
	}
	vp := &p.vois[id]
	b := bl.b
	for i := range p.stats[vp.first : int(vp.first)+int(vp.n)] {
		sp := &p.stats[int(vp.first)+i]
		d := b[sp.dataOff : int(sp.dataOff)+int(sp.dsz)]
		switch sp.stype {
		case voi.Sum, voi.Max, voi.Min:
			resetNumeric(d, sp.stype, sp.dtype)
		case voi.Hist:
			hist.Reset(d, sp.dtype)
		case voi.TDgst:
			tdigest.Reset(d, sp.dtype)
			if bl.digests != nil {
				bl.digests[sp.digest].Invalidate()
			}
		}
		off := int(sp.statOff)
		b[off+abi.StatOffErrs] = 0
		b[off+abi.StatOffFlags] &^= voi.StatValid
	}
	return nil
}
