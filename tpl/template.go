package tpl

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/statsblob/statsblob/hist"
	"github.com/statsblob/statsblob/internal/abi"
	"github.com/statsblob/statsblob/qmath"
	"github.com/statsblob/statsblob/tdigest"
	"github.com/statsblob/statsblob/voi"
)

// Template is a registered template: its name, slot id, VOIs and the
// template blob they compile into. A Template is safe for concurrent use;
// adding a VOI changes its bytes and its hash (blobs made earlier keep the
// old hash).
type Template struct {
	reg  *Registry
	id   int
	name string

	mu    sync.RWMutex
	sb    []byte                    // template blob, len == cursz == maxsz
	names atomic.Pointer[nameTable] // replaced, never changed, by AddVOI: read without the lock
	defs  []VOIDef                  // VOIs in the order they were added
	hash  uint32
	meta  metadata // outside the bytes and the hash (meta.go)

	// derived is what AppendDerived keeps for the current bytes; adding
	// a VOI drops it.
	derived atomic.Pointer[derivedValue]
}

// MaxVOIID is the largest VOI id a template can have, 8,184: a VOI of id
// N takes the voi[] entries 0..N (8 bytes each) after the 32-byte header,
// and at least two voistat[] entries (8 bytes each) and 4 bytes of data
// (a 32-bit SUM, MAX or MIN), within a blob's 65,535 bytes. (The voi[]
// entry's 16-bit id alone would allow 32,767.)
const MaxVOIID = (abi.MaxBlobSz-abi.HeaderSize-2*abi.StatSize-4)/abi.VOISize - 1

// VOIDef declares one VOI and its statistics.
type VOIDef struct {
	ID    int32     // VOI id (0..MaxVOIID): index into the blob's voi[]; sparse ids leave vacant slots
	Name  string    // VOI name, shown by META renderings
	DType voi.DType // one of the ten numeric types, voi.IntS32 .. voi.QU64
	// Prec is the number of fractional bits requested for the SUM, MAX and
	// MIN statistics of a Q VOI (1..64; rounded up to 2, 4, 6, 8, 16, 32,
	// 48 or 64 as qmath does). Ignored for integer VOIs.
	Prec int
	// Flags is 0 or voi.FlagRelUpdate, which lets the VOI take relative
	// updates by keeping its previous value in the blob.
	Flags uint32
	Stats []StatSpec // in order; data is laid out in this order
}

// StatSpec declares one statistic of a VOI. Build one with Sum, Max, Min,
// Histogram or TDigest.
type StatSpec struct {
	Type    voi.SType
	Hist    hist.Spec   // Type == voi.Hist
	TDigest TDigestSpec // Type == voi.TDgst

	values *valueBounds // Hist's bounds as values of the VOI (HistLin, ...), made patterns by AddVOI
}

// TDigestSpec is a t-digest statistic: its data type (voi.TDgstClust32 or
// voi.TDgstClust64), the number of centroids and their Q precision in
// fractional bits, and how updates cluster samples.
type TDigestSpec struct {
	DType voi.DType
	NCtds uint32
	Prec  uint32
	// Mode is how the updates of blobs made from the template (blob.New,
	// blob.Init) cluster samples: tdigest.C (the zero value: the C's
	// clustering, byte-identical to FreeBSD's) or tdigest.Accurate (a
	// merging t-digest, far more accurate than the C's clustering and
	// never collapsing on sorted input; README's Accuracy compares it with
	// the peer sketches at the same bytes). It is not part of the
	// template's bytes or hash: the blobs of both modes are the same
	// STATS_ABI_V1 layout, and merge with each other.
	Mode tdigest.Mode
}

// check refuses the t-digests no update can use (its errors are wrapped
// by AddVOI's, which name the package) (beyond the C, which
// builds them): no centroid slots (the C's update dereferences NULL), and a
// precision of 0 or above 64 fractional bits, or above 16 for
// TDGSTCLUST32 (whose 32-bit means then have no integer bits left).
func (s TDigestSpec) check() error {
	switch {
	case s.NCtds == 0:
		return fmt.Errorf("t-digest with 0 centroid slots: %w", voi.ErrInvalid)
	case s.Prec == 0 || s.Prec > 64:
		return fmt.Errorf("t-digest precision %d outside 1..64: %w", s.Prec, voi.ErrInvalid)
	case s.DType == voi.TDgstClust32 && s.Prec > 16:
		return fmt.Errorf("TDGSTCLUST32 precision %d above 16: %w", s.Prec, voi.ErrInvalid)
	case s.Mode != tdigest.C && s.Mode != tdigest.Accurate:
		return fmt.Errorf("t-digest clustering mode %v: %w", s.Mode, voi.ErrInvalid)
	}
	return nil
}

// Sum, Max and Min declare the numeric statistics (STATS_VSS_SUM, _MAX,
// _MIN): the statistic's data has the VOI's own data type.
func Sum() StatSpec { return StatSpec{Type: voi.Sum} }

// Max declares a maximum; see Sum.
func Max() StatSpec { return StatSpec{Type: voi.Max} }

// Min declares a minimum; see Sum.
func Min() StatSpec { return StatSpec{Type: voi.Min} }

// Histogram declares a histogram statistic built from s, whose bounds are
// the C's 8-byte numeric patterns (C-shaped layer: HistLin, HistExp,
// HistLinExp, HistBuckets and HistRanges take values of the VOI's type).
func Histogram(s hist.Spec) StatSpec { return StatSpec{Type: voi.Hist, Hist: s} }

// TDigest declares a t-digest statistic (STATS_VSS_TDGSTCLUST32/64) with
// the C's clustering (tdigest.C), so that a blob built in Go equals the
// C's; TDigestOf declares one by its fields, with any mode.
func TDigest(dt voi.DType, nctds, prec uint32) StatSpec {
	return TDigestOf(TDigestSpec{DType: dt, NCtds: nctds, Prec: prec})
}

// TDigestOf declares the t-digest statistic s, for example
//
//	tpl.TDigestOf(tpl.TDigestSpec{DType: voi.TDgstClust32, NCtds: 20, Prec: 4, Mode: tdigest.Accurate})
func TDigestOf(s TDigestSpec) StatSpec {
	return StatSpec{Type: voi.TDgst, TDigest: s}
}

func newTemplate(r *Registry, id int, name string) *Template {
	t := &Template{reg: r, id: id, name: name, sb: make([]byte, abi.HeaderSize)}
	t.sb[abi.OffABI] = abi.V1
	t.sb[abi.OffEndian] = abi.LittleEnd
	abi.PutU16(t.sb, abi.OffMaxSz, abi.HeaderSize)
	abi.PutU16(t.sb, abi.OffCurSz, abi.HeaderSize)
	abi.PutU16(t.sb, abi.OffStatsOff, abi.HeaderSize)
	abi.PutU16(t.sb, abi.OffStatsDataOff, abi.HeaderSize)
	t.hash = t.computeHash()
	return t
}

// ID returns the template's slot id in its registry.
func (t *Template) ID() int { return t.id }

// Name returns the template's name.
func (t *Template) Name() string { return t.name }

// Registry returns the registry the template belongs to.
func (t *Template) Registry() *Registry { return t.reg }

// Hash returns the template hash: hash32 of the name, then of each VOI name
// in VOI id order, then of the template blob's bytes, as the C computes it.
func (t *Template) Hash() uint32 {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.hash
}

// Spec returns the normative spec string `"NAME":HASH`.
func (t *Template) Spec() string {
	return `"` + t.name + `":` + strconv.FormatUint(uint64(t.Hash()), 10)
}

// Size returns the template blob's size in bytes: the size of every blob
// made from it.
func (t *Template) Size() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.sb)
}

// Bytes returns a copy of the template blob.
func (t *Template) Bytes() []byte {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return append([]byte(nil), t.sb...)
}

// AppendBytes appends the template blob to dst and returns the template
// hash read under the same lock, so the two always match.
func (t *Template) AppendBytes(dst []byte) ([]byte, uint32) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return append(dst, t.sb...), t.hash
}

// VOIName returns the name of VOI id and whether the template defines it.
// It takes no lock (renderings look a name up per VOI).
func (t *Template) VOIName(id int32) (string, bool) {
	nt := t.names.Load()
	if nt == nil || id < 0 || int(id) >= len(nt.set) || !nt.set[id] {
		return "", false
	}
	return nt.name[id], true
}

// VOI returns the definition of the VOI called name (the first added, if
// several share it) and whether the template has one.
func (t *Template) VOI(name string) (VOIDef, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	for _, d := range t.defs {
		if d.Name == name {
			d.Stats = slices.Clone(d.Stats)
			return d, true
		}
	}
	return VOIDef{}, false
}

// nameTable holds the VOI names by id; set tells which ids are defined.
type nameTable struct {
	name []string
	set  []bool
}

// VOIs returns the VOI definitions in the order they were added.
func (t *Template) VOIs() []VOIDef {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return append([]VOIDef(nil), t.defs...)
}

func (t *Template) computeHash() uint32 {
	h := abi.Hash32Str(0, t.name)
	n := abi.NVOIs(t.sb)
	if nt := t.names.Load(); nt != nil {
		for id := 0; id < n && id < len(nt.set); id++ {
			if nt.set[id] {
				h = abi.Hash32Str(h, nt.name[id])
			}
		}
	}
	return abi.Hash32(h, t.sb)
}

// builtStat is a statistic's initial data, as a C stat helper produces it.
type builtStat struct {
	stype  voi.SType
	dtype  voi.DType
	iv     []byte
	tooBig bool // the data alone exceeds a blob; iv is nil
}

// AddVOI adds a VOI and its statistics (stats_tpl_add_voistats). The new
// VOI's voistats and data go to the start of their regions and the offsets
// of existing VOIs shift, exactly as in the C, so template bytes and hashes
// match FreeBSD's. A statistic type given twice is taken as the C takes
// it: both statistics' data is laid out, and the later one takes the
// VOI's slot for the type (the earlier one's bytes stay unused). Errors
// (the template is unchanged on error):
// voi.ErrInvalid for a negative id, a non-numeric VOI dtype, no statistics,
// a bad statistic spec or Q precision, a t-digest with 0 centroid slots
// or a precision outside 1..64 (1..16 for TDGSTCLUST32), flags other than
// voi.FlagRelUpdate; voi.ErrExists (voi.ErrVOIExists) for an id that is
// already defined; voi.ErrTooBig for an id above MaxVOIID or when the
// template would exceed 65535 bytes.
func (t *Template) AddVOI(d VOIDef) error {
	if err := t.addVOI(d, nil); err != nil {
		return fmt.Errorf("tpl: %s: add VOI %d (%q): %w", t.name, d.ID, d.Name, err)
	}
	return nil
}

// addVOIs adds VOIs as AddVOI does, one after the other, to a template no
// one else sees yet (ReadJSON's): the template blob grows in place and the
// name table and hash are made once, at the end, so that adding n VOIs
// costs allocations linear in the result, where n calls of AddVOI copy
// the blob and the name table n times.
func (t *Template) addVOIs(defs []VOIDef) error {
	nt := &nameTable{}
	if old := t.names.Load(); old != nil {
		nt.name, nt.set = slices.Clone(old.name), slices.Clone(old.set)
	}
	for _, d := range defs {
		if err := t.addVOI(d, nt); err != nil {
			return fmt.Errorf("tpl: %s: add VOI %d (%q): %w", t.name, d.ID, d.Name, err)
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.names.Store(nt)
	t.hash = t.computeHash()
	return nil
}

// addVOI adds one VOI. With bulk, a name table not yet published, the
// template is private to the caller (see addVOIs): the blob grows in
// place, the name goes into bulk, and the hash is left to the caller.
func (t *Template) addVOI(d VOIDef, bulk *nameTable) error {
	if !d.DType.IsNumeric() {
		// FORMAT.md defect 4: checked before any helper.
		return fmt.Errorf("data type %v is not a VOI data type: %w", d.DType, voi.ErrInvalid)
	}
	if d.Flags&^voi.FlagRelUpdate != 0 {
		return fmt.Errorf("flags %#x: the only VOI flag is voi.FlagRelUpdate (%#x): %w", d.Flags, voi.FlagRelUpdate, voi.ErrInvalid)
	}
	if slices.ContainsFunc(d.Stats, func(s StatSpec) bool { return s.values != nil }) {
		stats := make([]StatSpec, len(d.Stats))
		for i, s := range d.Stats {
			var err error
			if stats[i], err = s.resolve(d.DType, d.Prec); err != nil {
				return err
			}
		}
		d.Stats = stats
	}
	stats, tooBig, err := buildStats(d)
	if err != nil {
		return err
	}
	if d.ID < 0 {
		return fmt.Errorf("negative id: %w", voi.ErrInvalid)
	}
	if len(stats) == 0 {
		return fmt.Errorf("no statistics: %w", voi.ErrInvalid)
	}
	maxID := -1
	dataBytes := 0
	for i := len(stats) - 1; i >= 0; i-- {
		s := stats[i]
		if s.stype <= 0 || s.stype >= voi.NumSTypes || s.dtype == 0 || s.dtype >= voi.NumDTypes || len(s.iv) == 0 && !s.tooBig {
			return fmt.Errorf("statistic %d (%v of %v): %w", i, s.stype, s.dtype, voi.ErrInvalid)
		}
		maxID = max(maxID, int(s.stype))
		dataBytes += len(s.iv)
	}
	if d.Flags&voi.FlagRelUpdate != 0 {
		dataBytes += abi.StateSize
	}

	t.mu.Lock()
	defer t.mu.Unlock()
	sb := t.sb
	nvois := abi.NVOIs(sb)
	id := int(d.ID)
	newVOIBytes := 0
	if id < nvois {
		if abi.ReadVOI(sb, abi.VOIAt(id)).ID != -1 {
			// The C cannot add statistics to a VOI: EOPNOTSUPP (voi.Errno
			// of ErrVOIExists).
			return fmt.Errorf("VOI %d is already defined: %w", id, voi.ErrVOIExists)
		}
	} else {
		newVOIBytes = (id - (nvois - 1)) * abi.VOISize
	}
	newStatBytes := (maxID + 1) * abi.StatSize
	grow := newVOIBytes + newStatBytes + dataBytes
	if tooBig || len(sb)+grow > abi.MaxBlobSz {
		switch {
		case tooBig:
			return fmt.Errorf("a statistic's data alone exceeds %d bytes: %w", abi.MaxBlobSz, voi.ErrTooBig)
		case d.ID > MaxVOIID: // (never fits: checked here, where the C finds it too big)
			return fmt.Errorf("id %d above %d, the largest a blob of %d bytes can hold: %w", d.ID, MaxVOIID, abi.MaxBlobSz, voi.ErrTooBig)
		}
		return fmt.Errorf("the template would take %d bytes, more than %d: %w", len(sb)+grow, abi.MaxBlobSz, voi.ErrTooBig)
	}

	var nb []byte
	if bulk != nil {
		nb = expandInPlace(sb, newVOIBytes, newStatBytes, dataBytes)
	} else {
		nb = expand(sb, newVOIBytes, newStatBytes, dataBytes)
	}
	statsOff := abi.StatsOff(nb)
	dataOff := abi.StatsDataOff(nb)
	v := abi.VOI{ID: int16(id), DType: d.DType, MaxID: int8(maxID), StatsOff: uint16(statsOff)}
	next := 0
	if d.Flags&voi.FlagRelUpdate != 0 {
		v.Flags |= voi.FlagReqState
		abi.WriteStat(nb, statsOff, abi.Stat{SType: voi.StatVoiState, DType: voi.VoiState, DataOff: uint16(dataOff), DSz: abi.StateSize})
		next = abi.StateSize
	}
	abi.WriteVOI(nb, abi.VOIAt(id), v)
	for _, s := range stats {
		off := dataOff + next
		abi.WriteStat(nb, statsOff+int(s.stype)*abi.StatSize, abi.Stat{SType: s.stype, DType: s.dtype, DataOff: uint16(off), DSz: uint16(len(s.iv))})
		copy(nb[off:], s.iv)
		next += len(s.iv)
	}

	nt := bulk
	if nt == nil {
		nt = &nameTable{}
		if old := t.names.Load(); old != nil {
			nt.name, nt.set = slices.Clone(old.name), slices.Clone(old.set)
		}
	}
	for len(nt.set) <= id {
		nt.set, nt.name = append(nt.set, false), append(nt.name, "")
	}
	nt.set[id], nt.name[id] = true, d.Name
	t.sb = nb
	t.derived.Store(nil)
	d.Stats = append([]StatSpec(nil), d.Stats...)
	t.defs = append(t.defs, d)
	if bulk == nil {
		t.names.Store(nt)
		t.hash = t.computeHash()
	}
	return nil
}

// expand returns a copy of the template blob sb grown as
// stats_v1_blob_expand grows it: newVOI bytes of vacant voi[] entries at the
// end of voi[], newStat bytes of vacant voistat entries at the start of
// voistat[], and newData zero bytes at the start of the data region; every
// existing offset moves accordingly.
func expand(sb []byte, newVOI, newStat, newData int) []byte {
	nb := make([]byte, len(sb), len(sb)+newVOI+newStat+newData)
	copy(nb, sb)
	return expandInPlace(nb, newVOI, newStat, newData)
}

// expandInPlace is expand on sb's own storage, grown as append grows a
// slice: sb must not be shared.
func expandInPlace(sb []byte, newVOI, newStat, newData int) []byte {
	grow := newVOI + newStat + newData
	cur := len(sb)
	statsOff, dataOff := abi.StatsOff(sb), abi.StatsDataOff(sb)
	oldVOIs := abi.NVOIs(sb)

	nb := slices.Grow(sb, grow)[:cur+grow]
	copy(nb[dataOff+grow:], nb[dataOff:cur]) // the data first: it moves farthest
	copy(nb[statsOff+newVOI+newStat:], nb[statsOff:dataOff])
	clear(nb[statsOff : statsOff+newVOI+newStat])
	clear(nb[dataOff+newVOI+newStat : dataOff+grow])
	relocate(nb, cur, statsOff, dataOff, oldVOIs, newVOI, newStat, newData)
	return nb
}

// relocate finishes an expansion of a template blob of cur bytes (voistat[]
// at statsOff, data at dataOff, oldVOIs voi[] entries) whose regions were
// moved apart in nb: it sets the header's sizes and offsets, marks the new
// voi[] and voistat[] entries vacant and moves every offset that points
// past the insertions.
func relocate(nb []byte, cur, statsOff, dataOff, oldVOIs, newVOI, newStat, newData int) {
	grow := newVOI + newStat + newData
	abi.PutU16(nb, abi.OffCurSz, uint16(cur+grow))
	abi.PutU16(nb, abi.OffMaxSz, uint16(cur+grow))
	abi.PutU16(nb, abi.OffStatsOff, uint16(statsOff+newVOI))
	abi.PutU16(nb, abi.OffStatsDataOff, uint16(dataOff+newVOI+newStat))

	nvois := abi.NVOIs(nb)
	for i := 0; i < nvois; i++ {
		off := abi.VOIAt(i)
		if i >= oldVOIs {
			abi.WriteVOI(nb, off, abi.VOI{ID: -1, MaxID: -1})
			continue
		}
		if v := abi.ReadVOI(nb, off); v.ID > -1 {
			v.StatsOff += uint16(newVOI + newStat)
			abi.WriteVOI(nb, off, v)
		}
	}
	newStats := newStat / abi.StatSize
	for i, off := 0, statsOff+newVOI; off < abi.StatsDataOff(nb); i, off = i+1, off+abi.StatSize {
		if i < newStats {
			nb[off+abi.StatOffSType] = 0xFF // -1: vacant
			continue
		}
		if s := abi.ReadStat(nb, off); s.SType > -1 {
			s.DataOff += uint16(grow)
			abi.WriteStat(nb, off, s)
		}
	}
}

// buildStats runs the stat helpers from the last spec to the first, as
// stats_vss_hlpr_init does, so the first error found is the C's. Data too
// large for any blob is not an error here: the C's helpers allocate it and
// the template reports EFBIG only when it grows, after every other check,
// so buildStats reports it as tooBig.
func buildStats(d VOIDef) (out []builtStat, tooBig bool, err error) {
	out = make([]builtStat, len(d.Stats))
	for i := len(d.Stats) - 1; i >= 0; i-- {
		s := d.Stats[i]
		var b builtStat
		var err error
		switch s.Type {
		case voi.Sum, voi.Max, voi.Min:
			b, err = numericStat(s.Type, d.DType, d.Prec)
		case voi.Hist:
			b.stype, b.dtype = voi.Hist, s.Hist.DType
			b.iv, err = s.Hist.Build(d.DType)
		case voi.TDgst:
			b.stype, b.dtype = voi.TDgst, s.TDigest.DType
			if err = s.TDigest.check(); err == nil {
				b.iv, err = tdigest.Build(s.TDigest.DType, s.TDigest.NCtds, s.TDigest.Prec)
			}
		default:
			err = fmt.Errorf("stat type %v: %w", s.Type, voi.ErrInvalid)
		}
		if errors.Is(err, voi.ErrTooBig) {
			b.tooBig, b.iv, err = true, nil, nil
			tooBig = true
		}
		if err != nil {
			if !errors.Is(err, voi.ErrInvalid) && !errors.Is(err, voi.ErrNoMemory) {
				err = fmt.Errorf("%w: %w", voi.ErrInvalid, err)
			}
			return nil, false, err
		}
		out[i] = b
	}
	return out, tooBig, nil
}

// numericStat is stats_vss_numeric_hlpr: SUM starts at 0, MAX at the
// dtype's minimum, MIN at its maximum; Q values carry the control bits of
// the requested precision.
func numericStat(st voi.SType, dt voi.DType, prec int) (builtStat, error) {
	var ctrl uint64
	if dt.IsQ() {
		if prec < 1 || prec > 64 {
			return builtStat{}, fmt.Errorf("precision %d of a Q value outside 1..64: %w", prec, voi.ErrInvalid)
		}
		ctrl = uint64(qmath.CtrlIni(prec))
	}
	v := voi.Initial(st, dt, ctrl)
	iv := make([]byte, dt.Size())
	if len(iv) == 4 {
		abi.PutU32(iv, 0, uint32(v))
	} else {
		abi.PutU64(iv, 0, v)
	}
	return builtStat{stype: st, dtype: dt, iv: iv}, nil
}
