package blob_test

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/qmath"
	"github.com/statsblob/statsblob/voi"
)

// TestUpdateQStats: the SUM, MAX and MIN of a Q VOI update as the C's
// stats_v1_voi_update_sum/max/min do. A MAX or MIN that keeps its value
// leaves its voistat unmarked; a statistic that fails counts an error and
// keeps its data, the others still update, and the call returns the error
// of the last statistic to fail (slots from the highest down: SUM last).
func TestUpdateQStats(t *testing.T) {
	tp := qtemplate(t) // VOI 0: Q_S64 at 16 bits with SUM, MAX, MIN
	initial := func(st voi.SType) qmath.Q {
		s, err := blob.New(tp, fixedEnv()).Fetch(0, st)
		require.NoError(t, err)
		return qmath.New(qmath.S64, binary.LittleEndian.Uint64(s.Data))
	}
	zero, lo, hi := initial(voi.Sum), initial(voi.Max), initial(voi.Min) // MAX starts at the least value, MIN at the greatest
	three := qmath.Ini(qmath.S64, 3, 16)
	require.True(t, lo.LT(three) && three.LT(hi))

	type want struct {
		q     qmath.Q
		valid bool
		errs  uint8
	}
	for _, c := range []struct {
		name          string
		x             qmath.Q
		err           error
		sum, max, min want
	}{
		{"both move", three, nil, want{three, true, 0}, want{three, true, 0}, want{three, true, 0}},
		{"MIN keeps its initial value", hi, nil, want{hi, true, 0}, want{hi, true, 0}, want{hi, false, 0}},
		{"MAX keeps its initial value", lo, nil, want{lo, true, 0}, want{lo, false, 0}, want{lo, true, 0}},
		// 8 fractional bits: SUM's addition refuses another precision
		// (ErrRange); MAX cannot hold 2^50 at 16 bits (ErrOverflow); MIN
		// keeps its greater value.
		{"another precision, too large", qmath.Ini(qmath.S64, 1<<50, 8), qmath.ErrRange,
			want{zero, false, 1}, want{lo, false, 1}, want{hi, false, 0}},
	} {
		t.Run(c.name, func(t *testing.T) {
			bl := blob.New(tp, fixedEnv())
			err := bl.UpdateQ(0, c.x)
			if c.err == nil {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, c.err)
			}
			for st, w := range map[voi.SType]want{voi.Sum: c.sum, voi.Max: c.max, voi.Min: c.min} {
				s, err := bl.Fetch(0, st)
				require.NoError(t, err)
				got := want{qmath.New(qmath.S64, binary.LittleEndian.Uint64(s.Data)), s.Valid, s.Errs}
				require.Equal(t, w, got, "%v", st)
			}
		})
	}
}
