//go:build go1.24

package decimal

import (
	"math"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/internal/stream"
)

func TestMatchesStrconv(t *testing.T) {
	vals := []uint64{math.MaxUint32, math.MaxInt64, math.MaxInt64 + 1, math.MaxUint64}
	for p := uint64(1); p < math.MaxUint64/10; p *= 10 {
		vals = append(vals, p-1, p, p+1)
	}
	for v := range uint64(20000) {
		vals = append(vals, v)
	}
	for _, v := range vals {
		require.Equal(t, "x"+strconv.FormatUint(v, 10), string(AppendUint([]byte("x"), v)), "%d", v)
		require.Equal(t, strconv.FormatInt(int64(v), 10), string(AppendInt(nil, int64(v))), "%d", int64(v))
		require.Equal(t, strconv.FormatInt(-int64(v), 10), string(AppendInt(nil, -int64(v))), "%d", -int64(v))
	}
}

func TestAppendPadded(t *testing.T) {
	cases := []struct {
		v     uint64
		width int
		want  string
	}{
		{0, 0, ""},
		{0, 1, "0"},
		{5, 4, "0005"},
		{625, 4, "0625"},
		{12345, 4, "2345"}, // digits above width are dropped
		{12345, 5, "12345"},
		{7, 19, "0000000000000000007"},
		{math.MaxUint64, 20, "18446744073709551615"},
	}
	for _, c := range cases {
		require.Equal(t, "ab"+c.want, string(AppendPadded([]byte("ab"), c.v, c.width)), "%d/%d", c.v, c.width)
	}
}

func TestAppendFrac(t *testing.T) {
	cases := []struct {
		frac uint64
		nf   uint
		want string
	}{
		{0, 1, "0"},
		{1, 1, "5"},
		{1, 4, "0625"},
		{15, 4, "9375"},
		{1, MaxFracBits, "0000019073486328125"}, // 2^-19, exactly
		{1<<MaxFracBits - 1, MaxFracBits, "9999980926513671875"},
	}
	for _, c := range cases {
		require.Equal(t, "x"+c.want, string(AppendFrac([]byte("x"), c.frac, c.nf)), "%d/2^%d", c.frac, c.nf)
	}
}

func TestNoAllocs(t *testing.T) {
	buf := make([]byte, 0, 64)
	require.Zero(t, testing.AllocsPerRun(100, func() {
		buf = AppendUint(buf[:0], 7)
		buf = AppendUint(buf, 4242)
		buf = AppendInt(buf, math.MinInt64)
	}))
}

// The numbers of a rendering: mostly under 10,000.
var mix = func() []uint64 {
	v := make([]uint64, 1024)
	s := stream.Stream(12345)
	for i := range v {
		x := s.Next()
		v[i] = x % []uint64{10, 200, 1000, 100000}[x>>60&3]
	}
	return v
}()

func BenchmarkAppendUint(b *testing.B) {
	buf := make([]byte, 0, 16<<10)
	b.Run("decimal", func(b *testing.B) {
		for b.Loop() {
			buf = buf[:0]
			for _, v := range mix {
				buf = AppendUint(buf, v)
			}
		}
	})
	b.Run("strconv", func(b *testing.B) {
		for b.Loop() {
			buf = buf[:0]
			for _, v := range mix {
				buf = strconv.AppendUint(buf, v, 10)
			}
		}
	})
}
