package collector

import (
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/statsblob/statsblob/export"
	"github.com/statsblob/statsblob/export/internal/fixture"
	"github.com/statsblob/statsblob/tpl"
)

// The cache answers what parsing answers, keeps copies of the query
// strings (never the request line), stays bounded, and gives each
// template hash its own key.
func TestLabelCache(t *testing.T) {
	s, err := New(Config{MoreTemplates: []*tpl.Template{fixture.Kitchen()}, MaxLabels: 8, MaxLabelBytes: 64})
	require.NoError(t, err)
	line := "POST /v1/blobs?svc=api&host=web1 HTTP/1.1"
	raw := line[strings.IndexByte(line, '?')+1 : strings.LastIndexByte(line, ' ')]
	require.Equal(t, "svc=api&host=web1", raw)

	cl, rej := s.labels(raw)
	require.Nil(t, rej)
	want := []export.Label{{Name: "host", Value: "web1"}, {Name: "svc", Value: "api"}}
	require.Equal(t, want, cl.labels)
	again, rej := s.labels("svc=api&host=web1")
	require.Nil(t, rej)
	require.Same(t, cl, again)
	for k := range s.lcache.m {
		require.NotSame(t, unsafe.StringData(raw), unsafe.StringData(k), "the cache keeps the request line")
	}

	require.Equal(t, key(7, want), cl.keyOf(7, cl.labels))
	require.Equal(t, key(9, want), cl.keyOf(9, cl.labels))
	forced := append([]export.Label{{Name: "env", Value: "prod"}}, want...)
	require.Equal(t, key(9, forced), cl.keyOf(9, forced))
	require.Equal(t, key(9, want), cl.keyOf(9, cl.labels))

	// Refused queries are not cached; long ones are answered uncached.
	_, rej = s.labels("svc=a&svc=b")
	require.NotNil(t, rej)
	_, rej = s.labels("svc=a&svc=b")
	require.NotNil(t, rej)
	long := "svc=" + strings.Repeat("x", 64) + "&a=" + strings.Repeat("y", 64) + "&b=" + strings.Repeat("z", 64) +
		"&c=" + strings.Repeat("w", 64) + "&d=" + strings.Repeat("v", 64) + "&e=" + strings.Repeat("u", 64) +
		"&f=" + strings.Repeat("t", 64) + "&g=" + strings.Repeat("s", 64) + "&h=" + strings.Repeat("r", 64)
	require.Greater(t, len(long), maxCachedQuery)
	_, rej = s.labels(long)
	require.NotNil(t, rej) // 9 labels, at most 8
	long = long[:strings.LastIndexByte(long, '&')]
	require.Greater(t, len(long), maxCachedQuery)
	cl, rej = s.labels(long)
	require.Nil(t, rej)
	require.Len(t, cl.labels, 8)
	require.Nil(t, s.lcache.get(long))

	for i := range maxCachedQueries + 10 {
		cl, rej := s.labels(fmt.Sprintf("host=h%d", i))
		require.Nil(t, rej)
		require.Equal(t, []export.Label{{Name: "host", Value: fmt.Sprintf("h%d", i)}}, cl.labels)
		require.LessOrEqual(t, len(s.lcache.m), maxCachedQueries)
	}
}
