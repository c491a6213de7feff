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

// A query may hold MaxQueryMatchers label patterns beside tpl, window and
// the version's pattern (statsblob_template_hash, which is no label
// pattern since it matches the hash an aggregate was posted as): the
// count of parameters allows all four kinds at their most, and no more.
func TestParseQueryMostParameters(t *testing.T) {
	q := func(extra int, version bool) string {
		var b strings.Builder
		b.WriteString("tpl=T&window=-1")
		if version {
			b.WriteString("&" + VersionLabel + "=0000abcd")
		}
		for i := range MaxQueryMatchers + extra {
			b.WriteString("&l" + strings.Repeat("x", i/10) + string(rune('0'+i%10)) + "=v")
		}
		return b.String()
	}
	got, err := parseQuery(q(0, true), true, 2, 128)
	require.NoError(t, err, "every kind at its most")
	require.Len(t, got.match, MaxQueryMatchers)
	require.Equal(t, "0000abcd", got.version)
	_, err = parseQuery(q(1, false), true, 2, 128)
	require.ErrorIs(t, err, voi.ErrInvalid, "one label pattern too many")
	_, err = parseQuery(q(1, true), true, 2, 128)
	require.ErrorIs(t, err, voi.ErrInvalid, "one label pattern too many, with the version's")
}
