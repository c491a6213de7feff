package blob_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/qmath"
	"github.com/statsblob/statsblob/voi"
)

// TestCallErrorsSayWhatAndWhere: a call naming a VOI or statistic the blob
// does not have in that form says which VOI, which data types and why, and
// errors.Is still finds the C's sentinel (before: a bare "invalid
// argument" or "wrong data type").
func TestCallErrorsSayWhatAndWhere(t *testing.T) {
	b := blob.New(mixed(t), fixedEnv()) // VOIs 0 u64, 1 s32, 2 u32 (HIST only), 3 u64 (TDGST only)
	q := blob.New(qtpl(t), fixedEnv())  // VOI 0 Q_S64 with state, VOI 1 u64
	for _, c := range []struct {
		name string
		call func() error
		want error
		msg  string
		have voi.DType
	}{
		{"UpdateU64 on a U32 VOI", func() error { return b.UpdateU64(2, 1) }, voi.ErrInvalid,
			"blob: update of VOI 2: the VOI is INT_U32, the call takes INT_U64: invalid argument", voi.IntU32},
		{"UpdateS32 beyond the blob", func() error { return b.UpdateS32(9, 1) }, voi.ErrInvalid,
			"blob: update of VOI 9: no such VOI (the blob's ids are below 4): invalid argument", 0},
		{"UpdateU32 negative id", func() error { return b.UpdateU32(-1, 1) }, voi.ErrInvalid,
			"blob: update of VOI -1: negative id: invalid argument", 0},
		{"UpdateRelU64 without state", func() error { return b.UpdateRelU64(0, 1) }, voi.ErrInvalid,
			"blob: relative update of VOI 0: the VOI keeps no previous value (it needs voi.FlagRelUpdate): invalid argument", voi.IntU64},
		{"UpdateQ of another kind", func() error { return q.UpdateQ(0, qmath.Ini(qmath.U64, 1, 16)) }, voi.ErrInvalid,
			"blob: update of VOI 0: the VOI is Q_S64, the call takes Q_U64: invalid argument", voi.QS64},
		{"Update with a histogram type", func() error { return b.Update(0, voi.CRHist32, 1, false) }, voi.ErrInvalid,
			"blob: update of VOI 0: CRHIST32 is not a VOI data type: invalid argument", voi.IntU64},
		{"FetchU32 of a statistic the VOI lacks", func() error { _, err := b.FetchU32(2, voi.Max); return err }, voi.ErrTypeMismatch,
			"blob: fetch of VOI 2 MAX: the VOI keeps no such statistic: wrong data type", 0},
		{"FetchU32 of a U64 statistic", func() error { _, err := b.FetchU32(0, voi.Sum); return err }, voi.ErrTypeMismatch,
			"blob: fetch of VOI 0 SUM: the statistic is INT_U64, the call takes INT_U32: wrong data type", voi.IntU64},
		{"Fetch beyond the VOI's statistics", func() error { _, err := b.Fetch(2, voi.TDgst); return err }, voi.ErrInvalid,
			"blob: fetch of VOI 2 TDGST: statistic type 5 outside the VOI's 0..4: invalid argument", 0},
		{"Fetch of an unknown VOI", func() error { _, err := q.Fetch(7, voi.Sum); return err }, voi.ErrInvalid,
			"blob: fetch of VOI 7 SUM: no such VOI (the blob's ids are below 2): invalid argument", 0},
	} {
		before := append([]byte(nil), b.Bytes()...)
		err := c.call()
		require.ErrorIs(t, err, c.want, c.name)
		require.EqualError(t, err, c.msg, c.name)
		var ve *blob.VOIError
		require.True(t, errors.As(err, &ve), c.name)
		require.Equal(t, c.have, ve.Have, c.name)
		require.Equal(t, before, b.Bytes(), c.name)
		require.Equal(t, voi.Errno(c.want), voi.Errno(err), c.name)
	}
}

// TestSuccessfulCallsAllocateNothing: the error values are made only on
// failure.
func TestSuccessfulCallsAllocateNothing(t *testing.T) {
	b := blob.New(mixed(t), fixedEnv())
	q := blob.New(qtpl(t), fixedEnv())
	q16 := qmath.Ini(qmath.S64, 3, 16)
	require.NoError(t, b.UpdateU64(3, 1)) // the digest's order cache, once
	for name, f := range map[string]func() error{
		"UpdateU64":   func() error { return b.UpdateU64(0, 7) },
		"UpdateS32":   func() error { return b.UpdateS32(1, -7) },
		"UpdateU32":   func() error { return b.UpdateU32(2, 2) },
		"Update":      func() error { return b.Update(0, voi.IntU64, 7, false) },
		"UpdateQ":     func() error { return q.UpdateQ(0, q16) },
		"UpdateU64 t": func() error { return b.UpdateU64(3, 7) },
		"FetchU64":    func() error { _, err := b.FetchU64(0, voi.Sum); return err },
		"Fetch":       func() error { _, err := b.Fetch(3, voi.TDgst); return err },
	} {
		require.NoError(t, f(), name)
		require.Zero(t, testing.AllocsPerRun(100, func() { _ = f() }), name)
	}
}

// TestNilInputs: a nil blob or template given to a call that returns an
// error is that error (voi.ErrInvalid), never a panic; MergeAll reports a
// nil input and merges the others.
func TestNilInputs(t *testing.T) {
	tp := mixed(t)
	b := blob.New(tp, fixedEnv())
	require.NoError(t, b.UpdateU64(0, 5))
	for _, c := range []struct {
		name string
		call func() error
		msg  string
	}{
		{"Merge into nil", func() error { return blob.Merge(nil, b) }, "blob: merge: nil blob: invalid argument"},
		{"Merge from nil", func() error { return blob.Merge(b, nil) }, "blob: merge: nil blob: invalid argument"},
		{"Fold into nil", func() error { _, err := blob.Fold(nil, b); return err }, "blob: fold into a nil blob: invalid argument"},
		{"Fold nil", func() error { _, err := blob.Fold(b, b.Clone(), nil); return err }, "blob: fold: source 1: nil blob: invalid argument"},
		{"Widen nil", func() error { _, err := blob.Widen(nil, b, nil); return err }, "blob: widen: nil template or blob: invalid argument"},
		{"handle of nil template", func() error { _, err := blob.U32Of(nil, 0); return err }, "blob: handle of VOI 0 of a nil template: invalid argument"},
		{"CheckTemplate nil", func() error { return b.CheckTemplate(nil) }, "blob: check of a nil template: invalid argument"},
		{"UseModes nil", func() error { return b.UseModes(nil) }, "blob: check of a nil template: invalid argument"},
		{"MergeAll of nils", func() error { _, err := blob.MergeAll(nil, nil, nil); return err },
			"blob: merge of no blobs: invalid argument\nblob: input 0 not merged: nil blob: invalid argument\nblob: input 1 not merged: nil blob: invalid argument"},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := b.Clone().Bytes()
			err := c.call()
			require.ErrorIs(t, err, voi.ErrInvalid)
			require.EqualError(t, err, c.msg)
			require.Equal(t, before, b.Bytes(), "the blob is unchanged")
		})
	}

	m, err := blob.MergeAll(nil, nil, b, nil, b.Clone())
	var ie *blob.InputError
	require.ErrorAs(t, err, &ie)
	require.Equal(t, 0, ie.Index)
	require.EqualError(t, err, "blob: input 0 not merged: nil blob: invalid argument\nblob: input 2 not merged: nil blob: invalid argument")
	s, err := m.Fetch(0, voi.Sum)
	require.NoError(t, err)
	v, err := s.Value()
	require.NoError(t, err)
	require.Equal(t, 10.0, v)
}
