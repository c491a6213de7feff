package blob_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/tdigest"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// TestFoldAccurateBuffered: Fold and Widen count the samples that
// accurate-mode digests of the sources and of dst still buffer (they
// were left out: a Fold of live blobs lost every sample since their last
// view).
func TestFoldAccurateBuffered(t *testing.T) {
	tp := modeTemplate(t, tdigest.Accurate, 20)
	src := blob.New(tp, nil)
	for v := range uint32(10) {
		require.NoError(t, src.UpdateU32(0, 100*v))
	}
	dst := blob.New(tp, nil)
	require.NoError(t, dst.UpdateU32(0, 5))
	_, err := blob.Fold(dst, src)
	require.NoError(t, err)
	require.Equal(t, uint64(11), countOf(t, digestOf(t, dst).Data))
	require.Equal(t, uint64(10), countOf(t, digestOf(t, src).Data))

	w, err := tpl.Widen(tp)
	require.NoError(t, err)
	require.NoError(t, src.UpdateU32(0, 7)) // buffered again
	wide, err := blob.Widen(w, src, nil)
	require.NoError(t, err)
	n, err := tdigest.Count(digestOf(t, wide).Data, voi.TDgstClust64)
	require.NoError(t, err)
	require.Equal(t, uint64(11), n)
}
