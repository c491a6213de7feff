package wire_test

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/export/internal/wire"
)

var errCut = errors.New("cut")

// short is a short function recording its calls.
func short(calls *[]string) func(what string, left int) error {
	return func(what string, left int) error {
		*calls = append(*calls, fmt.Sprintf("%s@%d", what, left))
		return fmt.Errorf("%w: %s with %d left", errCut, what, left)
	}
}

// Fields are read little-endian, in order, Bytes aliasing the input with
// its capacity cut.
func TestReaderReads(t *testing.T) {
	p := []byte{
		0xfe,
		0x01, 0x02,
		0x01, 0x02, 0x03, 0x04,
		0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
		'a', 'b', 'c',
		9,
	}
	var calls []string
	r := wire.New(p, short(&calls))
	require.Equal(t, uint8(0xfe), r.U8())
	require.Equal(t, uint16(0x0201), r.U16())
	require.Equal(t, uint32(0x04030201), r.U32())
	require.Equal(t, uint64(0x0807060504030201), r.U64())
	require.Equal(t, 4, r.Len())
	b := r.Bytes(3)
	require.Equal(t, []byte("abc"), b)
	require.Equal(t, 3, cap(b))
	require.Same(t, &p[15], &b[0], "the input itself")
	require.Equal(t, []byte{9}, r.Rest())
	require.Empty(t, r.Bytes(0))
	require.Equal(t, 1, r.Len())
	require.NoError(t, r.Err())
	require.Empty(t, calls)
}

// A read past the end fails once, with the short function's error for
// that read and what was left; from then on every read is zero, nothing
// is left, and the error stays the first.
func TestReaderShort(t *testing.T) {
	reads := []struct {
		what string
		read func(r *wire.Reader) any
		zero any
	}{
		{"uint8", func(r *wire.Reader) any { return r.U8() }, uint8(0)},
		{"uint16", func(r *wire.Reader) any { return r.U16() }, uint16(0)},
		{"uint32", func(r *wire.Reader) any { return r.U32() }, uint32(0)},
		{"uint64", func(r *wire.Reader) any { return r.U64() }, uint64(0)},
		{"bytes", func(r *wire.Reader) any { return r.Bytes(2) }, []byte(nil)},
	}
	for _, c := range reads {
		t.Run(c.what, func(t *testing.T) {
			var calls []string
			r := wire.New([]byte{1}, short(&calls))
			if c.what == "uint8" {
				require.Equal(t, uint8(1), r.U8())
			}
			require.Equal(t, c.zero, c.read(&r))
			left := 1
			if c.what == "uint8" {
				left = 0
			}
			want := fmt.Sprintf("cut: %s with %d left", c.what, left)
			require.EqualError(t, r.Err(), want)
			require.ErrorIs(t, r.Err(), errCut)
			require.Zero(t, r.Len())
			require.Empty(t, r.Rest())
			for _, o := range reads { // sticky
				require.Equal(t, o.zero, o.read(&r))
			}
			require.Nil(t, r.Bytes(0))
			r.Fail(errors.New("later"))
			require.EqualError(t, r.Err(), want)
			require.Len(t, calls, 1, "short is called once")
		})
	}
	var calls []string
	r := wire.New([]byte{1, 2, 3}, short(&calls))
	require.Nil(t, r.Bytes(-1))
	require.EqualError(t, r.Err(), "cut: bytes with 3 left")
}

// Fail keeps the first error, leaves nothing to read; a nil error does
// nothing. A Reader without a short function, or whose function returns
// nil, fails with ErrShort.
func TestReaderFail(t *testing.T) {
	r := wire.New([]byte{1, 2, 3, 4}, nil)
	r.Fail(nil)
	require.NoError(t, r.Err())
	require.Equal(t, 4, r.Len())
	first := errors.New("out of order")
	r.Fail(first)
	r.Fail(errors.New("second"))
	require.Same(t, first, r.Err())
	require.Zero(t, r.Len())
	require.Zero(t, r.U32())
	require.Same(t, first, r.Err())

	var zero wire.Reader
	require.Zero(t, zero.U8())
	require.ErrorIs(t, zero.Err(), wire.ErrShort)
	r = wire.New(nil, func(string, int) error { return nil })
	require.Zero(t, r.U64())
	require.ErrorIs(t, r.Err(), wire.ErrShort)
}

func TestReaderFits(t *testing.T) {
	r := wire.New(make([]byte, 12), nil)
	f := func(n uint64, size int, want bool) {
		t.Helper()
		require.Equal(t, want, r.Fits(n, size), "%d × %d in 12", n, size)
	}
	f(0, 8, true)
	f(3, 4, true)
	f(4, 3, true)
	f(13, 1, false)
	f(2, 7, false)
	f(1<<62, 4, false) // n × size wraps to 0 in 64 bits
	f(math.MaxUint64, 2, false)
	f(math.MaxUint64, 0, true)
}

// The reads of a decoder's hot path allocate nothing.
func TestReaderAllocs(t *testing.T) {
	p := make([]byte, 64)
	allocs := testing.AllocsPerRun(100, func() {
		r := wire.New(p, func(string, int) error { return errCut })
		_ = r.U8()
		_ = r.U16()
		_ = r.U32()
		_ = r.U64()
		_ = r.Bytes(int(r.U32()))
		_ = r.Fits(uint64(r.U32()), 8)
		_ = r.Rest()
		_ = r.U64() // and the failure, with an error made beforehand
		_ = r.U64()
		_ = r.U64()
		_ = r.U64()
		_ = r.U64()
	})
	require.Zero(t, allocs)
}

// FuzzReader runs a program of reads over any bytes: no read panics or
// takes more than was there, what is read is the bytes' own, and once a
// read fails, the error is the first and nothing more is read.
func FuzzReader(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9}, []byte{0, 1, 2, 3, 4, 5})
	f.Add([]byte{}, []byte{4, 4})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff}, []byte{4, 5})
	f.Fuzz(func(t *testing.T, p, ops []byte) {
		var calls []string
		r := wire.New(p, short(&calls))
		at := 0 // bytes taken while nothing failed
		var first error
		for _, op := range ops {
			before := r.Len()
			var n int
			switch op % 6 {
			case 0:
				n = 1
				if v := r.U8(); r.Err() == nil {
					require.Equal(t, p[at], v)
				}
			case 1:
				n = 2
				_ = r.U16()
			case 2:
				n = 4
				_ = r.U32()
			case 3:
				n = 8
				_ = r.U64()
			case 4:
				n = int(op >> 3)
				if b := r.Bytes(n); r.Err() == nil {
					require.Equal(t, p[at:at+n], b)
					require.Equal(t, n, cap(b))
				}
			case 5:
				_ = r.Fits(uint64(op), int(op>>4))
				n = 0
			}
			switch {
			case first != nil:
				require.Same(t, first, r.Err())
				require.Zero(t, r.Len())
			case r.Err() != nil:
				first = r.Err()
				require.Greater(t, n, before)
				require.Zero(t, r.Len())
			default:
				require.Equal(t, before-n, r.Len())
				at += n
				require.Equal(t, p[at:], r.Rest())
			}
		}
		require.LessOrEqual(t, len(calls), 1)
	})
}
