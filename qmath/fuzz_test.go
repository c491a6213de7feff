package qmath

import (
	"math/big"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

var textForm = regexp.MustCompile(`^-?(0|[1-9][0-9]*)\.([0-9]+)$`)

// FuzzAppendText renders arbitrary raw bits of every kind and checks that the
// text has the C's form ("[-]INT.FRAC", NFBits fraction digits) and parses
// back, with math/big, to exactly the Q's value (which implies that it is
// within one unit of the last digit), and that Float64 is the float64
// nearest to it.
func FuzzAppendText(f *testing.F) {
	for _, seed := range []struct {
		kind uint8
		raw  uint64
	}{
		{0, 0xC1}, {0, 0x90000005}, {1, 0xc0000005}, {1, 0xFFFFFFFF},
		{2, 0x800000000006000c}, {2, 0x8000000000000006}, {2, 0x7FFFFFFFFFFFFFFF},
		{3, 0xFFFFFFFFFFFFFFFF}, {3, 0x0000001200000005}, {3, 0xF},
	} {
		f.Add(seed.kind, seed.raw)
	}
	f.Fuzz(func(t *testing.T, kind uint8, raw uint64) {
		q := New(Kind(kind%4), raw)
		text := q.String()
		m := textForm.FindStringSubmatch(text)
		require.NotNil(t, m, "%q", text)
		require.Len(t, m[2], int(q.NFBits()), "%q", text)
		require.Equal(t, q.IsNeg(), text[0] == '-', "%q", text)
		require.Equal(t, "x"+text, string(q.AppendText([]byte("x"))))

		parsed, ok := new(big.Rat).SetString(text)
		require.True(t, ok, "%q", text)
		want := exact(q)
		require.Zero(t, parsed.Cmp(want), "%q != %v", text, want.FloatString(int(q.NFBits())))

		f64, _ := want.Float64()
		require.Equal(t, f64, q.Float64(), "%q", text)
	})
}

// FuzzAddSubMulCmp checks AddQ, SubQ, MulQ and the comparisons of two Qs of
// the same kind and control bits against the math/big reference.
func FuzzAddSubMulCmp(f *testing.F) {
	f.Add(uint8(2), uint8(4), uint64(1.5*(1<<16)), uint64(2.25*(1<<16)), false, true)
	f.Add(uint8(0), uint8(1), uint64(1<<28-1), uint64(1), false, false)
	f.Add(uint8(1), uint8(3), uint64(3), uint64(5), false, false)
	f.Add(uint8(3), uint8(7), uint64(1<<61-1), uint64(1<<61-1), false, false)
	f.Fuzz(func(t *testing.T, kind, ctrl uint8, amag, bmag uint64, aneg, bneg bool) {
		k := Kind(kind % 4)
		mk := func(mag uint64, neg bool) Q {
			q := New(k, uint64(ctrl&7)|min(mag, IFMaxVal(k))<<3)
			if neg && k.Signed() {
				q = negQ(q)
			}
			return q
		}
		checkAddSubMulCmp(t, mk(amag, aneg), mk(bmag, bneg))
	})
}
