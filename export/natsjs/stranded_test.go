package natsjs_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/export/aggregate"
	"github.com/statsblob/statsblob/export/natsjs"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// TestDroppedVersionNotStranded: a partition whose state holds
// aggregates of a template version the templates file no longer lists
// is still taken, merged into and exported by a collector that restarts
// with that file: the state carries its aggregates' templates, and the
// collector learns them (ranked below the file's versions of the name).
// Before, every collector's Open failed with voi.ErrNoTemplate on every
// renew: nobody consumed the partition, and its messages waited until
// the stream's MaxAge removed them.
func TestDroppedVersionNotStranded(t *testing.T) {
	setup := natsjs.Setup{Partitions: 1, LeaseTTL: time.Second}
	ctx, js, tr := onePartition(t, setup)
	mk := func(voiName string) *tpl.Template {
		tp, err := tpl.NewRegistry().New("REQ")
		require.NoError(t, err)
		require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: voiName, DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}))
		return tp
	}
	v1, v2 := mk("requests"), mk("calls")
	require.NoError(t, tr.Send(ctx, countMsg(t, v1, "s1", 1, "web1", 5)))
	require.NoError(t, tr.Send(ctx, countMsg(t, v2, "s2", 1, "web2", 7)))

	both := &natsjs.TemplateSet{}
	both.Add([]*tpl.Template{v1, v2})
	a, stopA := runConsumer(t, ctx, js, setup, "a", natsjs.NewSetStore(both, aggregate.Config{}), nil)
	require.Eventually(t, func() bool { st := a.Stats(); return st.Merged == 2 && st.Unacked == 0 }, 30*time.Second, 20*time.Millisecond)
	stopA()

	// v1 dropped from the file; the collector restarts with it.
	file := &natsjs.TemplateSet{}
	file.Add([]*tpl.Template{v2})
	storeB := natsjs.NewSetStore(file, aggregate.Config{})
	b, stopB := runConsumer(t, ctx, js, setup, "b", storeB, nil)
	require.Eventually(t, func() bool { return len(b.Owned()) == 1 }, 10*time.Second, 20*time.Millisecond, "partition 0 stranded")
	require.Equal(t, map[string]uint64{"REQ[{host web1}]": 5, "REQ[{host web2}]": 7}, setTotals(t, storeB))
	got, err := file.ByHash(v1.Hash())
	require.NoError(t, err, "v1 learned from the state")
	require.Equal(t, []uint32{v1.Hash(), v2.Hash()}, tplHashes(file.Templates()), "learned below the file's version")
	require.Equal(t, 1, storeB.Learned())

	// A new message of v1 is merged, not left waiting.
	require.NoError(t, tr.Send(ctx, countMsg(t, got, "s1", 2, "web1", 2)))
	require.Eventually(t, func() bool { st := b.Stats(); return st.Merged == 1 && st.Unacked == 0 }, 30*time.Second, 20*time.Millisecond)
	require.Zero(t, b.Stats().Waiting)
	stopB()

	// B's state carries v1 too: a third collector with the same file.
	file3 := &natsjs.TemplateSet{}
	file3.Add([]*tpl.Template{v2})
	storeC := natsjs.NewSetStore(file3, aggregate.Config{})
	c, _ := runConsumer(t, ctx, js, setup, "c", storeC, nil)
	require.Eventually(t, func() bool { return len(c.Owned()) == 1 }, 10*time.Second, 20*time.Millisecond)
	require.Equal(t, map[string]uint64{"REQ[{host web1}]": 7, "REQ[{host web2}]": 7}, setTotals(t, storeC))
}

func tplHashes(ts []*tpl.Template) []uint32 {
	out := make([]uint32, len(ts))
	for i, tp := range ts {
		out[i] = tp.Hash()
	}
	return out
}
