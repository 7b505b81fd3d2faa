package siteshards

import "container/list"

// cache keeps the shards built, by key (a market and a top set), bounded
// in count and bytes: the least recently used go first. Keys whose shards
// are the same bytes share one Shard, counted once. Not safe for
// concurrent use: the Service's lock guards it.
type cache struct {
	maxShards int
	maxBytes  int64
	bytes     int64
	lru       *list.List // of *cacheEntry, most recent first
	byKey     map[string]*list.Element
	sha       map[string]*shared
}

type cacheEntry struct {
	key   string
	shard *Shard
}

// shared is one shard's bytes and how many keys name it.
type shared struct {
	shard *Shard
	refs  int
}

func newCache(maxShards int, maxBytes int64) *cache {
	return &cache{maxShards: maxShards, maxBytes: maxBytes, lru: list.New(), byKey: map[string]*list.Element{}, sha: map[string]*shared{}}
}

// get returns the shard of key, now the most recently used, or nil.
func (c *cache) get(key string) *Shard {
	e := c.byKey[key]
	if e == nil {
		return nil
	}
	c.lru.MoveToFront(e)
	return e.Value.(*cacheEntry).shard
}

// peek reports whether key has a shard, without using it.
func (c *cache) peek(key string) bool { return c.byKey[key] != nil }

// put keeps sh under key, in place of what key had, then drops the least
// recently used shards beyond the bounds; never the one just put.
func (c *cache) put(key string, sh *Shard) {
	if e := c.byKey[key]; e != nil {
		c.remove(e)
	}
	sha := sh.Blob.SHA256
	if s := c.sha[sha]; s != nil {
		if s.shard.Index == nil && sh.Index != nil {
			// Read from the store, which serves it; now built here too,
			// with the index a manifest needs.
			c.bytes += sh.size() - s.shard.size()
			s.shard = sh
		}
		sh = s.shard // the same bytes: kept once
		s.refs++
	} else {
		c.sha[sha] = &shared{shard: sh, refs: 1}
		c.bytes += sh.size()
	}
	c.byKey[key] = c.lru.PushFront(&cacheEntry{key: key, shard: sh})
	for c.lru.Len() > 1 && (c.lru.Len() > c.maxShards || c.bytes > c.maxBytes) {
		c.remove(c.lru.Back())
	}
}

func (c *cache) remove(e *list.Element) {
	ce := c.lru.Remove(e).(*cacheEntry)
	delete(c.byKey, ce.key)
	sha := ce.shard.Blob.SHA256
	if s := c.sha[sha]; s != nil {
		if s.refs--; s.refs <= 0 {
			delete(c.sha, sha)
			c.bytes -= s.shard.size()
		}
	}
}

// bySHA returns the shard with that SHA-256, or nil.
func (c *cache) bySHA(sha string) *Shard {
	if s := c.sha[sha]; s != nil {
		return s.shard
	}
	return nil
}

func (c *cache) len() int { return len(c.sha) }
