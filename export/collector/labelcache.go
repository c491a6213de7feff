package collector

import (
	"strings"
	"sync"
	"sync/atomic"

	"github.com/statsblob/statsblob/export"
)

// A sender posts with the same query string every time: parsing it,
// sorting, copying and checking its labels and building the aggregate's
// key cost more than looking them up. labelCache remembers the labels of
// the query strings that were accepted lately, and for each the aggregate
// key of the template hash it was last posted with.
//
// It is bounded: query strings of at most maxCachedQuery bytes, at most
// maxCachedQueries of them (the cache is emptied when full, so a client
// cycling through query strings costs a parse per post, as without the
// cache). Its keys are copies: a query string is a substring of the
// request line, which must not be kept alive (issue 22, defect 2).
type labelCache struct {
	mu sync.RWMutex
	m  map[string]*cachedLabels
}

const (
	maxCachedQueries = 4096
	maxCachedQuery   = 512
)

// cachedLabels are a query string's labels, sorted and checked, shared by
// every post that carries it: read-only.
type cachedLabels struct {
	labels []export.Label
	key    atomic.Pointer[cachedKey]
}

type cachedKey struct {
	hash uint32
	key  string
}

// get returns the cached labels of raw, or nil.
func (c *labelCache) get(raw string) *cachedLabels {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.m[raw]
}

// put caches labels, the checked labels of raw, and returns them as
// cached (raw's entry if another post put it first).
func (c *labelCache) put(raw string, labels []export.Label) *cachedLabels {
	if len(raw) > maxCachedQuery {
		return &cachedLabels{labels: labels}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.m[raw]; e != nil {
		return e
	}
	if c.m == nil || len(c.m) >= maxCachedQueries {
		c.m = make(map[string]*cachedLabels)
	}
	e := &cachedLabels{labels: labels}
	c.m[strings.Clone(raw)] = e
	return e
}

// keyOf returns the aggregate key of template hash and labels, which are
// e's labels or labels a token forced into them.
func (e *cachedLabels) keyOf(hash uint32, labels []export.Label) string {
	if !sameLabels(labels, e.labels) {
		return key(hash, labels)
	}
	if k := e.key.Load(); k != nil && k.hash == hash {
		return k.key
	}
	k := &cachedKey{hash: hash, key: key(hash, labels)}
	e.key.Store(k)
	return k.key
}

// sameLabels reports whether a and b are the same slice.
func sameLabels(a, b []export.Label) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}
