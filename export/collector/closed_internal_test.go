package collector

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/export/internal/fixture"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// FuzzDecodeClosed: decodeClosed never panics on a damaged closed-window
// file; what it accepts holds blobs of the wide templates, its Posts the
// sum of its counts.
func FuzzDecodeClosed(f *testing.F) {
	tp := fixture.Kitchen()
	s, err := New(Config{Templates: tp.Registry(), DataDir: f.TempDir(), NoSync: true})
	require.NoError(f, err)
	s.closedFiles.Store(true)
	for _, q := range []string{"h=a", "h=b", "h=a"} {
		r := httptest.NewRequest(http.MethodPost, "/v1/blobs?"+q, bytes.NewReader(fixture.KitchenBlob(tp).Bytes()))
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		require.Equal(f, 204, w.Code)
	}
	s.Rotate()
	files, _ := filepath.Glob(filepath.Join(s.cfg.DataDir, "closed-*.win"))
	require.Len(f, files, 1)
	seed, err := os.ReadFile(files[0])
	require.NoError(f, err)
	w, err := tpl.Widen(tp)
	require.NoError(f, err)
	wide := map[uint32]*tpl.Template{w.Hash(): w}
	c, err := decodeClosed(seed, wide, map[uint32]*tpl.Template{tp.Hash(): tp})
	require.NoError(f, err)
	require.Equal(f, []uint64{2, 1}, c.Counts)
	require.Equal(f, uint64(3), c.Posts)
	require.Same(f, tp, c.Blobs[0].Posted, "the version posted, recorded")
	// A version 1 file (no posted hashes) still reads, its aggregates'
	// versions unknown.
	v1 := []byte(closedMagicV1)
	body := seed[len(closedMagic) : len(seed)-4]
	v1 = append(v1, body[:20]...) // start, end, n
	rest := body[20:]
	for range c.Blobs {
		v1 = append(v1, rest[:4]...) // the wide hash; the posted one left out
		rest = rest[8:]
		k := binary.LittleEndian.Uint32(rest)
		end := 4
		for range 2 * k {
			end += 4 + int(binary.LittleEndian.Uint32(rest[end:]))
		}
		end += 8
		end += 4 + int(binary.LittleEndian.Uint32(rest[end:]))
		v1, rest = append(v1, rest[:end]...), rest[end:]
	}
	v1 = binary.LittleEndian.AppendUint32(v1, crc32.Checksum(v1, castagnoli))
	c1, err := decodeClosed(v1, wide, map[uint32]*tpl.Template{tp.Hash(): tp})
	require.NoError(f, err)
	require.Equal(f, c.Counts, c1.Counts)
	require.Nil(f, c1.Blobs[0].Posted)
	f.Add(v1[:len(v1)-4], false)
	// The fuzzer varies what is under the checksum; the checksum is made
	// to hold, so that the decoding behind it is what is tried.
	f.Add(seed[:len(seed)-4], false)
	f.Add([]byte(closedMagic), false)
	f.Add(seed, true)
	f.Fuzz(func(t *testing.T, body []byte, raw bool) {
		p := body
		if !raw {
			p = binary.LittleEndian.AppendUint32(slices.Clone(body), crc32.Checksum(body, castagnoli))
		}
		c, err := decodeClosed(p, wide, map[uint32]*tpl.Template{tp.Hash(): tp})
		if err != nil {
			require.True(t, errors.Is(err, voi.ErrInvalid), err)
			return
		}
		var n uint64
		for i, b := range c.Blobs {
			require.NoError(t, b.Blob.CheckTemplate(w))
			n += c.Counts[i]
		}
		require.Equal(t, n, c.Posts)
	})
}

// A closed window read back from DataDir knows the version each aggregate
// was posted as, so two versions with one wide form (a VOI's INT_U32 and
// INT_U64) on one label set stay two series (before, the file kept only
// the wide hash, and both recovered as the first version: one series
// twice).
func TestRecoveredClosedWindowKeepsVersions(t *testing.T) {
	mk := func(dt voi.DType) *tpl.Template {
		tp, err := tpl.NewRegistry().New("KITCHEN")
		require.NoError(t, err)
		require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "bytes", DType: dt, Stats: []tpl.StatSpec{tpl.Sum()}}))
		return tp
	}
	v1, v2 := mk(voi.IntU32), mk(voi.IntU64)
	cfg := Config{MoreTemplates: []*tpl.Template{v1, v2}, DataDir: t.TempDir(), NoSync: true}
	s, err := New(cfg)
	require.NoError(t, err)
	s.closedFiles.Store(true) // as a delta pusher does
	for _, b := range []*blob.Blob{blob.New(v1, nil), blob.New(v2, nil)} {
		r := httptest.NewRequest(http.MethodPost, "/v1/blobs?host=a", bytes.NewReader(b.Bytes()))
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		require.Equal(t, 204, w.Code, w.Body.String())
	}
	s.Rotate()
	require.NoError(t, s.Close())

	s2, err := New(cfg)
	require.NoError(t, err)
	defer s2.Close()
	rec := s2.takeRecovered()
	require.Len(t, rec, 1)
	var labels []string
	for _, n := range rec[0].Blobs {
		labels = append(labels, fmt.Sprint(n.Labels))
	}
	slices.Sort(labels)
	require.Equal(t, []string{
		fmt.Sprintf("[{host a} {%s %08x}]", VersionLabel, v1.Hash()),
		"[{host a}]",
	}, labels)
}
