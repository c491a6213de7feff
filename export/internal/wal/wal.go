// Package wal is the collector's write-ahead log: records appended to a
// file and made durable (fsync) before Append returns, many concurrent
// appends sharing one fsync (group commit), and checkpoints of the whole
// state that let older log segments go.
//
// # Files
//
// A directory holds log segments seg-N.wal and checkpoints ckpt-N.ckpt, N
// a 16-digit hexadecimal number. Checkpoint N holds the state after every
// record of the segments numbered below N; segment N and later hold the
// records since. A segment is a sequence of records, each
//
//	length  uint32 little-endian, at most MaxRecord
//	crc     uint32 little-endian, CRC-32C (Castagnoli) of the payload
//	payload length bytes
//
// A checkpoint is the 8 bytes "SBCKPT2\n", a record whose payload is the
// state's length (uint64 little-endian), then the state cut in pieces of
// CheckpointPiece bytes (the last one shorter, none for an empty state),
// each framed as a record. The state is not bounded by MaxRecord, which
// bounds one record, not what the records add up to: the file's length
// must be what the state's length makes it, so a damaged length is
// refused before anything is allocated for it (what Open allocates is
// bounded by the file's length), and the state is read piece by piece,
// each checked, into one buffer of that length. A checkpoint
// of version 1, "SBCKPT1\n" and the state as one record (at most
// MaxRecord), is still read. Files are written under a temporary name
// and renamed, and the directory is synced, so a checkpoint is either
// whole or absent.
//
// # Recovery
//
// Open reads the newest checkpoint whose checksums hold and replays the
// segments from its number on. A record cut short or failing its checksum
// at the end of the last segment is what a crash during a write leaves: the
// segment is truncated there (that record was never acknowledged, since
// Append returns only after the fsync that covers it). Damage anywhere
// else is reported as ErrCorrupt and Open fails: acknowledged records would
// otherwise be lost without a word.
//
// # Failure
//
// A write or an fsync that fails fails the log (Failed; every append
// returns ErrClosed from then on): the records it covered may or may not
// be on disk, and none was acknowledged. Recover makes the log whole
// again by a checkpoint of the caller's state written to a new file,
// never by writing or syncing the failed segment again (after a failed
// fsync, one that succeeds on the same file promises nothing: the kernel
// may have dropped the pages it could not write).
package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// MaxRecord bounds a record's payload (Append's, and so a post's), and so
// what a damaged length field of a segment can make Open allocate. It
// does not bound a checkpoint, which is written in pieces.
const MaxRecord = 64 << 20

// CheckpointPiece is the length of the pieces a checkpoint's state is
// written in, each with its own checksum.
const CheckpointPiece = 1 << 20

const (
	hdrSize     = 8
	ckptMagic   = "SBCKPT2\n"
	ckptMagicV1 = "SBCKPT1\n"
	segPrefix   = "seg-"
	segSuffix   = ".wal"
	ckptPrefix  = "ckpt-"
	ckptSuffix  = ".ckpt"
)

// Errors. Each is wrapped with the file and offset it concerns.
var (
	// ErrCorrupt: a file of the log is damaged where a crash cannot have
	// damaged it.
	ErrCorrupt = errors.New("wal: corrupt log")
	// ErrClosed: the log was closed, or an earlier write or fsync failed
	// (then every later Append fails too: the log may have lost a record).
	ErrClosed = errors.New("wal: log closed")
	// ErrTooLarge: a payload longer than MaxRecord given to Append.
	ErrTooLarge = errors.New("wal: record too large")
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Options configure a Log; the zero value is the durable default.
type Options struct {
	// NoSync skips fsync: records survive a crash of the process, not of
	// the machine. For tests and for users who accept that.
	NoSync bool
	// Fault, if not nil, makes the disk fail, for tests: it is asked
	// before each write to a file of the log ("write": a segment's
	// records, or a checkpoint file whole) and each fsync of a segment
	// ("sync", asked with NoSync too), with the file's name (seg-N.wal,
	// ckpt-N.ckpt), and an error it returns is that operation's, made
	// without touching the file (a failed fsync after a write that went
	// through, a write of nothing).
	Fault func(op, file string) error
}

// Recovery receives what Open reads back, in order: the checkpoint's
// state (not called without a checkpoint; it may be longer than
// MaxRecord), then each record since.
// An error from either stops Open and is returned.
type Recovery struct {
	Checkpoint func(state []byte) error
	Record     func(payload []byte) error
}

// Stats counts a Log's work since Open.
type Stats struct {
	Appends     uint64 // records appended
	Syncs       uint64 // fsyncs of the log (each covers one or more appends)
	Bytes       uint64 // bytes written to segments
	Checkpoints uint64 // checkpoints written
	Failed      uint64 // checkpoints that failed (Checkpoint returned an error)
	Replayed    uint64 // records replayed by Open
	Truncated   uint64 // bytes of a torn last record cut off by Open
}

// Log is an open write-ahead log. Its methods are safe for concurrent use.
type Log struct {
	dir  string
	opts Options

	mu      sync.Mutex // orders records: the segment, its pending bytes, lsn
	f       *os.File   // the open segment
	segN    uint64     // its number
	pending []byte     // records appended and not yet written
	lsn     uint64     // records appended so far

	smu     sync.Mutex // the syncing role and what is durable
	cond    *sync.Cond
	syncing bool
	durable uint64 // records written and synced
	err     error  // the first write or sync failure, or ErrClosed
	closed  bool   // by Close
	stats   Stats
}

// Open opens the log in dir (created if missing), replaying its checkpoint
// and records into r, and returns it ready for appends to a new segment.
func Open(dir string, opts Options, r Recovery) (*Log, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("wal: %w", err)
	}
	segs, ckpts, err := list(dir)
	if err != nil {
		return nil, err
	}
	l := &Log{dir: dir, opts: opts}
	l.cond = sync.NewCond(&l.smu)
	var from uint64
	for i := len(ckpts) - 1; i >= 0; i-- {
		state, err := readCheckpoint(filepath.Join(dir, ckptName(ckpts[i])))
		if errors.Is(err, ErrCorrupt) {
			continue // an older one still covers its segments
		}
		if err != nil {
			return nil, err
		}
		if r.Checkpoint != nil {
			if err := r.Checkpoint(state); err != nil {
				return nil, err
			}
		}
		from = ckpts[i]
		break
	}
	// The segments from the checkpoint on must all be there: with every
	// checkpoint damaged, the ones it replaced were deleted, and replaying
	// what is left would lose records without a word.
	segs = slices.DeleteFunc(segs, func(n uint64) bool { return n < from })
	next := from
	for i, n := range segs {
		if n != next {
			return nil, fmt.Errorf("wal: %s: segment %s is missing: %w", dir, segName(next), ErrCorrupt)
		}
		if err := l.replay(filepath.Join(dir, segName(n)), i == len(segs)-1, r.Record); err != nil {
			return nil, err
		}
		next = n + 1
	}
	if err := l.openSegment(next); err != nil {
		return nil, err
	}
	return l, nil
}

// list returns the segment and checkpoint numbers in dir, ascending.
func list(dir string) (segs, ckpts []uint64, err error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("wal: %w", err)
	}
	for _, e := range ents {
		name := e.Name()
		if n, ok := parseName(name, segPrefix, segSuffix); ok {
			segs = append(segs, n)
		} else if n, ok := parseName(name, ckptPrefix, ckptSuffix); ok {
			ckpts = append(ckpts, n)
		}
	}
	slices.Sort(segs)
	slices.Sort(ckpts)
	return segs, ckpts, nil
}

func parseName(name, prefix, suffix string) (uint64, bool) {
	if !strings.HasPrefix(name, prefix) || !strings.HasSuffix(name, suffix) {
		return 0, false
	}
	hex := name[len(prefix) : len(name)-len(suffix)]
	if len(hex) != 16 {
		return 0, false
	}
	n, err := strconv.ParseUint(hex, 16, 64)
	return n, err == nil
}

func segName(n uint64) string  { return fmt.Sprintf("%s%016x%s", segPrefix, n, segSuffix) }
func ckptName(n uint64) string { return fmt.Sprintf("%s%016x%s", ckptPrefix, n, ckptSuffix) }

// replay feeds the records of one segment to fn. A torn record at the end
// of the last segment is cut off; damage elsewhere is ErrCorrupt.
func (l *Log) replay(path string, last bool, fn func([]byte) error) error {
	p, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("wal: %w", err)
	}
	off := 0
	for off < len(p) {
		payload, n, err := Decode(p[off:])
		if err != nil {
			if !last {
				return fmt.Errorf("wal: %s at byte %d: %w", path, off, err)
			}
			// A crash during the last write: cut the segment there.
			if err := os.Truncate(path, int64(off)); err != nil {
				return fmt.Errorf("wal: %w", err)
			}
			l.stats.Truncated += uint64(len(p) - off)
			return nil
		}
		if fn != nil {
			if err := fn(payload); err != nil {
				return err
			}
		}
		l.stats.Replayed++
		off += n
	}
	return nil
}

// Decode reads one record from the front of p: its payload (aliasing p) and
// its size in bytes. A record cut short, longer than MaxRecord or failing its
// checksum gives an error wrapping ErrCorrupt.
func Decode(p []byte) (payload []byte, n int, err error) {
	if len(p) < hdrSize {
		return nil, 0, fmt.Errorf("a %d-byte record header: %w", len(p), ErrCorrupt)
	}
	size := binary.LittleEndian.Uint32(p)
	if size > MaxRecord {
		return nil, 0, fmt.Errorf("a %d-byte record: %w", size, ErrCorrupt)
	}
	if uint64(len(p)-hdrSize) < uint64(size) {
		return nil, 0, fmt.Errorf("a %d-byte record with %d bytes left: %w", size, len(p)-hdrSize, ErrCorrupt)
	}
	payload = p[hdrSize : hdrSize+int(size)]
	if crc32.Checksum(payload, castagnoli) != binary.LittleEndian.Uint32(p[4:]) {
		return nil, 0, fmt.Errorf("a record failing its checksum: %w", ErrCorrupt)
	}
	return payload, hdrSize + int(size), nil
}

// AppendRecord appends payload framed as a record to dst.
func AppendRecord(dst, payload []byte) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(payload)))
	dst = binary.LittleEndian.AppendUint32(dst, crc32.Checksum(payload, castagnoli))
	return append(dst, payload...)
}

// readCheckpoint reads the state of a checkpoint file. What it allocates
// is bounded by the file's length: a length field that does not agree
// with it is ErrCorrupt.
func readCheckpoint(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("wal: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("wal: %w", err)
	}
	state, err := readCheckpointFile(f, fi.Size())
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) { // shorter than it was when stat'ed
		err = fmt.Errorf("the file cut short (%v): %w", err, ErrCorrupt)
	}
	if err != nil {
		return nil, fmt.Errorf("wal: %s: %w", path, err)
	}
	return state, nil
}

// readCheckpointFile reads the state from f, size bytes long.
func readCheckpointFile(f io.Reader, size int64) ([]byte, error) {
	magic := make([]byte, len(ckptMagic))
	if _, err := io.ReadFull(f, magic); err != nil {
		return nil, fmt.Errorf("no checkpoint header: %w", ErrCorrupt)
	}
	switch string(magic) {
	case ckptMagicV1: // the state as one record, which Decode bounds
		if size > int64(len(ckptMagicV1)+hdrSize+MaxRecord) {
			return nil, fmt.Errorf("a %d-byte version 1 checkpoint: %w", size, ErrCorrupt)
		}
		p := make([]byte, size-int64(len(magic)))
		if _, err := io.ReadFull(f, p); err != nil {
			return nil, err
		}
		state, n, err := Decode(p)
		if err == nil && n != len(p) {
			err = fmt.Errorf("%d bytes after the checkpoint: %w", len(p)-n, ErrCorrupt)
		}
		return state, err
	case ckptMagic:
	default:
		return nil, fmt.Errorf("no checkpoint header: %w", ErrCorrupt)
	}
	var hdr [hdrSize + 8]byte
	if _, err := io.ReadFull(f, hdr[:]); err != nil {
		return nil, err
	}
	p, _, err := Decode(hdr[:])
	if err == nil && len(p) != 8 {
		err = fmt.Errorf("a %d-byte checkpoint length: %w", len(p), ErrCorrupt)
	}
	if err != nil {
		return nil, err
	}
	n := binary.LittleEndian.Uint64(p)
	if want, ok := checkpointSize(n); !ok || want != size {
		return nil, fmt.Errorf("a %d-byte file for a checkpoint of %d bytes: %w", size, n, ErrCorrupt)
	}
	state := make([]byte, n) // at most size: the file is that long
	for off := 0; off < len(state); {
		if _, err := io.ReadFull(f, hdr[:hdrSize]); err != nil {
			return nil, err
		}
		m := min(CheckpointPiece, len(state)-off)
		if int(binary.LittleEndian.Uint32(hdr[:])) != m {
			return nil, fmt.Errorf("a %d-byte piece at %d, want %d: %w", binary.LittleEndian.Uint32(hdr[:]), off, m, ErrCorrupt)
		}
		piece := state[off : off+m]
		if _, err := io.ReadFull(f, piece); err != nil {
			return nil, err
		}
		if crc32.Checksum(piece, castagnoli) != binary.LittleEndian.Uint32(hdr[4:]) {
			return nil, fmt.Errorf("the piece at %d failing its checksum: %w", off, ErrCorrupt)
		}
		off += m
	}
	return state, nil
}

// checkpointSize is the length of the file of a checkpoint of an n-byte
// state; false if that would not fit an int64.
func checkpointSize(n uint64) (int64, bool) {
	pieces := n / CheckpointPiece
	if n%CheckpointPiece != 0 {
		pieces++
	}
	if n > math.MaxInt64/2 { // past that, the file's length could overflow
		return 0, false
	}
	return int64(len(ckptMagic)+hdrSize+8) + int64(n) + int64(hdrSize*pieces), true
}

// openSegment creates segment n and makes it the one appends go to.
// Called by Open, and by Checkpoint with l.mu held.
func (l *Log) openSegment(n uint64) error {
	f, err := os.OpenFile(filepath.Join(l.dir, segName(n)), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("wal: %w", err)
	}
	if err := l.syncDir(); err != nil {
		f.Close()
		return err
	}
	l.f, l.segN = f, n
	return nil
}

func (l *Log) syncDir() error {
	if l.opts.NoSync {
		return nil
	}
	d, err := os.Open(l.dir)
	if err != nil {
		return fmt.Errorf("wal: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("wal: sync %s: %w", l.dir, err)
	}
	return nil
}

// Append adds a record and returns once it is durable. apply, if not nil,
// is called after the record is placed in the log's order and before
// Append waits for the disk, under the log's lock: a state changed only
// by apply is consistent with the log at every checkpoint (apply must be
// short and must not call the Log). An error means the record may not be
// durable: the log is broken from then on (every later Append fails with
// ErrClosed), and the caller must not acknowledge the record.
func (l *Log) Append(payload []byte, apply func()) error {
	if len(payload) > MaxRecord {
		return fmt.Errorf("%w: %d bytes", ErrTooLarge, len(payload))
	}
	l.mu.Lock()
	if err := l.failed(); err != nil {
		l.mu.Unlock()
		return err
	}
	l.pending = AppendRecord(l.pending, payload)
	l.lsn++
	lsn := l.lsn
	if apply != nil {
		apply()
	}
	l.mu.Unlock()
	return l.waitDurable(lsn)
}

// AppendIf is Append with an apply that may refuse: apply runs first,
// under the log's lock; if it returns an error, nothing is appended and
// that error is returned (the log stays whole). Otherwise the record is
// appended in the order of the applies and AppendIf returns once it is
// durable, or with Append's errors: a log that failed earlier refuses
// without calling apply. So the log holds exactly the records whose apply
// succeeded, in the order they were applied, and a checkpoint sees the
// state of exactly those.
func (l *Log) AppendIf(payload []byte, apply func() error) error {
	if len(payload) > MaxRecord {
		return fmt.Errorf("%w: %d bytes", ErrTooLarge, len(payload))
	}
	l.mu.Lock()
	if err := l.failed(); err != nil {
		l.mu.Unlock()
		return err
	}
	if err := apply(); err != nil {
		l.mu.Unlock()
		return err
	}
	l.pending = AppendRecord(l.pending, payload)
	l.lsn++
	lsn := l.lsn
	l.mu.Unlock()
	return l.waitDurable(lsn)
}

// AppendEvent appends the records event returns, at the point of the
// log's order where event runs: under the log's lock, after the apply of
// every record appended before it and before any of those appended after
// it (as Append's apply). A change of the state that event makes (an
// expiry, a rotation) is so described by the log alone, in its order
// among the records, whatever becomes of the checkpoints: a checkpoint
// that fails leaves the records, and recovery makes the change again.
// AppendEvent returns once the records are durable, with Append's
// errors; a log that failed earlier refuses without calling event, and
// an event that returns no record appends nothing (and does not wait).
// Each record must be at most MaxRecord: a longer one cannot be written
// after event has changed the state, so the log fails (ErrTooLarge, and
// ErrClosed from then on), as it does when a write fails.
func (l *Log) AppendEvent(event func() [][]byte) error {
	l.mu.Lock()
	if err := l.failed(); err != nil {
		l.mu.Unlock()
		return err
	}
	recs := event()
	for _, p := range recs {
		if len(p) > MaxRecord {
			err := fmt.Errorf("%w: an event's record of %d bytes", ErrTooLarge, len(p))
			l.smu.Lock()
			if l.err == nil {
				l.err = fmt.Errorf("%w: %w", ErrClosed, err)
			}
			l.cond.Broadcast()
			l.smu.Unlock()
			l.mu.Unlock()
			return err
		}
	}
	for _, p := range recs {
		l.pending = AppendRecord(l.pending, p)
		l.lsn++
	}
	lsn := l.lsn
	l.mu.Unlock()
	if len(recs) == 0 {
		return nil
	}
	return l.waitDurable(lsn)
}

func (l *Log) failed() error {
	l.smu.Lock()
	defer l.smu.Unlock()
	return l.err
}

// waitDurable returns when record lsn is synced: the first waiter becomes
// the syncer and writes everything pending; the others wait for it, so
// concurrent appends share one fsync.
func (l *Log) waitDurable(lsn uint64) error {
	l.smu.Lock()
	defer l.smu.Unlock()
	for l.durable < lsn {
		if l.err != nil {
			return l.err
		}
		if l.syncing {
			l.cond.Wait()
			continue
		}
		l.syncing = true
		l.smu.Unlock()
		upto, n, err := l.flush()
		l.smu.Lock()
		l.syncing = false
		l.stats.Syncs++
		l.stats.Bytes += uint64(n)
		if err != nil && l.err == nil {
			l.err = fmt.Errorf("%w: %w", ErrClosed, err)
		} else if err == nil {
			l.durable = max(l.durable, upto)
		}
		l.cond.Broadcast()
	}
	return nil
}

// flush writes the pending records to the segment and syncs it, returning
// the lsn it covers. Called by the one goroutine in the syncing role.
func (l *Log) flush() (upto uint64, n int, err error) {
	l.mu.Lock()
	buf, f := l.pending, l.f
	l.pending = nil
	upto = l.lsn
	l.mu.Unlock()
	if len(buf) == 0 {
		return upto, 0, nil
	}
	if n, err = l.write(f, buf); err != nil {
		return 0, n, err
	}
	return upto, n, l.sync(f)
}

// write writes p to segment f (Options.Fault first).
func (l *Log) write(f *os.File, p []byte) (int, error) {
	if err := l.fault("write", f.Name()); err != nil {
		return 0, err
	}
	return f.Write(p)
}

// sync syncs segment f, unless NoSync (Options.Fault first).
func (l *Log) sync(f *os.File) error {
	if err := l.fault("sync", f.Name()); err != nil {
		return err
	}
	if l.opts.NoSync {
		return nil
	}
	return f.Sync()
}

// fault is Options.Fault's verdict on op of the file at path.
func (l *Log) fault(op, path string) error {
	if l.opts.Fault == nil {
		return nil
	}
	if err := l.opts.Fault(op, filepath.Base(path)); err != nil {
		return fmt.Errorf("%s %s: %w", op, filepath.Base(path), err)
	}
	return nil
}

// Checkpoint replaces the log so far by a state: snapshot is called under
// the log's lock, when every record appended so far has been applied (see
// Append) and no other is; what it returns is written as a checkpoint, and
// the segments it covers are deleted. Appends wait while snapshot runs, not
// while the checkpoint is written. The checkpoint's length is not bounded
// (see the package's doc). A failure is counted (Stats.Failed); if the
// snapshot was taken and the checkpoint could not be written, the segments
// stay and the log goes on, whole.
func (l *Log) Checkpoint(snapshot func() ([]byte, error)) error {
	return l.CheckpointState(func() (State, error) {
		p, err := snapshot()
		return bytesState(p), err
	})
}

// State is a checkpoint's state as CheckpointState writes it: Len bytes,
// which WriteTo writes (in as many calls to w's Write as it likes; the log
// cuts them into the file's pieces). Both are called once, Len first,
// outside the log's lock.
type State interface {
	Len() int64
	WriteTo(w io.Writer) (int64, error)
}

// bytesState is a State already made.
type bytesState []byte

func (b bytesState) Len() int64 { return int64(len(b)) }

func (b bytesState) WriteTo(w io.Writer) (int64, error) {
	n, err := w.Write(b)
	return int64(n), err
}

// CheckpointState is Checkpoint of a state made as it is written: snapshot
// is called under the log's lock, as Checkpoint's, and returns a State
// that holds what the checkpoint must (taken cheaply, a copy of
// references, say), and the State's Len and WriteTo run after the lock is
// released, while appends go on, writing the state to the file piece by
// piece: no copy of the whole state is made. A State whose WriteTo writes
// other than Len bytes, or fails, fails the checkpoint (no file is left;
// the log goes on, whole).
func (l *Log) CheckpointState(snapshot func() (State, error)) error {
	err := l.checkpoint(snapshot)
	if err != nil {
		l.smu.Lock()
		l.stats.Failed++
		l.smu.Unlock()
	}
	return err
}

func (l *Log) checkpoint(snapshot func() (State, error)) error {
	// Take the syncing role so that no flush writes to the segment being
	// closed.
	l.smu.Lock()
	for l.syncing {
		l.cond.Wait()
	}
	if l.err != nil {
		l.smu.Unlock()
		return l.err
	}
	l.syncing = true
	l.smu.Unlock()

	l.mu.Lock()
	state, upto, n, next, err := l.rollLocked(snapshot)
	l.mu.Unlock()

	l.smu.Lock()
	l.syncing = false
	l.stats.Bytes += uint64(n)
	if err == nil {
		l.durable = max(l.durable, upto)
		l.stats.Syncs++
	} else if l.err == nil && !errors.Is(err, errSnapshot) {
		l.err = fmt.Errorf("%w: %w", ErrClosed, err)
	}
	l.cond.Broadcast()
	l.smu.Unlock()
	if err != nil {
		return err
	}
	if err := l.writeCheckpoint(next, state); err != nil {
		return err // the segments stay: the log is still whole
	}
	l.smu.Lock()
	l.stats.Checkpoints++
	l.smu.Unlock()
	return l.removeBefore(next)
}

// removeBefore deletes the segments and checkpoints checkpoint next
// replaces.
func (l *Log) removeBefore(next uint64) error {
	segs, ckpts, err := list(l.dir)
	if err != nil {
		return err
	}
	for _, s := range segs {
		if s < next {
			os.Remove(filepath.Join(l.dir, segName(s)))
		}
	}
	for _, c := range ckpts {
		if c < next {
			os.Remove(filepath.Join(l.dir, ckptName(c)))
		}
	}
	return nil
}

var errSnapshot = errors.New("wal: snapshot")

// rollLocked flushes the pending records to the current segment, takes the
// snapshot, and starts the next segment. Called with l.mu held and the
// syncing role taken.
func (l *Log) rollLocked(snapshot func() (State, error)) (state State, upto uint64, n int, next uint64, err error) {
	upto = l.lsn
	if len(l.pending) > 0 {
		if n, err = l.write(l.f, l.pending); err != nil {
			return nil, 0, n, 0, err
		}
		l.pending = nil
	}
	if err = l.sync(l.f); err != nil {
		return nil, 0, n, 0, err
	}
	state, err = snapshot()
	if err != nil {
		return nil, upto, n, 0, fmt.Errorf("%w: %w", errSnapshot, err)
	}
	old := l.f
	next = l.segN + 1
	if err = l.openSegment(next); err != nil {
		return nil, upto, n, 0, err
	}
	old.Close()
	return state, upto, n, next, nil
}

// writeCheckpoint writes checkpoint n of state, in pieces (see the
// package's doc), as WriteTo makes it.
func (l *Log) writeCheckpoint(n uint64, state State) error {
	if err := l.fault("write", ckptName(n)); err != nil {
		return fmt.Errorf("wal: checkpoint: %w", err)
	}
	err := writeFile(filepath.Join(l.dir, ckptName(n)), !l.opts.NoSync, func(f *os.File) error {
		size := state.Len()
		if size < 0 {
			return fmt.Errorf("a state of %d bytes", size)
		}
		hdr := AppendRecord([]byte(ckptMagic), binary.LittleEndian.AppendUint64(nil, uint64(size)))
		if _, err := f.Write(hdr); err != nil {
			return err
		}
		pw := &pieceWriter{f: f, left: size}
		if _, err := state.WriteTo(pw); err != nil {
			return err
		}
		if err := pw.flush(); err != nil {
			return err
		}
		if pw.left != 0 {
			return fmt.Errorf("a state of %d bytes written short by %d", size, pw.left)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("wal: checkpoint: %w", err)
	}
	return nil
}

// pieceWriter writes a checkpoint's state to f in pieces of
// CheckpointPiece bytes, each a record; left is what the state's length
// leaves to write. A Write past it fails.
type pieceWriter struct {
	f    *os.File
	buf  []byte // the piece being filled
	left int64
}

var errStateLong = errors.New("wal: a state longer than its length")

func (w *pieceWriter) Write(p []byte) (int, error) {
	if int64(len(p)) > w.left {
		return 0, errStateLong
	}
	n := len(p)
	for len(p) > 0 {
		if w.buf == nil {
			w.buf = make([]byte, 0, min(CheckpointPiece, w.left+int64(len(w.buf))))
		}
		k := min(len(p), CheckpointPiece-len(w.buf))
		w.buf = append(w.buf, p[:k]...)
		p = p[k:]
		w.left -= int64(k)
		if len(w.buf) == CheckpointPiece {
			if err := w.flush(); err != nil {
				return n - len(p), err
			}
		}
	}
	return n, nil
}

// flush writes the piece filled so far, if any.
func (w *pieceWriter) flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	hdr := binary.LittleEndian.AppendUint32(make([]byte, 0, hdrSize), uint32(len(w.buf)))
	hdr = binary.LittleEndian.AppendUint32(hdr, crc32.Checksum(w.buf, castagnoli))
	if _, err := w.f.Write(hdr); err != nil {
		return err
	}
	if _, err := w.f.Write(w.buf); err != nil {
		return err
	}
	w.buf = w.buf[:0]
	return nil
}

// WriteFile writes data to path whole or not at all: to a temporary file
// first, then renamed over path; with sync, the file and then its
// directory are synced, so the rename survives a crash of the machine.
func WriteFile(path string, data []byte, sync bool) error {
	return writeFile(path, sync, func(f *os.File) error {
		_, err := f.Write(data)
		return err
	})
}

// writeFile is WriteFile of what write writes to the temporary file.
func writeFile(path string, sync bool, write func(*os.File) error) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	err = write(f)
	if err == nil && sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	if !sync {
		return nil
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Stats returns the log's counters.
func (l *Log) Stats() Stats {
	l.mu.Lock()
	lsn := l.lsn
	l.mu.Unlock()
	l.smu.Lock()
	defer l.smu.Unlock()
	s := l.stats
	s.Appends = lsn
	return s
}

// Close writes what is pending, syncs and closes the log. Appends after
// Close fail with ErrClosed. A failed log (Failed) writes nothing: the
// records appended while the failing write or fsync was under way were
// answered with the failure, and the failed segment is never written or
// synced again (see Recover).
func (l *Log) Close() error {
	l.smu.Lock()
	for l.syncing {
		l.cond.Wait()
	}
	l.syncing = true
	failed := l.err != nil
	l.smu.Unlock()
	var upto uint64
	var n int
	var err error
	if !failed {
		upto, n, err = l.flush()
	}
	l.mu.Lock()
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	l.mu.Unlock()
	l.smu.Lock()
	l.syncing = false
	l.stats.Bytes += uint64(n)
	if err == nil {
		l.durable = max(l.durable, upto)
	}
	if l.err == nil {
		l.err = ErrClosed
	}
	l.closed = true
	l.cond.Broadcast()
	l.smu.Unlock()
	if err != nil {
		return fmt.Errorf("wal: close: %w", err)
	}
	return nil
}

// Failed returns the error that failed the log (a write or an fsync that
// failed, an event's record past MaxRecord), which every append returns
// since, wrapping ErrClosed; nil while the log is whole, and once it is
// closed (Close).
func (l *Log) Failed() error {
	l.smu.Lock()
	defer l.smu.Unlock()
	if l.closed {
		return nil
	}
	return l.err
}

// Recover makes a log that failed (Failed) whole again: snapshot is
// called under the log's lock, as Checkpoint's, and what it returns is
// written as a checkpoint to a new file, which replaces the log. No
// apply runs while the log is failed, so the state holds every record
// appended, those whose write or fsync failed among them (their applies
// ran): they are not written again, and the segment the failure may have
// left torn or unsynced is not written to again. Only once the
// checkpoint is written is the next segment started and the log whole:
// appends go on, and the older files are deleted. A checkpoint that
// fails (counted in Stats.Failed) leaves the log failed and its files as
// they were: the failed segment is still the last one, whose torn tail
// Open cuts. On a whole log Recover is CheckpointState; on a closed one
// it returns ErrClosed.
func (l *Log) Recover(snapshot func() (State, error)) error {
	l.smu.Lock()
	for l.syncing {
		l.cond.Wait()
	}
	switch {
	case l.closed:
		l.smu.Unlock()
		return ErrClosed
	case l.err == nil:
		l.smu.Unlock()
		return l.CheckpointState(snapshot)
	}
	l.syncing = true // no flush, no checkpoint meanwhile
	l.smu.Unlock()

	next, upto, err := l.recover(snapshot)
	l.smu.Lock()
	l.syncing = false
	if err != nil {
		l.stats.Failed++
	} else {
		l.err = nil
		l.durable = max(l.durable, upto)
		l.stats.Checkpoints++
	}
	l.cond.Broadcast()
	l.smu.Unlock()
	if err != nil {
		return err
	}
	return l.removeBefore(next)
}

// recover writes the checkpoint of Recover and starts the segment after
// it; it returns that segment's number and the records the checkpoint
// covers (every one appended: none is while the log is failed). Called in
// the syncing role of a failed log.
func (l *Log) recover(snapshot func() (State, error)) (next, upto uint64, err error) {
	l.mu.Lock()
	state, err := snapshot()
	next, upto = l.segN+1, l.lsn
	l.mu.Unlock()
	if err != nil {
		return 0, 0, fmt.Errorf("%w: %w", errSnapshot, err)
	}
	if err := l.writeCheckpoint(next, state); err != nil {
		return 0, 0, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	old := l.f
	if err := l.openSegment(next); err != nil {
		return 0, 0, err // the checkpoint is written: a restart starts from it
	}
	old.Close()
	l.pending = nil // the snapshot holds their applies
	return next, upto, nil
}
