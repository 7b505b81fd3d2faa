package clicks

import (
	"crypto/hmac"
	"crypto/sha256"
	"strconv"
	"strings"
	"time"
)

// A click token ("&ct=<kid>.<decision>.<shown>.<exp>.<mac>") is what the
// impression beacon hands the page for each ad it placed once a reader
// could see it: an HMAC over the ad's click parameters, a decision id of
// its own (so it bills once), when it was issued (unix milliseconds), its
// expiry (unix seconds), and the client network and user agent the beacon
// came from. The page holds no key, so it cannot make one; a token taken
// to another ad, another network or another browser does not verify.

// clickTokenDomain keeps a click token's MAC apart from a signed URL's and
// a site token's.
const clickTokenDomain = "adlink click token v1\n"

// appendClickTokenMsg appends what a click token's MAC covers.
func appendClickTokenMsg(dst []byte, p *Params, d, shown, exp, network, userAgent string) []byte {
	dst = append(append(AppendQuery(dst, p), "&d="...), d...)
	dst = append(append(dst, "&exp="...), exp...)
	dst = append(append(dst, "&shown="...), shown...)
	dst = append(append(dst, "&net="...), network...)
	// The user agent last, where nothing follows it that it could pass for.
	return append(append(dst, "&ua="...), userAgent...)
}

// ClickToken returns the click token for a click on p's ad from network
// (Network) and userAgent, issued at shown and billable until exp.
func (ks *Keys) ClickToken(p *Params, network, userAgent string, shown, exp time.Time) string {
	d := NewDecision()
	s := strconv.FormatInt(shown.UnixMilli(), 10)
	e := strconv.FormatInt(exp.Unix(), 10)
	var sum [sha256.Size]byte
	mac := ks.mac(sum[:0], 0, clickTokenDomain, appendClickTokenMsg(nil, p, d, s, e, network, userAgent))
	out := make([]byte, 0, len(ks.keys[0].ID)+len(d)+len(s)+len(e)+4+macLen)
	out = append(append(out, ks.keys[0].ID...), '.')
	out = append(append(out, d...), '.')
	out = append(append(out, s...), '.')
	out = append(append(out, e...), '.')
	return string(b64.AppendEncode(out, mac))
}

// TokenShown is when click token ct says its ad was shown; false when ct
// has no such time. It proves nothing: only a token VerifyClickToken took,
// expired or not, says it truly.
func TokenShown(ct string) (time.Time, bool) {
	parts := strings.SplitN(ct, ".", 6)
	if len(parts) != 5 {
		return time.Time{}, false
	}
	shown, ok := parseDigits(parts[2], maxMilliDigits)
	if !ok {
		return time.Time{}, false
	}
	return time.UnixMilli(shown), true
}

// TokenClaim is what a verified click token says: the decision it bills
// once, until Expires, and when its ad was shown.
type TokenClaim struct {
	D       string
	Shown   time.Time
	Expires time.Time
}

// VerifyClickToken checks click token ct against a click with p's
// parameters from network and userAgent at now. The reason is "" when it
// verifies, is unexpired and now is at least minDelay after its ad was
// shown; else ReasonForged (altered, another ad's, network's or browser's,
// an unknown key), ReasonExpired or ReasonTooFast.
func (ks *Keys) VerifyClickToken(p *Params, ct, network, userAgent string, now time.Time, minDelay time.Duration) (TokenClaim, string) {
	parts := strings.SplitN(ct, ".", 6)
	if len(parts) != 5 || !validDecision(parts[1]) {
		return TokenClaim{}, ReasonForged
	}
	shown, ok1 := parseDigits(parts[2], maxMilliDigits)
	exp, ok2 := parseExp(parts[3])
	if !ok1 || !ok2 {
		return TokenClaim{}, ReasonForged
	}
	i, got, ok := ks.splitMAC(parts[0] + "." + parts[4])
	if !ok {
		return TokenClaim{}, ReasonForged
	}
	var buf [512]byte
	var sum [sha256.Size]byte
	msg := appendClickTokenMsg(buf[:0], p, parts[1], parts[2], parts[3], network, userAgent)
	if !hmac.Equal(ks.mac(sum[:0], i, clickTokenDomain, msg), got) {
		return TokenClaim{}, ReasonForged
	}
	c := TokenClaim{D: parts[1], Shown: time.UnixMilli(shown), Expires: time.Unix(exp, 0)}
	switch {
	case now.Unix() >= exp:
		return c, ReasonExpired
	case now.Before(c.Shown.Add(minDelay)):
		return c, ReasonTooFast
	}
	return c, ""
}
