package auth

import (
	"sync"
	"time"

	"switchboard/store"
)

// keyCacheTTL is how long a key read from the store authorizes requests
// without reading it again. Every request used to read its key (about
// 100 µs on SQLite, a round trip on PostgreSQL), which made a flood of
// refused requests cost a fifth of a core; four reads a second per key
// cost nothing. A change made through this appliance clears the cache at
// once; one made on another node of a fleet (sharing the store) is seen
// within this time, well inside the second a fleet promises for a
// revoked key.
const keyCacheTTL = 250 * time.Millisecond

// keyCacheMax bounds the cache; past it the cache starts over.
const keyCacheMax = 4096

// keyCache maps a secret's hash to its key record, for keyCacheTTL.
// Unknown hashes are not kept: the store answers those.
type keyCache struct {
	mu sync.Mutex
	m  map[string]cachedKey
}

type cachedKey struct {
	k     store.APIKey
	until time.Time
}

// get returns a copy of the key of hash while it is fresh.
func (c *keyCache) get(hash string, now time.Time) (*store.APIKey, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[hash]
	if !ok || !now.Before(e.until) || now.Before(e.until.Add(-keyCacheTTL)) {
		return nil, false
	}
	k := e.k
	return &k, true
}

// put keeps a copy of k under hash until now+keyCacheTTL.
func (c *keyCache) put(hash string, k *store.APIKey, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= keyCacheMax {
		c.m = make(map[string]cachedKey)
	}
	c.m[hash] = cachedKey{k: *k, until: now.Add(keyCacheTTL)}
}

// clear forgets every key (a key was created, changed or deleted).
func (c *keyCache) clear() {
	c.mu.Lock()
	c.m = nil
	c.mu.Unlock()
}
