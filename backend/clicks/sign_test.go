package clicks

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/adlink/adlink/contract"
	"github.com/adlink/adlink/match"
)

var t0 = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

// testDecision is a decision id as NewDecision spells them.
const testDecision = "AAAAAAAAAAAAAAAA"

func testKeys(t testing.TB, ids ...string) *Keys {
	t.Helper()
	var keys []Key
	for _, id := range ids {
		secret := sha256.Sum256([]byte("test key " + id))
		keys = append(keys, Key{ID: id, Secret: secret[:]})
	}
	ks, err := NewKeys(keys...)
	if err != nil {
		t.Fatal(err)
	}
	return ks
}

func sample() Params {
	return Params{Type: "search", AdID: "AMAZON.1.B00JVL2X1I", AdType: "product", APIKey: "demo",
		SiteID: "demo", Criterion: "lg handy", YkTag: "t:1"}
}

// The Sign hook and Verify agree on what the match package writes, and
// Verify reads the parameters as any client re-escapes them.
func TestSignFuncVerifies(t *testing.T) {
	ks := testKeys(t, "k1")
	p := sample()
	p.Criterion = "Größe & Farbe+1 ü/ä?"
	q := AppendQuery(nil, &p)
	signed := ks.SignFunc(t0.Add(time.Hour))(q, q)
	v, err := url.ParseQuery(string(signed))
	if err != nil {
		t.Fatal(err)
	}
	got := Params{Type: v.Get("type"), AdID: v.Get("adId"), AdType: v.Get("adType"), APIKey: v.Get("api_key"),
		SiteID: v.Get("site_id"), Criterion: v.Get("criterionId"), YkTag: v.Get("yk_tag")}
	if got != p {
		t.Fatalf("query %s reads back as %+v", signed, got)
	}
	if r := ks.Verify(&got, v.Get("d"), v.Get("exp"), v.Get("sig"), t0); r != "" {
		t.Fatalf("a fresh signature: %q", r)
	}
	if !strings.HasPrefix(v.Get("sig"), "k1.") || v.Get("exp") != "1795352400" {
		t.Errorf("exp %s sig %s", v.Get("exp"), v.Get("sig"))
	}
	if d := v.Get("d"); !validDecision(d) || !strings.Contains(string(signed), "&d="+d+"&exp=") {
		t.Errorf("decision %q in %s", d, signed)
	}
	exp, sig := ks.Sign(&p, v.Get("d"), t0.Add(time.Hour))
	if exp != v.Get("exp") || sig != v.Get("sig") {
		t.Errorf("Sign gives %s %s, SignFunc %s %s", exp, sig, v.Get("exp"), v.Get("sig"))
	}
}

// AppendQuery writes what match writes for the same link.
func TestAppendQueryIsMatchs(t *testing.T) {
	ads := []match.Ad{{ID: "a.example", Kind: match.KindAdvertiser, Title: "A", Keywords: []string{"lg handy"},
		Landing: "https://a.example/", Advertiser: "a.example", Markets: []match.Market{{Country: "de", Lang: "de"}}}}
	ix, err := match.Build(ads)
	if err != nil {
		t.Fatal(err)
	}
	q := match.Query{Text: "lg handy", Size: 10, DistinctAdvertiser: 3}
	var seen []byte
	l := &contract.Links{Base: "https://r.example", Type: contract.TypeSearch,
		APIKey: "de mo", SiteID: "s/1", YkTag: "x:y", Sign: func(dst, query []byte) []byte {
			seen = append([]byte(nil), query...)
			return dst
		}}
	o := l.Options()
	ix.AppendResponse(nil, ix.Match(&q), &o)
	p := Params{Type: "search", AdID: "a.example", AdType: "advertiser", APIKey: "de mo", SiteID: "s/1", Criterion: "lg handy", YkTag: "x:y"}
	if want := AppendQuery(nil, &p); string(seen) != string(want) {
		t.Errorf("match signs %s\nAppendQuery  %s", seen, want)
	}
}

// Each link a SignFunc signs gets its own decision id, and a signature
// holds only with the id it was made with: an id moved from another link
// (another ad, or another answer for the same ad) is forged.
func TestSignatureBindsTheDecision(t *testing.T) {
	ks := testKeys(t, "k1")
	sign := ks.SignFunc(t0.Add(time.Hour))
	p := sample()
	other := sample()
	other.AdID = "EBAY.4.1"
	read := func(p *Params) url.Values {
		q := AppendQuery(nil, p)
		v, err := url.ParseQuery(string(sign(q, q)))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	a, a2, b := read(&p), read(&p), read(&other)
	if a.Get("d") == a2.Get("d") || a.Get("d") == b.Get("d") {
		t.Fatalf("decision ids repeat: %s %s %s", a.Get("d"), a2.Get("d"), b.Get("d"))
	}
	for _, tt := range []struct {
		name string
		d    string
		want string
	}{
		{"its own", a.Get("d"), ""},
		{"another ad's", b.Get("d"), ReasonForged},
		{"another answer's for the same ad", a2.Get("d"), ReasonForged},
		{"none", "", ReasonForged},
		{"too long", a.Get("d") + "A", ReasonForged},
	} {
		if got := ks.Verify(&p, tt.d, a.Get("exp"), a.Get("sig"), t0); got != tt.want {
			t.Errorf("%s decision id: %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestVerifyRefuses(t *testing.T) {
	ks := testKeys(t, "k1")
	p := sample()
	exp, sig := ks.Sign(&p, testDecision, t0.Add(time.Hour))
	change := func(f func(*Params)) *Params {
		c := p
		f(&c)
		return &c
	}
	k2 := testKeys(t, "k2")
	_, sig2 := k2.Sign(&p, testDecision, t0.Add(time.Hour))
	tests := []struct {
		name     string
		p        *Params
		exp, sig string
		now      time.Time
		want     string
	}{
		{"valid", &p, exp, sig, t0, ""},
		{"no sig", &p, "", "", t0, ReasonUnsigned},
		{"adId", change(func(c *Params) { c.AdID = "EBAY.4.1" }), exp, sig, t0, ReasonForged},
		{"adType", change(func(c *Params) { c.AdType = "advertiser" }), exp, sig, t0, ReasonForged},
		{"type", change(func(c *Params) { c.Type = "intext" }), exp, sig, t0, ReasonForged},
		{"api_key", change(func(c *Params) { c.APIKey = "k2" }), exp, sig, t0, ReasonForged},
		{"site_id", change(func(c *Params) { c.SiteID = "blog" }), exp, sig, t0, ReasonForged},
		{"criterionId", change(func(c *Params) { c.Criterion = "handy" }), exp, sig, t0, ReasonForged},
		{"yk_tag", change(func(c *Params) { c.YkTag = "t:2" }), exp, sig, t0, ReasonForged},
		{"yk_tag dropped", change(func(c *Params) { c.YkTag = "" }), exp, sig, t0, ReasonForged},
		{"exp later", &p, "1895352400", sig, t0, ReasonForged},
		{"exp with a leading zero", &p, "0" + exp, sig, t0, ReasonForged},
		{"exp missing", &p, "", sig, t0, ReasonForged},
		{"sig missing", &p, exp, "", t0, ReasonForged},
		{"expired", &p, exp, sig, t0.Add(time.Hour), ReasonExpired},
		{"long expired", &p, exp, sig, t0.Add(48 * time.Hour), ReasonExpired},
		{"unknown key", &p, exp, sig2, t0, ReasonForged},
		{"no key id", &p, exp, sig[len("k1."):], t0, ReasonForged},
		{"truncated", &p, exp, sig[:len(sig)-1], t0, ReasonForged},
		{"padded", &p, exp, sig + "=", t0, ReasonForged},
		{"not base64", &p, exp, sig[:len(sig)-2] + "!!", t0, ReasonForged},
	}
	for _, tt := range tests {
		if got := ks.Verify(tt.p, testDecision, tt.exp, tt.sig, tt.now); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}

// Keys rotate: the first signs, every key verifies.
func TestKeyRotation(t *testing.T) {
	old := testKeys(t, "old")
	p := sample()
	exp, sig := old.Sign(&p, testDecision, t0.Add(time.Hour))
	tok := old.Token("demo", "demo", t0.Add(time.Hour))
	rotated := testKeys(t, "new", "old")
	if r := rotated.Verify(&p, testDecision, exp, sig, t0); r != "" {
		t.Errorf("the old key's sig after rotation: %q", r)
	}
	if r := rotated.VerifyToken("demo", "demo", tok, t0); r != "" {
		t.Errorf("the old key's tok after rotation: %q", r)
	}
	_, sig = rotated.Sign(&p, testDecision, t0.Add(time.Hour))
	if !strings.HasPrefix(sig, "new.") || rotated.SigningKeyID() != "new" {
		t.Errorf("rotated keys sign with %s", sig)
	}
	if r := old.Verify(&p, testDecision, exp, sig, t0); r != ReasonForged {
		t.Errorf("a retired server verifies the new key: %q", r)
	}
}

func TestToken(t *testing.T) {
	ks := testKeys(t, "k1")
	tok := ks.Token("demo", "demo", t0.Add(time.Hour))
	mutated := []byte(tok)
	mutated[len(mutated)-5] ^= 1
	tests := []struct {
		name, key, site, tok string
		now                  time.Time
		want                 string
	}{
		{"valid", "demo", "demo", tok, t0, ""},
		{"none", "demo", "demo", "", t0, ReasonUnsigned},
		{"another site", "demo", "blog", tok, t0, ReasonForged},
		{"another key", "k2", "demo", tok, t0, ReasonForged},
		{"expired", "demo", "demo", tok, t0.Add(time.Hour), ReasonExpired},
		{"mutated", "demo", "demo", string(mutated), t0, ReasonForged},
		{"exp moved", "demo", "demo", strings.Replace(tok, ".1795352400.", ".1895352400.", 1), t0, ReasonForged},
		{"garbage", "demo", "demo", "k1..", t0, ReasonForged},
	}
	for _, tt := range tests {
		if got := ks.VerifyToken(tt.key, tt.site, tt.tok, tt.now); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
	// A token is no click signature, nor the other way round.
	p := Params{APIKey: "demo", SiteID: "demo"}
	_, rest, _ := strings.Cut(tok, ".")
	exp, m, _ := strings.Cut(rest, ".")
	if r := ks.Verify(&p, testDecision, exp, "k1."+m, t0); r != ReasonForged {
		t.Errorf("a token passes as a sig: %q", r)
	}
}

func TestParseKeys(t *testing.T) {
	secret := bytes.Repeat([]byte{0xfb}, 32)
	std, url := base64.StdEncoding.EncodeToString(secret), base64.RawURLEncoding.EncodeToString(secret)
	keys, err := ParseKeys(" a:" + std + ", b-2:" + url + ",")
	if err != nil || len(keys) != 2 || keys[0].ID != "a" || keys[1].ID != "b-2" ||
		!bytes.Equal(keys[0].Secret, secret) || !bytes.Equal(keys[1].Secret, secret) {
		t.Fatalf("%+v %v", keys, err)
	}
	if k, err := ParseKeys(FormatKey(keys[1])); err != nil || !bytes.Equal(k[0].Secret, secret) {
		t.Errorf("FormatKey does not read back: %v", err)
	}
	_, err = ParseKeys("nocolon,a:" + std + ",a:" + std + ",bad id:" + std + ",short:" +
		base64.StdEncoding.EncodeToString([]byte("tiny")) + ",c:%%%")
	for _, want := range []string{`"noco..."`, `"a" is given twice`, `"bad id"`, `"short": secret of 4 bytes`, `"c": secret is not base64`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %s", err, want)
		}
	}
	if err != nil && strings.Contains(err.Error(), std) {
		t.Errorf("error shows a secret: %v", err)
	}
}

func TestLoadOrCreateKey(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	k, err := LoadOrCreateKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := k.Validate(); err != nil || len(k.Secret) != 32 {
		t.Fatalf("%v, %d bytes", err, len(k.Secret))
	}
	again, err := LoadOrCreateKey(dir)
	if err != nil || again.ID != k.ID || !bytes.Equal(again.Secret, k.Secret) {
		t.Fatalf("a restart has another key: %v", err)
	}
	fi, err := os.Stat(filepath.Join(dir, KeyFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("key file: %v %v", fi.Mode(), err)
	}
	other, err := LoadOrCreateKey(t.TempDir())
	if err != nil || bytes.Equal(other.Secret, k.Secret) {
		t.Errorf("two data directories share a secret: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, KeyFile), []byte("junk"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadOrCreateKey(dir); err == nil {
		t.Error("a corrupt key file is silently replaced")
	}
}
