package export

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/statsblob/statsblob/tpl"
	"github.com/statsblob/statsblob/voi"
)

// Sanitize turns s into a Prometheus metric name fragment: ASCII letters
// lower-cased, every character other than a-z, 0-9 and '_' replaced by '_',
// and a leading digit prefixed with '_'. The empty string stays empty.
func Sanitize(s string) string {
	out := sanitizeChars(s)
	if out != "" && out[0] >= '0' && out[0] <= '9' {
		return "_" + out
	}
	return out
}

// sanitizeChars is Sanitize without the prefix for a leading digit.
func sanitizeChars(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 1)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'A' && c <= 'Z':
			c += 'a' - 'A'
		case c >= 'a' && c <= 'z', c == '_':
		case c >= '0' && c <= '9':
		default:
			c = '_'
		}
		b.WriteByte(c)
	}
	return b.String()
}

// join joins the non-empty sanitised parts with '_'.
func join(parts ...string) string {
	var out []string
	for _, p := range parts {
		if s := sanitizeChars(p); s != "" {
			out = append(out, s)
		}
	}
	return strings.Join(out, "_")
}

// seriesNames returns every name a family of kind k named name occupies in
// a Prometheus exposition (the family name and its series' names), so that
// two families collide exactly when their sets meet.
func seriesNames(name string, k Kind) []string {
	switch k {
	case KindCounter:
		return []string{name, name + "_total", name + "_created"}
	case KindHistogram, KindSummary, KindExpHistogram:
		return []string{name, name + "_bucket", name + "_count", name + "_sum", name + "_created"}
	}
	return []string{name}
}

// validLabelName reports whether s is a label name Prometheus accepts and
// that is not reserved: [a-zA-Z_][a-zA-Z0-9_]*, not starting with "__".
func validLabelName(s string) bool {
	if s == "" || strings.HasPrefix(s, "__") {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9' {
			continue
		}
		return false
	}
	return true
}

// Reserved label names: the exporters' own.
const (
	LabelBucket   = "bucket"   // a histogram bucket exported as a counter
	labelLE       = "le"       // Prometheus histogram bucket bound
	labelQuantile = "quantile" // Prometheus summary quantile
)

// CheckLabels reports whether labels can be the constant labels of a blob:
// valid Prometheus label names, none reserved (le, quantile, bucket) or
// repeated, values valid UTF-8 (the exposition format requires it). The
// error wraps voi.ErrInvalid.
func CheckLabels(labels []Label) error {
	for i, l := range labels {
		if !validLabelName(l.Name) {
			return fmt.Errorf("export: label name %q: %w", l.Name, voi.ErrInvalid)
		}
		if !utf8.ValidString(l.Value) {
			return fmt.Errorf("export: label %q: value %q is not valid UTF-8: %w", l.Name, l.Value, voi.ErrInvalid)
		}
		switch l.Name {
		case labelLE, labelQuantile, LabelBucket:
			return fmt.Errorf("export: label name %q is reserved: %w", l.Name, voi.ErrInvalid)
		}
		for _, m := range labels[:i] {
			if m.Name == l.Name {
				return fmt.Errorf("export: label %q given twice: %w", l.Name, voi.ErrInvalid)
			}
		}
	}
	return nil
}

// The label limits a collector applies to what it is sent, by default
// (statsblob-collector's -max-labels and -max-label-bytes; natsjs's).
const (
	DefaultMaxLabels     = 16  // labels of a blob
	DefaultMaxLabelBytes = 128 // bytes of a label's name, and of its value
)

// VersionLabel is the label a collector adds to the series of an older
// version of a template whose aggregate shares its label set with another
// version's (its template hash, eight hexadecimal digits), so that no two
// of them export the same series. Senders may not post it
// (CheckPostedLabels).
const VersionLabel = "statsblob_template_hash"

// ErrNameClash reports a series that two blobs both export: blobs of
// templates whose names sanitise alike ("web" and "WEB"), or whose
// template and VOI names join alike ("a_b" with VOI "c", "a" with VOI
// "b_c"), or blobs of one template whose label sets are one series ({}
// and {host=""}: a label of empty value is no label). An exporter sends
// the first blob's and refuses the other's with an error that wraps
// ErrNameClash and names both templates, or both label sets (Clashes).
var ErrNameClash = errors.New("export: two blobs export one series")

// CheckPostedLabels is CheckLabels for labels a sender posts to a
// collector, which may not be empty nor the collector's own
// (VersionLabel): Prometheus takes a label with an empty value for no
// label, so {host=""} and {} would be one series. The error wraps
// voi.ErrInvalid.
func CheckPostedLabels(labels []Label) error {
	for _, l := range labels {
		switch {
		case l.Name == VersionLabel:
			return fmt.Errorf("export: label name %q is the collector's own: %w", l.Name, voi.ErrInvalid)
		case l.Value == "":
			return fmt.Errorf("export: label %q has an empty value: %w", l.Name, voi.ErrInvalid)
		}
	}
	return CheckLabels(labels)
}

// unitWords pairs Prometheus's unit words (the suffixes its naming
// conventions put in metric names) with UCUM units, OpenTelemetry's, as the
// OpenTelemetry-to-Prometheus translation pairs them ("KBy" for kilobytes,
// where UCUM writes "kBy"). It is the one table of UCUM codes: UCUM finds
// the code of any other spelling tpl.ParseUnit reads through it.
var unitWords = [][2]string{
	{"days", "d"}, {"hours", "h"}, {"minutes", "min"}, {"seconds", "s"},
	{"milliseconds", "ms"}, {"microseconds", "us"}, {"nanoseconds", "ns"},
	{"bytes", "By"}, {"kibibytes", "KiBy"}, {"mebibytes", "MiBy"}, {"gibibytes", "GiBy"},
	{"tebibytes", "TiBy"}, {"kilobytes", "KBy"}, {"megabytes", "MBy"}, {"gigabytes", "GBy"},
	{"terabytes", "TBy"}, {"bits", "bit"}, {"meters", "m"}, {"volts", "V"}, {"amperes", "A"},
	{"joules", "J"}, {"watts", "W"}, {"grams", "g"}, {"celsius", "Cel"}, {"hertz", "Hz"},
	{"ratio", "1"}, {"percent", "%"},
}

// unitKey is what tpl.ParseUnit makes of a unit: its base unit and scale.
type unitKey struct {
	base  string
	scale float64
}

// ucumOf gives the UCUM code of each unitWords word tpl.ParseUnit knows,
// by what ParseUnit makes of it: so every spelling tpl reads ("sec",
// "second", "byte", "kB", "µs") finds its word's code, and this one table
// of codes serves tpl's one table of spellings.
var ucumOf = func() map[unitKey]string {
	m := map[unitKey]string{}
	for _, w := range unitWords {
		if tpl.IsUnit(w[0]) {
			m[parseUnit(w[0])] = w[1]
		}
	}
	return m
}()

// UCUM returns unit as a UCUM unit, OpenTelemetry's: a Prometheus unit
// word ("microseconds") becomes its UCUM code ("us"), and so does any
// other spelling tpl.ParseUnit reads ("sec" and "s" are "s", "byte" and
// "B" are "By", "KiB" is "KiBy"), which a derived metric's unit
// (tpl.Derived.Unit) keeps as declared; anything else (a UCUM code
// already, or a unit neither knows) is returned as given. It is where
// every unit becomes an OTLP unit.
func UCUM(unit string) string {
	for _, w := range unitWords {
		if unit == w[0] {
			return w[1]
		}
	}
	if tpl.IsUnit(unit) {
		if c, ok := ucumOf[parseUnit(unit)]; ok {
			return c
		}
	}
	return unit
}

// parseUnit is tpl.ParseUnit as a unitKey.
func parseUnit(unit string) unitKey {
	base, scale := tpl.ParseUnit(unit)
	return unitKey{base, scale}
}

// PromUnit returns unit as the word Prometheus names carry: a UCUM code
// ("us") becomes its word ("microseconds"), and so does any spelling UCUM
// reads ("sec" and "second" are "seconds", "B" and "byte" "bytes", "µs"
// "microseconds"), so that a metric has one unit word whether it reaches
// Prometheus directly or as OTLP through Prometheus's translation;
// anything else is returned as given (and sanitised where it becomes part
// of a name).
func PromUnit(unit string) string {
	code := UCUM(unit)
	for _, w := range unitWords {
		if code == w[1] {
			return w[0]
		}
	}
	return unit
}

// otelName joins the non-empty parts, each lower-cased with characters
// other than a-z, 0-9 and '_' replaced by '_', with dots: an OpenTelemetry
// metric name ("tcp_default.tcp_rtt"). A name that would not start with a
// letter is prefixed with "statsblob.".
func otelName(parts ...string) string {
	var out []string
	for _, p := range parts {
		if s := sanitizeChars(p); s != "" {
			out = append(out, s)
		}
	}
	s := strings.Join(out, ".")
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		s = "statsblob." + s
	}
	return strings.TrimSuffix(s, ".")
}
