package api

import (
	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/config"
)

// maxRepeatPairs bounds the client and ad pairs the redirect remembers for
// RepeatWindow: about 40 bytes each, so at most some 10 MB under a flood
// of distinct clients.
const maxRepeatPairs = 1 << 18

// newJudge returns the judge of the redirect's clicks; without keys no
// click is billable.
func newJudge(keys *clicks.Keys) *clicks.Judge {
	return &clicks.Judge{Keys: keys, Repeats: clicks.NewRepeats(clicks.RepeatWindow, maxRepeatPairs)}
}

// signLinks returns the match.LinkOptions Sign hook for the click URLs of
// one answer: exp and sig, billable for the configured ClickTTL. It is nil
// without keys, and the links go unsigned.
func (s *server) signLinks() func(dst, query []byte) []byte {
	if s.judge.Keys == nil {
		return nil
	}
	ttl := s.cfg.ClickTTL
	if ttl <= 0 {
		ttl = config.Default().ClickTTL
	}
	return s.judge.Keys.SignFunc(s.now().Add(ttl))
}

// withSiteToken adds "tok", the site token for apiKey and siteID, to a
// shard manifest: the page appends it to the click URLs it makes, as it
// holds no key to sign them. Without keys the manifest is unchanged.
func (s *server) withSiteToken(manifest []byte, apiKey, siteID string) []byte {
	if s.judge.Keys == nil || len(manifest) == 0 || manifest[len(manifest)-1] != '}' {
		return manifest
	}
	ttl := s.cfg.SiteTokenTTL
	if ttl <= 0 {
		ttl = config.Default().SiteTokenTTL
	}
	// A token is made of A-Z, a-z, 0-9, '.', '_' and '-': nothing to
	// escape in JSON.
	return withFields(manifest, "tok", s.judge.Keys.Token(apiKey, siteID, s.now().Add(ttl)))
}

// withFields adds string fields to a JSON object, name and value in turn:
// values with nothing to escape in JSON.
func withFields(object []byte, kv ...string) []byte {
	if len(object) == 0 || object[len(object)-1] != '}' {
		return object
	}
	n := len(object)
	for _, s := range kv {
		n += len(s) + 6
	}
	out := append(make([]byte, 0, n), object[:len(object)-1]...)
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, `,"`...)
		out = append(out, kv[i]...)
		out = append(out, `":"`...)
		out = append(out, kv[i+1]...)
		out = append(out, '"')
	}
	return append(out, '}')
}
