package voi

import (
	"errors"
	"fmt"

	"github.com/statsblob/statsblob/qmath"
)

// Sentinel errors. Every statsblob package returns these (possibly wrapped
// with context), so callers can test them with errors.Is. Their messages
// say what went wrong in Go words; Errno gives the errno the C reference
// returns in the same situation.
var (
	// ErrInvalid (EINVAL): an argument is out of range or inconsistent.
	ErrInvalid = qmath.ErrInvalid
	// ErrNotFound (ENOENT): no template, VOI or statistic with that id.
	ErrNotFound = errors.New("not found")
	// ErrNoTemplate (ESRCH): no registered template matches a name/hash
	// lookup.
	ErrNoTemplate = errors.New("no such template")
	// ErrNoMemory (ENOMEM): an allocation the C would make failed; kept for
	// completeness, Go code reports it only for impossible sizes.
	ErrNoMemory = errors.New("too large to allocate")
	// ErrExists (EEXIST): a template with that name is already registered,
	// or a template already defines a VOI of that id (ErrVOIExists).
	ErrExists = errors.New("already exists")
	// ErrVOIExists: tpl.Template.AddVOI of an id the template already
	// defines. It wraps ErrExists; Errno maps it to EOPNOTSUPP, the errno
	// the C's stats_tpl_add_voistats returns (it cannot add statistics to
	// a VOI).
	ErrVOIExists = fmt.Errorf("%w", ErrExists)
	// ErrTooBig (EFBIG): a template or blob would exceed 65535 bytes.
	ErrTooBig = errors.New("too big for a blob")
	// ErrOverflow (EOVERFLOW): a value or a copy does not fit its
	// destination.
	ErrOverflow = qmath.ErrOverflow
	// ErrRange (ERANGE): a fixed-point result underflowed, or two Q values
	// of different precision met.
	ErrRange = qmath.ErrRange
	// ErrAgain (EAGAIN): a t-digest could not place a sample after
	// repeated compressions.
	ErrAgain = errors.New("no room in the t-digest")
	// ErrAlready (EALREADY): a t-digest centroid tree rejected an insert of
	// a key it already holds.
	ErrAlready = errors.New("key already in the t-digest tree")
	// ErrNotSupported (EOPNOTSUPP): a blob of another ABI version or byte
	// order, an operation a kind of blob cannot do.
	ErrNotSupported = errors.New("not supported")
	// ErrTypeMismatch (EFTYPE): a typed fetch of a statistic of another
	// data type.
	ErrTypeMismatch = errors.New("wrong data type")
	// ErrEmpty: a query (quantile, CDF, mean) of a histogram or t-digest
	// that holds no samples. It wraps ErrNotFound (ENOENT): there is no
	// answer to find.
	ErrEmpty = fmt.Errorf("no samples: %w", ErrNotFound)
)

// FreeBSD errno numbers of the sentinel errors.
const (
	ENOENT     = 2
	ESRCH      = 3
	ENOMEM     = 12
	EEXIST     = 17
	EINVAL     = 22
	EFBIG      = 27
	ERANGE     = 34
	EAGAIN     = 35
	EALREADY   = 37
	EOPNOTSUPP = 45
	EFTYPE     = 79
	EOVERFLOW  = 84
)

var errnos = []struct {
	err   error
	errno int
	name  string
}{
	{ErrNotFound, ENOENT, "ENOENT"},
	{ErrNoTemplate, ESRCH, "ESRCH"},
	{ErrNoMemory, ENOMEM, "ENOMEM"},
	{ErrExists, EEXIST, "EEXIST"},
	{ErrInvalid, EINVAL, "EINVAL"},
	{ErrTooBig, EFBIG, "EFBIG"},
	{ErrRange, ERANGE, "ERANGE"},
	{ErrAgain, EAGAIN, "EAGAIN"},
	{ErrAlready, EALREADY, "EALREADY"},
	{ErrNotSupported, EOPNOTSUPP, "EOPNOTSUPP"},
	{ErrTypeMismatch, EFTYPE, "EFTYPE"},
	{ErrOverflow, EOVERFLOW, "EOVERFLOW"},
}

// Errno returns the FreeBSD errno number that err (or an error it wraps)
// mirrors, 0 for nil, and -1 for an error that is none of the sentinels.
func Errno(err error) int {
	if err == nil {
		return 0
	}
	if errors.Is(err, ErrVOIExists) {
		return EOPNOTSUPP
	}
	for _, e := range errnos {
		if errors.Is(err, e.err) {
			return e.errno
		}
	}
	return -1
}

// ErrnoName returns the symbolic name of a FreeBSD errno number ("EINVAL"),
// or "E?" for a number none of the sentinels has.
func ErrnoName(errno int) string {
	for _, e := range errnos {
		if e.errno == errno {
			return e.name
		}
	}
	return "E?"
}

// ErrorOf returns the sentinel error of a FreeBSD errno number, nil for 0.
func ErrorOf(errno int) error {
	for _, e := range errnos {
		if e.errno == errno {
			return e.err
		}
	}
	if errno == 0 {
		return nil
	}
	return ErrInvalid
}
