package gen

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The three minimal cases of issue 12 (sizes from the fixed C reference).
func TestModelQIssueCases(t *testing.T) {
	for _, c := range []struct {
		vdt  int
		s    histSpec
		size int
	}{
		{dtQS32, histSpec{hdt: dtCR64, scheme: schLin, lb: 0x80039380, ub: 0x80002720, stepInc: 1000}, 136},
		{dtQS64, histSpec{hdt: dtDV64, scheme: schLin, lb: 0x8000000003600004, ub: 0x8000000001480004, stepInc: 10}, 120},
		{dtQS32, histSpec{hdt: dtCR32, scheme: schExp, lb: 0x8001c781, ub: 0x8000cc01, stepBase: 2, stepExp: 3}, 104},
	} {
		out, n, _ := histModel{c.vdt, &c.s}.run()
		require.Equal(t, histOK, out)
		require.Equal(t, c.size, histDataSize(c.s.hdt, n))
	}
}
