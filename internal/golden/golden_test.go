package golden_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/internal/golden"
	"github.com/statsblob/statsblob/voi"
)

func TestBlocksAndHex(t *testing.T) {
	text := "# header\n> tpl T\ntpl_alloc(\"T\") = 0\n> dump hex\nblob b: cursz=18\n0000: 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f 10\n0010: ff 00\n> blob\n"
	bs := golden.Blocks([]byte(text))
	require.Equal(t, []golden.Block{
		{Line: 2, Tok: []string{"tpl", "T"}, Out: []string{`tpl_alloc("T") = 0`}},
		{Line: 4, Tok: []string{"dump", "hex"}, Out: []string{"blob b: cursz=18", "0000: 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f 10", "0010: ff 00"}},
		{Line: 8, Tok: []string{"blob"}},
	}, bs)
	b, err := golden.Hex(bs[1].Out)
	require.NoError(t, err)
	require.Equal(t, []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 0xff, 0}, b)
	_, err = golden.Hex([]string{"0000: 0g"})
	require.EqualError(t, err, `golden: hex line "0000: 0g": encoding/hex: invalid byte: U+0067 'g'`)
}

func TestTokens(t *testing.T) {
	f := func(tok string, want golden.DType, name string) {
		t.Helper()
		d, err := golden.ParseDType(tok)
		require.NoError(t, err, tok)
		require.Equal(t, want, d, tok)
		require.Equal(t, name, d.Name(), tok)
	}
	f("INT_U32", golden.DType{N: int(voi.IntU32)}, "INT_U32")
	f("Q_S64/16", golden.DType{N: int(voi.QS64), Prec: 16}, "Q_S64")
	f("99", golden.DType{N: 99}, "dtype(99)")
	f("-1", golden.DType{N: -1}, "dtype(-1)")
	_, err := golden.ParseDType("Q_S64")
	require.ErrorIs(t, err, golden.ErrSyntax)
	require.Equal(t, voi.NumDTypes, golden.DType{N: 99}.Engine())

	st, err := golden.ParseSType("TDGST")
	require.NoError(t, err)
	require.Equal(t, int(voi.TDgst), st)
	st, err = golden.ParseSType("-3x")
	require.NoError(t, err)
	require.Equal(t, -3, st)
	_, err = golden.ParseSType("x")
	require.ErrorIs(t, err, golden.ErrSyntax)

	// Q_S64/16: 16 fractional bits, control bits 4|0 = 4.
	q, err := golden.Q(voi.QS64, 16, "1.5")
	require.NoError(t, err)
	require.Equal(t, uint64(3<<15<<3|4), q)
	q, err = golden.Q(voi.QS64, 16, "-1.5")
	require.NoError(t, err)
	require.Equal(t, uint64(1<<63|3<<15<<3|4), q)
	q, err = golden.Q(voi.QU32, 2, "raw:5")
	require.NoError(t, err)
	require.Equal(t, uint64(5<<3), q) // control bits 0
	require.Equal(t, uint64(7<<16<<3|4), golden.QFromInt(voi.QU64, 16, 7))
	_, err = golden.Q(voi.QS64, 16, "1.x")
	require.ErrorIs(t, err, golden.ErrSyntax)
}

func TestParseStat(t *testing.T) {
	for _, c := range []struct {
		tok  string
		want golden.Stat
	}{
		{"sum", golden.Stat{Type: voi.Sum}},
		{"TDGSTCLUST64(20,4)", golden.Stat{Type: voi.TDgst, DType: voi.TDgstClust64, NCtds: 20, Prec: 4}},
		{"CRHIST32_LIN(0,100,10)", golden.Stat{Type: voi.Hist, DType: voi.CRHist32, Scheme: "LIN", UB: 100, StepInc: 10}},
		{"crhist64_exp(1,1000,10,2,lbinf+ubinf)", golden.Stat{Type: voi.Hist, DType: voi.CRHist64, Scheme: "EXP", LB: 1, UB: 1000, StepBase: 10, StepExp: 2, Flags: golden.LBInf | golden.UBInf}},
		{"DRHIST32_LINEXP(0,1000,4,10,0x4)", golden.Stat{Type: voi.Hist, DType: voi.DRHist32, Scheme: "LINEXP", UB: 1000, LinStep: 4, StepBase: 10, Flags: 4}},
		{"DVHIST32_USR(1|2|4:8)", golden.Stat{Type: voi.Hist, DType: voi.DVHist32, Scheme: "USR", Buckets: [][2]uint64{{1, 1}, {2, 2}, {4, 8}}}},
	} {
		got, err := golden.ParseStat(c.tok)
		require.NoError(t, err, c.tok)
		require.Equal(t, c.want, got, c.tok)
	}
	for _, bad := range []string{"AVG", "TDGSTCLUST32(1)", "CRHIST32_LIN(0,1)", "CRHIST32_FOO(1)", "CRHIST32_LIN(0,1,2", "CRHIST32_USR(x)"} {
		_, err := golden.ParseStat(bad)
		require.ErrorIs(t, err, golden.ErrSyntax, bad)
	}
}
