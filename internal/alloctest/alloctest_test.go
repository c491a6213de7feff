package alloctest_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/internal/alloctest"
)

var sink []byte

func TestBytes(t *testing.T) {
	f := func(runs int, want uint64, fn func()) {
		t.Helper()
		require.Equal(t, want, alloctest.Bytes(runs, fn), "runs %d", runs)
	}
	f(10, 0, func() {})
	f(10, 1024, func() { sink = make([]byte, 1000) }) // the 1024-byte size class
	f(1, 4096, func() { sink = make([]byte, 4096) })
	f(0, 4096, func() { sink = make([]byte, 4096) }) // runs below 1 count as 1
	n := 0
	f(4, 1024, func() { // an average: 4 KiB over four calls
		if n%4 == 0 {
			sink = make([]byte, 4096)
		}
		n++
	})
}
