package qmath

import (
	"math/rand/v2"
	"testing"

	"github.com/statsblob/statsblob/internal/decimal"
)

// The multiply path of AppendText (decimal.AppendFrac) gives the digits of the C's digit loop
// for every fraction width it is used for.
func TestAppendTextFastPathMatchesDigitLoop(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for nf := uint(1); nf <= decimal.MaxFracBits; nf++ {
		for i := 0; i < 20000; i++ {
			frac := r.Uint64() & (1<<nf - 1)
			if i < 4 {
				frac = []uint64{0, 1, 1<<nf - 1, 1 << (nf - 1)}[i]
			}
			want := make([]byte, 0, nf)
			f := frac
			for range nf {
				var d uint64
				d, f = fracDigit(f, nf)
				want = append(want, byte('0'+d))
			}
			got := decimal.AppendFrac(nil, frac, nf)
			if string(got) != string(want) {
				t.Fatalf("nf=%d frac=%#x: %s, digit loop %s", nf, frac, got, want)
			}
		}
	}
}
