package hashfmt_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/export/internal/hashfmt"
)

func TestString(t *testing.T) {
	for _, tc := range []struct {
		h    uint32
		want string
	}{
		{0, "0 (00000000)"},
		{7, "7 (00000007)"},
		{2503678372, "2503678372 (953b19a4)"},
		{0xffffffff, "4294967295 (ffffffff)"},
	} {
		require.Equal(t, tc.want, hashfmt.String(tc.h))
	}
}

func TestHex(t *testing.T) {
	require.Equal(t, "00000007", hashfmt.Hex(7))
	require.Equal(t, "953b19a4", hashfmt.Hex(2503678372))
}
