package export

import (
	"encoding/binary"
	"sync"

	"github.com/statsblob/statsblob/voi"
)

// nameCache remembers Mapper.name's results and the help texts by what
// they depend on, so that the blobs of one template (every blob of a
// collector's aggregate, scrape after scrape) are named once, not once per
// blob: naming checks the series names for collisions and help texts are
// formatted, which cost a scrape of 10,000 aggregates about a sixth of its
// time.
type nameCache struct {
	mu    sync.RWMutex
	m     map[string][]nameOut // by nameKey
	helps map[helpKey]string
}

// helpKey is what voiStats.help reads.
type helpKey struct {
	help, tpl, voi, what string
	dt                   voi.DType
}

// help returns vs.help(tplName, what), made once per family of a
// template.
func (m *Mapper) help(vs *voiStats, tplName, what string) string {
	c := &m.names
	k := helpKey{vs.meta.Help, tplName, vs.name, what, vs.dt}
	c.mu.RLock()
	h, ok := c.helps[k]
	c.mu.RUnlock()
	if ok {
		return h
	}
	h = vs.help(tplName, what)
	c.mu.Lock()
	if c.helps == nil {
		c.helps = map[helpKey]string{}
	}
	if len(c.helps) < maxHelps {
		c.helps[k] = h
	}
	c.mu.Unlock()
	return h
}

// nameOut is what name sets on one VOI.
type nameOut struct{ base, unit string }

// The cache's bounds: names are kept for maxNames templates (with their
// metadata), help texts for maxHelps families, so that it never grows with
// what the blobs hold; past them, names and texts are made afresh.
const (
	maxNames = 4096
	maxHelps = 16 * maxNames
)

// cachedName sets every VOI's base name and unit as m.name does.
func (m *Mapper) cachedName(tplName string, vois []*voiStats) error {
	c := &m.names
	var buf [512]byte
	key := nameKey(buf[:0], tplName, vois)
	c.mu.RLock()
	outs, ok := c.m[string(key)]
	c.mu.RUnlock()
	if ok {
		for i, vs := range vois {
			vs.base, vs.unit = outs[i].base, outs[i].unit
		}
		return nil
	}
	if err := m.name(tplName, vois); err != nil {
		return err // not cached: rare, and the message is made afresh
	}
	outs = make([]nameOut, len(vois))
	for i, vs := range vois {
		outs[i] = nameOut{vs.base, vs.unit}
	}
	c.mu.Lock()
	if c.m == nil {
		c.m = map[string][]nameOut{}
	}
	if len(c.m) < maxNames {
		c.m[string(key)] = outs
	}
	c.mu.Unlock()
	return nil
}

// nameKey appends to dst everything Mapper.name reads of the VOIs besides
// the Mapper's options: the template's name, and per VOI its id, name,
// unit, whether it is hidden, the kind of its SUM family, which
// statistics and level it has, and its histogram's shape.
// Strings are preceded by their lengths, so that no two inputs share a
// key whatever bytes the names hold.
func nameKey(dst []byte, tplName string, vois []*voiStats) []byte {
	str := func(dst []byte, s string) []byte {
		return append(binary.AppendUvarint(dst, uint64(len(s))), s...)
	}
	dst = str(dst, tplName)
	for _, vs := range vois {
		dst = binary.AppendVarint(dst, int64(vs.id))
		dst = str(dst, vs.name)
		dst = str(dst, vs.unit)
		var has uint16 // a bit per statistic type (voi.NumSTypes: 6)
		for t, s := range vs.stats {
			if s != nil {
				has |= 1 << t
			}
		}
		flags := byte(0)
		if vs.hidden {
			flags |= 1
		}
		if vs.level != nil {
			flags |= 2
		}
		dst = append(dst, byte(has), byte(has>>8), flags, byte(vs.sumKind()))
		if h := vs.hv; h != nil {
			dst = append(dst, 1, byte(h.shape), byte(h.kind))
		}
	}
	return dst
}
