package natsjs

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/statsblob/statsblob/export/aggregate"
	"github.com/statsblob/statsblob/export/internal/hashfmt"
	"github.com/statsblob/statsblob/export/internal/wire"
	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// A SetStore partition's bytes (what its Save returns, stored after the
// consumer's ledger) are its aggregates' templates and its Set's state
// (little-endian):
//
//	"SBNJS1\n"   magic and version
//	u32 n, n × (u32 template hash, u32 len, len bytes: the template's JSON form)
//	the aggregate.Set's state (AppendState)
//
// The templates are those of the Set's aggregates, each once (the
// senders' templates, which LoadState looks up by hash), in the
// collector's ranking of versions (TemplateSet) or else by hash; a
// template's JSON form is what tpl.ReadJSON reads back, at most
// tpl.MaxJSONSize bytes. A collector that does not know one of them (a
// version dropped from its templates file since the state was written)
// loads the partition with the state's copy and learns it. Partition
// bytes of earlier versions are the Set's state alone (its magic starts
// "SBAGG"): they carry no template, and load only if the collector
// knows every template of their aggregates.
const setStateMagic = "SBNJS1\n"

// carriedTpl is one template a partition's bytes carry.
type carriedTpl struct {
	hash uint32
	json []byte
}

// template decodes the carried template (each in a registry of its own,
// as a templates file's are). Its errors wrap voi.ErrInvalid (ReadJSON's),
// or say that the JSON form is of another hash.
func (c carriedTpl) template() (*tpl.Template, error) {
	t, err := tpl.ReadJSON(tpl.NewRegistry(), c.json)
	if err != nil {
		return nil, err
	}
	if t.Hash() != c.hash {
		return nil, fmt.Errorf("natsjs: the state's template %s is of hash %s: %w", hashfmt.String(c.hash), hashfmt.String(t.Hash()), voi.ErrInvalid)
	}
	return t, nil
}

// appendSetState appends the magic and the templates of a partition's
// bytes to dst; the Set's state follows them.
func appendSetState(dst []byte, tpls []carriedTpl) []byte {
	dst = append(dst, setStateMagic...)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(tpls)))
	for _, c := range tpls {
		dst = binary.LittleEndian.AppendUint32(dst, c.hash)
		dst = binary.LittleEndian.AppendUint32(dst, uint32(len(c.json)))
		dst = append(dst, c.json...)
	}
	return dst
}

// errSetStateShort is readSetState's error for bytes cut short.
var errSetStateShort = errors.New("templates cut short")

// readSetState splits a partition's bytes into the templates they carry
// (in their order; none for bytes of earlier versions) and the Set's
// state. The templates' JSON forms are not decoded (carriedTpl.template
// does that for those the collector does not know). Errors wrap
// aggregate.ErrState: a count past the bytes, an empty or oversized
// JSON form, a hash given twice. The carried JSON forms are v's bytes.
func readSetState(v []byte) ([]carriedTpl, []byte, error) {
	if len(v) < len(setStateMagic) || string(v[:len(setStateMagic)]) != setStateMagic {
		return nil, v, nil // an earlier version's: the Set's state alone
	}
	r := wire.New(v[len(setStateMagic):], func(string, int) error { return errSetStateShort })
	n := r.U32()
	if r.Err() == nil && !r.Fits(uint64(n), 4+4+1) {
		return nil, nil, fmt.Errorf("%w: natsjs: %d templates in %d bytes", aggregate.ErrState, n, r.Len())
	}
	out := make([]carriedTpl, 0, n)
	seen := make(map[uint32]bool, n)
	for range n {
		c := carriedTpl{hash: r.U32()}
		size := r.U32()
		if r.Err() != nil {
			break
		}
		if size == 0 || size > tpl.MaxJSONSize {
			return nil, nil, fmt.Errorf("%w: natsjs: template %s: a JSON form of %d bytes", aggregate.ErrState, hashfmt.String(c.hash), size)
		}
		if seen[c.hash] {
			return nil, nil, fmt.Errorf("%w: natsjs: template %s twice", aggregate.ErrState, hashfmt.String(c.hash))
		}
		seen[c.hash] = true
		c.json = r.Bytes(int(size))
		out = append(out, c)
	}
	if r.Err() != nil {
		return nil, nil, fmt.Errorf("%w: natsjs: %w", aggregate.ErrState, r.Err())
	}
	return out, r.Rest(), nil
}
