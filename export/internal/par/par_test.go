package par_test

import (
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/export/internal/par"
)

// TestDo: every step runs once, on a worker index below Workers, on the
// caller's goroutine (worker 0, in order) when there are too few steps.
func TestDo(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	for _, tc := range []struct{ n, minPer, workers int }{{0, 16, 1}, {10, 16, 1}, {31, 16, 1}, {32, 16, 2}, {1000, 16, 4}, {5, 0, 4}} {
		require.Equal(t, tc.workers, par.Workers(tc.n, tc.minPer), "%+v", tc)
		hits := make([]atomic.Int32, tc.n)
		var order []int
		par.Do(tc.n, tc.minPer, func(w, i int) {
			require.Less(t, w, tc.workers)
			hits[i].Add(1)
			if tc.workers == 1 {
				order = append(order, i)
			}
		})
		for i := range hits {
			require.Equal(t, int32(1), hits[i].Load(), "%+v step %d", tc, i)
		}
		if tc.workers == 1 {
			for i, v := range order {
				require.Equal(t, i, v)
			}
		}
	}
}
