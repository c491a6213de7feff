package qmath

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCVectors replays testdata/cvectors.txt: operands and results of the C
// macros for every operation and combination of kinds and operand types
// (see the file's header for its format and provenance).
func TestCVectors(t *testing.T) {
	f, err := os.Open("testdata/cvectors.txt")
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		in, want, ok := strings.Cut(line, " => ")
		require.True(t, ok, line)
		require.Equal(t, want, replay(t, strings.Fields(in)), line)
		n++
	}
	require.NoError(t, sc.Err())
	require.Greater(t, n, 1500)
}

// replay performs the operation described by a vector's input fields and
// formats its result like the vector's output.
func replay(t *testing.T, f []string) string {
	t.Helper()
	hex := func(s string) uint64 {
		v, err := strconv.ParseUint(s, 16, 64)
		require.NoError(t, err, s)
		return v
	}
	kind := func(s string) Kind { return Kind(hex(s)) }
	operand := func(typ, v string) Int { return kind(typ).Int(hex(v)) }
	result := func(q Q, err error) string {
		name := map[error]string{nil: "OK", ErrRange: "ERANGE", ErrInvalid: "EINVAL", ErrOverflow: "EOVERFLOW"}[err]
		return fmt.Sprintf("%x %s", q.Raw, name)
	}
	b01 := func(b bool) int {
		if b {
			return 1
		}
		return 0
	}
	switch f[0] {
	case "qq":
		a, b := New(kind(f[2]), hex(f[3])), New(kind(f[4]), hex(f[5]))
		switch f[1] {
		case "addq":
			return result(a.AddQ(b))
		case "subq":
			return result(a.SubQ(b))
		case "mulq":
			return result(a.MulQ(b))
		case "divq":
			return result(a.DivQ(b))
		case "cpyvalq":
			return result(a.CpyValQ(b))
		case "cloneq":
			q, err := CloneQ(a.Kind, b)
			if err != nil {
				q = a // the C leaves the destination alone
			}
			return result(q, err)
		case "cmp":
			return fmt.Sprintf("%d %d %d %d %d", b01(a.LT(b)), b01(a.LE(b)), b01(a.GT(b)), b01(a.GE(b)), b01(a.EQ(b)))
		}
	case "qi":
		q, i := New(kind(f[2]), hex(f[3])), operand(f[4], f[5])
		switch f[1] {
		case "addi":
			return result(q.AddI(i))
		case "subi":
			return result(q.SubI(i))
		case "muli":
			return result(q.MulI(i))
		case "divi":
			return result(q.DivI(i))
		case "cpyvali":
			return result(q.CpyValI(i))
		case "sifval":
			return result(q.SetIFVal(i), nil)
		}
	case "qf":
		q := New(kind(f[1]), hex(f[2]))
		return result(q.FracI(operand(f[3], f[4]), operand(f[5], f[6])))
	case "q1":
		q := New(kind(f[1]), hex(f[2]))
		return fmt.Sprintf("%s %x %x %x %x %x %x %d %d %s", q, q.IntVal(), q.FracVal(), q.IFVal(),
			q.Abs().Raw, IFMaxVal(q.Kind), IFMinVal(q.Kind), q.NFBits(), b01(q.IsNeg()), cHex(q.Float64()))
	case "ini":
		iv, err := strconv.ParseInt(f[2], 10, 64)
		require.NoError(t, err)
		prec, err := strconv.Atoi(f[3])
		require.NoError(t, err)
		return fmt.Sprintf("%x", Ini(kind(f[1]), iv, prec).Raw)
	}
	t.Fatalf("unknown vector %q", f)
	return ""
}

// cHex formats f like C's printf("%a") with glibc.
func cHex(f float64) string {
	if f == 0 {
		return "0x0p+0"
	}
	s := strconv.FormatFloat(f, 'x', -1, 64) // e.g. 0x1.8p+00
	mant, exp, _ := strings.Cut(s, "p")
	e, _ := strconv.Atoi(exp)
	return fmt.Sprintf("%sp%+d", mant, e)
}
