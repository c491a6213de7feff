package blob

import (
	"encoding/binary"

	"github.com/statsblob/statsblob/hist"
	"github.com/statsblob/statsblob/internal/abi"
	"github.com/statsblob/statsblob/internal/trusted"
	"github.com/statsblob/statsblob/qmath"
	"github.com/statsblob/statsblob/voi"
)

//go:generate go run gen_update.go

// Updates feed one value of a VOI to every statistic the VOI keeps, from the
// highest stat slot down, as stats_v1_voi_update does.
//
// The method must match the VOI's data type (UpdateU64 for an INT_U64 VOI,
// UpdateULong for INT_ULONG, ...): a VOI id that is negative, vacant or
// beyond the blob, or a data type that differs from the VOI's, gives
// a *VOIError wrapping voi.ErrInvalid (naming the VOI, the data types and
// the reason) and changes nothing. The Rel variants add the value to the
// VOI's previous value first; they need a VOI added with voi.FlagRelUpdate.
//
// A statistic that fails (a Q overflow, a t-digest that cannot place the
// sample) counts the error in its voistat (saturating at 255); the other
// statistics still update and the call returns the error, as the C does.
// Those errors are returned unwrapped (voi sentinels), so that an update
// allocates nothing even when a statistic keeps failing; successful
// updates allocate nothing either.

// UpdateQ updates a Q VOI with q; q's kind selects the VOI data type
// (qmath.S64 for Q_S64, ...).
func (bl *Blob) UpdateQ(id int32, q qmath.Q) error { return updateQ(bl, id, qDType(q.Kind), q, false) }

// UpdateRelQ is UpdateRelS64 for a Q VOI.
func (bl *Blob) UpdateRelQ(id int32, q qmath.Q) error {
	return updateQ(bl, id, qDType(q.Kind), q, true)
}

func qDType(k qmath.Kind) voi.DType {
	switch k {
	case qmath.S32:
		return voi.QS32
	case qmath.U32:
		return voi.QU32
	case qmath.S64:
		return voi.QS64
	}
	return voi.QU64
}

// voiPlan returns the plan of VOI id if it exists with data type dt (and
// keeps state, for a relative update).
func (bl *Blob) voiPlan(id int32, dt voi.DType, rel bool) (*voiPlan, error) {
	p := bl.plan
	if p == nil || uint(id) >= uint(len(p.vois)) {
		return nil, bl.voiError(id, dt, rel)
	}
	vp := &p.vois[id]
	if vp.dtype != dt || dt == 0 || rel && vp.state == 0 {
		return nil, bl.voiError(id, dt, rel)
	}
	return vp, nil
}

// compound updates a histogram or t-digest statistic and records the
// outcome in its voistat.
func (bl *Blob) compound(sp *statPlan, voiDT voi.DType, bits uint64) error {
	b := bl.b
	d := b[sp.dataOff : int(sp.dataOff)+int(sp.dsz)]
	var err error
	switch sp.stype {
	case voi.Hist:
		if sp.layout >= 0 {
			err = bl.plan.layouts[sp.layout].Update(d, bits)
		} else {
			err = hist.Update(d, sp.dtype, voiDT, bits)
		}
	case voi.TDgst:
		c := bl.digestCache(sp)
		if c.Accurate {
			bl.pending = true
			err = trusted.TDigestUpdate(c, d, sp.dtype, voiDT, bits, nil)
		} else {
			err = trusted.TDigestUpdate(c, d, sp.dtype, voiDT, bits, bl.Env().Rand)
		}
	}
	if err == nil {
		markValid(b, sp.statOff)
	} else {
		finish(b[sp.statOff:int(sp.statOff)+abi.StatSize], err)
	}
	return err
}

// finish records a statistic's outcome in its voistat entry se: the
// updated flag on success, a saturating error count otherwise.
func finish(se []byte, err error) {
	if err == nil {
		se[abi.StatOffFlags] |= voi.StatValid
	} else if se[abi.StatOffErrs] < abi.MaxErrs {
		se[abi.StatOffErrs]++
	}
}

// markValid sets a voistat's updated flag, storing only when it changes
// (a store per update to a byte next to what the next update reads costs
// more than the test).
func markValid(b []byte, statOff uint16) {
	if f := flagsAt(b, int(statOff)); *f&voi.StatValid == 0 {
		*f |= voi.StatValid
	}
}

// loadQ reads a Q of kind k from d; storeQ writes one.
func loadQ(k qmath.Kind, d []byte) qmath.Q {
	if k.Bits() == 32 {
		return qmath.Q{Raw: uint64(binary.LittleEndian.Uint32(d)), Kind: k}
	}
	return qmath.Q{Raw: binary.LittleEndian.Uint64(d), Kind: k}
}

func storeQ(d []byte, q qmath.Q) {
	if q.Kind.Bits() == 32 {
		binary.LittleEndian.PutUint32(d, uint32(q.Raw))
	} else {
		binary.LittleEndian.PutUint64(d, q.Raw)
	}
}

// updateQ updates the statistics of a Q VOI through qmath, with the C's
// overflow and precision errors. It visits them in the C's order (slots
// downwards: t-digest, histogram, MIN, MAX, SUM) and returns the error of
// the last to fail.
func updateQ(bl *Blob, id int32, dt voi.DType, x qmath.Q, rel bool) error {
	vp, err := bl.voiPlan(id, dt, rel)
	if err != nil {
		return err
	}
	b := bl.b
	if rel {
		sum, err := x.AddQ(loadQ(x.Kind, b[vp.state:]))
		if err != nil {
			return err
		}
		x = sum
	}
	if c := bl.ctl; c != nil && c.skip(uint(id)) {
		if vp.state != 0 { // off: the level is kept, no statistic changes
			prev, err := loadQ(x.Kind, b[vp.state:]).CpyValQ(x)
			if err == nil {
				storeQ(b[vp.state:], prev)
			}
			return err
		}
		return nil
	}
	compound := bl.plan.stats[vp.first : int(vp.first)+int(vp.nc)]
	for i := range compound {
		if serr := bl.compound(&compound[i], dt, x.Raw); serr != nil {
			err = serr
		}
	}
	// The offset tests stay here, not in the helpers, which qmath's
	// arithmetic makes too large to inline: a call is paid only for a
	// statistic the VOI keeps.
	if vp.minOff != 0 {
		if serr := minQ(b, vp, x); serr != nil {
			err = serr
		}
	}
	if vp.maxOff != 0 {
		if serr := maxQ(b, vp, x); serr != nil {
			err = serr
		}
	}
	if vp.sumOff != 0 {
		if serr := sumQ(b, vp, x); serr != nil {
			err = serr
		}
	}
	if vp.state != 0 {
		// The C assigns the result of storing the state to its return
		// value, replacing (even with success) any statistic's error.
		var prev qmath.Q
		if prev, err = loadQ(x.Kind, b[vp.state:]).CpyValQ(x); err == nil {
			storeQ(b[vp.state:], prev)
		}
	}
	return err
}

// statEntry returns the voistat entry of VOI vp's statistic st.
func statEntry(b []byte, vp *voiPlan, st voi.SType) []byte {
	off := int(vp.statsOff) + abi.StatSize*int(st)
	return b[off : off+abi.StatSize]
}

// sumQ is SUM of a Q VOI vp (Q_S32 .. Q_U64; stats_v1_voi_update_sum's
// Q_QADDQ), whose sum is at vp.sumOff: x is added. A failed addition
// (qmath.ErrOverflow, or qmath.ErrRange for an x of another precision)
// leaves the sum unchanged, is counted in the voistat and returned;
// success marks the statistic updated.
func sumQ(b []byte, vp *voiPlan, x qmath.Q) error {
	d := b[vp.sumOff:]
	sum, err := loadQ(x.Kind, d).AddQ(x)
	if err == nil {
		storeQ(d, sum)
	}
	finish(statEntry(b, vp, voi.Sum), err)
	return err
}

// maxQ is MAX of a Q VOI vp (stats_v1_voi_update_max's Q_QLTQ, then
// Q_QCPYVALQ), whose maximum is at vp.maxOff: x's value replaces a
// smaller maximum, at the maximum's precision. A maximum that stays
// leaves its voistat untouched (not even marked updated); a value the
// maximum's precision cannot hold (qmath.ErrOverflow) is counted in the
// voistat and returned (see sumQ).
func maxQ(b []byte, vp *voiPlan, x qmath.Q) error {
	cur := loadQ(x.Kind, b[vp.maxOff:])
	if !cur.LT(x) {
		return nil
	}
	return replaceQ(b, vp, voi.Max, vp.maxOff, cur, x)
}

// minQ is MIN of a Q VOI vp (stats_v1_voi_update_min's Q_QGTQ, then
// Q_QCPYVALQ), whose minimum is at vp.minOff: x's value replaces a
// greater minimum (see maxQ).
func minQ(b []byte, vp *voiPlan, x qmath.Q) error {
	cur := loadQ(x.Kind, b[vp.minOff:])
	if !cur.GT(x) {
		return nil
	}
	return replaceQ(b, vp, voi.Min, vp.minOff, cur, x)
}

// replaceQ stores x's value at off in the precision of cur, the value
// there (Q_QCPYVALQ), and records the outcome in the voistat of vp's
// statistic st.
func replaceQ(b []byte, vp *voiPlan, st voi.SType, off uint16, cur, x qmath.Q) error {
	nv, err := cur.CpyValQ(x)
	if err == nil {
		storeQ(b[off:], nv)
	}
	finish(statEntry(b, vp, st), err)
	return err
}
