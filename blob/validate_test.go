package blob_test

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/internal/abi"
	"github.com/statsblob/statsblob/internal/alloctest"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// The manual page blob (see manpageHex): stats_off 56, statsdata_off 112,
// cursz 136; voi[0]@32 (INT_S64, state, voistats @80..112), voi[1]@40
// vacant, voi[2]@48 (INT_U32, voistats @56..80); data: SUM @112, MAX @116,
// state @120, MIN @128.

func put16(off int, v uint16) func([]byte) []byte {
	return func(b []byte) []byte { binary.LittleEndian.PutUint16(b[off:], v); return b }
}

func put8(off int, v byte) func([]byte) []byte {
	return func(b []byte) []byte { b[off] = v; return b }
}

func TestFromBytesRejectsMalformed(t *testing.T) {
	cases := []struct {
		name   string
		mutate func([]byte) []byte
		want   error
		msg    string
	}{
		{"empty", func(b []byte) []byte { return nil }, voi.ErrInvalid, "header"},
		{"short header", func(b []byte) []byte { return b[:31] }, voi.ErrInvalid, "header"},
		{"other ABI", put8(0, 2), voi.ErrNotSupported, "ABI version"},
		{"big-endian", put8(1, 2), voi.ErrNotSupported, "endianness"},
		{"header flags", put16(2, 1), voi.ErrInvalid, "header flags"},
		{"cursz below header", put16(6, 16), voi.ErrInvalid, "smaller than the header"},
		{"cursz beyond input", put16(6, 200), voi.ErrInvalid, "exceeds the"},
		{"truncated input", func(b []byte) []byte { return b[:120] }, voi.ErrInvalid, "exceeds the"},
		{"trailing bytes", func(b []byte) []byte { return append(b, 0) }, voi.ErrInvalid, "bytes given"},
		{"maxsz below cursz", put16(4, 100), voi.ErrInvalid, "maxsz"},
		{"stats_off below header", put16(12, 24), voi.ErrInvalid, "stats_off"},
		{"stats_off misaligned", put16(12, 57), voi.ErrInvalid, "stats_off"},
		{"statsdata_off before stats_off", put16(14, 48), voi.ErrInvalid, "statsdata_off"},
		{"statsdata_off misaligned", put16(14, 111), voi.ErrInvalid, "statsdata_off"},
		{"statsdata_off beyond cursz", func(b []byte) []byte { binary.LittleEndian.PutUint16(b[14:], 144); return b }, voi.ErrInvalid, "statsdata_off"},
		{"vacant VOI with fields", put8(42, 4), voi.ErrInvalid, "vacant voi[1]"},
		{"VOI id differs from slot", put16(48, 5), voi.ErrInvalid, "has id 5"},
		{"VOI dtype 0", put8(50, 0), voi.ErrInvalid, "data type"},
		{"VOI histogram dtype", put8(50, uint8(voi.CRHist32)), voi.ErrInvalid, "data type"},
		{"VOI dtype out of range", put8(50, 200), voi.ErrInvalid, "data type"},
		{"VOI unknown flags", put16(54, 0x8000), voi.ErrInvalid, "unknown flags"},
		{"VOI voistatmaxid 0", put8(51, 0), voi.ErrInvalid, "voistatmaxid"},
		{"VOI voistatmaxid 6", put8(51, 6), voi.ErrInvalid, "voistatmaxid"},
		{"VOI voistats outside voistat[]", put16(52, 200), voi.ErrInvalid, "outside voistat"},
		{"VOI voistats misaligned", put16(52, 57), voi.ErrInvalid, "outside voistat"},
		{"VOIs share voistats", put16(52, 80), voi.ErrInvalid, "shared"},
		{"vacant voistat with fields", put8(58, 9), voi.ErrInvalid, "vacant voistat"},
		{"highest voistat vacant", func(b []byte) []byte { copy(b[72:80], []byte{0xFF, 0, 0, 0, 0, 0, 0, 0}); return b }, voi.ErrInvalid, "highest"},
		{"stat type differs from slot", put8(64, 3), voi.ErrInvalid, "stat type 3"},
		{"stat unknown flags", put8(71, 0x80), voi.ErrInvalid, "unknown flags"},
		{"SUM of another dtype", put8(65, uint8(voi.IntS32)), voi.ErrInvalid, "SUM has dtype"},
		{"SUM of wrong size", put16(68, 8), voi.ErrInvalid, "SUM has dtype"},
		{"state record vacant", func(b []byte) []byte { copy(b[80:88], []byte{0xFF, 0, 0, 0, 0, 0, 0, 0}); return b }, voi.ErrInvalid, "keeps state"},
		{"state record without state flag", put16(38, 0), voi.ErrInvalid, "state record"},
		{"data before the data region", put16(66, 104), voi.ErrInvalid, "outside the data region"},
		{"data beyond cursz", put16(66, 134), voi.ErrInvalid, "outside the data region"},
		{"overlapping data", put16(74, 114), voi.ErrInvalid, "overlaps"},
		{"HIST with numeric dtype", func(b []byte) []byte {
			// Turn VOI 0's MIN (slot 3) into slot 4 by raising voistatmaxid
			// is impossible without moving entries, so relabel it HIST and
			// the VOI's highest slot stays 3: the type no longer matches.
			b[104] = byte(voi.Hist)
			return b
		}, voi.ErrInvalid, "stat type 4"},
		{"unreferenced voistats", func(b []byte) []byte {
			// Shrink VOI 2 to SUM only: its MAX entry is no longer used.
			b[51] = 1
			return b
		}, voi.ErrInvalid, "VOIs use"},
	}
	base := unhex(t, manpageHex)
	require.NoError(t, blob.Validate(base))
	for _, c := range cases {
		p := c.mutate(append([]byte(nil), base...))
		bl, err := blob.FromBytes(p, nil)
		require.Nil(t, bl, c.name)
		require.ErrorIs(t, err, c.want, c.name)
		require.ErrorContains(t, err, c.msg, c.name)
		require.Regexp(t, `^blob: `, err.Error(), c.name)
	}
}

func TestFromBytesAcceptsEngineBlobs(t *testing.T) {
	bl := blob.New(manpage(t), fixedEnv())
	require.NoError(t, bl.UpdateRelS64(0, -4))
	require.NoError(t, bl.UpdateU32(2, 3))
	got, err := blob.FromBytes(bl.Bytes(), nil)
	require.NoError(t, err)
	require.Equal(t, bl.Bytes(), got.Bytes())
}

// FuzzFromBytes: FromBytes never panics; whatever it accepts re-encodes to
// the same bytes and can be walked, fetched, updated, cloned and reset
// without a panic, staying valid; an update the VOI cannot take returns a
// *VOIError and changes nothing.
func FuzzFromBytes(f *testing.F) {
	f.Add(unhex(f, manpageHex))
	bl := blob.New(manpage(f), fixedEnv())
	_ = bl.UpdateU32(2, 7)
	f.Add(append([]byte(nil), bl.Bytes()...))
	f.Add([]byte{1, 1, 0, 0, 32, 0, 32, 0, 0, 0, 0, 0, 32, 0, 32, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, p []byte) {
		bl, err := blob.FromBytes(p, fixedEnv())
		if err != nil {
			return
		}
		out, err := bl.MarshalBinary()
		if err != nil || string(out) != string(p) {
			t.Fatalf("re-encoding differs")
		}
		vois := map[int32]abi.VOI{}
		for s := range abi.Walk(bl.Bytes(), abi.NullVOI|abi.NullStat) {
			if s.VOI.ID >= 0 {
				vois[int32(s.VOI.ID)] = s.VOI
			}
		}
		for id := int32(-1); id <= int32(bl.NumVOIs()); id++ {
			for st := voi.SType(-1); st <= voi.NumSTypes; st++ {
				_, _ = bl.Fetch(id, st)
			}
			for dt := voi.DType(0); dt <= voi.NumDTypes; dt++ {
				for _, rel := range []bool{false, true} {
					before := string(bl.Bytes())
					err := bl.Update(id, dt, 12345, rel)
					// A call the VOI cannot take says why and changes
					// nothing; other errors come from statistics.
					v, ok := vois[id]
					takes := ok && v.DType == dt && dt.IsNumeric() && (!rel || v.Flags&voi.FlagReqState != 0)
					var ve *blob.VOIError
					if errors.As(err, &ve) == takes || ve != nil && (!errors.Is(err, voi.ErrInvalid) || ve.ID != id || string(bl.Bytes()) != before) {
						t.Fatalf("Update(%d, %v, rel %v) of %+v: %v, blob changed: %v", id, dt, rel, v, err, string(bl.Bytes()) != before)
					}
				}
			}
		}
		c := bl.Clone()
		bl.Reset()
		if err := blob.Validate(bl.Bytes()); err != nil {
			t.Fatalf("blob invalid after updates and reset: %v", err)
		}
		if err := blob.Validate(c.Bytes()); err != nil {
			t.Fatalf("clone invalid: %v", err)
		}
	})
}

// digestBlob returns a blob of one VOI whose only statistic is a
// TDGSTCLUST32 digest of as many slots as a blob holds, and the offset of
// the digest's data.
func digestBlob(t *testing.T) ([]byte, int) {
	t.Helper()
	tp, err := tpl.NewRegistry().New("DEEP")
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "v", DType: voi.IntU32, Stats: []tpl.StatSpec{tpl.TDigest(voi.TDgstClust32, 4089, 4)}}))
	bl := blob.New(tp, fixedEnv())
	st, err := bl.Fetch(0, voi.TDgst)
	require.NoError(t, err)
	return append([]byte(nil), bl.Bytes()...), st.Offset
}

// TestDecodeAllocationBound: decoding a near-64 KB blob whose digest is a
// chain of every slot (rejected: no red-black tree is that deep) allocates
// only the error, and validating a valid one allocates nothing; before,
// the digest check grew a stack frame per node (312 KB for 65,516 bytes).
func TestDecodeAllocationBound(t *testing.T) {
	p, off := digestBlob(t)
	require.Greater(t, len(p), 65500)
	require.NoError(t, blob.Validate(p))
	require.Zero(t, alloctest.Bytes(10, func() { _ = blob.Validate(p) }))
	const n = 4089
	le := binary.LittleEndian
	d := p[off:]
	for _, left := range []bool{true, false} {
		for i := 0; i < n; i++ {
			node := d[20+16*i:]
			prev, next := int16(i-1), int16(i+1)
			if i == n-1 {
				next = -1
			}
			le.PutUint16(node[0:], uint16(prev))
			le.PutUint16(node[2:], 0xffff)
			le.PutUint16(node[4:], 0xffff)
			if left {
				le.PutUint16(node[2:], uint16(next))
			} else {
				le.PutUint16(node[4:], uint16(next))
			}
			node[6] = 0 // black
			le.PutUint32(node[12:], 1)
		}
		le.PutUint32(d[0:], n)            // smplcnt
		le.PutUint16(d[8:], n)            // curnodes
		le.PutUint16(d[12:], 0)           // root
		le.PutUint16(d[14:], 0xffff)      // no free node
		le.PutUint16(d[16:], uint16(n-1)) // cached min
		le.PutUint16(d[18:], 0)           // cached max
		_, err := blob.FromBytes(p, nil)
		require.ErrorIs(t, err, voi.ErrInvalid)
		got := alloctest.Bytes(10, func() { _, _ = blob.FromBytes(p, nil) })
		t.Logf("chain (left %v) of %d nodes in %d bytes: FromBytes allocated %d bytes: %v", left, n, len(p), got, err)
		require.Less(t, got, uint64(2048)) // the error and its text
	}
}
