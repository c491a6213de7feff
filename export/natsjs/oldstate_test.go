package natsjs_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/export"
	"github.com/statsblob/statsblob/export/aggregate"
	"github.com/statsblob/statsblob/export/natsjs"
	"github.com/statsblob/statsblob/tpl"
)

// TestEarlierStateCarriesTemplates: a partition state of an earlier
// version (the Set's state alone, no templates) is stored again with its
// templates at the first checkpoint of a collector that knows them, even
// if no message comes: once a version is dropped from the file, a
// collector restarted with it opens the partition. Before, the state
// stayed as it was until a message came.
func TestEarlierStateCarriesTemplates(t *testing.T) {
	setup := natsjs.Setup{Partitions: 1, LeaseTTL: time.Second}
	ctx, js, _ := onePartition(t, setup)
	v1 := counterTemplate(t)
	set, err := aggregate.New(aggregate.Config{StateV1: true}, time.Now())
	require.NoError(t, err)
	b := blob.New(v1, nil)
	require.NoError(t, b.UpdateU64(0, 9))
	labels := []export.Label{{Name: "host", Value: "web1"}}
	require.NoError(t, set.Add(fmt.Sprintf("%08x;4:host=4:web1", v1.Hash()), v1, labels, b))
	old := set.AppendState([]byte{0, 0, 0, 0}) // a ledger of version 1, no message; the Set's state
	require.True(t, bytes.HasPrefix(old[4:], []byte("SBAGG1\n")))
	kv, err := js.KeyValue(ctx, "STATSBLOB_state")
	require.NoError(t, err)
	_, err = kv.Create(ctx, "p0", old)
	require.NoError(t, err)

	file := &natsjs.TemplateSet{}
	file.Add([]*tpl.Template{v1})
	a, stopA := runConsumer(t, ctx, js, setup, "a", natsjs.NewSetStore(file, aggregate.Config{}), nil)
	require.Eventually(t, func() bool { return a.Stats().Checkpoints > 0 }, 10*time.Second, 20*time.Millisecond)
	stopA()
	e, err := kv.Get(ctx, "p0")
	require.NoError(t, err)
	require.True(t, bytes.Contains(e.Value(), []byte("SBNJS1\n")), "stored again with its templates")

	storeB := natsjs.NewSetStore(&natsjs.TemplateSet{}, aggregate.Config{}) // v1 dropped
	c, _ := runConsumer(t, ctx, js, setup, "b", storeB, nil)
	require.Eventually(t, func() bool { return len(c.Owned()) == 1 }, 10*time.Second, 20*time.Millisecond)
	require.Equal(t, map[string]uint64{"REQ[{host web1}]": 9}, setTotals(t, storeB))
}
