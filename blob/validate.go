package blob

import (
	"fmt"
	"math/bits"

	"github.com/statsblob/statsblob/hist"
	"github.com/statsblob/statsblob/internal/abi"
	"github.com/statsblob/statsblob/tdigest"
	"github.com/statsblob/statsblob/voi"
)

// Validate checks that p starts with a self-consistent STATS_ABI_V1
// little-endian blob: a header whose sizes and offsets lie inside cursz
// (and cursz inside p), voi[] entries that are vacant or name their own
// slot with a numeric data type, voistat ranges inside voistat[] that do
// not overlap, statistics of known types whose data sizes match their data
// types and whose data lies inside the data region without overlapping, and
// t-digest trees that are well formed. The error names the first defect and
// wraps voi.ErrInvalid (voi.ErrNotSupported for another ABI version or byte
// order). Validate allocates nothing on a valid blob: its bitmap of
// claimed bytes (at most 8 KB) and the t-digest checks live on the
// goroutine's stack; an error allocates its message.
func Validate(p []byte) error {
	if err := validate(p); err != nil {
		return fmt.Errorf("blob: %w", err)
	}
	return nil
}

type defect struct {
	what string
	err  error
}

func (d *defect) Error() string { return d.what + ": " + d.err.Error() }
func (d *defect) Unwrap() error { return d.err }

func bad(format string, args ...any) error {
	return &defect{what: fmt.Sprintf(format, args...), err: voi.ErrInvalid}
}

// maxClaimBits bounds the bits of validate's bitmap: one per voistat[]
// entry and one per data byte, together fewer than cursz-32 < 65536 (an
// entry takes 8 bytes).
const maxClaimBits = 1 << 16

func validate(p []byte) error {
	if len(p) < abi.HeaderSize {
		return bad("need at least %d bytes of header, have %d", abi.HeaderSize, len(p))
	}
	if p[abi.OffABI] != abi.V1 {
		return &defect{what: fmt.Sprintf("ABI version %d, want %d", p[abi.OffABI], abi.V1), err: voi.ErrNotSupported}
	}
	if p[abi.OffEndian] != abi.LittleEnd {
		return &defect{what: fmt.Sprintf("endianness %d, want %d (little-endian)", p[abi.OffEndian], abi.LittleEnd), err: voi.ErrNotSupported}
	}
	if f := abi.U16(p, abi.OffFlags); f != 0 {
		return bad("unknown header flags 0x%04x", f)
	}
	cursz, maxsz := abi.CurSz(p), abi.MaxSz(p)
	statsOff, dataOff := abi.StatsOff(p), abi.StatsDataOff(p)
	switch {
	case cursz < abi.HeaderSize:
		return bad("cursz %d is smaller than the header", cursz)
	case cursz > len(p):
		return bad("cursz %d exceeds the %d bytes given", cursz, len(p))
	case maxsz < cursz:
		return bad("maxsz %d is smaller than cursz %d", maxsz, cursz)
	case statsOff < abi.HeaderSize || (statsOff-abi.HeaderSize)%abi.VOISize != 0:
		return bad("stats_off %d is not 32 plus a multiple of 8", statsOff)
	case dataOff < statsOff || (dataOff-statsOff)%abi.StatSize != 0:
		return bad("statsdata_off %d is not stats_off %d plus a multiple of 8", dataOff, statsOff)
	case dataOff > cursz:
		return bad("statsdata_off %d exceeds cursz %d", dataOff, cursz)
	}

	// One bit per 8 bytes of voistat[] and per byte of data marks what is
	// claimed, so overlaps are found in linear time.
	nstats := (dataOff - statsOff) / abi.StatSize
	var bitmap [maxClaimBits / 64]uint64
	c := claims(bitmap[:(nstats+cursz-dataOff+63)/64])
	usedStats := 0
	nvois := abi.NVOIs(p)
	for i := 0; i < nvois; i++ {
		v := abi.ReadVOI(p, abi.VOIAt(i))
		if v.ID == -1 {
			if v != (abi.VOI{ID: -1, MaxID: -1}) {
				return bad("vacant voi[%d] has non-zero fields", i)
			}
			continue
		}
		if int(v.ID) != i {
			return bad("voi[%d] has id %d", i, v.ID)
		}
		dt := voi.DType(v.DType)
		if !dt.IsNumeric() {
			return bad("voi[%d] has data type %v", i, dt)
		}
		if v.Flags&^voi.FlagReqState != 0 {
			return bad("voi[%d] has unknown flags 0x%04x", i, v.Flags)
		}
		if v.MaxID < 1 || v.MaxID >= int8(voi.NumSTypes) {
			return bad("voi[%d] has voistatmaxid %d", i, v.MaxID)
		}
		so := int(v.StatsOff)
		n := int(v.MaxID) + 1
		if so < statsOff || (so-statsOff)%abi.StatSize != 0 || so+n*abi.StatSize > dataOff {
			return bad("voi[%d] voistats at %d..%d lie outside voistat[] %d..%d", i, so, so+n*abi.StatSize, statsOff, dataOff)
		}
		if k := c.claim((so-statsOff)/abi.StatSize, n); k >= 0 {
			return bad("voi[%d] voistat[%d] at %d is shared with another VOI", i, k, so+k*abi.StatSize)
		}
		usedStats += n
		for j := 0; j < n; j++ {
			if err := validateStat(p, i, j, dt, v, so+j*abi.StatSize, dataOff, cursz, nstats, c); err != nil {
				return err
			}
		}
	}
	if usedStats != nstats {
		return bad("voistat[] has %d entries, VOIs use %d", nstats, usedStats)
	}
	return nil
}

func validateStat(p []byte, i, j int, vdt voi.DType, v abi.VOI, off, dataOff, cursz, nstats int, c claims) error {
	s := abi.ReadStat(p, off)
	if s.SType == -1 {
		if s != (abi.Stat{SType: -1}) {
			return bad("voi[%d] vacant voistat[%d] has non-zero fields", i, j)
		}
		if j == 0 && v.Flags&voi.FlagReqState != 0 {
			return bad("voi[%d] keeps state but voistat[0] is vacant", i)
		}
		if j == int(v.MaxID) {
			return bad("voi[%d] voistat[%d] (the highest) is vacant", i, j)
		}
		return nil
	}
	if int(s.SType) != j {
		return bad("voi[%d] voistat[%d] has stat type %d", i, j, s.SType)
	}
	if s.Flags&^voi.StatValid != 0 {
		return bad("voi[%d] voistat[%d] has unknown flags 0x%02x", i, j, s.Flags)
	}
	dt := voi.DType(s.DType)
	dsz := int(s.DSz)
	switch st := voi.SType(s.SType); st {
	case voi.StatVoiState:
		if v.Flags&voi.FlagReqState == 0 || dt != voi.VoiState || dsz != abi.StateSize {
			return bad("voi[%d] has a malformed state record (dtype %v, dsz %d)", i, dt, dsz)
		}
	case voi.Sum, voi.Max, voi.Min:
		if dt != vdt || dsz != vdt.Size() {
			return bad("voi[%d] %v has dtype %v and %d bytes, want %v and %d", i, st, dt, dsz, vdt, vdt.Size())
		}
	case voi.Hist:
		if err := validateHist(dt, dsz); err != nil {
			return bad("voi[%d] HIST: %v", i, err)
		}
	case voi.TDgst:
		if !dt.IsTDigest() {
			return bad("voi[%d] TDGST has dtype %v", i, dt)
		}
	}
	do := int(s.DataOff)
	if do < dataOff || do+dsz > cursz {
		return bad("voi[%d] voistat[%d] data at %d..%d lies outside the data region %d..%d", i, j, do, do+dsz, dataOff, cursz)
	}
	if k := c.claim(nstats+do-dataOff, dsz); k >= 0 {
		return bad("voi[%d] voistat[%d] data at %d overlaps another statistic", i, j, do+k)
	}
	if dt.IsTDigest() && !tdigest.Valid(p[do:do+dsz], dt) {
		// Valid and Validate agree (tdigest.TestValidMatchesValidate):
		// the slower one runs only for the error.
		if err := tdigest.Validate(p[do:do+dsz], dt); err != nil {
			return &defect{what: fmt.Sprintf("voi[%d] TDGST", i), err: err}
		}
	}
	return nil
}

// claims is a bitmap of claimed units (voistat entries, data bytes).
type claims []uint64

// claim marks units [from, from+n) as claimed and returns -1, or, if one
// of them was claimed before, returns the first such unit's index in the
// range and marks nothing. It works a word of 64 units at a time.
func (c claims) claim(from, n int) int {
	end := from + n
	for pass := 0; pass < 2; pass++ {
		for i := from; i < end; {
			w, b := i/64, i%64
			k := min(64-b, end-i)
			m := ^uint64(0) >> (64 - k) << b
			if pass == 0 {
				if hit := c[w] & m; hit != 0 {
					return w*64 + bits.TrailingZeros64(hit) - from
				}
			} else {
				c[w] |= m
			}
			i += k
		}
	}
	return -1
}

func validateHist(dt voi.DType, dsz int) error {
	g, ok := hist.GeometryOf(dt)
	if !ok {
		return fmt.Errorf("dtype %v is not a histogram", dt)
	}
	if n := hist.NumBuckets(dt, dsz); n < 1 || hist.DataSize(dt, n) != dsz {
		return fmt.Errorf("%d bytes is not %d plus a positive multiple of %d", dsz, g.Header, g.Size)
	}
	return nil
}
