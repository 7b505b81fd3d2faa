package clicks

import (
	"encoding/binary"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// FuzzVerify feeds Verify arbitrary parameters, exp and sig: it never
// panics, a signature verifies only the parameters and exp it was made
// for, and a valid signature changed in any byte never verifies.
func FuzzVerify(f *testing.F) {
	ks := testKeys(f, "k1", "k0")
	other := testKeys(f, "k0", "k1")
	p := sample()
	exp, sig := ks.Sign(&p, testDecision, t0.Add(time.Hour))
	f.Add(p.AdID, p.Criterion, p.SiteID, exp, sig, 0, byte(0))
	e0, s0 := other.Sign(&p, testDecision, t0.Add(time.Hour))
	f.Add(p.AdID, p.Criterion, p.SiteID, e0, s0, 0, byte(0))
	f.Add(p.AdID, p.Criterion, p.SiteID, exp, sig, len(sig)-1, byte(1))
	f.Add(p.AdID, p.Criterion, p.SiteID, exp, sig, 3, byte(0x20))
	f.Add("x", "", "", "", "", 0, byte(0))
	f.Add(p.AdID, p.Criterion, p.SiteID, "99999999999999999999", "k1."+sig[3:], 1, byte(0xff))
	f.Add("a", "b", "c", "1", "k0.AAAA", 0, byte(0))
	f.Fuzz(func(t *testing.T, adID, criterion, siteID, exp, sig string, pos int, flip byte) {
		q := p
		q.AdID, q.Criterion, q.SiteID = adID, criterion, siteID
		r := ks.Verify(&q, testDecision, exp, sig, t0)
		switch r {
		case "", ReasonUnsigned, ReasonForged, ReasonExpired:
		default:
			t.Fatalf("reason %q", r)
		}
		if r == "" {
			// Only what Sign made verifies: by the first key or the second.
			e := time.Unix(mustExp(t, exp), 0)
			e1, s1 := ks.Sign(&q, testDecision, e)
			e0, s0 := other.Sign(&q, testDecision, e)
			if (e1 != exp || s1 != sig) && (e0 != exp || s0 != sig) {
				t.Fatalf("%+v exp %q sig %q verifies but was never signed", q, exp, sig)
			}
		}
		// Sign what we were given and flip one byte of the result.
		if e, ok := parseExp(exp); ok && e > t0.Unix() {
			_, good := ks.Sign(&q, testDecision, time.Unix(e, 0))
			if ks.Verify(&q, testDecision, exp, good, t0) != "" {
				t.Fatalf("a fresh signature of %+v exp %s does not verify", q, exp)
			}
			if flip != 0 {
				b := []byte(good)
				i := pos % len(b)
				if i < 0 {
					i = -i
				}
				b[i] ^= flip
				if got := ks.Verify(&q, testDecision, exp, string(b), t0); got == "" {
					t.Fatalf("sig %q with byte %d ^ %#x still verifies", good, i, flip)
				}
			}
		}
	})
}

func mustExp(t *testing.T, s string) int64 {
	e, ok := parseExp(s)
	if !ok {
		t.Fatalf("exp %q verified but does not parse", s)
	}
	return e
}

// FuzzVerifyToken: any token never panics; a token verifies only for the
// key and site it was made for, and a changed byte never verifies.
func FuzzVerifyToken(f *testing.F) {
	ks := testKeys(f, "k1", "k0")
	tok := ks.Token("demo", "demo", t0.Add(time.Hour))
	f.Add("demo", "demo", tok, 0, byte(0))
	f.Add("demo", "blog", tok, 0, byte(0))
	f.Add("demo", "demo", tok, len(tok)-1, byte(1))
	f.Add("demo", "demo", tok, 2, byte('.'))
	f.Add("", "", "k1..", 0, byte(0))
	f.Add("demo", "demo", "k1.1.AAAA", 0, byte(0))
	f.Fuzz(func(t *testing.T, apiKey, siteID, tok string, pos int, flip byte) {
		r := ks.VerifyToken(apiKey, siteID, tok, t0)
		switch r {
		case "", ReasonUnsigned, ReasonForged, ReasonExpired:
		default:
			t.Fatalf("reason %q", r)
		}
		if r == "" {
			// Then tok must be exactly what Token makes for its exp.
			_, rest, _ := cutDot(tok)
			exp, _, _ := cutDot(rest)
			e, _ := parseExp(exp)
			if want := ks.Token(apiKey, siteID, time.Unix(e, 0)); tok[len(tok)-macLen:] != want[len(want)-macLen:] {
				t.Fatalf("token %q for %q %q verifies but was never made", tok, apiKey, siteID)
			}
		}
		good := ks.Token(apiKey, siteID, t0.Add(time.Hour))
		if ks.VerifyToken(apiKey, siteID, good, t0) != "" {
			t.Fatalf("a fresh token for %q %q does not verify", apiKey, siteID)
		}
		if flip != 0 {
			b := []byte(good)
			i := pos % len(b)
			if i < 0 {
				i = -i
			}
			b[i] ^= flip
			if ks.VerifyToken(apiKey, siteID, string(b), t0) == "" {
				t.Fatalf("token %q with byte %d ^ %#x still verifies", good, i, flip)
			}
		}
	})
}

func cutDot(s string) (before, after string, ok bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == '.' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// FuzzNetwork: any string maps to one network without panic; the
// addresses of one network map to the same string, and a network's
// string maps to itself; so do the addresses of one 6to4 /48, and a
// Teredo client's through any server, flags and port.
func FuzzNetwork(f *testing.F) {
	for _, s := range []string{"192.0.2.1", "::ffff:192.0.2.1", "2001:db8::1%z1", "fe80::1%eth0", "x", "", "2001:db8:1:2::/64", "::ffff:1.2.3.4%a", "2002:c000:201:7::1", "2001:0:4136:e378:8000:63bf:3fff:fdfe"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n := Network(s)
		if Network(n) != n {
			t.Fatalf("Network(%q) = %q, which maps to %q", s, n, Network(n))
		}
		a, err := netip.ParseAddr(strings.TrimSpace(s))
		if err != nil {
			return
		}
		if a.WithZone("").Unmap().Is6() {
			b := a.WithZone("").As16()
			if b[0] == 0x20 && b[1] == 0x01 && b[2] == 0 && b[3] == 0 {
				b[4] ^= 0xff // another server, flags and port of the Teredo client
				b[9] ^= 0xff
				b[11] ^= 0xff
				if other := netip.AddrFrom16(b).String(); Network(other) != n {
					t.Fatalf("%q and %q of one Teredo client: %q and %q", s, other, n, Network(other))
				}
				return
			}
			b[15] ^= 0xff
			if other := netip.AddrFrom16(b).WithZone("z").String(); Network(other) != n {
				t.Fatalf("%q and %q of one /64: %q and %q", s, other, n, Network(other))
			}
			if b[0] == 0x20 && b[1] == 0x02 {
				b[6] ^= 0xff // another /64 of the 6to4 /48
				if other := netip.AddrFrom16(b).String(); Network(other) != n {
					t.Fatalf("%q and %q of one 6to4 /48: %q and %q", s, other, n, Network(other))
				}
			}
		}
	})
}

// FuzzPrefix: any string maps to one Prefix without panic; every address
// has one, which holds its Network, and every spelling of an IPv4 address
// of one /24 (IPv4-mapped, with a zone, 6to4 with any subnet and
// interface, Teredo through any server, flags and port) maps to the /24's, as every address of one IPv6 /48 maps to
// the /48's (but the IPv4-mapped ones of ::/48); IsIPv4Prefix tells the
// two apart. A Prefix is no address: its own Prefix is "".
func FuzzPrefix(f *testing.F) {
	for _, s := range []string{"192.0.2.1", "::ffff:192.0.2.1", "::ffff:192.0.2.1%z", "2002:c000:201:7::1", "2002:c000:2ff::", "2001:0:1:2:3:4:3fff:fdfe",
		"2001:db8:1:2::5%eth0", "::c000:201", "192.0.2.0/24", "2001:db8:1::/48", "x", "", " 198.51.100.7 "} {
		f.Add(s, byte(0), uint64(0))
	}
	f.Fuzz(func(t *testing.T, s string, host byte, low uint64) {
		p := Prefix(s)
		if Prefix(p) != "" {
			t.Fatalf("Prefix(%q) = %q, whose Prefix is %q", s, p, Prefix(p))
		}
		a, ok := clientAddr(s)
		if !ok {
			if p != "" {
				t.Fatalf("Prefix(%q) = %q, no address", s, p)
			}
			return
		}
		pp, err := netip.ParsePrefix(p)
		if err != nil || pp.Masked() != pp {
			t.Fatalf("Prefix(%q) = %q, no masked prefix: %v", s, p, err)
		}
		if want := map[bool]int{true: 24, false: 48}[a.Is4()]; pp.Bits() != want || IsIPv4Prefix(p) != a.Is4() {
			t.Fatalf("Prefix(%q) = %q, IsIPv4Prefix %v; want a /%d", s, p, IsIPv4Prefix(p), want)
		}
		n := Network(s)
		if na, err := netip.ParseAddr(n); err == nil && !pp.Contains(na) {
			t.Fatalf("%q: Network %q outside Prefix %q", s, n, p)
		} else if np, err := netip.ParsePrefix(n); err == nil && !pp.Contains(np.Addr()) {
			t.Fatalf("%q: Network %q outside Prefix %q", s, n, p)
		}
		var others []string
		if a.Is4() {
			b := a.As4()
			b[3] = host // another address of the /24
			v4 := netip.AddrFrom4(b)
			var sixToFour [16]byte
			sixToFour[0], sixToFour[1] = 0x20, 0x02
			copy(sixToFour[2:6], b[:])
			binary.BigEndian.PutUint16(sixToFour[6:8], uint16(low>>48))
			binary.BigEndian.PutUint64(sixToFour[8:], low)
			var teredo [16]byte // any server, flags and port
			teredo[0], teredo[1] = 0x20, 0x01
			binary.BigEndian.PutUint64(teredo[4:12], low)
			for i, c := range b {
				teredo[12+i] = ^c
			}
			others = append(others, v4.String(), netip.AddrFrom16(v4.As16()).String(),
				netip.AddrFrom16(v4.As16()).WithZone("eth0").String(), netip.AddrFrom16(sixToFour).String(),
				netip.AddrFrom16(teredo).String())
		} else {
			b := a.As16()
			binary.BigEndian.PutUint16(b[6:8], uint16(low>>48)) // another /64 of the /48
			binary.BigEndian.PutUint64(b[8:], low)
			if o := netip.AddrFrom16(b); !o.Is4In6() { // ::/48 holds the IPv4-mapped addresses, each IPv4's
				others = append(others, o.String(), o.WithZone("z").String())
			}
		}
		for _, o := range others {
			if Prefix(o) != p {
				t.Fatalf("%q and %q of one prefix: %q and %q", s, o, p, Prefix(o))
			}
		}
	})
}

// FuzzIntentAndBot: no header values or user agent panic, an intent
// reason is one of the intent reasons, and a user agent that is not
// printable ASCII is always a bot; Chromium or Firefox navigating without
// Sec-Fetch-User never passes.
func FuzzIntentAndBot(f *testing.F) {
	f.Add("navigate", "document", "?1", "", "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0")
	f.Add("no-cors", "image", "", "", "Mozilla/5.0")
	f.Add("navigate", "document", "", "prefetch;prerender", "\u0441url/8.0")
	f.Add("navigate", "document", "", "", "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36")
	f.Fuzz(func(t *testing.T, mode, dest, user, purpose, ua string) {
		h := http.Header{}
		Intent{Mode: mode, Dest: dest, User: user, Purpose: purpose}.Header(h)
		r := IntentOf(h).Reason(ua)
		switch r {
		case "", ReasonNoIntent, ReasonNotNavigation, ReasonPrefetch:
		default:
			t.Fatalf("intent reason %q", r)
		}
		if r == "" && strings.TrimSpace(user) == "" && sendsUser(ua) {
			t.Fatalf("%q navigated without Sec-Fetch-User and passed", ua)
		}
		bot := IsBot(ua)
		for i := range len(ua) {
			if (ua[i] < 0x20 || ua[i] > 0x7e) && !bot && strings.TrimSpace(ua) == ua {
				t.Fatalf("%q is no bot", ua)
			}
		}
	})
}

// FuzzVerifyClickToken: a click token verifies only for the click
// parameters, network and user agent it was made for, and whatever the
// bytes, the answer is one of the click token's reasons; TokenShown reads
// the time of every token it verifies.
func FuzzVerifyClickToken(f *testing.F) {
	ks := testKeys(f, "k1", "k0")
	p := sample()
	const network, ua = "2001:db8:1::/64", "Mozilla/5.0 (X11) Firefox/133.0"
	ct := ks.ClickToken(&p, network, ua, t0, t0.Add(time.Hour))
	f.Add(p.AdID, network, ua, ct, 0, byte(0))
	f.Add(p.AdID, "192.0.2.1", ua, ct, 0, byte(0))
	f.Add(p.AdID, network, ua+" x", ct, 0, byte(0))
	f.Add(p.AdID, network, ua, ct, len(ct)-1, byte(1))
	f.Add(p.AdID, network, ua, ct, 4, byte('.'))
	f.Add("x", "", "", "k1.AAAAAAAAAAAAAAAA.1.1.AAAA", 0, byte(0))
	f.Add(p.AdID, network, ua, "k1....", 0, byte(0))
	f.Fuzz(func(t *testing.T, adID, net, agent, token string, pos int, flip byte) {
		q := p
		q.AdID = adID
		now := t0.Add(time.Second)
		claim, r := ks.VerifyClickToken(&q, token, net, agent, now, 250*time.Millisecond)
		switch r {
		case "", ReasonForged, ReasonExpired, ReasonTooFast:
		default:
			t.Fatalf("reason %q", r)
		}
		if shown, ok := TokenShown(token); r != ReasonForged && (!ok || !shown.Equal(claim.Shown)) {
			t.Fatalf("token %q, verified (%q), was shown at %v, TokenShown says %v %v", token, r, claim.Shown, shown, ok)
		}
		if r == "" && (adID != p.AdID || net != network || agent != ua || token != ct) {
			if claim.D == "" || !claim.Shown.Before(now) {
				t.Fatalf("token %q verifies with claim %+v", token, claim)
			}
			// A token that verifies for other inputs was made for them: a
			// fresh one made for them verifies too, and the MAC is theirs.
			again := ks.ClickToken(&q, net, agent, claim.Shown, claim.Expires)
			if again[len(again)-macLen:] == token[len(token)-macLen:] {
				t.Fatalf("two tokens share a MAC: %q", token)
			}
		}
		if flip != 0 {
			b := []byte(ct)
			b[uint(pos)%uint(len(b))] ^= flip
			if _, r := ks.VerifyClickToken(&p, string(b), network, ua, now, 0); r == "" {
				t.Fatalf("token %q altered to %q verifies", ct, b)
			}
		}
	})
}

// FuzzParseInvalidation feeds ParseInvalidation arbitrary parameters, as
// POST /admin/invalidate's form gives them: it never panics; a refusal
// names one of its parameters; a range it takes lies within FirstDay and
// the end of LastDay; and no id it takes is empty, holds a comma or
// spaces at its ends.
func FuzzParseInvalidation(f *testing.F) {
	f.Add("k", "s", "a", "x, y,,z", "2026-11-20", "2026-11-21", "farm", "true")
	f.Add("", "", "", "", "1900-01-01", "2200-12-31", "", "")
	f.Add("k", "", "", "", "2026-11-20T10:00:00+14:00", "2262-04-12", "r", "1")
	f.Add("", "", "", ",,", "1677-01-01", "-0001-01-01", "", "yes")
	f.Fuzz(func(t *testing.T, apiKey, siteID, ad, ids, from, to, reason, dryRun string) {
		m := map[string]string{"api_key": apiKey, "site_id": siteID, "ad": ad, "id": ids, "from": from, "to": to,
			"reason": reason, "dry_run": dryRun}
		inv, err := ParseInvalidation(func(k string) string { return m[k] })
		if err != nil {
			ie, ok := err.(*InvalidationError)
			if !ok || m[ie.Param] == "" && ie.Param != "dry_run" {
				t.Fatalf("error %v (%T) names no parameter given", err, err)
			}
			return
		}
		end := LastDay.AddDate(0, 0, 1)
		for _, b := range []time.Time{inv.From, inv.To} {
			if !b.IsZero() && (b.Before(FirstDay) || b.After(end)) {
				t.Fatalf("from=%q to=%q: bound %v outside %v..%v", from, to, b, FirstDay, end)
			}
		}
		for _, id := range inv.IDs {
			if id == "" || strings.Contains(id, ",") || strings.TrimSpace(id) != id {
				t.Fatalf("ids %q: id %q", ids, id)
			}
		}
	})
}
