package blob

import (
	"fmt"
	"strconv"

	"github.com/statsblob/statsblob/internal/abi"
	"github.com/statsblob/statsblob/voi"
)

// errNilBlob is the error of a nil *Blob given where a blob is needed.
var errNilBlob = fmt.Errorf("nil blob: %w", voi.ErrInvalid)

// VOIError is the error of an update or fetch that names a VOI or a
// statistic the blob does not have in the form the call takes: an unknown
// or vacant VOI id, a data type other than the VOI's, a relative update of
// a VOI without state, a statistic the VOI does not keep or of another
// data type. The call changed nothing. errors.Is finds the sentinel the C
// returns (voi.ErrInvalid, or voi.ErrTypeMismatch for a typed fetch).
//
// It is made only when a call fails: successful updates and fetches
// allocate nothing.
type VOIError struct {
	Op   string    // "update", "relative update", "fetch"
	ID   int32     // the VOI id given
	Stat voi.SType // the statistic asked for (fetches), -1 for none
	Want voi.DType // the data type the call takes, 0 if any
	Have voi.DType // the VOI's (updates) or the statistic's (fetches) data type, 0 if it has none
	// Reason says what is wrong.
	Reason string
	Err    error // the sentinel
}

// Error returns "blob: OP of VOI ID [STAT]: REASON: SENTINEL".
func (e *VOIError) Error() string {
	s := "blob: " + e.Op + " of VOI " + strconv.Itoa(int(e.ID))
	if e.Stat >= 0 {
		s += " " + e.Stat.String()
	}
	return s + ": " + e.Reason + ": " + e.Err.Error()
}

// Unwrap returns the sentinel.
func (e *VOIError) Unwrap() error { return e.Err }

// voiError says why VOI id of the blob cannot take the update (with data
// type dt, relative or not) a caller found impossible. It is kept out of
// line so that the update paths stay small.
//
//go:noinline
func (bl *Blob) voiError(id int32, dt voi.DType, rel bool) error {
	e := &VOIError{Op: "update", ID: id, Stat: -1, Want: dt, Err: voi.ErrInvalid}
	if rel {
		e.Op = "relative update"
	}
	e.Reason = bl.voiProblem(id)
	if e.Reason != "" {
		return e
	}
	e.Have = voi.DType(abi.ReadVOI(bl.b, abi.VOIAt(int(id))).DType)
	switch {
	case !dt.IsNumeric():
		e.Want, e.Reason = 0, fmt.Sprintf("%v is not a VOI data type", dt)
	case e.Have != dt:
		e.Reason = fmt.Sprintf("the VOI is %v, the call takes %v", e.Have, dt)
	case rel:
		e.Reason = "the VOI keeps no previous value (it needs voi.FlagRelUpdate)"
	default:
		e.Reason = "the blob has no update plan"
	}
	return e
}

// voiProblem says why id names no VOI of the blob, or returns "".
func (bl *Blob) voiProblem(id int32) string {
	n := abi.NVOIs(bl.b)
	switch {
	case id < 0:
		return "negative id"
	case int(id) >= n:
		return fmt.Sprintf("no such VOI (the blob's ids are below %d)", n)
	case abi.ReadVOI(bl.b, abi.VOIAt(int(id))).ID < 0:
		return "no such VOI (a vacant slot)"
	}
	return ""
}

// fetchError says why statistic st of VOI id cannot be fetched as data
// type want (0: as any); sentinel is what the C returns.
func (bl *Blob) fetchError(id int32, st voi.SType, want voi.DType, sentinel error) error {
	e := &VOIError{Op: "fetch", ID: id, Stat: st, Want: want, Err: sentinel}
	if e.Reason = bl.voiProblem(id); e.Reason != "" {
		return e
	}
	v := abi.ReadVOI(bl.b, abi.VOIAt(int(id)))
	if st < 0 || int(st) > int(v.MaxID) {
		e.Reason = fmt.Sprintf("statistic type %d outside the VOI's 0..%d", int(st), v.MaxID)
		return e
	}
	s := abi.ReadStat(bl.b, int(v.StatsOff)+abi.StatSize*int(st))
	if s.SType < 0 {
		e.Reason = "the VOI keeps no such statistic"
		return e
	}
	e.Have = voi.DType(s.DType)
	e.Reason = fmt.Sprintf("the statistic is %v, the call takes %v", e.Have, want)
	return e
}
