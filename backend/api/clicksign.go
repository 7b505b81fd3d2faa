package api

import (
	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/config"
)

// newJudge returns the judge of the redirect's clicks; without keys no
// click is billable. A cap below 1 is the default's.
func newJudge(keys *clicks.Keys, windows clicks.Windows, decisions clicks.Decisions, networkDailyClicks int) *clicks.Judge {
	if networkDailyClicks < 1 {
		networkDailyClicks = config.Default().NetworkDailyClicks
	}
	return &clicks.Judge{Keys: keys, Windows: windows, Decisions: decisions, NetworkDailyClicks: networkDailyClicks}
}

// signLinks returns the match.LinkOptions Sign hook for the click URLs of
// one answer: a decision id per link, which bills once, then exp and sig,
// billable for the configured ClickTTL. It is nil
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

// siteToken is the site token for apiKey and siteID that a shard manifest
// carries as "tok": the page appends it to the click URLs it makes, as it
// holds no key to sign them; such clicks are recorded, unverified, and do
// not bill. It is "" without keys. A token is made of A-Z,
// a-z, 0-9, '.', '_' and '-': nothing to escape in JSON.
func (s *server) siteToken(apiKey, siteID string) string {
	if s.judge.Keys == nil {
		return ""
	}
	ttl := s.cfg.SiteTokenTTL
	if ttl <= 0 {
		ttl = config.Default().SiteTokenTTL
	}
	return s.judge.Keys.Token(apiKey, siteID, s.now().Add(ttl))
}
