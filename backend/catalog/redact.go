package catalog

import (
	"errors"
	"io/fs"
	"net/url"
	"strings"
)

// A feed URL may carry its credentials: user info
// (https://user:pass@host/feed.xml) or a token in its query
// (?token=...). Errors, warnings, the reload's answer, /readyz and the
// log name the feed, and a probe or a log shipper may read any of them,
// so a source is shown by Redacted alone.

// Redacted is source, a -catalog value or a URL fetched for it, as it is
// shown: a URL without its user info and with each query value replaced
// by "…" (https://host/feed.tsv?token=…), its host, path, query keys and
// options after '#' kept, so that the operator still knows which feed
// it is. A URL that does not parse, or whose password may run past its
// host (MisreadUserInfo), shows its scheme alone; anything else (a file
// path) shows as it is.
func Redacted(source string) string {
	loc, frag, hasFrag := strings.Cut(source, "#")
	scheme, rest, ok := strings.Cut(loc, "://")
	if !ok || !isScheme(scheme) {
		return source
	}
	if _, err := url.Parse(loc); err != nil || MisreadUserInfo(source) {
		return scheme + "://…"
	}
	// Cut as url.Parse cuts: the query first, then the authority up to
	// the path, whose user info ends at its last '@'.
	rest, query, hasQuery := strings.Cut(rest, "?")
	host, path := rest, ""
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		host, path = rest[:i], rest[i:]
	}
	if i := strings.LastIndexByte(host, '@'); i >= 0 {
		host = host[i+1:]
	}
	var b strings.Builder
	b.WriteString(scheme + "://" + host + path)
	if hasQuery {
		b.WriteString("?" + redactedQuery(query))
	}
	if hasFrag {
		b.WriteString("#" + frag)
	}
	// With its user info gone, an '@' of the path may read as one again
	// (https://@:/@): shown so, it would be shown otherwise once more.
	if MisreadUserInfo(b.String()) {
		return scheme + "://…"
	}
	return b.String()
}

// MisreadUserInfo reports whether source is a URL whose user info a
// '/', '?' or '#' in the password cut short, so that what parses as its
// host is the user name and part of the password: a ':' before the end
// of the authority, no '@' in it, and an '@' after it
// (https://user:12/34@host/feed.xml parses as host "user", port 12). An
// '@' in the path of a URL with a port reads the same, and is refused
// with it: %40 spells it. A '/' in the user name cuts it short too, the
// password then in the path: a ':' in the path and an '@' after it
// (https://tenant/user:pw@host/feed.xml). An IPv6 host is never a user
// name, which holds no '['.
func MisreadUserInfo(source string) bool {
	scheme, rest, ok := strings.Cut(source, "://")
	if !ok || !isScheme(scheme) {
		return false
	}
	authority := rest
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority = rest[:i]
	}
	if strings.Contains(authority, "@") || strings.HasPrefix(authority, "[") && strings.Contains(authority, "]") {
		return false
	}
	after := rest[len(authority):]
	if strings.Contains(authority, ":") {
		return strings.Contains(after, "@")
	}
	path := after
	if i := strings.IndexAny(after, "?#"); i >= 0 {
		path = after[:i]
	}
	colon := strings.IndexByte(path, ':')
	return colon >= 0 && strings.Contains(after[colon:], "@")
}

// redactedQuery is a raw query with each value replaced by "…"; an item
// with no value or no key may be a bare token, and is replaced whole.
func redactedQuery(raw string) string {
	items := strings.Split(raw, "&")
	for i, item := range items {
		k, v, _ := strings.Cut(item, "=")
		switch {
		case item == "":
		case k != "" && v != "":
			items[i] = k + "=…"
		default:
			items[i] = "…"
		}
	}
	return strings.Join(items, "&")
}

// isScheme reports whether s is a URL scheme: a letter, then letters,
// digits, '+', '-' or '.'.
func isScheme(s string) bool {
	for i, c := range []byte(s) {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return s != ""
}

// redactErr shows the URL or path an error of net/http or os names as
// Redacted does: a *url.Error prints its whole URL, credentials too, and
// an *fs.PathError its path.
func redactErr(err error) error {
	if ue := (*url.Error)(nil); errors.As(err, &ue) {
		ue.URL = Redacted(ue.URL)
	}
	if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
		pe.Path = Redacted(pe.Path)
	}
	return err
}
