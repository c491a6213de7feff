package sample

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestScanU pins the kernel sscanf's %u as scanU reproduces it.
func TestScanU(t *testing.T) {
	f := func(in string, want uint32, end int, ok bool) {
		t.Helper()
		v, e, o := scanU(in, 0)
		require.Equal(t, ok, o, "ok for %q", in)
		if ok {
			require.Equal(t, want, v, "value of %q", in)
			require.Equal(t, end, e, "end of %q", in)
		}
	}
	f("0", 0, 1, true)
	f("42,", 42, 2, true)
	f(" \t\n\v\f\r7", 7, 7, true) // leading whitespace skipped
	f("+7", 7, 2, true)
	f("-0", 0, 2, true)
	f("-1", 0xFFFFFFFF, 2, true)           // negated modulo 2^64, cut to 32 bits
	f("-5x", 0xFFFFFFFB, 2, true)          //
	f("4294967296", 0, 10, true)           // cut to 32 bits
	f("4294967306", 10, 10, true)          //
	f("18446744069414584320", 0, 20, true) // 2^64 - 2^32
	f("18446744073709551615", 0xFFFFFFFF, 20, true)
	f("18446744073709551616", 0xFFFFFFFF, 20, true)  // saturates
	f("-18446744073709551616", 0xFFFFFFFF, 21, true) // saturates, sign ignored
	f(strings.Repeat("0", 30)+"5", 5, 31, true)      // 31 characters: all read
	f(strings.Repeat("0", 31)+"5", 0, 31, true)      // the 32nd stays in the input
	f("-"+strings.Repeat("0", 29)+"12", 0xFFFFFFFF, 31, true)
	f("", 0, 0, false)
	f("   ", 0, 0, false)
	f("+", 0, 0, false)
	f("+-1", 0, 0, false)
	f("x1", 0, 0, false)
	f("0x10", 0, 1, true) // no hex prefix for %u
}

func TestScanSpec(t *testing.T) {
	f := func(spec, name string, hash uint32, ok bool) {
		t.Helper()
		n, h, o := scanSpec(spec)
		require.Equal(t, ok, o, "ok for %q", spec)
		require.Equal(t, name, n, "name of %q", spec)
		require.Equal(t, hash, h, "hash of %q", spec)
	}
	f("a", "a", 0, true)
	f(`"a"`, `"a"`, 0, true)
	f("a:5", "a", 5, true)
	f("a: 5", "a", 5, true)
	f("a:5junk", "a", 5, true)
	f("a:", "a", 0, true)
	f("a:x", "a", 0, true)
	f("a:b:5", "a", 0, true)
	f(`"a:b":5`, `"a`, 0, true)
	f(":5", "", 5, true)
	f(": 5x", "", 5, true)
	f(":", "", 0, false)
	f(":x", "", 0, false)
	f("::5", "", 0, false)
	long := strings.Repeat("n", 65)
	f(long+"more:5", long, 0, true) // cut at 65: the hash is not reached
	f(long+":5", long, 5, true)     // ':' right after the cut still counts
}

func TestUnquote(t *testing.T) {
	for in, want := range map[string]string{
		`a`: `a`, `"a"`: `a`, `"a`: `a`, `a"`: `a`, `""a""`: `"a"`,
		`"`: ``, `""`: ``, `"""`: `"`, ``: ``,
	} {
		require.Equal(t, want, unquote(in), "unquote(%q)", in)
	}
}
