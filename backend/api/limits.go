package api

import (
	"context"
	"errors"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/adlink/adlink/backend/accounts"
	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/partners"
	"github.com/adlink/adlink/backend/ratelimit"
)

// limiters are the server's token buckets: per api_key on /v2, per client
// IP on /v1/redirect, per site on queueing unseen pages, each beside the
// buckets of the shares of a key's and a site's budget that one client
// network and one prefix may take (keyed "key\x00network" and
// "key\x00prefix" in the same Limiter). Each kind has its own Limiter, so
// a flood of one kind of key cannot evict another's.
type limiters struct {
	keys, ips, sites ratelimit.Limiter
	reports          ratelimit.Limiter
}

// newLimiters makes each kind's Limiter with limiter, or, when it is nil,
// as a ratelimit.Set in this process.
func newLimiters(limiter func(kind string) ratelimit.Limiter) limiters {
	if limiter == nil {
		limiter = func(string) ratelimit.Limiter { return ratelimit.New(ratelimit.Options{}) }
	}
	return limiters{keys: limiter("keys"), ips: limiter("ips"), sites: limiter("sites"), reports: limiter("reports")}
}

// reportLimit bounds the report requests of one client network, with a
// token or without: a report may read months of rollups, and a dashboard
// asks a few at a time.
var reportLimit = ratelimit.Limit{Rate: 5, Burst: 50}

// reportAccountLimit bounds the report requests of one report token's
// account, from every network together: one holder of an IPv6 /48 has
// 65,536 networks, each with reportLimit, and a year's report by the hour
// in a time zone costs the store seconds.
var reportAccountLimit = ratelimit.Limit{Rate: 5, Burst: 50}

// limitAccount puts a request of acc, whose report token it carries,
// under the account's report limit.
func (s *server) limitAccount(w http.ResponseWriter, r *http.Request, acc accounts.Account) error {
	d := s.limits.reports.Allow(r.Context(), "account\x00"+string(acc.Kind)+"\x00"+acc.ID, reportAccountLimit)
	// The headers are the bucket's that binds first: the client network's,
	// set before, when it has fewer left.
	if have, err := strconv.Atoi(w.Header().Get("X-RateLimit-Remaining")); d.Allowed && err == nil && have < d.Remaining {
		return nil
	}
	return s.checkLimit(w, d, "report_account", "too many report requests with this report token")
}

// limitReports puts GET /v2/report under its client network's limit.
func (s *server) limitReports(h handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		d := s.limits.reports.Allow(r.Context(), clicks.Network(s.clientIP(r)), reportLimit)
		if err := s.checkLimit(w, d, "report", "too many report requests from this address"); err != nil {
			return err
		}
		return h(w, r)
	}
}

// reportsAtOnce bounds the reports of one account running at once on a
// server: a year's report can take Postgres seconds, and the limits
// above let one token start 50 at once. A dashboard runs one or two.
const reportsAtOnce = 4

// startReport takes a place among acc's reports running, and returns
// the function that gives it back; with none free, a 429.
func (s *server) startReport(acc accounts.Account) (func(), error) {
	v, _ := s.running.LoadOrStore(acc, make(chan struct{}, reportsAtOnce))
	places := v.(chan struct{})
	select {
	case places <- struct{}{}:
		return func() { <-places }, nil
	default:
		s.metrics.RateLimited("report_account")
		return nil, &Error{Status: http.StatusTooManyRequests, Code: CodeRateLimited, Limit: "report_account", RetryAfter: 1,
			Message: "this report token has " + strconv.Itoa(reportsAtOnce) + " reports running: ask again once one is done"}
	}
}

// partnerLimits are the limits of the partner with apiKey, the configured
// defaults filling what it leaves unset; ok is false for an unknown key,
// which the handler answers with 401.
func (s *server) partnerLimits(r *http.Request, apiKey string) (partners.Limits, bool) {
	def := partners.Limits{RequestsPerSecond: s.cfg.KeyRate, Burst: s.cfg.KeyBurst,
		PagesPerSecond: s.cfg.PageRate, PageBurst: s.cfg.PageBurst}
	reg, err := s.partnersIn(r.Context())
	if err != nil {
		return def, true // authorize answers 500
	}
	src, ok := reg.(partners.LimitSource)
	if !ok {
		return def, true
	}
	l, err := src.Limits(r.Context(), apiKey)
	if errors.Is(err, partners.ErrUnknownKey) {
		return def, false
	}
	if err != nil {
		// The registry is down; the handler's own check will say so.
		return def, true
	}
	return l.Or(def), true
}

// limitKey puts a /v2 handler under its api_key's request limit and under
// the client network's and its prefix's shares of it: the api_key is
// public in the widget's tag, so one client must not spend all of it for
// every other reader. A request without one api_key, or with an unknown
// one, passes on to be refused by the handler.
func (s *server) limitKey(h handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		keys := r.URL.Query()["api_key"]
		if len(keys) != 1 || keys[0] == "" {
			return h(w, r)
		}
		l, ok := s.partnerLimits(r, keys[0])
		if !ok {
			return h(w, r)
		}
		lim := ratelimit.Limit{Rate: l.RequestsPerSecond, Burst: l.Burst}
		if err := s.shareLimit(w, r, s.limits.keys, keys[0], lim, s.cfg.KeyNetworkShare, "api_key", [3]string{
			"too many requests for this api_key from this network",
			"too many requests for this api_key from this network's IPv6 /48 or IPv4 /24",
			"too many requests for this api_key",
		}); err != nil {
			return err
		}
		return h(w, r)
	}
}

// prefixShareNetworks is how many client networks' share of a key's or a
// site's budget the prefix holding them (clicks.Prefix: an IPv6 /48, an
// IPv4 /24) may take: one holder of a /48 has 65,536 networks, and would
// otherwise spend the whole budget for every other reader. Two leave more
// than half of the budget to the other prefixes under the default share
// (0.2), while readers behind one carrier's NAT /24 or in one company's
// /48, who come from a few networks of it, get twice what one network
// does.
const prefixShareNetworks = 2

// shareLimit takes a token from key's bucket under lim and from the
// client's shares of it, in one AllowThree: its network's (share of lim,
// keyed "key\x00network") and its prefix's (prefixShareNetworks times
// that, keyed "key\x00prefix"; a Prefix has a /24 or /48 suffix that no
// Network has). The network's bucket is asked first, then the prefix's:
// a client over its share is refused without taking from the others, so
// a client at any speed, or a prefix rotating its networks, leaves the
// rest of the key's budget to the others. The headers report whichever
// bucket binds; the 429 names it: limit, limit_network or limit_prefix,
// each with its message.
func (s *server) shareLimit(w http.ResponseWriter, r *http.Request, l ratelimit.Limiter, key string,
	lim ratelimit.Limit, share float64, limit string, messages [3]string) error {
	ip := s.clientIP(r)
	network := ratelimit.Bucket{Key: key + "\x00" + clicks.Network(ip), Limit: lim.Share(share)}
	var prefix ratelimit.Bucket // no limit: none of its own for no address, or one as large as the key's
	if p, f := clicks.Prefix(ip), share*prefixShareNetworks; p != "" && f < 1 {
		prefix = ratelimit.Bucket{Key: key + "\x00" + p, Limit: lim.Share(f)}
	}
	n, p, d := l.AllowThree(r.Context(), network, prefix, ratelimit.Bucket{Key: key, Limit: lim})
	switch {
	case !n.Allowed:
		return s.checkLimit(w, n, limit+"_network", messages[0])
	case !p.Allowed:
		return s.checkLimit(w, p, limit+"_prefix", messages[1])
	}
	if d.Allowed {
		for _, b := range [2]ratelimit.Decision{p, n} {
			if b.Limit != 0 && b.Remaining < d.Remaining {
				d = b
			}
		}
	}
	return s.checkLimit(w, d, limit, messages[2])
}

// prefixNetworks is how many client networks' redirect limit the prefix
// holding them (clicks.Prefix: an IPv6 /48, an IPv4 /24) has: one holder
// of a /48 has 65,536 networks, and would have every click of a flood that
// rotates through them judged and written to the click log.
const prefixNetworks = 64

// limitIP puts the redirect under its client network's request limit
// (clicks.Network: an IPv4 address, an IPv6 /64), and under its prefix's,
// prefixNetworks times as large. Over either the request still goes on,
// marked overLimit: the visitor lands all the same, and the click is not
// judged but counted as rate_limited.
func (s *server) limitIP(h handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		ip := s.clientIP(r)
		network, prefix := clicks.Network(ip), clicks.Prefix(ip)
		lim := ratelimit.Limit{Rate: s.cfg.IPRate, Burst: s.cfg.IPBurst}
		n, p := s.allowIP(r.Context(), network, lim, prefix, times(lim, prefixNetworks))
		limit, d := "ip", n
		if n.Allowed && p.Limit != 0 && (!p.Allowed || p.Remaining < n.Remaining) {
			limit, d = "ip_prefix", p
		}
		// The 429 is never written: the visitor lands all the same, and a
		// redirect is not to be retried.
		if err := s.checkLimit(w, d, limit, "too many requests from this address"); err != nil {
			// A flood is written to the click log at one click a minute
			// per network, and prefixNetworks a minute per prefix, not at
			// its own rate; /metrics counts it all.
			logPrefix := ""
			if prefix != "" {
				logPrefix = "log\x00" + prefix
			}
			first, second := s.allowIP(r.Context(), "log\x00"+network, ratelimit.Limit{Rate: 1.0 / 60, Burst: 1},
				logPrefix, ratelimit.Limit{Rate: prefixNetworks / 60.0, Burst: prefixNetworks})
			r = r.WithContext(context.WithValue(r.Context(), overLimitKey{}, overLimit{record: first.Allowed && second.Allowed}))
		}
		return h(w, r)
	}
}

// allowIP takes a token from network's bucket under nl and, when that was
// allowed, from prefix's under pl. A client that is no address has no
// prefix (""): its network's bucket alone, and a prefix Decision that
// allows it under no limit.
func (s *server) allowIP(ctx context.Context, network string, nl ratelimit.Limit, prefix string, pl ratelimit.Limit) (n, p ratelimit.Decision) {
	if prefix == "" {
		return s.limits.ips.Allow(ctx, network, nl), ratelimit.Decision{Allowed: true}
	}
	return s.limits.ips.AllowBoth(ctx, ratelimit.Bucket{Key: network, Limit: nl}, ratelimit.Bucket{Key: prefix, Limit: pl})
}

// times is f times l, its rate and its burst, the burst at most
// math.MaxInt.
func times(l ratelimit.Limit, f int) ratelimit.Limit {
	burst := math.MaxInt
	if l.Burst <= math.MaxInt/f {
		burst = l.Burst * f
	}
	return ratelimit.Limit{Rate: l.Rate * float64(f), Burst: burst}
}

// overLimit marks a redirect over its network's request limit; record
// says whether its click is written to the log.
type overLimit struct{ record bool }

type overLimitKey struct{}

// overLimitOf is r's overLimit mark, and whether it has one.
func overLimitOf(r *http.Request) (overLimit, bool) {
	o, ok := r.Context().Value(overLimitKey{}).(overLimit)
	return o, ok
}

// admitPage is the gate of a site queueing an unseen page: its partner's
// page limit, per site, and the client network's and its prefix's shares
// of it, so one client's junk URLs cannot use up the budget of a site's
// real new pages.
func (s *server) admitPage(w http.ResponseWriter, r *http.Request, apiKey, siteID string) func() error {
	return func() error {
		l, _ := s.partnerLimits(r, apiKey)
		return s.shareLimit(w, r, s.limits.sites, apiKey+"\x00"+siteID,
			ratelimit.Limit{Rate: l.PagesPerSecond, Burst: l.PageBurst}, s.cfg.PageNetworkShare, "site", [3]string{
				"this network is queueing too many new pages for this site",
				"this network's IPv6 /48 or IPv4 /24 is queueing too many new pages for this site",
				"this site is queueing too many new pages",
			})
	}
}

// checkLimit sets the X-RateLimit-* headers of decision d and returns the
// 429 of a refused request, counted under limit, which it names, with the
// seconds to wait (Retry-After, once the error is written).
func (s *server) checkLimit(w http.ResponseWriter, d ratelimit.Decision, limit, message string) error {
	if d.Limit == 0 {
		return nil // no limit configured
	}
	h := w.Header()
	h.Set("X-RateLimit-Limit", strconv.Itoa(d.Limit))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(d.Remaining))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(ceilSeconds(d.Reset), 10))
	if d.Allowed {
		return nil
	}
	s.metrics.RateLimited(limit)
	h.Set("Cache-Control", "no-store")
	param := ""
	switch limit {
	case "api_key", "api_key_network", "api_key_prefix":
		param = "api_key"
	case "site", "site_network", "site_prefix":
		param = "site_id"
	}
	return &Error{Status: http.StatusTooManyRequests, Code: CodeRateLimited, Param: param, Message: message,
		Limit: limit, RetryAfter: max(1, ceilSeconds(d.RetryAfter))}
}

// ceilSeconds is d in whole seconds, rounded up.
func ceilSeconds(d time.Duration) int64 {
	return int64((d + time.Second - 1) / time.Second)
}
