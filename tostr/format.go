package tostr

// Format selects the text form of a rendering (enum sb_str_fmt).
type Format uint8

// The two formats of the C reference.
const (
	FreeForm Format = iota // SB_STRFMT_FREEFORM: indented, human-oriented text
	JSON                   // SB_STRFMT_JSON: one JSON object
)

// String returns "FREEFORM" or "JSON".
func (f Format) String() string {
	if f == JSON {
		return "JSON"
	}
	return "FREEFORM"
}
