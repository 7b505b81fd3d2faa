package api

import (
	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/config"
)

// newJudge returns the judge of the redirect's clicks; without keys no
// click is billable. A cap below 1 is the default's, and so is a negative
// delay.
func newJudge(keys *clicks.Keys, windows clicks.Windows, decisions clicks.Decisions, cfg config.Config) *clicks.Judge {
	def := config.Default()
	if cfg.NetworkDailyClicks < 1 {
		cfg.NetworkDailyClicks = def.NetworkDailyClicks
	}
	if cfg.ClickMinDelay < 0 {
		cfg.ClickMinDelay = def.ClickMinDelay
	}
	return &clicks.Judge{Keys: keys, Windows: windows, Decisions: decisions,
		NetworkDailyClicks: cfg.NetworkDailyClicks, PrefixDailyClicks: max(cfg.PrefixDailyClicks, 0),
		IPv4PrefixDailyClicks: max(cfg.IPv4PrefixDailyClicks, 0),
		PrefixAdDailyClicks:   max(cfg.PrefixAdDailyClicks, 0),
		MinClickDelay:         cfg.ClickMinDelay}
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
