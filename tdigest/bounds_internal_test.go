package tdigest

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/voi"
)

// TestQueriesStayInDomain: on bytes Validate rejects (counts that wrap,
// means out of order, a tree that revisits nodes) the queries still answer
// within their domain or fail: CDF in [0, 1], quantiles and the mean
// between the least and greatest centroid mean, Count without wrapping.
// Before, counts 2^64-1 and 2 with smplcnt 1 gave CDF 9.2e18.
func TestQueriesStayInDomain(t *testing.T) {
	type digestCase struct {
		name string
		dt   voi.DType
		edit func(d *tree)
		// wrap: Count fails with ErrOverflow, and so do the queries.
		wrap bool
	}
	cases := []digestCase{
		{"counts 2^64-1 and 2, smplcnt 1", voi.TDgstClust64, func(d *tree) {
			d.setCnt(0, -1)
			d.setCnt(1, 2)
			d.setSmplcnt(1)
		}, true},
		{"counts 2^63 twice", voi.TDgstClust64, func(d *tree) {
			d.setCnt(0, math.MinInt64)
			d.setCnt(1, math.MinInt64)
			d.setSmplcnt(0)
		}, true},
		{"32-bit counts 2^32-1 and 2", voi.TDgstClust32, func(d *tree) {
			d.setCnt(0, -1)
			d.setCnt(1, 2)
			d.setSmplcnt(1)
		}, false},
		{"means out of order", voi.TDgstClust64, func(d *tree) {
			a, b := d.muRaw(0), d.muRaw(4)
			le.PutUint64(d.nodes[d.off(0)+8:], b)
			le.PutUint64(d.nodes[d.off(4)+8:], a)
		}, false},
		{"a cycle", voi.TDgstClust32, func(d *tree) {
			// The in-order successor walk loops from the last node back
			// to the first.
			d.setRight(d.hget(hMaxI), 0)
		}, false},
		{"huge count beside small ones", voi.TDgstClust64, func(d *tree) {
			d.setCnt(2, 1<<62)
		}, false},
	}
	for _, c := range cases {
		data := writeTree(t, c.dt, 8, balanced(6))
		var d tree
		require.NoError(t, d.init(data, c.dt))
		c.edit(&d)
		lo, hi := math.Inf(1), math.Inf(-1)
		for i := range 6 {
			m := d.centroid(i).Mean()
			lo, hi = min(lo, m), max(hi, m)
		}
		n, err := Count(data, c.dt)
		if c.wrap {
			require.ErrorIs(t, err, voi.ErrOverflow, c.name)
			_, err = CDF(data, c.dt, 3)
			require.ErrorIs(t, err, voi.ErrOverflow, c.name)
			_, err = Quantile(data, c.dt, 0.5)
			require.ErrorIs(t, err, voi.ErrOverflow, c.name)
			continue
		}
		require.NoError(t, err, c.name)
		require.NotZero(t, n, c.name)
		for x := lo - 1; x <= hi+1; x += 0.25 {
			p, err := CDF(data, c.dt, x)
			require.NoError(t, err, c.name)
			require.True(t, p >= 0 && p <= 1, "%s: CDF(%v) = %v", c.name, x, p)
		}
		for q := 0.0; q <= 1; q += 1.0 / 64 {
			v, err := Quantile(data, c.dt, q)
			require.NoError(t, err, c.name)
			require.True(t, v >= lo && v <= hi, "%s: Quantile(%v) = %v outside [%v, %v]", c.name, q, v, lo, hi)
			v, err = QuantileBounded(data, c.dt, q, lo-10, hi+10)
			require.NoError(t, err, c.name)
			require.True(t, v >= lo-10 && v <= hi+10, "%s: QuantileBounded(%v) = %v", c.name, q, v)
		}
		m, err := Mean(data, c.dt)
		require.NoError(t, err, c.name)
		require.True(t, m >= lo && m <= hi, "%s: Mean = %v", c.name, m)
	}
}

// TestInterpolationStaysBetweenMeans: at 64-bit magnitudes an
// interpolation rounds; the estimate still lies between its two means.
func TestInterpolationStaysBetweenMeans(t *testing.T) {
	require.Equal(t, 3.0, between(3.0000000000000004, 1, 3))
	require.Equal(t, 1.0, between(0.9999999999999999, 3, 1))
	require.Equal(t, 2.0, between(2, 1, 3))
	require.Equal(t, 0.0, unit(-1e-17))
	require.Equal(t, 1.0, unit(1+1e-15))
	_, err := addCount(1<<64-1, 2)
	require.ErrorIs(t, err, voi.ErrOverflow)
	s, err := addCount(1<<64-2, 1)
	require.NoError(t, err)
	require.Equal(t, uint64(1<<64-1), s)
}
