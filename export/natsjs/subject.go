package natsjs

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"net/url"
	"slices"
	"strings"

	"github.com/statsblob/statsblob/ship"
)

// Headers carried by each message beside ship's Statsblob-Sender,
// Statsblob-Seq and Statsblob-Settled-Below.
const (
	// HeaderLabels holds the message's labels URL-encoded, names sorted
	// (host=web1&svc=api).
	HeaderLabels = "Statsblob-Labels"
	// HeaderMsgID is JetStream's de-duplication header.
	HeaderMsgID = "Nats-Msg-Id"
)

// PartitionOf returns the partition of a label set of a template among n:
// FNV-1a of the template hash and the labels (sorted by name), modulo n.
func PartitionOf(tplHash uint32, labels []ship.Label, n int) int {
	h := fnv.New64a()
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], tplHash)
	h.Write(b[:])
	for _, l := range labels {
		h.Write([]byte(l.Name))
		h.Write([]byte{0})
		binary.LittleEndian.PutUint32(b[:], uint32(len(l.Value)))
		h.Write(b[:]) // the value's length, so no value can mimic a separator
		h.Write([]byte(l.Value))
	}
	return int(h.Sum64() % uint64(n))
}

// Subject returns the subject of a message of partition p of a template.
func Subject(prefix string, p int, tplHash uint32) string {
	return fmt.Sprintf("%s.%d.%08x", prefix, p, tplHash)
}

// encodeLabels returns labels as HeaderLabels carries them.
func encodeLabels(labels []ship.Label) string {
	v := make(url.Values, len(labels))
	for _, l := range labels {
		v.Set(l.Name, l.Value)
	}
	return v.Encode() // sorted by name
}

// decodeLabels parses HeaderLabels: names unique and non-empty, sorted.
func decodeLabels(s string) ([]ship.Label, error) {
	v, err := url.ParseQuery(s)
	if err != nil {
		return nil, fmt.Errorf("natsjs: labels %q: %w", s, err)
	}
	out := make([]ship.Label, 0, len(v))
	for name, vals := range v {
		if name == "" || len(vals) != 1 {
			return nil, fmt.Errorf("natsjs: labels %q: a label named %q given %d times", s, name, len(vals))
		}
		out = append(out, ship.Label{Name: name, Value: vals[0]})
	}
	slices.SortFunc(out, func(a, b ship.Label) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}
