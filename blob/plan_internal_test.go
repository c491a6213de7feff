package blob

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// TestVOIPlanSize pins the size the decoding bound relies on: a plan
// entry per 8-byte VOI slot, two bytes per blob byte
// (tostr.TestResourceBounds checks the whole decode).
func TestVOIPlanSize(t *testing.T) {
	require.Equal(t, uintptr(16), unsafe.Sizeof(voiPlan{}))
}
