package collector

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

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
	c, err := decodeClosed(seed, wide)
	require.NoError(f, err)
	require.Equal(f, []uint64{2, 1}, c.Counts)
	require.Equal(f, uint64(3), c.Posts)
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
		c, err := decodeClosed(p, wide)
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
