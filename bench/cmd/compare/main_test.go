package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestReadFigures(t *testing.T) {
	in := `# cref bench
BENCH sum n=20000000 ns/op=3.40 rc_or=0 blob_bytes=64
BENCH tostr_json n=200000 ns/op=7966.12 out_bytes=2496
BENCH broken n=1
not a result
`
	m, err := readFigures(strings.NewReader(in))
	require.NoError(t, err)
	require.Equal(t, map[string]float64{"sum": 3.40, "tostr_json": 7966.12}, m)

	_, err = readFigures(strings.NewReader("BENCH sum ns/op=fast\n"))
	require.ErrorContains(t, err, "fast")

	// -cputime reads the CPU time instead.
	cpuTime = true
	defer func() { cpuTime = false }()
	m, err = readFigures(strings.NewReader("BENCH sum n=2 ns/op=31.18 cpu_ns/op=6.10 rc_or=0\nBENCH x ns/op=3\n"))
	require.NoError(t, err)
	require.Equal(t, map[string]float64{"sum": 6.10}, m)
}

func TestMedian(t *testing.T) {
	require.Equal(t, 2.0, median([]float64{3, 1, 2}))
	require.Equal(t, 2.5, median([]float64{4, 1, 2, 3}))
	require.Equal(t, 7.0, median([]float64{7}))
}
