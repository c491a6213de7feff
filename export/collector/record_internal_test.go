package collector

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/export"
	"github.com/statsblob/statsblob/voi"
)

func TestRecordRoundTrip(t *testing.T) {
	for _, r := range []*record{
		{frames: []frame{}},
		{tracked: true, sender: "web-1", seq: 1<<64 - 1, frames: []frame{{labels: []export.Label{{Name: "host", Value: "a\x00b"}}, blob: []byte{1, 2, 3}}}},
		{frames: []frame{{blob: []byte{9}}, {labels: []export.Label{{Name: "a", Value: "1"}, {Name: "b", Value: "2"}}, blob: []byte{7, 7}}}},
	} {
		p := appendRecord(nil, r)
		got, err := decodeRecord(p)
		require.NoError(t, err)
		if len(r.frames) == 0 {
			r.frames = nil
		}
		require.Equal(t, r, got)
	}
	for _, c := range []struct {
		p   []byte
		msg string
	}{
		{nil, "cut short"},
		{[]byte{2, 0, 0, 0, 0, 0}, "version 2, want 1"},
		{[]byte{1, 2, 0, 0, 0, 0}, "flags 0x2"},
		{[]byte{1, 0, 1, 0, 0, 0}, "frame count beyond the bytes"},
		{[]byte{1, 0, 0, 0, 0, 0, 9}, "1 bytes after the record"},
		{[]byte{1, 1, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, "holds byte 0x1"},
	} {
		_, err := decodeRecord(c.p)
		require.ErrorIs(t, err, voi.ErrInvalid)
		require.ErrorContains(t, err, c.msg)
	}
}

// FuzzRecord: decodeRecord never panics, and what it accepts encodes back
// to the same bytes (one encoding per record: a log replays what was
// written).
func FuzzRecord(f *testing.F) {
	f.Add(appendRecord(nil, &record{tracked: true, sender: "s", seq: 3, frames: []frame{{labels: []export.Label{{Name: "h", Value: "v"}}, blob: []byte{1}}}}))
	f.Add(appendRecord(nil, &record{}))
	f.Add([]byte{1, 0, 255, 255, 255, 255})
	f.Fuzz(func(t *testing.T, p []byte) {
		r, err := decodeRecord(p)
		if err != nil {
			require.ErrorIs(t, err, voi.ErrInvalid)
			return
		}
		require.Equal(t, p, appendRecord(nil, r))
	})
}
