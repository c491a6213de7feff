package qmath_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/qmath"
)

func TestFromFloat64(t *testing.T) {
	f := func(k qmath.Kind, prec int, x float64, want float64, wantErr error) {
		t.Helper()
		ctrl := uint64(qmath.CtrlIni(prec))
		q, err := qmath.FromFloat64(k, ctrl, x)
		if wantErr != nil {
			require.ErrorIs(t, err, wantErr, "%v %d %g", k, prec, x)
			require.Equal(t, qmath.New(k, ctrl), q)
			return
		}
		require.NoError(t, err, "%v %d %g", k, prec, x)
		require.Equal(t, ctrl, q.Ctrl())
		require.Equal(t, want, q.Float64(), "%v %d %g", k, prec, x)
		require.False(t, q.IsNeg() && want == 0, "negative zero")
	}
	f(qmath.S64, 16, 1.5, 1.5, nil)
	f(qmath.S64, 16, -1.5, -1.5, nil)
	f(qmath.S64, 2, 0.3, 0.25, nil)          // 0.3*4 = 1.2 rounds to 1 quarter
	f(qmath.S64, 2, 0.375, 0.5, nil)         // 1.5 quarters: halfway, away from zero
	f(qmath.S64, 2, -0.1, 0, nil)            // rounds to +0, no sign bit
	f(qmath.U32, 8, -0.001, 0, nil)          // rounds to zero: accepted
	f(qmath.U32, 8, -1, 0, qmath.ErrInvalid) // negative for unsigned
	f(qmath.S32, 16, math.NaN(), 0, qmath.ErrInvalid)
	f(qmath.S64, 16, math.Inf(1), 0, qmath.ErrInvalid)
	// S32 at 16 fractional bits: 28 magnitude bits, integers below 2^12.
	f(qmath.S32, 16, 4095.99998, 4095+65535.0/65536, nil)
	f(qmath.S32, 16, 4096, 0, qmath.ErrOverflow)
	f(qmath.S32, 16, -4096, 0, qmath.ErrOverflow)
	// U64 at 48 fractional bits: 61 magnitude bits, integers below 2^13.
	f(qmath.U64, 48, 8191.5, 8191.5, nil)
	f(qmath.U64, 48, 8192, 0, qmath.ErrOverflow)
}

// TestFromFloat64RoundTrip: every value of a precision converts back to
// itself through Float64.
func TestFromFloat64RoundTrip(t *testing.T) {
	for _, k := range []qmath.Kind{qmath.S32, qmath.U32, qmath.S64, qmath.U64} {
		for _, prec := range []int{2, 4, 8, 16, 32} {
			ctrl := uint64(qmath.CtrlIni(prec))
			for _, raw := range []uint64{0, 1, 3, 1000, 123456, 1 << 20} {
				want := qmath.New(k, raw<<3|ctrl)
				if want.IsNeg() {
					continue
				}
				got, err := qmath.FromFloat64(k, ctrl, want.Float64())
				require.NoError(t, err)
				require.Equal(t, want, got, "%v prec %d raw %d", k, prec, raw)
				if k.Signed() && raw != 0 {
					neg, err := qmath.FromFloat64(k, ctrl, -want.Float64())
					require.NoError(t, err)
					require.Equal(t, -want.Float64(), neg.Float64())
				}
			}
		}
	}
}

func TestFromFloat(t *testing.T) {
	f := func(k qmath.Kind, prec int, x float64, want float64, wantNF uint, wantErr error) {
		t.Helper()
		q, err := qmath.FromFloat(k, prec, x)
		if wantErr != nil {
			require.ErrorIs(t, err, wantErr)
			return
		}
		require.NoError(t, err)
		require.Equal(t, want, q.Float64())
		require.Equal(t, wantNF, q.NFBits())
	}
	f(qmath.S64, 16, -2.5, -2.5, 16, nil)
	f(qmath.S64, 3, 0.8, 0.8125, 4, nil) // 3 bits round up to 4: 13/16
	f(qmath.U32, 8, 1.5, 1.5, 8, nil)
	f(qmath.U32, 8, -1, 0, 0, qmath.ErrInvalid)
	f(qmath.S64, 0, 1, 0, 0, qmath.ErrInvalid)
	f(qmath.S64, 65, 1, 0, 0, qmath.ErrInvalid)
}
