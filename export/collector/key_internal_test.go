package collector

import (
	"cmp"
	"slices"
	"strings"
	"testing"

	"github.com/statsblob/statsblob/export"
)

func compareLabels(a, b []export.Label) int {
	return slices.CompareFunc(a, b, func(x, y export.Label) int {
		return cmp.Or(strings.Compare(x.Name, y.Name), strings.Compare(x.Value, y.Value))
	})
}

// FuzzKey: two label sets share a key exactly when they are equal (issue
// 22, defect 1: NUL in values), and keys sort as the label sets do.
func FuzzKey(f *testing.F) {
	f.Add("x\x00zz\x00y", "", "x", "y")
	f.Add("a\x01", "b", "a", "\x01b")
	f.Add("a", "", "a\x00", "")
	f.Fuzz(func(t *testing.T, a1, a2, b1, b2 string) {
		set := func(v1, v2 string) []export.Label {
			ls := []export.Label{{Name: "svc", Value: v1}}
			if v2 != "" {
				ls = append(ls, export.Label{Name: "zz", Value: v2})
			}
			return ls
		}
		a, b := set(a1, a2), set(b1, b2)
		ka, kb := key(7, a), key(7, b)
		if (ka == kb) != (compareLabels(a, b) == 0) {
			t.Fatalf("%q and %q: keys %q and %q", a, b, ka, kb)
		}
		if got, want := strings.Compare(ka, kb), compareLabels(a, b); got != want {
			t.Fatalf("%q and %q: keys compare %d, labels %d", a, b, got, want)
		}
	})
}
