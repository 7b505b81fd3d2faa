package clicks

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/adlink/adlink/contract"
)

// Click URLs the server makes carry
// "&d=<decision>&exp=<unix seconds>&sig=<kid>.<mac>": an HMAC-SHA256 over
// every click parameter, the decision id and exp, named by the key that
// made it so keys can rotate. The decision id is random, minted for one
// answer and ad, so that the click it leads to bills once (Decisions). Click URLs made inside the page carry
// "&tok=<kid>.<exp>.<mac>", the site token the shard manifest handed out:
// an HMAC over api_key, site_id and its own expiry. The page cannot sign
// what it matches (it holds no secret), so a token vouches only that the
// click comes from a page the site loaded recently.

// Key is one click-signing secret and the id that names it in signatures.
type Key struct {
	// ID is 1 to 16 of A-Z, a-z, 0-9, _ and -.
	ID     string
	Secret []byte
}

// MinSecretBytes is the shortest secret a Key may have.
const MinSecretBytes = 16

// Validate reports what is wrong with k, or nil.
func (k Key) Validate() error {
	if !validKeyID(k.ID) {
		return fmt.Errorf("click key id %q: want 1 to 16 of A-Z, a-z, 0-9, _ and -", k.ID)
	}
	if len(k.Secret) < MinSecretBytes {
		return fmt.Errorf("click key %q: secret of %d bytes; want at least %d", k.ID, len(k.Secret), MinSecretBytes)
	}
	return nil
}

func validKeyID(s string) bool {
	if len(s) == 0 || len(s) > 16 {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// ParseKeys reads "kid:base64secret,kid:base64secret,..." (standard or URL
// base64, padded or not). Every problem is reported together.
func ParseKeys(s string) ([]Key, error) {
	var keys []Key
	var problems []error
	seen := map[string]bool{}
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		id, secret, ok := strings.Cut(item, ":")
		if !ok {
			problems = append(problems, fmt.Errorf("click key %q: want kid:base64secret", redact(item)))
			continue
		}
		b, err := decodeSecret(secret)
		if err != nil {
			problems = append(problems, fmt.Errorf("click key %q: secret is not base64", id))
			continue
		}
		k := Key{ID: id, Secret: b}
		if err := k.Validate(); err != nil {
			problems = append(problems, err)
			continue
		}
		if seen[id] {
			problems = append(problems, fmt.Errorf("click key %q is given twice", id))
			continue
		}
		seen[id] = true
		keys = append(keys, k)
	}
	return keys, errors.Join(problems...)
}

// redact keeps a malformed key item's secret out of error messages.
func redact(item string) string {
	if len(item) > 4 {
		return item[:4] + "..."
	}
	return item
}

func decodeSecret(s string) ([]byte, error) {
	s = strings.TrimRight(s, "=")
	if b, err := base64.RawStdEncoding.DecodeString(s); err == nil {
		return b, nil
	}
	return base64.RawURLEncoding.DecodeString(s)
}

// FormatKey writes k as ParseKeys reads it.
func FormatKey(k Key) string {
	return k.ID + ":" + base64.StdEncoding.EncodeToString(k.Secret)
}

// KeyFile is the file in the data directory that holds the key a server
// generated for itself when none is configured.
const KeyFile = "click-keys"

// LoadOrCreateKey returns the key kept in dir/KeyFile, generating and
// storing a random one (0600, fsync'd) on first start, so a restart keeps
// verifying the links made before it.
func LoadOrCreateKey(dir string) (Key, error) {
	path := filepath.Join(dir, KeyFile)
	if k, err := readKeyFile(path); err == nil || !errors.Is(err, os.ErrNotExist) {
		return k, err
	}
	var id [4]byte
	k := Key{Secret: make([]byte, 32)}
	if _, err := rand.Read(id[:]); err != nil {
		return Key{}, err
	}
	if _, err := rand.Read(k.Secret); err != nil {
		return Key{}, err
	}
	k.ID = "g" + strconv.FormatUint(uint64(id[0])<<24|uint64(id[1])<<16|uint64(id[2])<<8|uint64(id[3]), 36)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return Key{}, fmt.Errorf("clicks: %w", err)
	}
	tmp, err := os.CreateTemp(dir, KeyFile+".*")
	if err != nil {
		return Key{}, fmt.Errorf("clicks: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.WriteString(FormatKey(k) + "\n")
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return Key{}, fmt.Errorf("clicks: writing %s: %w", path, err)
	}
	// A hard link fails when the file exists, so two processes starting at
	// once agree on the first key rather than each keep its own.
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, os.ErrExist) {
			return readKeyFile(path)
		}
		return Key{}, fmt.Errorf("clicks: %w", err)
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return k, nil
}

func readKeyFile(path string) (Key, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Key{}, err
	}
	keys, err := ParseKeys(strings.TrimSpace(string(b)))
	if err != nil {
		return Key{}, fmt.Errorf("clicks: %s: %w", path, err)
	}
	if len(keys) != 1 {
		return Key{}, fmt.Errorf("clicks: %s holds %d keys, want 1", path, len(keys))
	}
	return keys[0], nil
}

// Keys signs click URLs and site tokens with its first key and verifies
// them with any of its keys. It is safe for concurrent use.
type Keys struct {
	keys []Key
	// macs pool one HMAC state per key: New is slower than Reset.
	macs []sync.Pool
}

// NewKeys returns the keys, the first of which signs. Ids must differ.
func NewKeys(keys ...Key) (*Keys, error) {
	if len(keys) == 0 {
		return nil, errors.New("clicks: no key")
	}
	ks := &Keys{keys: make([]Key, len(keys)), macs: make([]sync.Pool, len(keys))}
	for i, k := range keys {
		if err := k.Validate(); err != nil {
			return nil, err
		}
		for _, o := range keys[:i] {
			if o.ID == k.ID {
				return nil, fmt.Errorf("clicks: key id %q twice", k.ID)
			}
		}
		secret := append([]byte(nil), k.Secret...)
		ks.keys[i] = Key{ID: k.ID, Secret: secret}
		ks.macs[i].New = func() any { return hmac.New(sha256.New, secret) }
	}
	return ks, nil
}

// SigningKeyID is the id of the key that signs.
func (ks *Keys) SigningKeyID() string { return ks.keys[0].ID }

// Domain separation: a site token's MAC can never pass as a click's.
const (
	clickDomain = "adlink click v1\n"
	tokenDomain = "adlink site v1\n"
)

// mac appends HMAC(key i, domain || msg) to dst.
func (ks *Keys) mac(dst []byte, i int, domain string, msg []byte) []byte {
	h := ks.macs[i].Get().(hash.Hash)
	h.Reset()
	h.Write([]byte(domain))
	h.Write(msg)
	dst = h.Sum(dst)
	ks.macs[i].Put(h)
	return dst
}

func (ks *Keys) index(id string) int {
	for i := range ks.keys {
		if ks.keys[i].ID == id {
			return i
		}
	}
	return -1
}

// Params are the parameters of a click URL that its signature covers.
type Params = contract.ClickParams

// AppendQuery appends p as the query string the server's click URLs carry,
// the bytes match writes, so a signature does not depend on how a browser
// or proxy re-escaped the URL.
func AppendQuery(dst []byte, p *Params) []byte { return contract.AppendClickQuery(dst, p) }

// b64 is strict so that each MAC has one spelling: a lenient decoder
// ignores the last character's spare bits.
var b64 = base64.RawURLEncoding.Strict()

// macLen is the length of an encoded HMAC-SHA256.
var macLen = b64.EncodedLen(sha256.Size)

// DecisionLen is the length of a decision id: DecisionBytes random bytes
// in unpadded URL base64.
const (
	DecisionBytes = 12
	DecisionLen   = 16
)

// NewDecision returns a fresh random decision id.
func NewDecision() string {
	var b [DecisionBytes]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	return b64.EncodeToString(b[:])
}

// validDecision reports whether d is spelled as NewDecision spells ids.
func validDecision(d string) bool {
	if len(d) != DecisionLen {
		return false
	}
	for i := 0; i < len(d); i++ {
		switch c := d[i]; {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// appendClickMsg appends what a click's MAC covers: its query, its
// decision id and its expiry.
func appendClickMsg(dst, query []byte, d, exp string) []byte {
	dst = append(append(append(dst, query...), "&d="...), d...)
	return append(append(dst, "&exp="...), exp...)
}

// SignFunc returns a contract.Links Sign hook: it appends
// "&d=<decision>&exp=<unix>&sig=<kid>.<mac>" to a click URL's query, with a
// new decision id for each link and exp the expiry of every link it signs.
func (ks *Keys) SignFunc(exp time.Time) func(dst, query []byte) []byte {
	e := strconv.FormatInt(exp.Unix(), 10)
	return func(dst, query []byte) []byte {
		d := NewDecision()
		var buf [256]byte
		var sum [sha256.Size]byte
		mac := ks.mac(sum[:0], 0, clickDomain, appendClickMsg(buf[:0], query, d, e))
		dst = append(append(dst, "&d="...), d...)
		dst = append(append(dst, "&exp="...), e...)
		dst = append(append(append(dst, "&sig="...), ks.keys[0].ID...), '.')
		return b64.AppendEncode(dst, mac)
	}
}

// Sign returns the exp and sig parameters SignFunc appends to the click
// URL with p's parameters and decision id d.
func (ks *Keys) Sign(p *Params, d string, exp time.Time) (expParam, sig string) {
	e := strconv.FormatInt(exp.Unix(), 10)
	mac := ks.mac(nil, 0, clickDomain, appendClickMsg(nil, AppendQuery(nil, p), d, e))
	return e, ks.keys[0].ID + "." + b64.EncodeToString(mac)
}

// Why a click is not billable. A billable click has the empty reason.
const (
	// ReasonUnsigned: the click URL has neither sig nor tok.
	ReasonUnsigned = "unsigned"
	// ReasonUnverified: the click URL carries a valid site token (tok) but
	// neither a signature nor a click token: the page made it, and nothing
	// proves that its ad was shown. It never bills.
	ReasonUnverified = "unverified"
	// ReasonForged: sig, ct or tok does not verify: altered parameters or
	// decision id, another site's token, a click token taken to another
	// ad, network or browser, an unknown key or garbage.
	ReasonForged = "forged"
	// ReasonExpired: sig or tok verifies but its expiry has passed.
	ReasonExpired = "expired"
	// ReasonTooFast: the click token verifies, but the click came sooner
	// after its ad was shown than a reader could click (MinClickDelay).
	ReasonTooFast = "too_fast"
	// ReasonPartner: the api_key is no longer known or site_id is not its.
	ReasonPartner = "partner"
	// ReasonBot: the user agent is no browser's (IsBot), or there is none.
	ReasonBot = "bot"
	// ReasonNoIntent: the request carries no Fetch Metadata (Sec-Fetch-*),
	// so nothing says a person navigated: an older browser, or a script.
	ReasonNoIntent = "no_intent"
	// ReasonNotNavigation: the browser says the request is no top-level
	// navigation by the user: a hidden image, a frame, a fetch.
	ReasonNotNavigation = "not_navigation"
	// ReasonPrefetch: the browser fetched the link speculatively
	// (Sec-Purpose: prefetch or prerender), before any click.
	ReasonPrefetch = "prefetch"
	// ReasonRepeat: the click's decision id (of its signed URL or click
	// token) was used by an earlier click (Decisions), or the client's network had a billable click on the
	// same ad within AdWindow.
	ReasonRepeat = "repeat"
	// ReasonNetworkCap: the client's network had its daily cap of billable
	// clicks.
	ReasonNetworkCap = "network_cap"
	// ReasonPrefixCap: the client's IPv6 /48 or IPv4 /24 (Prefix) had its
	// daily cap of billable clicks, whichever of its networks they came
	// from.
	ReasonPrefixCap = "prefix_cap"
	// ReasonPrefixAdCap: the client's IPv6 /48 or IPv4 /24 (Prefix) had
	// its daily cap of billable clicks on the click's ad, whichever of its
	// networks they came from.
	ReasonPrefixAdCap = "prefix_ad_cap"
	// ReasonOverBudget: the ad's advertiser had spent its daily budget;
	// its ads no longer show, and clicks on links issued before land
	// unbilled.
	ReasonOverBudget = "over_budget"
	// ReasonRateLimited: the client's network, or its Prefix, was over
	// the redirect's request limit; the click lands but is not judged.
	ReasonRateLimited = "rate_limited"
	// ReasonLate: the click was spooled while the shared record did not
	// answer and reached it more than ShipHorizon after it was made, when
	// the record may no longer keep the decision, windows and caps of its day (the
	// prefix's count would start from zero): it lands unbilled.
	ReasonLate = "late"
)

// Reasons lists every reason a click is not billable, in the order
// reports give them. A reason added later goes last: rollups keep their
// counts by position.
var Reasons = reasonSlots[:]

// maxExpDigits bounds exp: unix seconds have 10 digits until 2286;
// maxMilliDigits bounds unix milliseconds likewise.
const (
	maxExpDigits   = 12
	maxMilliDigits = 15
)

// parseExp reads unix seconds: digits only, no sign, no leading zero.
func parseExp(s string) (int64, bool) { return parseDigits(s, maxExpDigits) }

// parseDigits reads a number of at most max digits: no sign, no leading
// zero, so that each number has one spelling.
func parseDigits(s string, max int) (int64, bool) {
	if s == "" || len(s) > max || (s[0] == '0' && len(s) > 1) {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = n*10 + int64(s[i]-'0')
	}
	return n, true
}

// splitMAC reads "<kid>.<mac>" into the key's index and the raw MAC.
func (ks *Keys) splitMAC(s string) (int, []byte, bool) {
	id, m, ok := strings.Cut(s, ".")
	if !ok || len(m) != macLen {
		return 0, nil, false
	}
	i := ks.index(id)
	if i < 0 {
		return 0, nil, false
	}
	raw, err := b64.DecodeString(m)
	if err != nil || len(raw) != sha256.Size {
		return 0, nil, false
	}
	return i, raw, true
}

// Verify checks a click's decision id d, exp and sig against its
// parameters at now: "" when they are valid and unexpired, else
// ReasonUnsigned, ReasonForged or ReasonExpired. A forged signature is
// reported as forged whatever its expiry says.
func (ks *Keys) Verify(p *Params, d, exp, sig string, now time.Time) string {
	if sig == "" && exp == "" {
		return ReasonUnsigned
	}
	e, ok := parseExp(exp)
	if !ok || !validDecision(d) {
		return ReasonForged
	}
	i, got, ok := ks.splitMAC(sig)
	if !ok {
		return ReasonForged
	}
	var buf, qbuf [256]byte
	msg := appendClickMsg(buf[:0], AppendQuery(qbuf[:0], p), d, exp)
	var sum [sha256.Size]byte
	if !hmac.Equal(ks.mac(sum[:0], i, clickDomain, msg), got) {
		return ReasonForged
	}
	if now.Unix() >= e {
		return ReasonExpired
	}
	return ""
}

// appendTokenMsg appends what a site token's MAC covers.
func appendTokenMsg(dst []byte, apiKey, siteID, exp string) []byte {
	dst = append(dst, "api_key="...)
	dst = contract.AppendQueryEscape(dst, apiKey)
	dst = append(dst, "&site_id="...)
	dst = contract.AppendQueryEscape(dst, siteID)
	dst = append(dst, "&exp="...)
	return append(dst, exp...)
}

// Token returns the site token "<kid>.<exp>.<mac>" for apiKey and siteID,
// valid until exp. The shard manifest hands it to the page, which appends
// it as tok to the click URLs it makes.
func (ks *Keys) Token(apiKey, siteID string, exp time.Time) string {
	e := strconv.FormatInt(exp.Unix(), 10)
	var sum [sha256.Size]byte
	mac := ks.mac(sum[:0], 0, tokenDomain, appendTokenMsg(nil, apiKey, siteID, e))
	out := make([]byte, 0, len(ks.keys[0].ID)+1+len(e)+1+macLen)
	out = append(append(append(out, ks.keys[0].ID...), '.'), e...)
	out = append(out, '.')
	return string(b64.AppendEncode(out, mac))
}

// VerifyToken checks a site token against the click's apiKey and siteID at
// now: "", ReasonUnsigned (no token), ReasonForged or ReasonExpired.
func (ks *Keys) VerifyToken(apiKey, siteID, tok string, now time.Time) string {
	if tok == "" {
		return ReasonUnsigned
	}
	id, rest, ok := strings.Cut(tok, ".")
	if !ok {
		return ReasonForged
	}
	exp, m, ok := strings.Cut(rest, ".")
	if !ok {
		return ReasonForged
	}
	e, ok := parseExp(exp)
	if !ok {
		return ReasonForged
	}
	i, got, ok := ks.splitMAC(id + "." + m)
	if !ok {
		return ReasonForged
	}
	var buf [256]byte
	var sum [sha256.Size]byte
	if !hmac.Equal(ks.mac(sum[:0], i, tokenDomain, appendTokenMsg(buf[:0], apiKey, siteID, exp)), got) {
		return ReasonForged
	}
	if now.Unix() >= e {
		return ReasonExpired
	}
	return ""
}
