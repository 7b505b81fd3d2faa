package clicks

import (
	"strings"
	"sync"

	"github.com/x-way/crawlerdetect"
)

// IsBot reports whether a user agent is no person's browser: absent, not
// ASCII, without a browser's tokens (Mozilla/5.0 (platform) and a WebKit,
// Gecko or Trident engine), or matched by Crawler-Detect's maintained list
// of crawlers, tools and headless browsers, or by the automation drivers
// that list leaves out.
func IsBot(ua string) bool {
	ua = strings.TrimSpace(ua)
	if !browserTokens(ua) {
		return true
	}
	return crawlers.is(ua)
}

// browserTokens reports whether ua has the shape every browser's user
// agent has had for a decade, "Mozilla/5.0 (platform) engine/version ...",
// in ASCII. Scripts, apps' link fetchers and scanners that name themselves
// (WhatsApp/2.23, ms-office, a bare Mozilla/5.0) fail it, and so does a
// look-alike with a letter of another script.
func browserTokens(ua string) bool {
	for i := range len(ua) {
		if ua[i] < 0x20 || ua[i] > 0x7e {
			return false
		}
	}
	rest, ok := strings.CutPrefix(ua, "Mozilla/5.0 (")
	if !ok {
		return false
	}
	platform, engine, ok := strings.Cut(rest, ")")
	if !ok || strings.TrimSpace(platform) == "" {
		return false
	}
	if strings.Contains(platform, "Trident/") { // Internet Explorer 11
		return true
	}
	return strings.Contains(engine, "AppleWebKit/") || strings.Contains(engine, "Gecko/")
}

// automation are lower-case marks of browser automation that a real
// browser's user agent never carries and the crawler list does not have.
var automation = []string{"puppeteer", "playwright", "selenium", "webdriver", "phantomjs"}

// crawlerCache remembers the crawler list's verdict per user agent: the
// list is one large regular expression, and a few browser versions make
// most clicks. It holds at most maxCrawlerCache agents and starts over when
// full, so agents made up per click cost only time, never memory.
type crawlerCache struct {
	mu   sync.Mutex
	seen map[string]bool
}

const maxCrawlerCache = 4096

var crawlers = &crawlerCache{seen: map[string]bool{}}

func (c *crawlerCache) is(ua string) bool {
	c.mu.Lock()
	bot, ok := c.seen[ua]
	c.mu.Unlock()
	if ok {
		return bot
	}
	lower := strings.ToLower(ua)
	bot = crawlerdetect.IsCrawler(ua)
	for _, m := range automation {
		bot = bot || strings.Contains(lower, m)
	}
	c.mu.Lock()
	if len(c.seen) >= maxCrawlerCache {
		clear(c.seen)
	}
	c.seen[ua] = bot
	c.mu.Unlock()
	return bot
}
