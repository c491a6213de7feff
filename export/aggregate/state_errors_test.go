package aggregate_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/export"
	"github.com/statsblob/statsblob/export/aggregate"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// edited is the bytes of a copy of sp that edit changed (sp is left as it
// was).
func (sp stateSpec) edited(edit func(sp *stateSpec)) []byte {
	sp.aggs = slices.Clone(sp.aggs)
	sp.table = slices.Clone(sp.table)
	sp.senders = slices.Clone(sp.senders)
	for i := range sp.senders {
		sp.senders[i].marks = slices.Clone(sp.senders[i].marks)
	}
	edit(&sp)
	return sp.bytes()
}

// LoadState's refusals in full: each wraps ErrState and says what was
// wrong and, for a field the reader refused, where: the bytes left to the
// end of the state when it was refused (after the field, for a value
// read whole and found wrong; before it, for one cut short or a varint
// that does not decode). A field cut short is named by its width (the
// state reads uint8, uint32, uint64, strings and varints); a count is
// refused if its items, at their fewest bytes, do not fit in the bytes
// left. The texts are pinned whole so that a change of the reader (the
// move to wire.Reader) can be shown to keep them.
func TestStateReadErrors(t *testing.T) {
	_, tp, spec := specSet(t)
	lookup := func(h uint32) (*tpl.Template, error) {
		if h == tp.Hash() {
			return tp, nil
		}
		return nil, fmt.Errorf("hash %d: %w", h, voi.ErrNotFound)
	}
	empty, err := tpl.NewRegistry().New("EMPTY") // no VOIs: no wide form
	require.NoError(t, err)
	u32 := func(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
	u64 := func(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }
	str := func(s string) []byte { return append(u32(uint32(len(s))), s...) }
	state := func(magic string, parts ...[]byte) []byte {
		return bytes.Join(append([][]byte{[]byte(magic)}, parts...), nil)
	}
	const v3, v2, v1 = "SBAGG3\n", "SBAGG2\n", "SBAGG1\n"
	start := u64(60e9)
	// spec's state, which the positions below are counted in: the header
	// (27 bytes: magic, start, count, last); a (120: its idle, 9 s, in 5
	// bytes; its blob 80) and c (116: idle 0, a byte); the key table (9);
	// the senders' count (4); s1 (67: 19, and marks of 17, 13 and 18
	// bytes, whens of 5, 1 and 6) and s2 (32: 19, a mark of 13).
	require.Len(t, spec.bytes(), 27+120+116+9+4+67+32)
	for _, c := range []struct {
		name   string
		p      []byte
		lookup func(uint32) (*tpl.Template, error)
		want   string
	}{
		// The header.
		{"no bytes", nil, nil, "no state header"},
		{"magic cut short", []byte("SBAGG3"), nil, "no state header"},
		{"version 4", state("SBAGG4\n", start, u32(0), u32(0), u32(0)), nil, "no state header"},

		// Fields cut short, at each width the state reads.
		{"start cut short", state(v3, []byte{1, 2, 3}), nil, "short uint64 at 3 bytes from the end"},
		{"count cut short", state(v3, start, []byte{1, 2}), nil, "short uint32 at 2 bytes from the end"},
		{"key cut short", state(v3, start, u32(1), u64(70e9), u32(100), make([]byte, 13)), nil, "short string at 13 bytes from the end"},
		{"sender's age cut short", state(v3, start, u32(0), u32(0), u32(1), str("sender"), u64(70e9)), nil, "short uint8 at 0 bytes from the end"},
		{"far mark's time cut short", spec.edited(func(sp *stateSpec) { sp.senders[1].marks[0].when = []byte{3, 0, 1, 2} }), nil, "short uint64 at 2 bytes from the end"},
		{"state cut in a blob", spec.bytes()[:200], nil, "short string at 17 bytes from the end"},

		// Counts whose items, at their fewest bytes, do not fit.
		{"aggregates beyond the bytes", state(v3, start, u32(1), make([]byte, 24)), nil, "count beyond the bytes at 24 bytes from the end"},
		{"aggregates beyond the bytes, version 2", state(v2, start, u32(1), make([]byte, 23)), nil, "count beyond the bytes at 23 bytes from the end"},
		{"labels beyond the bytes", spec.edited(func(sp *stateSpec) {
			sp.aggs, sp.table, sp.senders = sp.aggs[:1], nil, nil
			sp.aggs[0].labels = slices.Repeat(sp.aggs[0].labels, 9)
			sp.aggs[0].raw = nil
			sp.last = sp.aggs[0].at
		})[:7+8+4+8+5+4+4+8*8], nil, "count beyond the bytes at 64 bytes from the end"},
		{"key table beyond the bytes", spec.edited(func(sp *stateSpec) { sp.nTable = 1 << 30 }), nil, "count beyond the bytes at 108 bytes from the end"},
		{"senders beyond the bytes", state(v3, start, u32(0), u32(0), u32(1), make([]byte, 16)), nil, "count beyond the bytes at 16 bytes from the end"},
		{"marks beyond the bytes", spec.edited(func(sp *stateSpec) { sp.nMarks = 7 }), nil, "count beyond the bytes at 80 bytes from the end"}, // (6 of 13 bytes fit)

		// Varints that do not decode, or not to the shortest form.
		{"idle cut short", state(v3, start, u32(1), u64(70e9), str("abcdefghij"), u32(tp.Hash()), u32(0), u64(1), []byte{0x80}), nil, "bad varint at 1 bytes from the end"},
		{"idle past 64 bits", spec.edited(func(sp *stateSpec) { sp.aggs[1].idle = bytes.Repeat([]byte{0xff}, 11) }), nil, "bad varint at 207 bytes from the end"},
		{"idle past 64 bits in its 10th byte", spec.edited(func(sp *stateSpec) { sp.aggs[1].idle = append(bytes.Repeat([]byte{0xff}, 9), 2) }), nil, "bad varint at 206 bytes from the end"},
		{"idle longer than its value", spec.edited(func(sp *stateSpec) { sp.aggs[1].idle = []byte{0x80, 0} }), nil, "varint longer than its value at 198 bytes from the end"},
		{"idle longer than its value, 10 bytes", spec.edited(func(sp *stateSpec) { sp.aggs[1].idle = append(bytes.Repeat([]byte{0xff}, 9), 0) }), nil, "varint longer than its value at 206 bytes from the end"},
		{"mark's time cut short", spec.edited(func(sp *stateSpec) { sp.senders[1].marks[0].when = []byte{0x80} }), nil, "bad varint at 1 bytes from the end"},
		{"mark's time past 64 bits", spec.edited(func(sp *stateSpec) { sp.senders[1].marks[0].when = bytes.Repeat([]byte{0xff}, 11) }), nil, "bad varint at 11 bytes from the end"},
		{"mark's time longer than its value", spec.edited(func(sp *stateSpec) { sp.senders[1].marks[0].when = []byte{0x80, 0} }), nil, "varint longer than its value at 2 bytes from the end"},

		// Values version 3 does not write.
		{"sender's age 3", spec.edited(func(sp *stateSpec) { sp.senders[1].age = 3 }), nil, "age beyond 2 at 17 bytes from the end"},
		{"far mark's age 3", spec.edited(func(sp *stateSpec) { sp.senders[1].marks[0].when = []byte{3, 3, 0, 0, 0, 0, 0, 0, 0, 0} }), nil, "age beyond 2 at 8 bytes from the end"},
		{"far mark time with bits set", spec.edited(func(sp *stateSpec) { sp.senders[1].marks[0].when = []byte{7, 0, 0, 0, 0, 0, 0, 0, 0, 0} }), nil, "far mark time with bits set at 9 bytes from the end"},
		{"far mark time that is near", spec.edited(func(sp *stateSpec) {
			sp.senders[1].marks[0].when = binary.LittleEndian.AppendUint64([]byte{3, 0}, uint64(sp.senders[1].at))
		}), nil, "far mark time that is near at 0 bytes from the end"},
		{"idle beyond the earliest time", spec.edited(func(sp *stateSpec) {
			sp.last, sp.aggs[1].at = math.MinInt64+5, math.MinInt64+5
			sp.aggs[0].idle = binary.AppendUvarint(nil, 6)
		}), nil, "idle beyond the earliest time at 312 bytes from the end"},
		{"no aggregate at the latest last-add time", spec.edited(func(sp *stateSpec) { sp.last++ }), nil, "no aggregate's last add is the latest, 70000000001"},

		// Orders, and what is there twice or missing.
		{"aggregates out of order", spec.edited(func(sp *stateSpec) { sp.aggs[0], sp.aggs[1] = sp.aggs[1], sp.aggs[0] }), nil, `aggregate "a" after "c"`},
		{"aggregate twice", spec.edited(func(sp *stateSpec) { sp.aggs[1].key = "a" }), nil, `aggregate "a" twice`},
		{"key table out of order", spec.edited(func(sp *stateSpec) {
			sp.table = []string{"d", "b"}
			sp.senders[1].marks = append(sp.senders[1].marks, specMark{ref: 3})
		}), nil, `key table: "b" after "d"`},
		{"key twice in the key table", spec.edited(func(sp *stateSpec) {
			sp.table = []string{"b", "b"}
			sp.senders[1].marks = append(sp.senders[1].marks, specMark{ref: 3})
		}), nil, `key table: "b" after "b"`},
		{"aggregate's key in the key table", spec.edited(func(sp *stateSpec) { sp.table = []string{"a", "b"} }), nil, `the key table holds aggregate "a"`},
		{"key of no mark", spec.edited(func(sp *stateSpec) { sp.table = []string{"b", "d"} }), nil, `key table: "d" is no mark's key`},
		{"mark of no key", spec.edited(func(sp *stateSpec) { sp.senders[1].marks[0].ref = 3 }), nil, `sender "s2": mark of key 3 after -1, of 3 keys`},
		{"marks out of order", spec.edited(func(sp *stateSpec) { sp.senders[0].marks[0].ref = 2 }), nil, `sender "s1": mark of key 1 after 2, of 3 keys`},
		{"mark twice", spec.edited(func(sp *stateSpec) { sp.senders[0].marks[1].ref = 0 }), nil, `sender "s1": mark of key 0 after 0, of 3 keys`},
		{"senders out of order", spec.edited(func(sp *stateSpec) { sp.senders[0], sp.senders[1] = sp.senders[1], sp.senders[0] }), nil, `sender "s1" after "s2"`},
		{"sender twice", spec.edited(func(sp *stateSpec) { sp.senders[1].id = "s1" }), nil, `sender "s1" twice`},
		{"sender twice, version 1", spec.edited(func(sp *stateSpec) {
			sp.version, sp.table = 1, nil
			sp.senders = []specSender{{id: "s1", marks: []specMark{{key: "a"}}}, {id: "s1"}}
		}), nil, `sender "s1" twice`},
		{"bytes after the state", append(spec.bytes(), 0, 0), nil, "2 bytes after the state"},
		{"bytes after a state of version 1", state(v1, start, u32(0), u32(0), []byte{9}), nil, "1 bytes after the state"},

		// What the bytes hold and the Set refuses: wrapping the cause too.
		{"template lookup does not find", spec.edited(func(sp *stateSpec) { sp.aggs[0].hash++ }), nil,
			fmt.Sprintf(`aggregate "a": template hash %d (%08x): hash %d: not found`, tp.Hash()+1, tp.Hash()+1, tp.Hash()+1)},
		{"template without a wide form", spec.bytes(), func(uint32) (*tpl.Template, error) { return empty, nil },
			`aggregate "a": template EMPTY: tpl: widen EMPTY: no VOIs: invalid argument`},
		{"blob cut short", spec.edited(func(sp *stateSpec) { sp.aggs[1].raw = sp.aggs[1].raw[:len(sp.aggs[1].raw)-1] }), nil,
			`aggregate "c": blob: blob: cursz 80 exceeds the 79 bytes given: invalid argument`},
		{"blob of ABI version 2", spec.edited(func(sp *stateSpec) { sp.aggs[1].raw = slices.Clone(sp.aggs[1].raw); sp.aggs[1].raw[0] = 2 }), nil,
			`aggregate "c": blob: blob: ABI version 2, want 1: not supported`},
	} {
		s, err := aggregate.New(aggregate.Config{}, time.Unix(0, 0))
		require.NoError(t, err)
		l := lookup
		if c.lookup != nil {
			l = c.lookup
		}
		err = s.LoadState(c.p, l)
		require.EqualError(t, err, "aggregate: bad state: "+c.want, c.name)
		require.ErrorIs(t, err, aggregate.ErrState, c.name)
		require.Zero(t, s.Len(), c.name)
		require.Zero(t, s.Stats().Marks, c.name)
	}

	// A Set that holds aggregates is no refusal of the bytes.
	s, err := aggregate.New(aggregate.Config{}, time.Unix(0, 0))
	require.NoError(t, err)
	require.NoError(t, s.Add("x", tp, []export.Label{{Name: "k", Value: "x"}}, blob.New(tp, nil)))
	err = s.LoadState(spec.bytes(), lookup)
	require.EqualError(t, err, "aggregate: state: the set already holds aggregates: invalid argument")
	require.NotErrorIs(t, err, aggregate.ErrState)
}
