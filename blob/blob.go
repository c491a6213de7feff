package blob

import (
	"fmt"
	"time"

	"github.com/statsblob/statsblob/bsdrand"
	"github.com/statsblob/statsblob/internal/abi"
	"github.com/statsblob/statsblob/internal/trusted"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// Blob is a stats blob. Its bytes are complete: a copy of Bytes() shipped
// elsewhere and read back with FromBytes is the same blob. The Env (clock
// and random source) is configuration of this value, not part of the bytes.
//
// A Blob is not safe for concurrent use. Copying a Blob value shares its
// bytes; use Clone for an independent copy. The zero Blob holds no blob:
// UnmarshalBinary gives it one, and until then it serves nothing else.
type Blob struct {
	b    []byte // the buffer; the blob is b[:cursz] (len(b) >= cursz)
	plan *plan  // the layout, derived from b once (see plan.go)
	env  *Env
	ctl  *Control // VOIs switched off at run time (control.go); nil: all on

	// digests holds the mean order of each t-digest statistic (indexed by
	// statPlan.digest), made by its first update and kept by the later
	// ones. It is state beside the bytes, not in them: whatever rewrites a
	// digest's bytes otherwise (Reset, Merge, UnmarshalBinary) drops it.
	digests []trusted.TDigestCache

	// pending is set when an accurate-mode t-digest buffers samples
	// beside the bytes; settle writes them in before any view.
	pending bool
}

// digestCache returns the update cache of the t-digest statistic sp.
func (bl *Blob) digestCache(sp *statPlan) *trusted.TDigestCache {
	if bl.digests == nil {
		bl.digests = make([]trusted.TDigestCache, bl.plan.ndigests)
	}
	return &bl.digests[sp.digest]
}

// dropDigestCaches forgets the t-digests' order caches after their bytes
// changed outside an update.
func (bl *Blob) dropDigestCaches() {
	for i := range bl.digests {
		bl.digests[i].Invalidate()
	}
	bl.pending = false // an accurate digest's buffer goes with its cache
}

// Env is a blob's clock and random source: where it reads the time for
// its created and lastrst fields, and where its t-digests draw randomness
// (the C's random(), tdigest.Env). The random source is not safe for
// concurrent use: blobs used on different goroutines need Envs of their
// own (New and Init with a nil Env make one per blob; Clone and Snapshot
// copy the source's).
type Env struct {
	Rand  *bsdrand.Source // random(); nil: the Go runtime's generator
	Clock func() int64    // sbintime_t now (seconds<<32 | fraction); nil: WallClock
}

// SBinTime converts a time to FreeBSD's sbintime_t: signed 32.32 fixed
// point seconds, with the C's rounding of the nanoseconds.
func SBinTime(sec int64, nsec int64) int64 {
	return sec<<32 + int64((uint64(nsec)*9223372037+0x7fffffff)>>31)
}

// WallClock is the default clock: the current time since the Unix epoch as
// an sbintime_t. (The C reads the uptime clock; an epoch clock keeps
// created/lastrst meaningful across hosts.)
func WallClock() int64 {
	now := time.Now()
	return SBinTime(now.Unix(), int64(now.Nanosecond()))
}

// NewEnv returns an Env with the given clock (WallClock if nil) and a fresh
// random(3) source seeded with seed.
func NewEnv(clock func() int64, seed uint32) *Env {
	if clock == nil {
		clock = WallClock
	}
	return &Env{Rand: bsdrand.New(seed), Clock: clock}
}

// New allocates a blob from template t (stats_blob_alloc): a buffer of the
// template's size holding the template's bytes, stamped with its hash and
// with created = lastrst = now. env may be nil for the defaults (WallClock,
// and a random source of the blob's own, seeded with 1, made when a t-digest
// first needs it). t must not be nil.
func New(t *tpl.Template, env *Env) *Blob {
	b, hash, pl := templateBytes(t)
	bl := &Blob{b: b, plan: pl, env: env}
	bl.stamp(hash)
	bl.setModes(digestModes(t, pl))
	return bl
}

func (bl *Blob) stamp(hash uint32) {
	now := bl.now()
	abi.PutU32(bl.b, abi.OffTplHash, hash)
	abi.PutU64(bl.b, abi.OffCreated, uint64(now))
	abi.PutU64(bl.b, abi.OffLastRst, uint64(now))
}

// FromBytes validates p as a STATS_ABI_V1 little-endian blob of exactly
// len(p) == cursz bytes and returns a Blob holding a copy of it. The error
// names the first inconsistency found and wraps voi.ErrInvalid (or
// voi.ErrNotSupported for another ABI or byte order). See Validate.
//
// FromBytes takes no template (a blob needs one only for names), so it
// checks that the bytes are consistent, not that they are the template's
// their hash names: a collector that knows the template calls
// CheckTemplate; Merge and MergeAll refuse blobs that do not fit each
// other (see Compatible).
func FromBytes(p []byte, env *Env) (*Blob, error) {
	b, pl, err := decode(p, nil)
	if err != nil {
		return nil, err
	}
	return &Blob{b: b, plan: pl, env: env}, nil
}

// decode validates p (as FromBytes) and returns a copy of it, in buf if buf
// has exactly len(p) bytes, and its plan. Blobs of a layout decoded
// recently take the layout cache's shortcut (layoutcache.go).
func decode(p, buf []byte) ([]byte, *plan, error) {
	pl := (*plan)(nil)
	if len(p) >= abi.HeaderSize {
		pl = cachedPlan(p)
	}
	if pl == nil {
		if err := Validate(p); err != nil {
			return nil, nil, err
		}
		if len(p) != abi.CurSz(p) {
			return nil, nil, fmt.Errorf("blob: %d bytes given, header cursz is %d: %w", len(p), abi.CurSz(p), voi.ErrInvalid)
		}
	}
	var b []byte
	if len(buf) == len(p) {
		b = buf
		copy(b, p)
	} else {
		b = append([]byte(nil), p...) // no zeroing of what is copied over
	}
	if pl == nil {
		pl = newPlan(b)
		cacheLayout(b, pl)
	}
	return b, pl, nil
}

// UnmarshalBinary replaces bl with a validated copy of p (see FromBytes),
// keeping bl's Env. A blob whose buffer has exactly len(p) bytes (the
// common case of a collector decoding blobs of one template into one
// Blob) takes the copy in that buffer, so Bytes returned earlier alias the
// new contents; otherwise it gets a new buffer. The t-digests keep their
// clustering modes (New, UseModes) when p is a blob of the same template
// hash with its t-digests where bl has them; otherwise they update in the
// C's mode (see UseModes). On error bl is unchanged.
func (bl *Blob) UnmarshalBinary(p []byte) error {
	var hash uint32
	if bl.plan != nil {
		hash = bl.TplHash()
	}
	b, pl, err := decode(p, bl.b)
	if err != nil {
		return err
	}
	if pl == bl.plan || bl.plan != nil && abi.U32(b, abi.OffTplHash) == hash && sameDigests(pl, bl.plan) {
		bl.dropDigestCaches() // the caches' storage (and modes) serve again
	} else {
		bl.digests = nil
	}
	bl.pending = false
	bl.b, bl.plan = b, pl
	return nil
}

// MarshalBinary returns a copy of the blob's cursz bytes.
func (bl *Blob) MarshalBinary() ([]byte, error) { return bl.AppendBinary(nil) }

// AppendBinary appends the blob's cursz bytes to dst; it allocates nothing
// when dst has room.
func (bl *Blob) AppendBinary(dst []byte) ([]byte, error) {
	bl.settle()
	return append(dst, bl.b[:abi.CurSz(bl.b)]...), nil
}

// Bytes returns the blob's cursz bytes. The slice aliases the blob: it
// changes with updates, and the caller must not modify it.
func (bl *Blob) Bytes() []byte {
	bl.settle()
	return bl.b[:abi.CurSz(bl.b)]
}

// Buffer returns the whole buffer the blob lives in (len >= cursz),
// aliasing the blob; the caller must not modify it.
func (bl *Blob) Buffer() []byte {
	bl.settle()
	return bl.b
}

// Env returns the blob's environment, creating the default one if none was
// set.
func (bl *Blob) Env() *Env {
	if bl.env == nil {
		bl.env = NewEnv(nil, 1)
	}
	return bl.env
}

// SetEnv replaces the blob's environment (nil restores the defaults).
func (bl *Blob) SetEnv(env *Env) { bl.env = env }

func (bl *Blob) now() int64 {
	if bl.env != nil && bl.env.Clock != nil {
		return bl.env.Clock()
	}
	return WallClock()
}

// Header fields used often (Header has them all).

// MaxSz returns the header's maxsz: the size of the buffer the blob was
// made for, in bytes.
func (bl *Blob) MaxSz() int { return abi.MaxSz(bl.b) }

// CurSz returns the blob's size in bytes.
func (bl *Blob) CurSz() int { return abi.CurSz(bl.b) }

// TplHash returns the hash of the template the blob was made from.
func (bl *Blob) TplHash() uint32 { return abi.U32(bl.b, abi.OffTplHash) }

// NumVOIs returns the number of voi[] slots: one more than the highest VOI
// id of the template.
func (bl *Blob) NumVOIs() int { return abi.NVOIs(bl.b) }
