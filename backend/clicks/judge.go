package clicks

import (
	"hash/maphash"
	"strings"
	"sync"
	"time"
)

// botMarks are lower-case substrings of the user agents of crawlers,
// scripts and headless browsers. A short list of our own, not the IAB's:
// it catches the honest automata, which say what they are.
var botMarks = []string{
	"bot", "crawl", "spider", "slurp", "scrape", "fetch", "preview", "monitor", "check",
	"curl", "wget", "httpie", "python", "aiohttp", "go-http-client", "java/", "okhttp",
	"apache-httpclient", "libwww", "perl", "ruby", "php/", "node-fetch", "axios", "undici",
	"headless", "phantomjs", "selenium", "webdriver", "puppeteer", "playwright", "lighthouse",
	"facebookexternalhit", "embedly", "validator",
}

// IsBot reports whether a user agent is a known bot or script, or absent:
// a browser always sends one.
func IsBot(ua string) bool {
	ua = strings.TrimSpace(ua)
	if ua == "" {
		return true
	}
	ua = strings.ToLower(ua)
	for _, m := range botMarks {
		if strings.Contains(ua, m) {
			return true
		}
	}
	return false
}

// RepeatWindow is how long a client's click on an ad makes its next click
// on the same ad a repeat.
const RepeatWindow = 30 * time.Second

// Repeats remembers which client clicked which ad when, for a window, in
// bounded memory: at most max pairs, the oldest forgotten first. It is safe
// for concurrent use. Its state is in memory only, so a restart forgets it.
type Repeats struct {
	window time.Duration
	max    int
	seed   maphash.Seed

	mu   sync.Mutex
	last map[uint64]int64 // pair hash -> unix nanoseconds of its last click
	// order holds the pairs by time of click, from head on, for eviction.
	order []seen
	head  int
}

type seen struct {
	pair uint64
	at   int64
}

// NewRepeats returns a memory of clicks over window holding at most max
// client and ad pairs.
func NewRepeats(window time.Duration, max int) *Repeats {
	if max < 1 {
		max = 1
	}
	return &Repeats{window: window, max: max, seed: maphash.MakeSeed(), last: map[uint64]int64{}}
}

// Seen records that client clicked adID at now and reports whether it had
// clicked it before within the window. Pairs are kept as 64-bit hashes.
func (r *Repeats) Seen(client, adID string, now time.Time) bool {
	var h maphash.Hash
	h.SetSeed(r.seed)
	h.WriteString(client)
	h.WriteByte(0)
	h.WriteString(adID)
	pair := h.Sum64()
	at := now.UnixNano()

	r.mu.Lock()
	defer r.mu.Unlock()
	r.evict(at)
	prev, ok := r.last[pair]
	repeat := ok && at-prev < int64(r.window)
	r.last[pair] = at
	r.order = append(r.order, seen{pair, at})
	return repeat
}

// evict forgets pairs older than the window, and the oldest ones while
// there are too many. A pair clicked again since an entry was queued keeps
// its newer time.
func (r *Repeats) evict(now int64) {
	for r.head < len(r.order) {
		e := r.order[r.head]
		if now-e.at < int64(r.window) && len(r.order)-r.head < r.max {
			break
		}
		if r.last[e.pair] == e.at {
			delete(r.last, e.pair)
		}
		r.head++
	}
	// Reuse the slice's front once most of it is spent.
	if r.head > 1024 && r.head*2 > len(r.order) {
		n := copy(r.order, r.order[r.head:])
		r.order = r.order[:n]
		r.head = 0
	}
}

// Len is how many client and ad pairs are remembered.
func (r *Repeats) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.last)
}

// Judge decides whether clicks are billable: a valid and unexpired sig or
// tok, a browser's user agent, and no click by the same client on the same
// ad within RepeatWindow.
type Judge struct {
	// Keys verify sig and tok; without them no click is billable.
	Keys *Keys
	// Repeats remembers recent clicks; without it there are no repeats.
	Repeats *Repeats
}

// Auth is what a click URL carries to prove that adlink made it.
type Auth struct {
	Exp, Sig string // a link the server made
	Tok      string // a link the page made
}

// Judge sets c.Billable and c.Reason from auth, c's parameters, user agent
// and client, at c.Time. refuse is a reason the caller found before (such
// as ReasonPartner when the api_key is no longer known), or "". Every click
// counts towards repeats, billable or not, so a client clicking the same ad
// in a loop is never billed twice within the window.
func (j *Judge) Judge(c *Click, auth Auth, refuse string) {
	reason := ReasonUnsigned
	if j.Keys != nil {
		switch {
		case auth.Sig != "" || auth.Exp != "":
			p := Params{Type: c.Type, AdID: c.AdID, AdType: c.AdType, APIKey: c.APIKey,
				SiteID: c.SiteID, Criterion: c.Criterion, YkTag: c.YkTag}
			reason = j.Keys.Verify(&p, auth.Exp, auth.Sig, c.Time)
		case auth.Tok != "":
			reason = j.Keys.VerifyToken(c.APIKey, c.SiteID, auth.Tok, c.Time)
		}
	}
	repeat := j.Repeats != nil && j.Repeats.Seen(c.IP, c.AdID, c.Time)
	switch {
	case reason != "":
	case refuse != "":
		reason = refuse
	case IsBot(c.UserAgent):
		reason = ReasonBot
	case repeat:
		reason = ReasonRepeat
	}
	c.Billable = reason == ""
	c.Reason = reason
}
