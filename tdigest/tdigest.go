package tdigest

import (
	"fmt"

	"github.com/statsblob/statsblob/bsdrand"
	"github.com/statsblob/statsblob/voi"
)

// Env is where a digest draws randomness from: the C's random().
//
// Rand is random(): every add draws from it, and a compression draws its
// permutation from it. In conformance runs it is the one source of the run,
// shared with unseeded dice rolls, and its call counter is the run's
// prng_calls. A nil Env or a nil Rand makes updates draw from the Go
// runtime's concurrency-safe generator instead (same distribution, not the
// C's sequence). The digest reads no clock: the reference's compression
// does not reseed random() (see TestPRNGNotReseededByCompress).
//
// An Env is used by one update at a time; a bsdrand.Source is not safe for
// concurrent use.
type Env struct {
	Rand *bsdrand.Source // random(); shared with unseeded dice rolls in conformance runs
}

// Sizes of the two layouts.
const (
	HeaderSize32 = 20 // TDGSTCLUST32: smplcnt, compcnt, ARB16 head
	HeaderSize64 = 32 // TDGSTCLUST64: smplcnt, compcnt, pad, ARB16 head, pad
	NodeSize32   = 16 // one TDGSTCLUST32 centroid with its tree link
	NodeSize64   = 24 // one TDGSTCLUST64 centroid with its tree link
	// MaxSize is the largest digest a blob can hold (a stat's dsz is a
	// uint16).
	MaxSize = 65535
)

// Errors of this package. Each wraps the voi sentinel of the errno the C
// returns in the same situation.
var (
	errDType    = fmt.Errorf("tdigest: not a t-digest data type: %w", voi.ErrInvalid)
	errShort    = fmt.Errorf("tdigest: data shorter than its header says: %w", voi.ErrInvalid)
	errNoNodes  = fmt.Errorf("tdigest: digest has no centroid slots: %w", voi.ErrInvalid)
	errVOIDType = fmt.Errorf("tdigest: VOI data type cannot feed a t-digest: %w", voi.ErrInvalid)
	errInvalid  = fmt.Errorf("tdigest: invalid argument or corrupt tree: %w", voi.ErrInvalid)
	errOverflow = fmt.Errorf("tdigest: value does not fit: %w", voi.ErrOverflow)
	errRange    = fmt.Errorf("tdigest: precision mismatch or underflow: %w", voi.ErrRange)
	errAgain    = fmt.Errorf("tdigest: no centroid can take the sample: %w", voi.ErrAgain)
	errAlready  = fmt.Errorf("tdigest: centroid already in tree: %w", voi.ErrAlready)
	errTooBig   = fmt.Errorf("tdigest: digest larger than %d bytes: %w", MaxSize, voi.ErrTooBig)
	errCombined = fmt.Errorf("tdigest: combined C error code: %w", voi.ErrInvalid)
	errNaN      = fmt.Errorf("tdigest: NaN or infinite value: %w", voi.ErrInvalid)
	errQuantile = fmt.Errorf("tdigest: quantile outside [0, 1]: %w", voi.ErrInvalid)
)

// ErrEmpty is returned by the queries on a digest without samples: it is
// voi.ErrEmpty (which wraps voi.ErrNotFound).
var ErrEmpty = voi.ErrEmpty

// errorOf turns the C's errno into this package's error (nil for 0).
func errorOf(errno int) error {
	switch errno {
	case eOK:
		return nil
	case eInvalid:
		return errInvalid
	case eOverflow:
		return errOverflow
	case eRange:
		return errRange
	case eAgain:
		return errAgain
	case eAlready:
		return errAlready
	}
	// The C ORs the errors of its size-bound arithmetic; with the
	// operations it uses no combination but EOVERFLOW|EOVERFLOW can occur.
	return errCombined
}

// Size returns the size in bytes of a digest of type dt with nctds
// centroids (TDGST_NCTRS2VSDSZ), or 0 if dt is not a t-digest type.
func Size(dt voi.DType, nctds uint32) int {
	switch dt {
	case voi.TDgstClust32:
		return HeaderSize32 + int(nctds)*NodeSize32
	case voi.TDgstClust64:
		return HeaderSize64 + int(nctds)*NodeSize64
	}
	return 0
}

// Build returns the initial bytes of a digest of type dt with nctds
// centroids whose means have at least prec fractional bits
// (stats_vss_tdgst_hlpr): zero counts, an empty tree, every node on the
// free list in index order, every mean 0 with the control bits of
// Q_CTRLINI(prec). Errors: dt not a t-digest type (voi.ErrInvalid), more
// than MaxSize bytes (voi.ErrTooBig; the C builds them and then fails to
// fit them in a template with EFBIG). Like the C's initialiser it builds
// any slot count and precision, also those no update can use (no slots, a
// precision of 0, above 64, or above 16 for TDGSTCLUST32, whose means
// then hold no integer bits): templates refuse them (tpl.TDigestSpec).
func Build(dt voi.DType, nctds, prec uint32) ([]byte, error) {
	if !dt.IsTDigest() {
		return nil, errDType
	}
	if uint64(Size(dt, 0))+uint64(nctds)*uint64(nodeSize(dt)) > MaxSize {
		return nil, errTooBig
	}
	b := make([]byte, Size(dt, nctds))
	t := view(b, dt)
	t.setMaxn(int(int16(nctds)))
	t.resetHead(t.maxn)
	ctrl := ctrlIni(prec)
	for i := t.maxn - 1; i >= 0; i-- {
		t.returnFree(i)
		t.setMuRaw(i, ctrl) // mean 0 with the control bits
	}
	return b, nil
}

// Update adds one sample to a digest (stats_v1_voi_update_tdgst): v is the
// VOI value as a bit pattern of voiDT (voi's numeric conventions). The
// value becomes an s64q with the precision of the digest's means
// (Q_QCPYVALI for integers, Q_QCPYVALQ for Q values, which copies the raw
// fraction bits) and is added as the C adds it, drawing random() from
// env.Rand exactly as the C does. The errors are the C's: voi.ErrOverflow
// (value out of range for the digest's precision, or the count would
// wrap), voi.ErrRange (precisions differ), voi.ErrAgain (no centroid could
// take the sample after four compressions), voi.ErrInvalid (dt or voiDT
// unsuitable). A failed update may still have changed the digest, as in
// the C (a compression happened, or a 32-bit centroid was lost).
//
// data must be a digest as Build, Update, Reset and Merge leave it (see
// Validate for bytes from elsewhere); Update allocates nothing.
func Update(data []byte, dt, voiDT voi.DType, v uint64, env *Env) error {
	return update(data, dt, voiDT, v, env)
}

// update is Update, its node layout chosen once.
func update(data []byte, dt, voiDT voi.DType, v uint64, env *Env) error {
	var rnd *bsdrand.Source
	if env != nil {
		rnd = env.Rand
	}
	switch dt {
	case voi.TDgstClust32:
		return updateLayout[node32](data, voiDT, v, rnd, nil)
	case voi.TDgstClust64:
		return updateLayout[node64](data, voiDT, v, rnd, nil)
	}
	return errDType
}

// updateLayout is Update of a digest of layout N drawing random() from rnd
// (nil: the runtime's source), through the cache c if it is not nil.
func updateLayout[N node](data []byte, voiDT voi.DType, v uint64, rnd *bsdrand.Source, c *cache[N]) error {
	var d *digest[N]
	var ctrl uint64
	if c != nil && c.valid && len(data) == len(c.d.b) {
		// The cache's view: of these bytes, or of the same digest moved
		// to other bytes of the same size.
		d = &c.d
		if &data[0] != &d.b[0] {
			d.b, d.nodes = data, data[d.base:d.base+d.maxn*nodeLen[N]()]
		}
		d.rnd = rnd
		// The sample's precision is node 0's, worked out again only when
		// node 0's control bits change.
		if r0 := d.muRaw(0) & ctrlMask; r0 == c.ctrl0 {
			ctrl = c.xctrl
		} else {
			ctrl = d.sampleCtrl()
			c.ctrl0, c.xctrl = r0, ctrl
		}
	} else {
		d = new(digest[N])
		if err := d.init(data, rnd); err != nil {
			return err
		}
		if d.maxn == 0 {
			// The C reads node 0's precision here and dereferences NULL.
			return errNoNodes
		}
		if c != nil {
			c.fill(d)
			d = &c.d
		}
		ctrl = d.sampleCtrl()
	}
	var x uint64
	var errno int
	switch voiDT {
	case voi.IntS32:
		i := int64(int32(v))
		x, errno = cpyValI(ctrl, i < 0, absU(i))
	case voi.IntU32:
		x, errno = cpyValI(ctrl, false, uint64(uint32(v)))
	case voi.IntS64, voi.IntSLong:
		x, errno = cpyValI(ctrl, int64(v) < 0, absU(int64(v)))
	case voi.IntU64, voi.IntULong:
		x, errno = cpyValI(ctrl, false, v)
	case voi.QS32, voi.QU32, voi.QS64, voi.QU64:
		neg, imag, fmag := splitQ(voiDT, v)
		x, errno = cpyValQ(ctrl, neg, imag, fmag)
	default:
		return errVOIDType
	}
	if errno == eOK {
		errno = d.add(x, 1, 1)
	}
	return errorOf(errno)
}

// sampleCtrl is the control bits of a sample in node 0's precision.
func (d *digest[N]) sampleCtrl() uint64 { return ctrlIni(uint32(nfOf(d.muRaw(0), is32[N]()))) }

// Reset empties a digest as stats_v1_icb_reset_voistat does: smplcnt and
// compcnt 0, the tree empty, every node on the free list with count 0 and
// mean 0 (its control bits kept). Node parent and left fields keep their
// old values. Bytes too short for the digest's node count are left as they
// are past their end; a dt that is no t-digest type does nothing.
func Reset(data []byte, dt voi.DType) {
	switch dt {
	case voi.TDgstClust32:
		reset[node32](data)
	case voi.TDgstClust64:
		reset[node64](data)
	}
}

func reset[N node](data []byte) {
	dt := dtypeOf[N]()
	if len(data) < Size(dt, 0) {
		return
	}
	d := digest[N]{tree: view(data, dt)}
	maxn := d.hget(hMax)
	d.setMaxn(max(0, min(maxn, (len(data)-d.base)/d.nsz)))
	d.setSmplcnt(0)
	le.PutUint32(data[d.compOff():], 0)
	d.resetHead(maxn)
	for i := d.maxn - 1; i >= 0; i-- {
		d.returnFree(i)
		d.setCnt(i, 0)
		d.setMuRaw(i, d.muRaw(i)&ctrlMask)
	}
}

// placeOf is where a digest of type dt keeps its ARB16 head and its nodes
// (node 0's offset, the node size): the one place that knows, for the
// views, the validator and the sizes. ok is false for a dt that is no
// t-digest type.
func placeOf(dt voi.DType) (head, base, nsz int, is32, ok bool) {
	switch dt {
	case voi.TDgstClust32:
		return 8, HeaderSize32, NodeSize32, true, true
	case voi.TDgstClust64:
		return 16, HeaderSize64, NodeSize64, false, true
	}
	return 0, 0, 0, false, false
}

func nodeSize(dt voi.DType) int {
	_, _, nsz, _, _ := placeOf(dt)
	return nsz
}

// view returns the tree view of b for a t-digest dt (TDGSTCLUST64 for any
// other dt), with maxn unset.
func view(b []byte, dt voi.DType) tree {
	if !dt.IsTDigest() {
		dt = voi.TDgstClust64
	}
	head, base, nsz, is32, _ := placeOf(dt)
	return tree{b: b, head: head, base: base, nsz: nsz, is32: is32}
}

// init makes t a view of digest bytes after checking their type and size.
func (t *tree) init(data []byte, dt voi.DType) error {
	head, base, nsz, is32, ok := placeOf(dt)
	if !ok {
		return errDType
	}
	if len(data) < base {
		return errShort
	}
	n := max(0, int(int16(le.Uint16(data[head+hMax:]))))
	if len(data) < base+n*nsz {
		return errShort
	}
	t.b, t.nodes = data, data[base:base+n*nsz]
	t.head, t.base, t.nsz, t.maxn, t.is32 = head, base, nsz, n, is32
	return nil
}

// init makes d a view of digest bytes of layout N, drawing random() from
// rnd.
func (d *digest[N]) init(data []byte, rnd *bsdrand.Source) error {
	if err := d.tree.init(data, dtypeOf[N]()); err != nil {
		return err
	}
	d.rnd = rnd
	return nil
}

func absU(v int64) uint64 {
	if v < 0 {
		return uint64(-v)
	}
	return uint64(v)
}
