package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseQuantile(t *testing.T) {
	f := func(in string, want float64) {
		t.Helper()
		q, err := parseQuantile(in)
		require.NoError(t, err, in)
		require.Equal(t, want, q, in)
	}
	f("0.5", 0.5)
	f("1", 1)
	f("p50", 0.5)
	f("p99", 0.99)
	f("p99.9", 0.999)
	f("p99.99", 0.9999)
	f("p0", 0)
	f("p100", 1)
	f("p5", 0.05)
	f("p005", 0.05)
	f("99.9%", 0.999)
	f("50%", 0.5)
	for _, in := range []string{"", "p", "p.", "p1.2.3", "p101", "p-1", "p1e2", "1.5", "x", "%", "pp50", "p50%", "p 50", "NaN", "p0x10"} {
		_, err := parseQuantile(in)
		require.Error(t, err, in)
	}
	_, err := parseQuantile("p101")
	require.EqualError(t, err, `"p101" is not a quantile (a number in [0, 1], or a percentile such as p99 or 99.9%)`)
	qs, err := parseQuantiles("p50, p99,p99.9")
	require.NoError(t, err)
	require.Equal(t, []float64{0.5, 0.99, 0.999}, qs)
}
