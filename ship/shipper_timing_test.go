//go:build go1.24

package ship_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/family"
	"github.com/statsblob/statsblob/ship"
)

// discard acknowledges every message without sending it.
type discard struct{}

func (discard) Send(context.Context, ship.Message) error { return nil }

// BenchmarkShipRound: one round (snapshot, merge, send) of a family of 100
// label sets through a transport that costs nothing: the shipper's own
// cost per interval.
func BenchmarkShipRound(b *testing.B) {
	fam, err := family.New(webTemplate(b), []string{"route"}, family.Options{Shards: 2})
	require.NoError(b, err)
	for i := range 100 {
		m, err := fam.With("r" + strconv.Itoa(i))
		require.NoError(b, err)
		update(b, m, uint64(i))
	}
	sh, err := ship.New(discard{}, ship.Options{})
	require.NoError(b, err)
	require.NoError(b, sh.AddFamily(fam))
	b.ReportAllocs()
	for b.Loop() {
		if err := sh.Ship(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}
