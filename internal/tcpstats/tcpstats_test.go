package tcpstats_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/internal/tcpstats"
	"github.com/statsblob/statsblob/tpl"
)

// The C reference's TCP_DEFAULT (golden 28_tcp_default.out): 1656 bytes,
// hash 2301024101.
func TestMatchesC(t *testing.T) {
	tp, err := tcpstats.New(tpl.NewRegistry())
	require.NoError(t, err)
	require.Equal(t, 1656, tp.Size())
	require.Equal(t, `"TCP_DEFAULT":2301024101`, tp.Spec())
}
