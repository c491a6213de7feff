package export

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/qmath"
	"github.com/statsblob/statsblob/voi"
)

// A bucket label's bound in the exported unit is exact where the scaled
// bound has a finite decimal expansion (a 64-bit bound past 2^53, a Q
// bound's binary fraction), and scaleBy's float64 otherwise.
func TestAppendScaled(t *testing.T) {
	q := func(prec int, x int64) uint64 { return qmath.Ini(qmath.S64, 0, prec).SetIFVal(qmath.I64(x)).Raw }
	for _, c := range []struct {
		dt    voi.DType
		v     uint64
		scale float64
		want  string
	}{
		{voi.IntU32, 5000, 1, "5000"},
		{voi.IntU32, 5000, 1e-6, "0.005"},
		{voi.IntU32, 0, 1e-6, "0"},
		{voi.IntS32, uint64(math.MaxUint32 - 9), 1e-3, "-0.01"}, // -10 ms
		{voi.IntU32, 7, 60, "420"},
		{voi.IntU64, math.MaxUint64, 1e-3, "18446744073709551.615"},
		{voi.QS64, q(4, 17), 1e-3, "0.0010625"},
		{voi.QS64, q(2, 22), 1e-3, "0.0055"},
		{voi.QS64, q(2, -3), 1e-3, "-0.00075"},
		{voi.QS64, q(2, -3), 60, "-45"},
		{voi.IntU32, 1, 1.0 / 3, "0.3333333333333333"}, // 1/3: no finite decimal
		{voi.IntU32, 10, 0.3, "3"},                     // neither an integer nor an inverse one
	} {
		require.Equal(t, c.want, string(appendScaled(nil, c.dt, c.v, c.scale)), "%v %d × %v", c.dt, c.v, c.scale)
	}
}
