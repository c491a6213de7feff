package blob_test

import (
	"encoding/binary"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/internal/abi"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// fixedEnv is a clock at 1000 s, as conformance runs use.
func fixedEnv() *blob.Env { return blob.NewEnv(func() int64 { return blob.SBinTime(1000, 0) }, 1) }

// manpage builds the stats(3) manual page template: VOI 0 (INT_S64,
// relative updates, MIN) and VOI 2 (INT_U32, SUM and MAX).
func manpage(t testing.TB) *tpl.Template {
	t.Helper()
	tp, err := tpl.NewRegistry().New("MANPAGE")
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "voi0", DType: voi.IntS64, Flags: voi.FlagRelUpdate, Stats: []tpl.StatSpec{tpl.Min()}}))
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 2, Name: "voi2", DType: voi.IntU32, Stats: []tpl.StatSpec{tpl.Sum(), tpl.Max()}}))
	return tp
}

// manpageHex is the manual page blob as FreeBSD allocates it at clock
// 1000 s (testdata/conformance/golden/01_manpage_example.out, "dump hex").
const manpageHex = `
01 01 00 00 88 00 88 00 59 33 e6 3e 38 00 70 00
00 00 00 00 e8 03 00 00 00 00 00 00 e8 03 00 00
00 00 03 03 50 00 01 00 ff ff 00 ff 00 00 00 00
02 00 02 02 38 00 00 00 ff 00 00 00 00 00 00 00
01 02 70 00 04 00 00 00 02 02 74 00 04 00 00 00
00 00 78 00 08 00 00 00 ff 00 00 00 00 00 00 00
ff 00 00 00 00 00 00 00 03 03 80 00 08 00 00 00
00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
ff ff ff ff ff ff ff 7f`

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	require.NoError(t, err)
	return b
}

func TestNewMatchesC(t *testing.T) {
	bl := blob.New(manpage(t), fixedEnv())
	require.Equal(t, unhex(t, manpageHex), bl.Bytes())
	require.Equal(t, 136, bl.CurSz())
	require.Equal(t, 136, bl.MaxSz())
	require.Equal(t, uint32(1055273817), bl.TplHash())
	require.Equal(t, int64(4294967296000), bl.Header().CreatedRaw)
	require.Equal(t, 3, bl.NumVOIs())
}

func TestUpdates(t *testing.T) {
	bl := blob.New(manpage(t), fixedEnv())
	// Relative updates accumulate on VOI 0's previous value (C: 100, 70, -10).
	require.NoError(t, bl.UpdateRelS64(0, 100))
	require.NoError(t, bl.UpdateRelS64(0, -30))
	require.NoError(t, bl.UpdateRelS64(0, -80))
	require.NoError(t, bl.UpdateS64(0, 5))
	require.NoError(t, bl.UpdateRelS64(0, 1))
	min, err := bl.FetchS64(0, voi.Min)
	require.NoError(t, err)
	require.Equal(t, int64(-10), min)
	st, err := bl.Fetch(0, voi.StatVoiState)
	require.NoError(t, err)
	require.Equal(t, voi.VoiState, st.DType)
	require.Equal(t, int64(6), int64(binary.LittleEndian.Uint64(st.Data)))

	// SUM wraps like the C's unsigned arithmetic; MAX keeps the largest.
	require.NoError(t, bl.UpdateU32(2, 7))
	require.NoError(t, bl.UpdateU32(2, 4294967295))
	require.NoError(t, bl.UpdateU32(2, 3))
	sum, err := bl.FetchU32(2, voi.Sum)
	require.NoError(t, err)
	require.Equal(t, uint32(9), sum)
	max, err := bl.FetchU32(2, voi.Max)
	require.NoError(t, err)
	require.Equal(t, uint32(4294967295), max)
}

func TestUpdateErrorsChangeNothing(t *testing.T) {
	bl := blob.New(manpage(t), fixedEnv())
	before := append([]byte(nil), bl.Bytes()...)
	for _, c := range []struct {
		name string
		err  error
	}{
		{"negative id", bl.UpdateU32(-1, 1)},
		{"beyond the blob", bl.UpdateU32(3, 1)},
		{"vacant VOI", bl.UpdateU32(1, 1)},
		{"wrong dtype", bl.UpdateS32(2, 1)},
		{"relative update without state", bl.UpdateRelU32(2, 1)},
		{"untyped unknown dtype", bl.Update(2, voi.NumDTypes, 1, false)},
		{"untyped histogram dtype", bl.Update(2, voi.CRHist32, 1, false)},
	} {
		require.ErrorIs(t, c.err, voi.ErrInvalid, c.name)
	}
	require.Equal(t, before, bl.Bytes())
}

func TestFetchErrors(t *testing.T) {
	bl := blob.New(manpage(t), fixedEnv())
	_, err := bl.Fetch(-1, voi.Sum)
	require.ErrorIs(t, err, voi.ErrInvalid)
	_, err = bl.Fetch(1, voi.Sum) // vacant VOI
	require.ErrorIs(t, err, voi.ErrInvalid)
	_, err = bl.Fetch(2, voi.Min) // above the VOI's highest slot
	require.ErrorIs(t, err, voi.ErrInvalid)
	_, err = bl.Fetch(2, -1)
	require.ErrorIs(t, err, voi.ErrInvalid)
	_, err = bl.FetchS64(2, voi.Sum)
	require.ErrorIs(t, err, voi.ErrTypeMismatch)
	// A slot below the highest that holds no statistic is not an error.
	st, err := bl.Fetch(0, voi.Sum)
	require.NoError(t, err)
	require.Equal(t, blob.Stat{VOI: 0, VOIDType: voi.IntS64, Type: -1, DType: voi.VoiState}, st)
}

func TestCloneSnapshotReset(t *testing.T) {
	clock := blob.SBinTime(1000, 0)
	env := blob.NewEnv(func() int64 { return clock }, 1)
	bl := blob.New(manpage(t), env)
	require.NoError(t, bl.UpdateRelS64(0, 9))
	require.NoError(t, bl.UpdateU32(2, 17))

	c := bl.Clone()
	require.Equal(t, bl.Bytes(), c.Bytes())
	require.NoError(t, c.UpdateU32(2, 1))
	v, _ := bl.FetchU32(2, voi.Sum)
	require.Equal(t, uint32(17), v, "a clone is independent")

	clock = blob.SBinTime(3000, 250)
	s := bl.Snapshot(true)
	v, _ = s.FetchU32(2, voi.Sum)
	require.Equal(t, uint32(17), v)
	v, _ = bl.FetchU32(2, voi.Sum)
	require.Zero(t, v)
	v, _ = bl.FetchU32(2, voi.Max)
	require.Zero(t, v)
	m, _ := bl.FetchS64(0, voi.Min)
	require.Equal(t, int64(9223372036854775807), m)
	st, _ := bl.Fetch(0, voi.StatVoiState)
	require.Equal(t, uint64(9), binary.LittleEndian.Uint64(st.Data), "reset keeps VOI state")
	require.Equal(t, blob.SBinTime(3000, 250), bl.Header().LastResetRaw)
	require.Equal(t, blob.SBinTime(1000, 0), bl.Header().CreatedRaw)
	for _, s := range bl.Stats() {
		require.Zero(t, s.Errs)
	}
}

func TestCloneInto(t *testing.T) {
	bl := blob.New(manpage(t), fixedEnv())
	src := append([]byte(nil), bl.Bytes()...)
	cases := []struct {
		name   string
		buf    int
		maxsz  int
		err    error
		cursz  int
		copied bool
	}{
		{"big", 512, 512, nil, 136, true},
		{"exact", 136, 136, nil, 136, true},
		{"short", 200, 135, voi.ErrOverflow, 136, false},
		{"header only", 64, 8, voi.ErrOverflow, 136, false},
		{"too small", 64, 7, voi.ErrInvalid, 0, false},
		{"maxsz beyond buffer", 100, 200, voi.ErrInvalid, 0, false},
	}
	for _, c := range cases {
		dst := make([]byte, c.buf)
		binary.LittleEndian.PutUint16(dst[4:], uint16(c.maxsz))
		err := bl.CloneInto(dst, c.maxsz)
		if c.err != nil {
			require.ErrorIs(t, err, c.err, c.name)
		} else {
			require.NoError(t, err, c.name)
		}
		require.Equal(t, c.cursz, int(binary.LittleEndian.Uint16(dst[6:])), c.name)
		require.Equal(t, c.maxsz, int(binary.LittleEndian.Uint16(dst[4:])), c.name+": maxsz is the destination's")
		if c.copied {
			require.Equal(t, src[8:], dst[8:136], c.name)
		} else if c.err == voi.ErrOverflow {
			require.Equal(t, src[:4], dst[:4], c.name)
			require.Zero(t, dst[8], c.name+": nothing past cursz is copied")
		}
	}
}

func TestInit(t *testing.T) {
	tp := manpage(t)
	buf := make([]byte, 256)
	binary.LittleEndian.PutUint16(buf[4:], 256)
	bl, err := blob.Init(buf, tp, fixedEnv())
	require.NoError(t, err)
	require.Equal(t, unhex(t, manpageHex), bl.Bytes(), "maxsz is the template's, as in the C")

	small := make([]byte, 64)
	binary.LittleEndian.PutUint16(small[4:], 32)
	_, err = blob.Init(small, tp, fixedEnv())
	require.ErrorIs(t, err, voi.ErrOverflow)
	require.Equal(t, make([]byte, 58), small[6:], "a failed init leaves the buffer as it was")

	lying := make([]byte, 64)
	binary.LittleEndian.PutUint16(lying[4:], 1000)
	_, err = blob.Init(lying, tp, fixedEnv())
	require.ErrorIs(t, err, voi.ErrInvalid)
}

func TestWalkFlags(t *testing.T) {
	bl := blob.New(manpage(t), fixedEnv())
	var got []string
	for v := range abi.Walk(bl.Bytes(), 0) {
		got = append(got, v.Stat.SType.String()+" "+v.Flags.String())
	}
	require.Equal(t, []string{
		"VOISTATE FIRST_CB|FIRST_VOI|FIRST_VOISTAT",
		"MIN FIRST_VOI|LAST_VOISTAT",
		"SUM FIRST_VOI|FIRST_VOISTAT",
		"MAX LAST_CB|FIRST_VOI|LAST_VOISTAT",
	}, got)

	var slots []string
	for s := range abi.Walk(bl.Bytes(), abi.NullVOI|abi.NullStat) {
		slots = append(slots, s.Stat.SType.String()+" "+s.Flags.String())
	}
	require.Equal(t, []string{
		"VOISTATE FIRST_CB|FIRST_VOI|FIRST_VOISTAT",
		"-1 FIRST_VOI",
		"-1 FIRST_VOI",
		"MIN FIRST_VOI|LAST_VOISTAT",
		"-1 FIRST_VOI|FIRST_VOISTAT", // the vacant VOI 1
		"-1 LAST_VOI|FIRST_VOISTAT",  // LAST_CB is cleared below the VOI's highest slot
		"SUM LAST_VOI",
		"MAX LAST_CB|LAST_VOI|LAST_VOISTAT",
	}, slots)
}

func TestBinaryRoundTrip(t *testing.T) {
	bl := blob.New(manpage(t), fixedEnv())
	require.NoError(t, bl.UpdateU32(2, 5))
	p, err := bl.MarshalBinary()
	require.NoError(t, err)
	var back blob.Blob
	require.NoError(t, back.UnmarshalBinary(p))
	require.Equal(t, bl.Bytes(), back.Bytes())
	p[0] = 9
	require.Equal(t, bl.Bytes()[0], back.Bytes()[0], "UnmarshalBinary copies")
	buf := make([]byte, 0, 256)
	out, err := bl.AppendBinary(buf)
	require.NoError(t, err)
	require.Equal(t, bl.Bytes(), out)
}
