package clicks

import (
	"strconv"
	"testing"
	"time"
)

func TestIsBot(t *testing.T) {
	for ua, want := range map[string]bool{
		"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36":                             false,
		"Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1": false,
		"Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0":                                                                  false,
		"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)":                                                                true,
		"Mozilla/5.0 (compatible; bingbot/2.0)":                                                                                                   true,
		"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/131.0 Safari/537.36":                               true,
		"curl/8.5.0":                       true,
		"Wget/1.21":                        true,
		"python-requests/2.32":             true,
		"Go-http-client/1.1":               true,
		"Baiduspider":                      true,
		"facebookexternalhit/1.1":          true,
		"Mozilla/5.0 AhrefsBot/7.0":        true,
		"Mozilla/5.0 (compatible) Crawler": true,
		"":                                 true,
		"   ":                              true,
	} {
		if got := IsBot(ua); got != want {
			t.Errorf("IsBot(%q) = %v, want %v", ua, got, want)
		}
	}
}

func TestRepeats(t *testing.T) {
	r := NewRepeats(30*time.Second, 1000)
	steps := []struct {
		client, ad string
		at         time.Duration
		want       bool
	}{
		{"1.1.1.1", "a", 0, false},
		{"1.1.1.1", "a", 29 * time.Second, true},  // within 30 s of the first
		{"1.1.1.1", "b", 29 * time.Second, false}, // another ad
		{"2.2.2.2", "a", 29 * time.Second, false}, // another client
		{"1.1.1.1", "a", 58 * time.Second, true},  // within 30 s of the last
		{"1.1.1.1", "a", 88 * time.Second, false}, // 30 s after the last
		{"1.1.1.1a", "", 88 * time.Second, false}, // no ambiguity between the two strings
	}
	for i, s := range steps {
		if got := r.Seen(s.client, s.ad, t0.Add(s.at)); got != s.want {
			t.Errorf("step %d %s %s at %v: repeat %v, want %v", i, s.client, s.ad, s.at, got, s.want)
		}
	}
	// The window has passed for all but the last two.
	r.Seen("3.3.3.3", "c", t0.Add(200*time.Second))
	if n := r.Len(); n != 1 {
		t.Errorf("%d pairs remembered after the window, want 1", n)
	}
}

// However many clients click, memory holds at most max pairs.
func TestRepeatsBounded(t *testing.T) {
	const max = 5000
	r := NewRepeats(30*time.Second, max)
	for i := range 100 * max {
		r.Seen("10.0."+strconv.Itoa(i), "ad", t0.Add(time.Duration(i)*time.Microsecond))
		if n := r.Len(); n > max {
			t.Fatalf("%d pairs after %d clicks, max %d", n, i+1, max)
		}
	}
	if cap(r.order) > 4*max {
		t.Errorf("the eviction queue grew to %d", cap(r.order))
	}
	// The most recent are still known.
	if !r.Seen("10.0."+strconv.Itoa(100*max-1), "ad", t0.Add(time.Second)) {
		t.Error("the latest click is forgotten")
	}
}

func TestJudge(t *testing.T) {
	ks := testKeys(t, "k1")
	p := sample()
	exp, sig := ks.Sign(&p, t0.Add(24*time.Hour))
	tok := ks.Token(p.APIKey, p.SiteID, t0.Add(time.Hour))
	const browser = "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"
	click := func(ip, ua string, at time.Duration) *Click {
		return &Click{Time: t0.Add(at), AdID: p.AdID, AdType: p.AdType, Type: p.Type, APIKey: p.APIKey, SiteID: p.SiteID,
			Criterion: p.Criterion, YkTag: p.YkTag, IP: ip, UserAgent: ua}
	}
	j := &Judge{Keys: ks, Repeats: NewRepeats(RepeatWindow, 1000)}
	tests := []struct {
		name   string
		c      *Click
		auth   Auth
		refuse string
		want   string
	}{
		{"signed", click("192.0.2.1", browser, 0), Auth{Exp: exp, Sig: sig}, "", ""},
		{"repeat", click("192.0.2.1", browser, 10*time.Second), Auth{Exp: exp, Sig: sig}, "", ReasonRepeat},
		{"token", click("192.0.2.2", browser, 0), Auth{Tok: tok}, "", ""},
		{"token expired", click("192.0.2.3", browser, time.Hour), Auth{Tok: tok}, "", ReasonExpired},
		{"unsigned", click("192.0.2.4", browser, 0), Auth{}, "", ReasonUnsigned},
		{"bot", click("192.0.2.5", "curl/8.5.0", 0), Auth{Exp: exp, Sig: sig}, "", ReasonBot},
		{"partner gone", click("192.0.2.6", browser, 0), Auth{Exp: exp, Sig: sig}, ReasonPartner, ReasonPartner},
		{"forged beats bot", click("192.0.2.7", "curl/8.5.0", 0), Auth{Exp: exp, Sig: sig + "x"}, "", ReasonForged},
		{"sig wins over tok", click("192.0.2.8", browser, 0), Auth{Exp: exp, Sig: "k1.x", Tok: tok}, "", ReasonForged},
		{"after the window", click("192.0.2.1", browser, 41*time.Second), Auth{Exp: exp, Sig: sig}, "", ""},
	}
	for _, tt := range tests {
		j.Judge(tt.c, tt.auth, tt.refuse)
		if tt.c.Reason != tt.want || tt.c.Billable != (tt.want == "") {
			t.Errorf("%s: billable %v reason %q, want %q", tt.name, tt.c.Billable, tt.c.Reason, tt.want)
		}
	}
	var none Judge
	c := click("192.0.2.9", browser, 0)
	none.Judge(c, Auth{Exp: exp, Sig: sig}, "")
	if c.Billable || c.Reason != ReasonUnsigned {
		t.Errorf("without keys: %v %q", c.Billable, c.Reason)
	}
}
