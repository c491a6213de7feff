package natsjs_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/export/aggregate"
	"github.com/statsblob/statsblob/export/natsjs"
	"github.com/statsblob/statsblob/export/natsjs/internal/natstest"
	"github.com/statsblob/statsblob/ship"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// memStore keeps each partition's aggregates as blobs keyed by template and
// labels, merged with blob.Merge; Save encodes them in key order.
type memStore struct {
	mu    sync.Mutex
	parts map[int]*memPart
}

type memPart struct {
	s      *memStore
	p      int
	blobs  map[string]*blob.Blob
	closed bool
}

func newMemStore() *memStore { return &memStore{parts: map[int]*memPart{}} }

func (s *memStore) Open(p int, state []byte) (natsjs.Partition, error) {
	mp := &memPart{s: s, p: p, blobs: map[string]*blob.Blob{}}
	for len(state) > 0 {
		kl := int(binary.LittleEndian.Uint32(state))
		key := string(state[4 : 4+kl])
		state = state[4+kl:]
		bl := int(binary.LittleEndian.Uint32(state))
		b, err := blob.FromBytes(state[4:4+bl], nil)
		if err != nil {
			return nil, err
		}
		mp.blobs[key] = b
		state = state[4+bl:]
	}
	s.mu.Lock()
	s.parts[p] = mp
	s.mu.Unlock()
	return mp, nil
}

func (mp *memPart) Merge(m natsjs.Message) error {
	b, err := blob.FromBytes(m.Body, nil)
	if err != nil {
		return err
	}
	key := fmt.Sprintf("%08x%v", m.TplHash, m.Labels)
	mp.s.mu.Lock()
	defer mp.s.mu.Unlock()
	if dst := mp.blobs[key]; dst != nil {
		return blob.Merge(dst, b)
	}
	mp.blobs[key] = b
	return nil
}

func (mp *memPart) Save() ([]byte, error) {
	mp.s.mu.Lock()
	defer mp.s.mu.Unlock()
	var out []byte
	for _, k := range slices.Sorted(maps.Keys(mp.blobs)) {
		out = binary.LittleEndian.AppendUint32(out, uint32(len(k)))
		out = append(out, k...)
		b := mp.blobs[k].Bytes()
		out = binary.LittleEndian.AppendUint32(out, uint32(len(b)))
		out = append(out, b...)
	}
	return out, nil
}

func (mp *memPart) Close() {
	mp.s.mu.Lock()
	defer mp.s.mu.Unlock()
	mp.closed = true
	if mp.s.parts[mp.p] == mp {
		delete(mp.s.parts, mp.p)
	}
}

// totals sums VOI 0's SUM per key over the open partitions.
func (s *memStore) totals(t *testing.T) map[string]uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]uint64{}
	for _, mp := range s.parts {
		for k, b := range mp.blobs {
			v, err := b.FetchU64(0, voi.Sum)
			require.NoError(t, err)
			out[k] += v
		}
	}
	return out
}

func counterTemplate(t *testing.T) *tpl.Template {
	tp, err := tpl.NewRegistry().New("REQ")
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "requests", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}))
	return tp
}

// sumTemplate is a registry holding template T (one VOI x, a sum) and a
// blob of T counting 1.
func sumTemplate(t *testing.T) (*tpl.Registry, *tpl.Template, *blob.Blob) {
	reg := tpl.NewRegistry()
	tp, err := reg.New("T")
	require.NoError(t, err)
	require.NoError(t, tp.AddVOI(tpl.VOIDef{ID: 0, Name: "x", DType: voi.IntU64, Stats: []tpl.StatSpec{tpl.Sum()}}))
	b := blob.New(tp, nil)
	require.NoError(t, b.UpdateU64(0, 1))
	return reg, tp, b
}

func connect(t *testing.T, url string) (*nats.Conn, jetstream.JetStream) {
	nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	return nc, js
}

func TestShipThroughJetStream(t *testing.T) {
	cl := natstest.Start(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, js := connect(t, cl.URL())
	setup := natsjs.Setup{Partitions: 4, LeaseTTL: 2 * time.Second}
	require.NoError(t, setup.Ensure(ctx, js))

	tp := counterTemplate(t)
	want := map[string]uint64{}
	var sent uint64
	for h := range 6 {
		b := blob.New(tp, nil)
		host := fmt.Sprintf("web%d", h)
		sh, err := ship.New(&natsjs.Transport{JS: js, Partitions: 4}, ship.Options{Labels: []ship.Label{{Name: "host", Value: host}}})
		require.NoError(t, err)
		var mu sync.Mutex
		require.NoError(t, sh.AddBlob(b, &mu))
		for round := range 3 {
			mu.Lock()
			require.NoError(t, b.UpdateU64(0, uint64(100*h+round+1)))
			mu.Unlock()
			want[fmt.Sprintf("%08x[{host %s}]", tp.Hash(), host)] += uint64(100*h + round + 1)
			require.NoError(t, sh.Ship(ctx))
		}
		require.NoError(t, sh.Close(ctx))
		require.Zero(t, sh.Stats().Pending)
		sent += sh.Stats().Sent
	}

	store := newMemStore()
	c, err := natsjs.NewConsumer(ctx, natsjs.Config{Setup: setup, JS: js, ID: "c1", Store: store, Checkpoint: 100 * time.Millisecond})
	require.NoError(t, err)
	cctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(cctx) }()
	require.Eventually(t, func() bool { return c.Stats().Merged == sent }, 30*time.Second, 20*time.Millisecond)
	require.Equal(t, []int{0, 1, 2, 3}, c.Owned())
	require.Equal(t, want, store.totals(t))
	stop()
	require.NoError(t, <-done)
	require.Empty(t, c.Owned())

	// a second consumer takes over from the stored states: nothing twice
	store2 := newMemStore()
	c2, err := natsjs.NewConsumer(ctx, natsjs.Config{Setup: setup, JS: js, ID: "c2", Store: store2, Checkpoint: 100 * time.Millisecond})
	require.NoError(t, err)
	cctx, stop = context.WithCancel(ctx)
	go func() { done <- c2.Run(cctx) }()
	require.Eventually(t, func() bool { return len(c2.Owned()) == 4 }, 30*time.Second, 20*time.Millisecond)
	time.Sleep(300 * time.Millisecond)
	require.Equal(t, want, store2.totals(t))
	require.Equal(t, uint64(0), c2.Stats().Merged)
	stop()
	require.NoError(t, <-done)
}

// A message whose labels no export can carry, or past the limits the
// HTTP collector applies, is refused rather than merged into an aggregate
// no export shows (before, all four were merged and acknowledged).
func TestMergeRefusesLabelsTheExportsRefuse(t *testing.T) {
	reg, tp, b := sumTemplate(t)
	st := natsjs.NewSetStore(reg, aggregate.Config{})
	part, err := st.Open(0, nil)
	require.NoError(t, err)
	many := make([]ship.Label, natsjs.MaxLabels+1)
	for i := range many {
		many[i] = ship.Label{Name: fmt.Sprintf("l%02d", i), Value: "v"}
	}
	for i, c := range []struct {
		labels []ship.Label
		msg    string
	}{
		{[]ship.Label{{Name: "le", Value: "1"}}, `export: label name "le" is reserved: invalid argument`},
		{[]ship.Label{{Name: "bad name", Value: "x"}}, `export: label name "bad name": invalid argument`},
		{[]ship.Label{{Name: "host", Value: "\xff\xfe"}}, `export: label "host": value "\xff\xfe" is not valid UTF-8: invalid argument`},
		{[]ship.Label{{Name: "host", Value: strings.Repeat("v", natsjs.MaxLabelBytes+1)}}, `natsjs: label "host": name or value over 128 bytes: invalid argument`},
		{many, "natsjs: 17 labels, at most 16: invalid argument"},
		{[]ship.Label{{Name: "host", Value: ""}}, `export: label "host" has an empty value: invalid argument`},
		{[]ship.Label{{Name: "statsblob_template_hash", Value: "1"}}, `export: label name "statsblob_template_hash" is the collector's own: invalid argument`},
	} {
		err := part.Merge(natsjs.Message{StreamSeq: uint64(i + 1), TplHash: tp.Hash(), Labels: c.labels, Body: b.Bytes()})
		require.EqualError(t, err, c.msg)
	}
	require.Empty(t, st.Blobs())
	require.NoError(t, part.Merge(natsjs.Message{StreamSeq: 9, TplHash: tp.Hash(), Labels: []ship.Label{{Name: "host", Value: "a"}}, Body: b.Bytes()}))
	require.Len(t, st.Blobs(), 1)
}

// A partition's bytes are its templates ("SBNJS1", each template's hash
// and JSON form once) and its Set's state of version 1 ("SBAGG1": a
// partition's Set never expires an aggregate, so version 3's last-add
// times would tell nothing), and load in another SetStore to the same
// aggregates and the same bytes. The aggregate package writes version
// 3 for a Set without senders unless told (aggregate.Config.StateV1): it
// fails without NewSetStore's.
func TestPartitionStateIsVersion1(t *testing.T) {
	reg, tp, b := sumTemplate(t)
	part, err := natsjs.NewSetStore(reg, aggregate.Config{}).Open(0, nil)
	require.NoError(t, err)
	for i, host := range []string{"a", "b", "a"} {
		require.NoError(t, part.Merge(natsjs.Message{StreamSeq: uint64(i + 1), TplHash: tp.Hash(), Labels: []ship.Label{{Name: "host", Value: host}}, Body: b.Bytes()}))
	}
	state, err := part.Save()
	require.NoError(t, err)
	require.Equal(t, "SBNJS1\n", string(state[:7]))
	json, err := tp.MarshalJSON()
	require.NoError(t, err)
	head := binary.LittleEndian.AppendUint32(append([]byte("SBNJS1\n"), 1, 0, 0, 0), tp.Hash())
	head = append(binary.LittleEndian.AppendUint32(head, uint32(len(json))), json...)
	require.Equal(t, head, state[:len(head)])
	require.Equal(t, "SBAGG1\n", string(state[len(head):len(head)+7]))
	other := natsjs.NewSetStore(reg, aggregate.Config{})
	moved, err := other.Open(0, state)
	require.NoError(t, err)
	again, err := moved.Save()
	require.NoError(t, err)
	require.Equal(t, state, again)
	require.Len(t, other.Blobs(), 2)
}

// onePartition starts a one-node cluster, makes setup's stream (setup
// says Partitions: 1) and returns a context of a minute, the JetStream
// context and a Transport to the stream.
func onePartition(t *testing.T, setup natsjs.Setup) (context.Context, jetstream.JetStream, *natsjs.Transport) {
	t.Helper()
	cl := natstest.Start(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	_, js := connect(t, cl.URL())
	require.NoError(t, setup.Ensure(ctx, js))
	return ctx, js, &natsjs.Transport{JS: js, Partitions: setup.Partitions}
}
