package literal_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/internal/literal"
)

func TestInt(t *testing.T) {
	cases := []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"0", 0, true}, {"00", 0, true}, {"010", 8, true}, {"0x10", 16, true}, {"0XfF", 255, true},
		{"-1", ^uint64(0), true}, {"+3", 3, true}, {"-9223372036854775808", 1 << 63, true},
		{"18446744073709551615", ^uint64(0), true}, {"INT32_MIN", 0xFFFFFFFF80000000, true},
		{"ULONG_MAX", ^uint64(0), true},
		{"", 0, false}, {"-", 0, false}, {"0x", 0, false}, {"09", 0, false}, {"18446744073709551616", 0, false},
		{"1_000", 0, false}, {"--1", 0, false}, {"int32_min", 0, false}, {"12x", 0, false},
	}
	for _, c := range cases {
		got, err := literal.Int(c.in)
		if !c.ok {
			require.ErrorIs(t, err, literal.ErrSyntax, c.in)
			continue
		}
		require.NoError(t, err, c.in)
		require.Equal(t, c.want, got, c.in)
	}
}
