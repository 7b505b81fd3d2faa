package api

import (
	"context"
	"sync"
	"time"

	"github.com/adlink/adlink/backend/clicks"
)

// tagTimeout bounds the wait for the tags' store: a link's yk_tag is
// not worth holding a reader's click for.
const tagTimeout = time.Second

// tagRetry is how long after the tags' store failed the gate asks it
// nothing, so that an outage holds no click for tagTimeout, but once.
const tagRetry = 10 * time.Second

// tagGate admits the yk_tags of the links pages made, which no signature
// binds: the first limit of a site's UTC day (clicks.Tags), shared by
// the replicas through store; later new ones are recorded as no tag. It
// remembers the tags of today this process learnt admitted, so that they
// cost the store nothing again: a day's tags only grow. A day it saw
// full still asks the store of a new tag, which another replica, or this
// one before a restart, may have admitted. After the store failed, it
// admits only the tags it remembers, asking the store nothing for
// tagRetry. Without a store the bound is this process's alone; a limit
// below 1 is none.
type tagGate struct {
	store clicks.Tags
	limit int

	mu        sync.Mutex
	day       int64
	sites     map[string]*siteTags
	downUntil time.Time // the store failed: not asked before then
}

// siteTags is what a tagGate knows of one site's day.
type siteTags struct {
	held map[string]bool
	full bool
}

// newTagGate returns the gate of store, nil for this process's bound,
// admitting limit tags a site a day.
func newTagGate(store clicks.Tags, limit int) *tagGate {
	return &tagGate{store: store, limit: limit, sites: map[string]*siteTags{}}
}

// admit reports whether tag may be recorded for site on at's day, now;
// an error is the store's, and admits nothing. A day before yesterday's
// admits no tag: the store has forgotten it.
func (g *tagGate) admit(ctx context.Context, site, tag string, at, now time.Time) (bool, error) {
	if g.limit < 1 {
		return true, nil // no cap
	}
	day := at.Unix() / 86400
	if day < now.Unix()/86400-1 {
		// The store forgets the days before yesterday: asked of one, it
		// would admit a day's limit again after every forgetting.
		return false, nil
	}
	g.mu.Lock()
	if day > g.day {
		g.day, g.sites = day, map[string]*siteTags{}
	}
	st := g.sites[site]
	if day == g.day && st == nil {
		st = &siteTags{held: map[string]bool{}}
		g.sites[site] = st
	}
	if day == g.day {
		switch {
		case st.held[tag]:
			g.mu.Unlock()
			return true, nil
		case st.full && g.store == nil:
			g.mu.Unlock()
			return false, nil
		case g.store == nil:
			ok := len(st.held) < g.limit
			st.held[tag] = ok
			st.full = !ok
			g.mu.Unlock()
			return ok, nil
		}
	}
	down := now.Before(g.downUntil)
	g.mu.Unlock()
	if g.store == nil || down {
		return false, nil // a day before this process's, or a store down
	}
	ctx, cancel := context.WithTimeout(ctx, tagTimeout)
	defer cancel()
	ok, err := g.store.Admit(ctx, site, tag, at, g.limit)
	if err != nil {
		g.mu.Lock()
		g.downUntil = now.Add(tagRetry)
		g.mu.Unlock()
		return false, err
	}
	g.mu.Lock()
	if st != nil && g.sites[site] == st { // still the day it was asked for
		if ok {
			st.held[tag] = true
		} else {
			st.full = true
		}
	}
	g.mu.Unlock()
	return ok, nil
}

// pageTag is the yk_tag a link the page made, of the partner's site,
// shown at at, records: tag when the site's day admits it, else "",
// counted in the metrics (and logged when the store failed). A click
// passes when its token was issued, as its impression's day admitted it.
func (s *server) pageTag(ctx context.Context, apiKey, siteID, tag string, at time.Time) string {
	if tag == "" {
		return ""
	}
	ok, err := s.tags.admit(ctx, clicks.TagSite(apiKey, siteID), tag, at, s.now())
	if err != nil {
		s.log.Warn("yk_tag recorded as none: the tags' store did not answer", "err", err)
	}
	if !ok {
		s.metrics.TagDropped()
		return ""
	}
	return tag
}
