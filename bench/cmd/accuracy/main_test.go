package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// rows returns the table rows (lines starting with "| " after the header
// separator) of out.
func rows(out string) [][]string {
	var rs [][]string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "| ") && !strings.HasPrefix(l, "| stream") {
			cells := strings.Split(strings.Trim(l, "| "), " | ")
			rs = append(rs, cells)
		}
	}
	return rs
}

// The tables have a row per case, with no sample lost.
func TestTables(t *testing.T) {
	var b bytes.Buffer
	single(&b, []int{3000})
	rs := rows(b.String())
	require.Len(t, rs, 2*len(geometries))
	for _, r := range rs {
		require.Len(t, r, 19)
		require.Equal(t, "3000", r[2])
		require.Equal(t, "0", r[4], "lost samples: %v", r)
	}
	b.Reset()
	fleets(&b, []int{30})
	rs = rows(b.String())
	require.Len(t, rs, 2*3)
	for _, r := range rs {
		require.Len(t, r, 17)
		require.Equal(t, "0", r[4], "lost samples: %v", r)
	}
	b.Reset()
	streamFleets(&b, 20, []uint64{1})
	rs = rows(b.String())
	require.Len(t, rs, 6*2*2)
	for _, r := range rs {
		require.Len(t, r, 14)
		require.Equal(t, "0", r[5], "lost samples: %v", r)
	}
	b.Reset()
	sharded(&b, []int{4000})
	rs = rows(b.String())
	require.Len(t, rs, 2*2*2)
	for _, r := range rs {
		require.Len(t, r, 16)
	}
	b.Reset()
	snapshots(&b, 25_000)
	rs = rows(b.String())
	require.Len(t, rs, 2*3)
	for _, r := range rs {
		require.Len(t, r, 14)
	}
}
