package aggregate_test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/export"
	"github.com/statsblob/statsblob/export/aggregate"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

var updateState = flag.Bool("update-state", false, "write testdata/state-v1.bin from this code's AppendState")

// tinyTpl is a template of one VOI with a sum and a max: its wide blob is
// small, for states a test keeps as bytes and for the fuzzer's seeds.
func tinyTpl(t testing.TB) *tpl.Template {
	t.Helper()
	tp, err := tpl.NewRegistry().New("TINY")
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "n", DType: voi.IntU32, Stats: []tpl.StatSpec{tpl.Sum(), tpl.Max()}}))
	return tp
}

// versionPost is one post of versionSet: a sender's sequence number and the
// label sets it goes to.
type versionPost struct {
	id   string
	seq  uint64
	keys []string
}

// versionSet is a Set with what a state holds: aggregates with labels in
// the window under way, and senders' marks of them and of label sets of
// the window before (not in the state's aggregates); posts are what was
// posted, to check the marks against.
func versionSet(t testing.TB) (s *aggregate.Set, tp *tpl.Template, posts []versionPost) {
	t.Helper()
	tp = tinyTpl(t)
	s, err := aggregate.New(aggregate.Config{Now: func() time.Time { return time.Unix(1_700_000_100, 0) }}, time.Unix(1_700_000_000, 0))
	require.NoError(t, err)
	post := func(p versionPost) {
		items := make([]aggregate.Item, len(p.keys))
		for i, k := range p.keys {
			b := blob.New(tp, blob.NewEnv(func() int64 { return 1 << 40 }, 1))
			require.NoError(t, b.UpdateU32(0, uint32(p.seq)*10+uint32(i)))
			wire, err := blob.FromBytes(b.Bytes(), nil)
			require.NoError(t, err)
			items[i] = aggregate.Item{Key: k, T: tp, Labels: []export.Label{{Name: "host", Value: k}, {Name: "svc", Value: "api"}}, B: wire}
		}
		_, err := s.OnceAll(p.id, p.keys, p.seq, func([]bool) error { return s.AddAll(items) })
		require.NoError(t, err)
		posts = append(posts, p)
	}
	post(versionPost{"s1", 1, []string{"web-1", "web-2", "web-3"}})
	post(versionPost{"s2", 7, []string{"web-2", "web-4"}})
	s.Rotate(time.Unix(1_700_000_060, 0)) // the marks stay; web-1 to web-4 are not in the window now
	post(versionPost{"s1", 2, []string{"web-1", "web-5"}})
	post(versionPost{"s3", 40, []string{"web-5"}})
	post(versionPost{"s2", 9, []string{"web-6"}})
	return s, tp, posts
}

// A state of version 1 ("SBAGG1\n"), as AppendState wrote it before
// version 2, loads: testdata/state-v1.bin is versionSet's, written by
// AppendState at version 1 (go test -run TestStateVersion1 -update-state,
// at commit 88e7abf), and loads to what versionSet holds.
func TestStateVersion1(t *testing.T) {
	a, tp, posts := versionSet(t)
	if *updateState {
		require.NoError(t, os.WriteFile("testdata/state-v1.bin", a.AppendState(nil), 0o644))
	}
	old, err := os.ReadFile("testdata/state-v1.bin")
	require.NoError(t, err)
	b := checkLoaded(t, a, tp, posts, old)
	require.Equal(t, []string{
		`s1 "web-1" 2`, `s1 "web-2" 1`, `s1 "web-3" 1`, `s1 "web-5" 2`,
		`s2 "web-2" 7`, `s2 "web-4" 7`, `s2 "web-6" 9`,
		`s3 "web-5" 40`,
	}, aggregate.MarkSeqs(b))
	require.Equal(t, []uint64{1, 2, 1}, b.Merged()) // web-1, web-5, web-6
}

// checkLoaded checks that state loads into a Set that holds what a does
// (the same aggregates, their blobs the bytes in state, and the same
// marks: every post a duplicate), and that the loaded Set's state loads
// to the same again; it returns the loaded Set.
func checkLoaded(t *testing.T, a *aggregate.Set, tp *tpl.Template, posts []versionPost, state []byte) *aggregate.Set {
	t.Helper()
	lookup := func(h uint32) (*tpl.Template, error) {
		if h == tp.Hash() {
			return tp, nil
		}
		return nil, fmt.Errorf("hash %d: %w", h, voi.ErrNotFound)
	}
	b, err := aggregate.New(aggregate.Config{}, time.Unix(0, 0))
	require.NoError(t, err)
	require.NoError(t, b.LoadState(state, lookup))
	require.Equal(t, dumpSet(a), dumpSet(b))
	for _, n := range b.Blobs() {
		require.True(t, bytes.Contains(state, n.Blob.Bytes()), "the blob as stored")
	}
	again := b.AppendState(nil)
	c, err := aggregate.New(aggregate.Config{}, time.Unix(0, 0))
	require.NoError(t, err)
	require.NoError(t, c.LoadState(again, lookup))
	require.Equal(t, dumpSet(b), dumpSet(c))
	require.Equal(t, again, c.AppendState(nil))
	for _, p := range posts {
		dups, err := b.OnceAll(p.id, p.keys, p.seq, func([]bool) error { t.Fatal("added twice"); return nil })
		require.NoError(t, err)
		require.Equal(t, []bool{true}, slices.Compact(dups), "%s %d", p.id, p.seq)
	}
	return b
}

// dumpSet is what a Set holds, as text: its aggregates (their blobs but
// for the times in their headers, which the Set's empty blob takes from
// the wall clock) and marks.
func dumpSet(s *aggregate.Set) string {
	var out strings.Builder
	named, counts := s.BlobsCounts()
	for i, n := range named {
		p := slices.Clone(n.Blob.Bytes())
		clear(p[16:32]) // STATS_ABI_V1's created and lastrst
		fmt.Fprintf(&out, "%s %v %v %d %x\n", n.Template.Name(), n.Labels, n.Start.UnixNano(), counts[i], p)
	}
	fmt.Fprintf(&out, "marks %d of %d keys\n%s\n", s.Stats().Marks, aggregate.MarkKeys(s), strings.Join(aggregate.MarkSeqs(s), "\n"))
	return out.String()
}
