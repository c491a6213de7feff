package natsjs_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/export"
	"github.com/statsblob/statsblob/export/aggregate"
	"github.com/statsblob/statsblob/export/internal/fixture"
	"github.com/statsblob/statsblob/export/natsjs"
	"github.com/statsblob/statsblob/export/promexport"
	"github.com/statsblob/statsblob/internal/abi"
	"github.com/statsblob/statsblob/ship"
)

// upgradeMessages are fixture.Upgrade's posts as a shipper of each
// version on each host publishes them.
func upgradeMessages(posts []fixture.UpgradePost) []ship.Message {
	out := make([]ship.Message, len(posts))
	for i, p := range posts {
		out[i] = ship.Message{Sender: fmt.Sprint("s", i), Seq: 1, SettledBelow: 1, Labels: []ship.Label{{Name: "host", Value: p.Host}}, Body: p.Body}
	}
	return out
}

// kitchenLines returns the lines of g's text exposition about KITCHEN's
// metrics (their HELP and TYPE lines too), in the exposition's order;
// the gathering must report no error (no clash, no invalid metric).
func kitchenLines(t *testing.T, g prometheus.Gatherer) string {
	t.Helper()
	mfs, err := g.Gather()
	require.NoError(t, err)
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		require.NoError(t, enc.Encode(mf))
	}
	return kitchenOf(buf.String())
}

func kitchenOf(text string) string {
	var out strings.Builder
	for _, l := range strings.SplitAfter(text, "\n") {
		if strings.HasPrefix(strings.TrimPrefix(strings.TrimPrefix(l, "# HELP "), "# TYPE "), "kitchen_") {
			out.WriteString(l)
		}
	}
	return out.String()
}

func sortedLines(text string) []string {
	return slices.Sorted(slices.Values(strings.Split(text, "\n")))
}

// storeExposition is what statsblob-collector serves of store on
// /metrics (the aggregates' part).
func storeExposition(t *testing.T, store *natsjs.SetStore) string {
	t.Helper()
	pc, err := promexport.New(store, export.Options{})
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	reg.MustRegister(pc)
	return kitchenLines(t, reg)
}

// TestVersionsShareNoSeries: two versions of a template published under
// one label set during a rolling upgrade (fixture.Upgrade) are both
// exported, the older version's series with export.VersionLabel, exactly
// as the HTTP collector exports the same posts
// (fixture.UpgradeExposition, export/collector's TestUpgradeExposition).
// The versions' messages of host=a are in two partitions (the partition
// hashes the template hash): the rule takes all the collector's
// partitions together; and the newest version is the templates file's
// last, not the last to arrive (the new version's message comes first).
// Before, both were exported without the label: the exporter reported
// the clash (export.ErrNameClash) and left the older version's series
// out for as long as both posted.
func TestVersionsShareNoSeries(t *testing.T) {
	file, posts := fixture.Upgrade()
	k1, k2 := file[0], file[1]
	host := []ship.Label{{Name: "host", Value: "a"}}
	setup := natsjs.Setup{Partitions: 4, LeaseTTL: 2 * time.Second}
	require.NotEqual(t, natsjs.PartitionOf(k1.Hash(), host, 4), natsjs.PartitionOf(k2.Hash(), host, 4))
	ctx, js, tr := onePartition(t, setup)
	for _, m := range upgradeMessages(posts) {
		require.NoError(t, tr.Send(ctx, m))
	}
	reg := &natsjs.TemplateSet{}
	require.Equal(t, 2, reg.Add(file))
	store := natsjs.NewSetStore(reg, aggregate.Config{})
	c, _ := runConsumer(t, ctx, js, setup, "c", store, nil)
	require.Eventually(t, func() bool { return c.Stats().Merged == 3 }, 30*time.Second, 20*time.Millisecond)
	require.Zero(t, c.Stats().Refused)

	got := storeExposition(t, store)
	// The HTTP collector writes a family's series in its aggregates'
	// order, the registry here in its own: the same lines.
	require.Equal(t, sortedLines(fixture.UpgradeExposition), sortedLines(got))
	var bytesTotal []string
	for _, l := range sortedLines(got) {
		if strings.HasPrefix(l, "kitchen_bytes_total{") {
			bytesTotal = append(bytesTotal, l)
		}
	}
	require.Equal(t, []string{
		`kitchen_bytes_total{host="a",statsblob_template_hash="` + fmt.Sprintf("%08x", k1.Hash()) + `"} 1448`,
		`kitchen_bytes_total{host="a"} 5`,
		`kitchen_bytes_total{host="b"} 1448`, // no other version shares host=b
	}, bytesTotal)
}

// The rule sees the aggregates of the partitions a collector owns. Two
// versions' aggregates of one label set are in two partitions (the
// partition hashes the template hash), and their owners can be two
// collectors: each then exports its version's series without the label,
// no clash in either (Prometheus tells the two apart by the scrape's
// instance label); once one collector owns both, the older's carries it.
func TestVersionsAcrossOwners(t *testing.T) {
	file, posts := fixture.Upgrade()
	reg := &natsjs.TemplateSet{}
	reg.Add(file)
	msgs := upgradeMessages(posts)
	merge := func(s *natsjs.SetStore, ms ...ship.Message) {
		t.Helper()
		parts := map[int]natsjs.Partition{}
		for _, m := range ms {
			p := natsjs.PartitionOf(hashOf(m.Body), m.Labels, 4)
			part := parts[p]
			if part == nil {
				var err error
				part, err = s.Open(p, nil)
				require.NoError(t, err)
				parts[p] = part
			}
			require.NoError(t, part.Merge(natsjs.Message{StreamSeq: 1, TplHash: hashOf(m.Body), Labels: m.Labels, Body: m.Body}))
		}
	}
	bytesTotal := func(s *natsjs.SetStore) []string {
		t.Helper()
		var out []string
		for _, l := range sortedLines(storeExposition(t, s)) { // no clash: storeExposition's Gather has no error
			if strings.HasPrefix(l, "kitchen_bytes_total{") {
				out = append(out, l)
			}
		}
		return out
	}
	newer, older := natsjs.NewSetStore(reg, aggregate.Config{}), natsjs.NewSetStore(reg, aggregate.Config{})
	merge(newer, msgs[0]) // the new version's host=a: partition 0 of 4
	merge(older, msgs[1]) // the old version's host=a: partition 2 of 4
	require.Equal(t, []string{`kitchen_bytes_total{host="a"} 5`}, bytesTotal(newer))
	require.Equal(t, []string{`kitchen_bytes_total{host="a"} 1448`}, bytesTotal(older))

	both := natsjs.NewSetStore(reg, aggregate.Config{})
	merge(both, msgs...)
	require.Equal(t, []int{0, 2, 3}, both.Partitions())
	require.Equal(t, []string{
		`kitchen_bytes_total{host="a",statsblob_template_hash="` + fmt.Sprintf("%08x", file[0].Hash()) + `"} 1448`,
		`kitchen_bytes_total{host="a"} 5`,
		`kitchen_bytes_total{host="b"} 1448`,
	}, bytesTotal(both))
}

// hashOf is a blob's template hash, from its header.
func hashOf(body []byte) uint32 { return binary.LittleEndian.Uint32(body[abi.OffTplHash:]) }
