package wire_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
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

// Uvarint reads binary.AppendUvarint's varints, and nothing else: a
// varint cut short is a short read of "uvarint"; one past 64 bits, or
// longer than its value's shortest form, is refused, named by why. A
// refusal is as sticky as a short read, left being the bytes left before
// the varint.
func TestReaderUvarint(t *testing.T) {
	for _, v := range []uint64{0, 1, 127, 128, 300, 1<<14 - 1, 1 << 14, 1<<63 - 1, 1 << 63, math.MaxUint64} {
		p := binary.AppendUvarint(nil, v)
		k := len(p)
		p = append(p, 0x80) // the next field's first byte
		r := wire.New(p, short(new([]string)))
		require.Equal(t, v, r.Uvarint(), "%d", v)
		require.NoError(t, r.Err())
		require.Equal(t, []byte{0x80}, r.Rest(), "%d: %d bytes taken", v, k)
	}
	r := wire.New([]byte{0x96, 0x01, 0, 0x7f, 0x80, 0x80, 0x01}, nil)
	require.Equal(t, []uint64{150, 0, 127, 1 << 14}, []uint64{r.Uvarint(), r.Uvarint(), r.Uvarint(), r.Uvarint()})
	require.NoError(t, r.Err())
	require.Zero(t, r.Len())

	ff := func(n int, last ...byte) []byte { return append(bytes.Repeat([]byte{0xff}, n), last...) }
	for _, c := range []struct {
		name string
		p    []byte
		what string // the short function's, with the bytes left
		dflt error  // the error without a short function
	}{
		{"nothing", nil, "uvarint@0", wire.ErrShort},
		{"cut short", []byte{0x80}, "uvarint@1", wire.ErrShort},
		{"cut short after 9 bytes", ff(9), "uvarint@9", wire.ErrShort},
		{"a 10th byte over 1", ff(9, 2), "uvarint past 64 bits@10", wire.ErrVarint},
		{"a 10th byte going on", ff(10, 1), "uvarint past 64 bits@11", wire.ErrVarint},
		{"0 in 2 bytes", []byte{0x80, 0x00, 0x05}, "uvarint longer than its value@3", wire.ErrVarint},
		{"1 in 3 bytes", []byte{0x81, 0x80, 0x00}, "uvarint longer than its value@3", wire.ErrVarint},
		{"2^63-1 in 10 bytes", ff(9, 0), "uvarint longer than its value@10", wire.ErrVarint},
	} {
		t.Run(c.name, func(t *testing.T) {
			var calls []string
			r := wire.New(c.p, short(&calls))
			require.Zero(t, r.Uvarint())
			what, left, _ := strings.Cut(c.what, "@")
			want := fmt.Sprintf("cut: %s with %s left", what, left)
			require.EqualError(t, r.Err(), want)
			require.Zero(t, r.Len())
			require.Zero(t, r.Uvarint()) // sticky
			require.Zero(t, r.U8())
			require.EqualError(t, r.Err(), want)
			require.Equal(t, []string{c.what}, calls, "short is called once")

			r = wire.New(c.p, nil)
			require.Zero(t, r.Uvarint())
			require.Same(t, c.dflt, r.Err())
			r = wire.New(c.p, func(string, int) error { return nil })
			require.Zero(t, r.Uvarint())
			require.Same(t, c.dflt, r.Err())
		})
	}
	var calls []string
	r = wire.New([]byte{1}, short(&calls))
	r.Fail(errCut)
	require.Zero(t, r.Uvarint())
	require.Same(t, errCut, r.Err(), "a failed Reader reads no varint")
	require.Empty(t, calls)
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

// UvarintLen is the length binary.AppendUvarint writes, at each length's
// bounds.
func TestUvarintLen(t *testing.T) {
	for _, tc := range []struct {
		v    uint64
		want int
	}{
		{0, 1}, {1<<7 - 1, 1}, {1 << 7, 2}, {1<<14 - 1, 2}, {1 << 14, 3},
		{1<<56 - 1, 8}, {1 << 56, 9}, {1<<63 - 1, 9}, {1 << 63, 10}, {math.MaxUint64, 10},
	} {
		require.Equal(t, tc.want, wire.UvarintLen(tc.v), "%d", tc.v)
		require.Len(t, binary.AppendUvarint(nil, tc.v), tc.want, "%d", tc.v)
	}
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
		_ = r.Uvarint()
		_ = r.Uvarint()
		_ = r.U64() // and the failure, with an error made beforehand
		_ = r.U64()
		_ = r.U64()
		_ = r.U64()
		_ = r.U64()
	})
	require.Zero(t, allocs)
}

// FuzzReader runs a program of reads over any bytes: no read panics or
// takes more than was there, what is read is the bytes' own (a varint,
// the one encoding/binary reads, if it is of the shortest form: its last
// byte not 0, unless it is its only one), and once a read fails, the
// error is the first and nothing more is read.
func FuzzReader(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9}, []byte{0, 1, 2, 3, 4, 5, 6})
	f.Add([]byte{}, []byte{4, 4})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff}, []byte{4, 5})
	f.Add([]byte{0x96, 0x01, 0x80, 0x00, 0x05}, []byte{6, 6, 6})
	f.Add(bytes.Repeat([]byte{0xff}, 11), []byte{6})
	f.Fuzz(func(t *testing.T, p, ops []byte) {
		var calls []string
		r := wire.New(p, short(&calls))
		at := 0 // bytes taken while nothing failed
		var first error
		for _, op := range ops {
			before := r.Len()
			var n int
			refused := false // a varint refused: fewer bytes than it needs are no cause
			switch op % 7 {
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
			case 6:
				v := r.Uvarint()
				if first != nil {
					break
				}
				want, k := binary.Uvarint(p[at:])
				switch {
				case k == 0: // cut short
					n = len(p) - at + 1
				case k < 0 || k > 1 && p[at+k-1] == 0: // past 64 bits, or longer than its value
					refused = true
					why := "uvarint longer than its value"
					if k < 0 {
						why = "uvarint past 64 bits"
					}
					require.Equal(t, []string{fmt.Sprintf("%s@%d", why, before)}, calls)
				default:
					n = k
					require.NoError(t, r.Err())
					require.Equal(t, want, v)
				}
			}
			switch {
			case first != nil:
				require.Same(t, first, r.Err())
				require.Zero(t, r.Len())
			case r.Err() != nil:
				first = r.Err()
				if !refused {
					require.Greater(t, n, before)
				}
				require.Zero(t, r.Len())
				require.Len(t, calls, 1)
				require.True(t, strings.HasSuffix(calls[0], fmt.Sprintf("@%d", before)), "%s: the bytes left before the read", calls[0])
			default:
				require.Equal(t, before-n, r.Len())
				at += n
				require.Equal(t, p[at:], r.Rest())
			}
		}
		require.LessOrEqual(t, len(calls), 1)
	})
}
