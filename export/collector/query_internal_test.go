package collector

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/export"
	"github.com/statsblob/statsblob/voi"
)

func TestGlob(t *testing.T) {
	for _, c := range []struct {
		p, s string
		ok   bool
	}{
		{"*", "", true}, {"*", "abc", true}, {"a*", "abc", true}, {"*c", "abc", true}, {"a*c", "abc", true},
		{"a*c", "ab", false}, {"abc", "abc", true}, {"abc", "abcd", false}, {"*b*", "abc", true},
		{"a**c", "ac", true}, {"*a*a*", "banana", true}, {"*x*", "banana", false}, {"", "", true}, {"", "a", false},
	} {
		require.Equal(t, c.ok, glob(c.p, c.s), "%q %q", c.p, c.s)
	}
}

// FuzzGlob: glob agrees with the regular expression of the pattern.
func FuzzGlob(f *testing.F) {
	f.Add("a*c", "abc")
	f.Add("*a*a*", "banana")
	f.Fuzz(func(t *testing.T, p, s string) {
		parts := strings.Split(p, "*")
		for i := range parts {
			parts[i] = regexp.QuoteMeta(parts[i])
		}
		re, err := regexp.Compile(`(?s)\A` + strings.Join(parts, ".*") + `\z`)
		if err != nil {
			return // not UTF-8: regexp cannot say
		}
		if !strings.ContainsRune(p+s, 0xfffd) {
			require.Equal(t, re.MatchString(s), glob(p, s), "%q %q", p, s)
		}
	})
}

// FuzzParseQuery: parseQuery never panics; what it accepts respects its
// bounds (window within the history, names unique, sorted, not tpl or
// window, at most MaxQueryMatchers, nothing empty or over the byte limit),
// and an aggregate carrying exactly the patterns' values as labels (no
// star in them) matches.
func FuzzParseQuery(f *testing.F) {
	f.Add("tpl=KITCHEN&host=web*&window=-1", true)
	f.Add("host=*", false)
	f.Add("window=-0&tpl=a&a=%2A", true)
	f.Fuzz(func(t *testing.T, raw string, needTpl bool) {
		q, err := parseQuery(raw, needTpl, 3, 16)
		if err != nil {
			require.ErrorIs(t, err, voi.ErrInvalid)
			return
		}
		require.LessOrEqual(t, q.window, 0)
		require.GreaterOrEqual(t, q.window, -3)
		require.LessOrEqual(t, len(q.match), MaxQueryMatchers)
		if needTpl {
			require.NotEmpty(t, q.tpl)
		}
		var labels []export.Label
		for i, m := range q.match {
			require.NotContains(t, []string{"tpl", "window", VersionLabel, ""}, m.name)
			require.NotEmpty(t, m.pattern)
			require.LessOrEqual(t, len(m.name), 16)
			require.LessOrEqual(t, len(m.pattern), 16)
			if i > 0 {
				require.Less(t, q.match[i-1].name, m.name)
			}
			labels = append(labels, export.Label{Name: m.name, Value: m.pattern})
		}
		if !slices.ContainsFunc(q.match, func(m matcher) bool { return strings.Contains(m.pattern, "*") }) && q.version == "" {
			require.True(t, q.matches(q.tpl, labels, func() uint32 { return 0 }))
		}
	})
}
