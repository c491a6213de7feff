// Package literal reads the literals of the conformance scenario language
// (testdata/conformance/FORMAT.md section 3): INT literals as 64-bit
// patterns. The scenario runner and the tests that replay goldens use it.
package literal

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrSyntax is returned for a token that is not a literal.
var ErrSyntax = errors.New("scenario: syntax error")

var named = map[string]uint64{
	"INT32_MIN":  0xFFFFFFFF80000000,
	"INT32_MAX":  0x7FFFFFFF,
	"UINT32_MAX": 0xFFFFFFFF,
	"INT64_MIN":  0x8000000000000000,
	"INT64_MAX":  0x7FFFFFFFFFFFFFFF,
	"UINT64_MAX": 0xFFFFFFFFFFFFFFFF,
	"LONG_MIN":   0x8000000000000000,
	"LONG_MAX":   0x7FFFFFFFFFFFFFFF,
	"ULONG_MAX":  0xFFFFFFFFFFFFFFFF,
}

// Int reads an INT literal (FORMAT.md 3.1) as a 64-bit pattern: a limit
// name, or an optional sign and a strtoull base-0 magnitude (0x hex, 0
// octal, decimal) of at most 2^64-1; "-" negates modulo 2^64.
func Int(tok string) (uint64, error) {
	if v, ok := named[tok]; ok {
		return v, nil
	}
	s, neg := tok, false
	if s != "" && (s[0] == '-' || s[0] == '+') {
		neg = s[0] == '-'
		s = s[1:]
	}
	base := 10
	switch {
	case len(s) > 1 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'):
		base, s = 16, s[2:]
	case len(s) > 1 && s[0] == '0':
		base, s = 8, s[1:]
	}
	if s == "" || strings.ContainsAny(s, "+-_") {
		return 0, fmt.Errorf("%w: integer %q", ErrSyntax, tok)
	}
	v, err := strconv.ParseUint(s, base, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: integer %q", ErrSyntax, tok)
	}
	if neg {
		v = -v
	}
	return v, nil
}
