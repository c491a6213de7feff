package tdigest_test

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/statsblob/statsblob/bsdrand"
	"github.com/statsblob/statsblob/tdigest"
	"github.com/statsblob/statsblob/voi"
	"github.com/stretchr/testify/require"
)

func mustBuild(t testing.TB, dt voi.DType, n, prec uint32) []byte {
	t.Helper()
	d, err := tdigest.Build(dt, n, prec)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func feed(t testing.TB, d []byte, dt, vdt voi.DType, env *tdigest.Env, vals ...uint64) {
	t.Helper()
	for _, v := range vals {
		if err := tdigest.Update(d, dt, vdt, v, env); err != nil {
			t.Fatalf("Update(%d): %v", v, err)
		}
	}
}

func TestBuild(t *testing.T) {
	f := func(dt voi.DType, n, prec uint32, wantLen int, wantErr error) {
		t.Helper()
		d, err := tdigest.Build(dt, n, prec)
		if !errors.Is(err, wantErr) || len(d) != wantLen {
			t.Fatalf("Build(%v, %d, %d) = %d bytes, %v; want %d, %v", dt, n, prec, len(d), err, wantLen, wantErr)
		}
		if err == nil {
			if err := tdigest.Validate(d, dt); err != nil {
				t.Fatalf("Build(%v, %d, %d) is not valid: %v", dt, n, prec, err)
			}
		}
	}
	f(voi.TDgstClust32, 8, 4, 148, nil)
	f(voi.TDgstClust64, 6, 4, 176, nil)
	f(voi.TDgstClust64, 0, 4, 32, nil)
	f(voi.TDgstClust64, 2729, 4, 65528, nil)
	f(voi.TDgstClust64, 2730, 4, 0, voi.ErrTooBig)
	f(voi.TDgstClust32, 1<<31, 4, 0, voi.ErrTooBig)
	f(voi.IntU64, 8, 4, 0, voi.ErrInvalid)
	f(voi.CRHist32, 8, 4, 0, voi.ErrInvalid)

	// Every node free, in index order on the list, mean 0 with the control
	// bits of the precision.
	d := mustBuild(t, voi.TDgstClust32, 3, 16)
	info, _ := tdigest.ReadInfo(d, voi.TDgstClust32)
	if info != (tdigest.Info{MaxNodes: 3, Root: -1, Free: 0, Min: -1, Max: -1}) {
		t.Fatalf("head %+v", info)
	}
	for i := range 3 {
		c := tdigest.ReadCentroid(d, voi.TDgstClust32, i)
		wantRight := int16(i + 1)
		if i == 2 {
			wantRight = -1
		}
		if c.Color != -1 || c.Right != wantRight || c.Mu.Raw != 4 || c.Count != 0 {
			t.Fatalf("node %d: %+v", i, c)
		}
	}
}

func TestUpdateErrors(t *testing.T) {
	env := &tdigest.Env{Rand: bsdrand.New(1)}
	d := mustBuild(t, voi.TDgstClust32, 4, 4)
	f := func(data []byte, dt, vdt voi.DType, v uint64, want error) {
		t.Helper()
		if err := tdigest.Update(data, dt, vdt, v, env); !errors.Is(err, want) {
			t.Fatalf("Update(%v, %v, %#x) = %v, want %v", dt, vdt, v, err, want)
		}
	}
	f(d, voi.TDgstClust32, voi.IntU32, 5, nil)
	f(d, voi.TDgstClust32, voi.CRHist32, 5, voi.ErrInvalid)
	f(d, voi.IntU32, voi.IntU32, 5, voi.ErrInvalid)
	f(d[:10], voi.TDgstClust32, voi.IntU32, 5, voi.ErrInvalid)
	f(d[:40], voi.TDgstClust32, voi.IntU32, 5, voi.ErrInvalid)
	f(mustBuild(t, voi.TDgstClust64, 0, 4), voi.TDgstClust64, voi.IntU64, 5, voi.ErrInvalid)
	// An s32q mean with 4 fractional bits holds integers below 2^24.
	f(d, voi.TDgstClust32, voi.IntU32, 1<<24, voi.ErrOverflow)
	// An s64q with 4 fractional bits holds integers below 2^56.
	f(mustBuild(t, voi.TDgstClust64, 4, 4), voi.TDgstClust64, voi.IntU64, 1<<56, voi.ErrOverflow)
	f(mustBuild(t, voi.TDgstClust64, 4, 4), voi.TDgstClust64, voi.IntS64, 1<<63, voi.ErrOverflow) // INT64_MIN
	f(mustBuild(t, voi.TDgstClust64, 4, 4), voi.TDgstClust64, voi.IntS32, 0x80000000, nil)        // INT32_MIN fits
	if err := tdigest.Validate(d, voi.TDgstClust32); err != nil {
		t.Fatal(err)
	}
}

func TestUpdateAllocs(t *testing.T) {
	d := mustBuild(t, voi.TDgstClust64, 50, 4)
	env := &tdigest.Env{Rand: bsdrand.New(1)}
	vals := ring("logish")
	i := 0
	if n := testing.AllocsPerRun(10000, func() {
		_ = tdigest.Update(d, voi.TDgstClust64, voi.IntU64, vals[i&65535], env)
		i++
	}); n != 0 {
		t.Fatalf("Update allocates %v times", n)
	}
	// Errors allocate nothing either.
	if n := testing.AllocsPerRun(100, func() {
		_ = tdigest.Update(d, voi.TDgstClust64, voi.IntU64, 1<<60, env)
	}); n != 0 {
		t.Fatalf("a failing Update allocates %v times", n)
	}
}

func TestReset(t *testing.T) {
	for _, dt := range []voi.DType{voi.TDgstClust32, voi.TDgstClust64} {
		d := mustBuild(t, dt, 5, 8)
		env := &tdigest.Env{Rand: bsdrand.New(1)}
		for i := range uint64(200) {
			feed(t, d, dt, voi.IntU32, env, i*37%101)
		}
		before := bytes.Clone(d)
		tdigest.Reset(d, dt)
		if err := tdigest.Validate(d, dt); err != nil {
			t.Fatal(err)
		}
		info, _ := tdigest.ReadInfo(d, dt)
		if info != (tdigest.Info{MaxNodes: 5, Root: -1, Free: 0, Min: -1, Max: -1}) {
			t.Fatalf("%v: head after reset %+v", dt, info)
		}
		for i := range 5 {
			c, old := tdigest.ReadCentroid(d, dt, i), tdigest.ReadCentroid(before, dt, i)
			if c.Count != 0 || c.Mu.Raw != old.Mu.Raw&7 || c.Color != -1 ||
				c.Parent != old.Parent || c.Left != old.Left {
				t.Fatalf("%v: node %d after reset %+v (before %+v)", dt, i, c, old)
			}
		}
	}
}

func TestQueriesSmall(t *testing.T) {
	env := &tdigest.Env{Rand: bsdrand.New(1)}
	dt := voi.TDgstClust64
	d := mustBuild(t, dt, 8, 4)

	// Empty.
	if _, err := tdigest.Quantile(d, dt, 0.5); !errors.Is(err, tdigest.ErrEmpty) || !errors.Is(err, voi.ErrNotFound) {
		t.Fatalf("Quantile of an empty digest: %v", err)
	}
	if _, err := tdigest.CDF(d, dt, 1); !errors.Is(err, tdigest.ErrEmpty) {
		t.Fatalf("CDF of an empty digest: %v", err)
	}
	if _, err := tdigest.Mean(d, dt); !errors.Is(err, tdigest.ErrEmpty) {
		t.Fatalf("Mean of an empty digest: %v", err)
	}
	if n, err := tdigest.Count(d, dt); n != 0 || err != nil {
		t.Fatalf("Count of an empty digest: %d, %v", n, err)
	}

	q := func(q, want float64) {
		t.Helper()
		got, err := tdigest.Quantile(d, dt, q)
		if err != nil || got != want {
			t.Fatalf("Quantile(%v) = %v, %v; want %v", q, got, err, want)
		}
	}
	c := func(x, want float64) {
		t.Helper()
		got, err := tdigest.CDF(d, dt, x)
		if err != nil || got != want {
			t.Fatalf("CDF(%v) = %v, %v; want %v", x, got, err, want)
		}
	}

	// One sample.
	feed(t, d, dt, voi.IntS64, env, uint64(42))
	q(0, 42)
	q(0.3, 42)
	q(1, 42)
	c(41.9, 0)
	c(42, 1)
	c(1e9, 1)

	// Two samples: ranks 0.5 and 1.5 of 2.
	feed(t, d, dt, voi.IntS64, env, math.MaxUint64-7) // -8
	q(0, -8)
	q(0.25, -8)
	q(0.5, 17)
	q(0.75, 42)
	q(1, 42)
	c(-9, 0)
	c(-8, 0.25)
	c(17, 0.5)
	c(42, 1)
	if m, _ := tdigest.Mean(d, dt); m != 17 {
		t.Fatalf("Mean = %v", m)
	}

	// Bad arguments.
	for _, bad := range []float64{-0.01, 1.01, math.NaN(), math.Inf(1)} {
		if _, err := tdigest.Quantile(d, dt, bad); !errors.Is(err, voi.ErrInvalid) {
			t.Fatalf("Quantile(%v): %v", bad, err)
		}
	}
	if _, err := tdigest.CDF(d, dt, math.NaN()); !errors.Is(err, voi.ErrInvalid) {
		t.Fatalf("CDF(NaN): %v", err)
	}
	if _, err := tdigest.Quantile(d, voi.IntU64, 0.5); !errors.Is(err, voi.ErrInvalid) {
		t.Fatalf("Quantile of a non-digest: %v", err)
	}

	// Repeated values.
	r := mustBuild(t, voi.TDgstClust32, 4, 4)
	for range 1000 {
		feed(t, r, voi.TDgstClust32, voi.IntU32, env, 7)
	}
	for _, qq := range []float64{0, 0.1, 0.5, 0.99, 1} {
		if v, err := tdigest.Quantile(r, voi.TDgstClust32, qq); v != 7 || err != nil {
			t.Fatalf("Quantile(%v) of a constant = %v, %v", qq, v, err)
		}
	}
	if p, _ := tdigest.CDF(r, voi.TDgstClust32, 6.99); p != 0 {
		t.Fatalf("CDF below a constant = %v", p)
	}
	if p, _ := tdigest.CDF(r, voi.TDgstClust32, 7); p != 1 {
		t.Fatalf("CDF at a constant = %v", p)
	}
}

// TestQuantileAccuracy checks the estimates against exact quantiles of the
// samples, and that CDF inverts Quantile.
func TestQuantileAccuracy(t *testing.T) {
	for _, dt := range []voi.DType{voi.TDgstClust32, voi.TDgstClust64} {
		r := rand.New(rand.NewPCG(5, 5))
		env := &tdigest.Env{Rand: bsdrand.New(7)}
		d := mustBuild(t, dt, 64, 8)
		var vals []float64
		for range 20000 {
			v := int64(r.NormFloat64()*1000) + 5000
			vals = append(vals, float64(v))
			feed(t, d, dt, voi.IntS32, env, uint64(v))
		}
		sort.Float64s(vals)
		for _, q := range []float64{0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99} {
			got, err := tdigest.Quantile(d, dt, q)
			if err != nil {
				t.Fatal(err)
			}
			// Rank error: where the estimate falls among the samples.
			rank := float64(sort.SearchFloat64s(vals, got)) / float64(len(vals))
			if math.Abs(rank-q) > 0.01 {
				t.Errorf("%v: Quantile(%v) = %v at rank %.4f", dt, q, got, rank)
			}
			p, _ := tdigest.CDF(d, dt, got)
			if math.Abs(p-q) > 1e-9 {
				t.Errorf("%v: CDF(Quantile(%v)) = %v", dt, q, p)
			}
		}
	}
}

func TestMerge(t *testing.T) {
	for _, dt := range []voi.DType{voi.TDgstClust32, voi.TDgstClust64} {
		env := &tdigest.Env{Rand: bsdrand.New(9)}
		a, b := mustBuild(t, dt, 10, 4), mustBuild(t, dt, 10, 8)
		s := stream{77}
		for range 3000 {
			feed(t, a, dt, voi.IntU32, env, s.draw("uniform"))
			feed(t, b, dt, voi.IntU32, env, s.draw("logish")%5000)
		}
		// Digests of different precisions merge into a's.
		if err := tdigest.MergeAll(a, dt, b); err != nil {
			t.Fatal(err)
		}
		if err := tdigest.Validate(a, dt); err != nil {
			t.Fatal(err)
		}
		if n, _ := tdigest.Count(a, dt); n != 6000 {
			t.Fatalf("%v: %d samples after merge", dt, n)
		}
		// Merging a digest into itself doubles it.
		if err := tdigest.MergeAll(a, dt, a); err != nil {
			t.Fatal(err)
		}
		if n, _ := tdigest.Count(a, dt); n != 12000 {
			t.Fatalf("%v: %d samples after self-merge", dt, n)
		}
		// Corrupt source.
		bad := bytes.Clone(b)
		bad[len(bad)-10] ^= 0xff
		bad[20+6] = 7 // node 0's color
		if err := tdigest.MergeAll(a, dt, bad); !errors.Is(err, voi.ErrInvalid) {
			t.Fatalf("%v: Merge of a corrupt digest: %v", dt, err)
		}
	}
}

func TestMergeWeighted(t *testing.T) {
	dt := voi.TDgstClust64
	d := mustBuild(t, dt, 8, 16)
	err := tdigest.MergeWeighted(d, dt, []float64{1.5, -2.25, 1e30, math.NaN(), 3}, []uint64{2, 1, 1, 1, 0})
	if !errors.Is(err, voi.ErrOverflow) {
		t.Fatalf("MergeWeighted: %v", err)
	}
	if n, _ := tdigest.Count(d, dt); n != 3 {
		t.Fatalf("%d samples", n)
	}
	if m, _ := tdigest.Mean(d, dt); m != (1.5*2-2.25)/3 {
		t.Fatalf("mean %v", m)
	}
	if err := tdigest.MergeWeighted(d, dt, []float64{1}, nil); !errors.Is(err, voi.ErrInvalid) {
		t.Fatalf("length mismatch: %v", err)
	}
}

// TestInvariantsStreams: random digests fed the scenario value streams
// stay valid after every update (and so after every compression).
func TestInvariantsStreams(t *testing.T) {
	runs := sweep(60, 12)
	dists := []string{"uniform", "logish", "signed", "mod:7", "mod:100000"}
	for run := range runs {
		r := rand.New(rand.NewPCG(uint64(run), 1))
		dt := voi.TDgstClust64
		vdt := voi.IntS64
		prec := uint32(r.IntN(32) + 1)
		if r.IntN(2) == 0 {
			dt, vdt, prec = voi.TDgstClust32, voi.IntS32, uint32(r.IntN(16)+1)
		}
		nctds := uint32(r.IntN(40) + 1)
		d := mustBuild(t, dt, nctds, prec)
		env := &tdigest.Env{Rand: bsdrand.New(r.Uint32())}
		s := stream{r.Uint64() | 1}
		dist := dists[r.IntN(len(dists))]
		var compressions uint32
		for i := range 2000 {
			v := s.draw(dist)
			err := tdigest.Update(d, dt, vdt, v, env)
			if err != nil && !errors.Is(err, voi.ErrOverflow) && !errors.Is(err, voi.ErrAgain) {
				t.Fatalf("run %d update %d: %v", run, i, err)
			}
			if err := tdigest.Validate(d, dt); err != nil {
				t.Fatalf("run %d (%v %d/%d %s) update %d: %v", run, dt, nctds, prec, dist, i, err)
			}
		}
		info, _ := tdigest.ReadInfo(d, dt)
		compressions += info.CompCnt
	}
}

func TestValidateMalformed(t *testing.T) {
	env := &tdigest.Env{Rand: bsdrand.New(1)}
	good := mustBuild(t, voi.TDgstClust64, 6, 4)
	feed(t, good, voi.TDgstClust64, voi.IntU64, env, 5, 1, 9, 3, 7, 7, 2)
	if err := tdigest.Validate(good, voi.TDgstClust64); err != nil {
		t.Fatal(err)
	}
	info, _ := tdigest.ReadInfo(good, voi.TDgstClust64)
	root := int(info.Root)
	node := func(i int) int { return 32 + 24*i }
	for _, c := range []struct {
		name string
		edit func(b []byte) []byte
	}{
		{"short", func(b []byte) []byte { return b[:20] }},
		{"long", func(b []byte) []byte { return append(b, 0) }},
		{"truncated node", func(b []byte) []byte { return b[:len(b)-1] }},
		{"negative maxnodes", func(b []byte) []byte { b[18], b[19] = 0xff, 0xff; return b }},
		{"curnodes too big", func(b []byte) []byte { b[16] = 9; return b }},
		{"curnodes off by one", func(b []byte) []byte { b[16]--; return b }},
		{"root out of range", func(b []byte) []byte { b[20] = 77; return b }},
		{"red root", func(b []byte) []byte { b[node(root)+6] = 1; return b }},
		{"root with parent", func(b []byte) []byte { b[node(root)] = 3; return b }},
		{"bad color", func(b []byte) []byte { b[node(root)+6] = 5; return b }},
		{"smplcnt", func(b []byte) []byte { b[0]++; return b }},
		{"cycle", func(b []byte) []byte {
			l := int(int16(le16(b[node(root)+2:])))
			b[node(l)+2], b[node(l)+3] = byte(root), 0
			return b
		}},
		{"unsorted means", func(b []byte) []byte {
			l := int(int16(le16(b[node(root)+2:])))
			b[node(l)+15] = 0x01 // a huge mean left of the root
			return b
		}},
		{"free list into tree", func(b []byte) []byte { b[22], b[23] = byte(root), 0; return b }},
		{"cached min not in tree", func(b []byte) []byte { b[24], b[25] = byte(int(info.Free)), 0; return b }},
	} {
		b := c.edit(bytes.Clone(good))
		if err := tdigest.Validate(b, voi.TDgstClust64); !errors.Is(err, voi.ErrInvalid) {
			t.Errorf("%s: Validate = %v", c.name, err)
		}
	}
	if err := tdigest.Validate(good, voi.IntU64); !errors.Is(err, voi.ErrInvalid) {
		t.Errorf("wrong dtype: %v", err)
	}
}

func le16(b []byte) uint16 { return uint16(b[0]) | uint16(b[1])<<8 }

// TestNoLostSamples feeds long streams into single digests: since defect 7
// (FORMAT.md section 12) a quantile estimate that underflows is 0, not
// ERANGE, so no update fails and the digest counts every sample. Without
// the fix the first stream loses 35 samples.
func TestNoLostSamples(t *testing.T) {
	short := 50_000 // the other streams (past 2^15, where the C's rank estimate underflowed); 10^6 with STATSBLOB_LONG=1
	if long() {
		short = 1_000_000
	}
	for _, c := range []struct {
		name  string
		n     int
		dt    voi.DType
		nctds uint32
		value func(r *rand.Rand, i int) uint64
	}{
		{"mod60000-64", sweep(1_000_000, 100_000), voi.TDgstClust64, 50, func(r *rand.Rand, _ int) uint64 { return r.Uint64() % 60000 }},
		{"mod60000-32", short, voi.TDgstClust32, 20, func(r *rand.Rand, _ int) uint64 { return r.Uint64() % 60000 }},
		{"ascending-mod60000-64", short, voi.TDgstClust64, 50, func(_ *rand.Rand, i int) uint64 { return uint64(i % 60000) }},
		{"exp-tail-64", short, voi.TDgstClust64, 50, func(r *rand.Rand, _ int) uint64 { return 200 + uint64(r.ExpFloat64()*3000) }},
	} {
		n := c.n
		t.Run(c.name, func(t *testing.T) {
			d := mustBuild(t, c.dt, c.nctds, 8)
			env := &tdigest.Env{Rand: bsdrand.New(1)}
			r := rand.New(rand.NewPCG(3, 4))
			failed := 0
			for i := range n {
				if err := tdigest.Update(d, c.dt, voi.IntU32, c.value(r, i), env); err != nil {
					failed++
				}
			}
			require.Zero(t, failed, "failed updates")
			info, err := tdigest.ReadInfo(d, c.dt)
			require.NoError(t, err)
			require.Equal(t, uint64(n), info.SmplCnt)
			require.NoError(t, tdigest.Validate(d, c.dt))
		})
	}
}
