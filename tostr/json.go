package tostr

import (
	"github.com/statsblob/statsblob/blob"
	"github.com/statsblob/statsblob/internal/abi"
	"github.com/statsblob/statsblob/tpl"
)

// JSONMarshaler renders a blob for encoding/json: wrap a blob in it to put
// the C's JSON rendering inside a larger document.
//
// It differs from Append in one case only: the C renders a blob without
// VOIs as the empty string, which is not JSON; JSONMarshaler renders it as
// the object the C would have opened, with an empty "vois" member
// ({"tplname":null,"tplhash":N,"vois":{}}). (The method lives here rather
// than on blob.Blob because rendering depends on the blob package, not the
// other way round.)
type JSONMarshaler struct {
	Blob     *blob.Blob
	Flags    Flags         // Objdump and/or Meta
	Template *tpl.Template // for Meta: the blob's template (see Options)
	Registry *tpl.Registry // for Meta without Template
}

// MarshalJSON implements json.Marshaler. With Meta, a blob whose template
// is not registered is an error wrapping voi.ErrInvalid.
func (m JSONMarshaler) MarshalJSON() ([]byte, error) {
	o := Options{Format: JSON, Flags: m.Flags, Template: m.Template, Registry: m.Registry}
	out, err := Append(nil, m.Blob, o)
	if err != nil || len(out) > 0 {
		return out, err
	}
	// No VOIs: open and close the object as the first callback would.
	r := renderer{bl: m.Blob, fmt: JSON, dump: m.Flags&Objdump != 0}
	if m.Flags&Meta != 0 {
		r.tpl, _ = o.metaTemplate(m.Blob) // found: Append succeeded
	}
	r.json(&abi.Slot{Flags: abi.FirstCB, StatSlot: -1, VOI: abi.VOI{ID: -1}, Stat: abi.Stat{SType: -1}, StatOff: -1})
	// The header ends with `"vois":{` and, for the vacant VOI above,
	// possibly more; cut at the vois member and close.
	const vois = `"vois":{`
	for i := 0; i+len(vois) <= len(r.dst); i++ {
		if string(r.dst[i:i+len(vois)]) == vois {
			return append(r.dst[:i+len(vois)], "}}"...), nil
		}
	}
	return r.dst, nil
}
