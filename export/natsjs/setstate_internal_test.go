package natsjs

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/export/aggregate"
	"github.com/statsblob/statsblob/export/internal/hashfmt"
	"github.com/statsblob/statsblob/ship"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

func reqTemplate(t testing.TB, voiName string) *tpl.Template {
	tp, err := tpl.NewRegistry().New("REQ")
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: voiName, DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}))
	return tp
}

func carriedOf(t testing.TB, tps ...*tpl.Template) []carriedTpl {
	out := make([]carriedTpl, len(tps))
	for i, tp := range tps {
		j, err := tp.MarshalJSON()
		require.NoError(t, err)
		out[i] = carriedTpl{hash: tp.Hash(), json: j}
	}
	return out
}

// TestReadSetState: a partition's bytes split into the templates they
// carry, in their order, and the Set's state; bytes of an earlier
// version (the Set's state alone) carry none; bytes that are no such
// thing are refused with aggregate.ErrState, never taken in part.
func TestReadSetState(t *testing.T) {
	v1, v2 := reqTemplate(t, "a"), reqTemplate(t, "b")
	want := carriedOf(t, v2, v1)
	got, rest, err := readSetState(append(appendSetState(nil, want), "SBAGG1\nset"...))
	require.NoError(t, err)
	require.Equal(t, want, got)
	require.Equal(t, []byte("SBAGG1\nset"), rest)
	for i, tp := range []*tpl.Template{v2, v1} {
		back, err := got[i].template()
		require.NoError(t, err)
		require.Equal(t, tp.Hash(), back.Hash())
	}

	got, rest, err = readSetState([]byte("SBAGG1\nold"))
	require.NoError(t, err)
	require.Empty(t, got)
	require.Equal(t, []byte("SBAGG1\nold"), rest)

	f := func(name string, v []byte, want string) {
		t.Helper()
		_, _, err := readSetState(v)
		require.ErrorIs(t, err, aggregate.ErrState, name)
		require.EqualError(t, err, want, name)
	}
	head := func(words ...uint32) []byte {
		b := []byte(setStateMagic)
		for _, w := range words {
			b = binary.LittleEndian.AppendUint32(b, w)
		}
		return b
	}
	f("no count", head(), "aggregate: bad state: natsjs: templates cut short")
	f("count past the bytes", head(2, 0xabc, 1), "aggregate: bad state: natsjs: 2 templates in 8 bytes")
	f("empty JSON", append(head(1, 0xabc, 0), 'x'), "aggregate: bad state: natsjs: template 2748 (00000abc): a JSON form of 0 bytes")
	f("oversized JSON", append(head(1, 0xabc, tpl.MaxJSONSize+1), 'x'), "aggregate: bad state: natsjs: template 2748 (00000abc): a JSON form of 4194305 bytes")
	f("JSON cut short", append(head(1, 0xabc, 3), "{}"...), "aggregate: bad state: natsjs: templates cut short")
	f("twice", append(append(head(2, 0xabc, 1), '{'), append(head(0xabc, 1)[len(setStateMagic):], '{')...),
		"aggregate: bad state: natsjs: template 2748 (00000abc) twice")

	// A carried JSON form of another template than its hash says.
	wrong := carriedTpl{hash: v1.Hash(), json: carriedOf(t, v2)[0].json}
	_, err = wrong.template()
	require.ErrorIs(t, err, voi.ErrInvalid)
}

// FuzzReadSetState: a partition's bytes from anywhere split or fail
// with an error wrapping aggregate.ErrState, never a panic; what splits
// encodes to bytes that split the same, the Set's state after them
// untouched; a carried template decodes or fails, never panics.
func FuzzReadSetState(f *testing.F) {
	v1, v2 := reqTemplate(f, "a"), reqTemplate(f, "b")
	f.Add(append(appendSetState(nil, carriedOf(f, v1, v2)), "SBAGG1\n"...))
	f.Add(appendSetState(nil, nil))
	f.Add([]byte("SBAGG1\n"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, v []byte) {
		got, rest, err := readSetState(v)
		if err != nil {
			require.ErrorIs(t, err, aggregate.ErrState)
			return
		}
		require.Equal(t, v[len(v)-len(rest):], rest, "the Set's state is the tail")
		for _, c := range got {
			if tp, err := c.template(); err == nil {
				require.Equal(t, c.hash, tp.Hash())
			}
		}
		if len(got) == 0 && len(rest) == len(v) {
			return // an earlier version's bytes
		}
		enc := appendSetState(nil, got)
		got2, rest2, err := readSetState(append(enc, rest...))
		require.NoError(t, err)
		require.Equal(t, got, got2)
		require.Equal(t, rest, rest2)
	})
}

// racingSet is a TemplateSet that another partition's state taught
// canon's hash between the load's lookup and its learn.
type racingSet struct {
	TemplateSet
	canon *tpl.Template
}

func (r *racingSet) learn(ts []*tpl.Template) ([]*tpl.Template, int) {
	r.TemplateSet.learn([]*tpl.Template{r.canon})
	return r.TemplateSet.learn(ts)
}

// TestOpenLearnsOneTemplatePerHash: a partition whose state taught a
// template that another partition's state taught first is loaded with
// the store's template, so that one hash has one template (the Set
// counts and ranks aggregates by it).
func TestOpenLearnsOneTemplatePerHash(t *testing.T) {
	v1 := reqTemplate(t, "a")
	known := &TemplateSet{}
	known.Add([]*tpl.Template{v1})
	state := savedState(t, known, v1)

	canon := reqTemplate(t, "a")
	reg := &racingSet{canon: canon}
	s := NewSetStore(reg, aggregate.Config{})
	_, err := s.Open(0, state)
	require.NoError(t, err)
	blobs := s.Blobs()
	require.Len(t, blobs, 1)
	require.Same(t, canon, blobs[0].Posted)
	require.Zero(t, s.Learned(), "the other partition's learn")

	// Over a plain registry, the store keeps what it learns itself.
	plain := NewSetStore(tpl.NewRegistry(), aggregate.Config{})
	var logged []string
	plain.Logf = func(format string, args ...any) { logged = append(logged, fmt.Sprintf(format, args...)) }
	for p := range 2 {
		_, err := plain.Open(p, state)
		require.NoError(t, err)
	}
	require.Equal(t, 1, plain.Learned())
	require.Equal(t, []string{fmt.Sprintf("natsjs: partition 0: template \"REQ\" (hash %s) learned from the partition's state: its aggregates are exported and its messages merged, though the templates do not hold it",
		hashfmt.String(v1.Hash()))}, logged)
	blobs = plain.Blobs()
	require.Len(t, blobs, 2)
	require.Same(t, blobs[0].Posted, blobs[1].Posted)
	require.Equal(t, v1.Hash(), blobs[0].Posted.Hash())
}

// savedState is the bytes of a partition of a store over reg holding
// one aggregate of tp.
func savedState(t *testing.T, reg Templates, tp *tpl.Template) []byte {
	s := NewSetStore(reg, aggregate.Config{})
	part, err := s.Open(0, nil)
	require.NoError(t, err)
	b := blob.New(tp, nil)
	require.NoError(t, b.UpdateU64(0, 3))
	require.NoError(t, part.Merge(Message{StreamSeq: 1, TplHash: tp.Hash(), Labels: []ship.Label{{Name: "host", Value: "a"}}, Body: b.Bytes()}))
	state, err := part.Save()
	require.NoError(t, err)
	return state
}
