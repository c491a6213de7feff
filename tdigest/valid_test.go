//go:build go1.24

package tdigest_test

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/bsdrand"
	"github.com/statsblob/statsblob/tdigest"
	"github.com/statsblob/statsblob/voi"
)

// mutatedDigest builds a digest from in (type, slots, precision, values)
// and then applies in's remaining bytes as mutations: pairs of (offset,
// value) bytes overwrite the digest's bytes, biased towards its head and
// links so that most mutations reach the tree checks.
func mutatedDigest(in []byte) ([]byte, voi.DType) {
	if len(in) < 4 {
		return nil, voi.TDgstClust32
	}
	dt := voi.TDgstClust32
	if in[0]&1 == 1 {
		dt = voi.TDgstClust64
	}
	nctds := uint32(in[1]%40) + 1
	data, err := tdigest.Build(dt, nctds, 4)
	if err != nil {
		panic(err)
	}
	env := &tdigest.Env{Rand: bsdrand.New(uint32(in[2]))}
	r := bsdrand.New(uint32(in[3]))
	for range int(in[2] % 120) {
		_ = tdigest.Update(data, dt, voi.IntU32, uint64(r.Int31()%5000), env)
	}
	ops := in[4:]
	for len(ops) >= 2 {
		off, v := int(ops[0]), ops[1]
		ops = ops[2:]
		switch off & 3 {
		case 0: // anywhere
			off = off * 7 % len(data)
		case 1: // the head
			off = off>>2%12 + map[voi.DType]int{voi.TDgstClust32: 8, voi.TDgstClust64: 16}[dt]
		default: // a node's link
			nsz, base := tdigest.NodeSize32, tdigest.HeaderSize32
			if dt == voi.TDgstClust64 {
				nsz, base = tdigest.NodeSize64, tdigest.HeaderSize64
			}
			off = base + int(off>>2)%int(nctds)*nsz + int(v)%8
			v = []byte{0xff, 0, 1, 2, 3, byte(nctds - 1), byte(nctds), 0xfe}[v>>3%8]
		}
		if off < len(data) {
			data[off] = v
		}
	}
	return data, dt
}

func TestValidMatchesValidate(t *testing.T) {
	r := bsdrand.New(7)
	accepted, rejected := 0, 0
	for i := range sweep(20000, 3000) {
		in := make([]byte, 4+2*(i%6))
		for j := range in {
			in[j] = byte(r.Int31())
		}
		data, dt := mutatedDigest(in)
		err := tdigest.Validate(data, dt)
		require.Equal(t, err == nil, tdigest.Valid(data, dt), "input %x: Validate says %v", in, err)
		if err == nil {
			accepted++
		} else {
			rejected++
		}
	}
	// Both verdicts are exercised, so the test can fail either way.
	require.Greater(t, accepted, sweep(2000, 200))
	require.Greater(t, rejected, sweep(2000, 200))

	// Counts that sum past the smplcnt field's range, with smplcnt the
	// wrapped sum (accepted once, before counts summed without wrapping).
	for _, dt := range []voi.DType{voi.TDgstClust32, voi.TDgstClust64} {
		d, err := tdigest.Build(dt, 4, 4)
		require.NoError(t, err)
		env := &tdigest.Env{Rand: bsdrand.New(1)}
		require.NoError(t, tdigest.Update(d, dt, voi.IntU32, 10, env))
		require.NoError(t, tdigest.Update(d, dt, voi.IntU32, 1000, env))
		nsz, base, cntAt := tdigest.NodeSize32, tdigest.HeaderSize32, 12
		if dt == voi.TDgstClust64 {
			nsz, base, cntAt = tdigest.NodeSize64, tdigest.HeaderSize64, 16
		}
		for i := range 4 { // the two nodes in the tree (slots in use have a color 0 or 1)
			if c := d[base+i*nsz+6]; c == 0 || c == 1 {
				if dt == voi.TDgstClust32 {
					binary.LittleEndian.PutUint32(d[base+i*nsz+cntAt:], 1<<31+1)
				} else {
					binary.LittleEndian.PutUint64(d[base+i*nsz+cntAt:], 1<<63+1)
				}
			}
		}
		if dt == voi.TDgstClust32 {
			binary.LittleEndian.PutUint32(d, 2)
		} else {
			binary.LittleEndian.PutUint64(d, 2)
		}
		require.ErrorIs(t, tdigest.Validate(d, dt), voi.ErrInvalid)
		require.False(t, tdigest.Valid(d, dt), "%v", dt)
	}

	// Wrong types and sizes.
	d, _ := tdigest.Build(voi.TDgstClust64, 3, 4)
	require.False(t, tdigest.Valid(d, voi.IntU64))
	require.False(t, tdigest.Valid(d[:len(d)-1], voi.TDgstClust64))
	require.False(t, tdigest.Valid(d[:10], voi.TDgstClust64))
	require.True(t, tdigest.Valid(d, voi.TDgstClust64))
	require.False(t, tdigest.Valid(d, voi.TDgstClust32))
}

func TestValidLargeDigest(t *testing.T) {
	// Up to more slots than a blob's digests have (4,094; Valid takes any
	// bytes): 4,000 slots built and updated, then free slots appended up
	// to n.
	for _, n := range []int{4000, 4096, 4097, 6000} {
		d, err := tdigest.Build(voi.TDgstClust32, 4000, 4)
		require.NoError(t, err)
		env := &tdigest.Env{Rand: bsdrand.New(1)}
		for v := range uint64(3000) {
			require.NoError(t, tdigest.Update(d, voi.TDgstClust32, voi.IntU32, v*7919%100000, env))
		}
		ctrl := d[tdigest.HeaderSize32+8] & 7 // node 0's mean's control bits
		for range n - 4000 {
			d = append(d, 0, 0, 0, 0, 0, 0, 0xff, 0, ctrl, 0, 0, 0, 0, 0, 0, 0)
		}
		binary.LittleEndian.PutUint16(d[8+2:], uint16(n)) // maxnodes
		require.True(t, tdigest.Valid(d, voi.TDgstClust32), "%d slots", n)
		require.NoError(t, tdigest.Validate(d, voi.TDgstClust32))
		binary.LittleEndian.PutUint32(d, 1) // smplcnt
		require.False(t, tdigest.Valid(d, voi.TDgstClust32))
		require.Error(t, tdigest.Validate(d, voi.TDgstClust32))
	}
}

func TestValidAllocatesNothing(t *testing.T) {
	d, _ := tdigest.Build(voi.TDgstClust32, 512, 4)
	env := &tdigest.Env{Rand: bsdrand.New(1)}
	for v := range uint64(500) {
		_ = tdigest.Update(d, voi.TDgstClust32, voi.IntU32, v*31%977, env)
	}
	require.Zero(t, testing.AllocsPerRun(100, func() { tdigest.Valid(d, voi.TDgstClust32) }))
}

// FuzzValidMatchesValidate holds Valid to Validate's verdict on digests
// built from updates and then mutated (see mutatedDigest).
func FuzzValidMatchesValidate(f *testing.F) {
	f.Add([]byte{0, 20, 50, 1})
	f.Add([]byte{1, 30, 100, 2, 5, 0xff, 9, 3})
	f.Add([]byte{0, 10, 7, 3, 2, 1, 6, 0, 10, 0xff})
	f.Fuzz(func(t *testing.T, in []byte) {
		data, dt := mutatedDigest(in)
		if data == nil {
			return
		}
		err := tdigest.Validate(data, dt)
		if (err == nil) != tdigest.Valid(data, dt) {
			t.Fatalf("Validate: %v, Valid: %v", err, tdigest.Valid(data, dt))
		}
	})
}

func BenchmarkValid(b *testing.B) {
	for _, dt := range []voi.DType{voi.TDgstClust32, voi.TDgstClust64} {
		d, _ := tdigest.Build(dt, 20, 4)
		env := &tdigest.Env{Rand: bsdrand.New(1)}
		for v := range uint64(2000) {
			_ = tdigest.Update(d, dt, voi.IntU32, v*7919%30011, env)
		}
		b.Run(dt.String()+"/Valid", func(b *testing.B) {
			for b.Loop() {
				if !tdigest.Valid(d, dt) {
					b.Fatal("invalid")
				}
			}
		})
		b.Run(dt.String()+"/Validate", func(b *testing.B) {
			for b.Loop() {
				if tdigest.Validate(d, dt) != nil {
					b.Fatal("invalid")
				}
			}
		})
	}
}

// TestInOrderWalkMatchesNext holds the renderer's successor walk to the
// iterator's on built-then-mutated digests, corrupt links included.
func TestInOrderWalkMatchesNext(t *testing.T) {
	r := bsdrand.New(11)
	walked := 0
	for i := range sweep(20000, 1500) {
		in := make([]byte, 4+2*(i%6))
		for j := range in {
			in[j] = byte(r.Int31())
		}
		data, dt := mutatedDigest(in)
		next, inOrder := tdigest.CachedWalks(data, dt)
		require.Equal(t, next, inOrder, "input %x", in)
		walked += len(next)
	}
	require.Greater(t, walked, sweep(100000, 7000))
}

// TestMeanOffset: the offset MeanOffset gives is where ReadCentroid reads
// slot 0's mean.
func TestMeanOffset(t *testing.T) {
	for _, dt := range []voi.DType{voi.TDgstClust32, voi.TDgstClust64} {
		d, err := tdigest.Build(dt, 3, 8)
		if err != nil {
			t.Fatal(err)
		}
		off, ok := tdigest.MeanOffset(dt)
		mu := tdigest.ReadCentroid(d, dt, 0).Mu
		if !ok || uint64(d[off]&7) != mu.Ctrl() || d[off] != byte(mu.Raw) {
			t.Fatalf("%v: MeanOffset %d, byte %#x, mean %#x", dt, off, d[off], mu.Raw)
		}
	}
	if _, ok := tdigest.MeanOffset(voi.IntU64); ok {
		t.Fatal("MeanOffset of INT_U64")
	}
}
