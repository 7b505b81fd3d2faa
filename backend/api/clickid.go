package api

import (
	"net/http"
	"net/url"
	"strings"
)

// landing is where a click on an ad of advertiser lands: its landing URL,
// with the id the click was recorded under in the advertiser's
// click_id_param when it has one, so that the site can match its visit
// to the click. A click not recorded (a HEAD) has no id, and lands on the
// URL as it is.
func (s *server) landing(r *http.Request, landingURL, advertiser, id string) string {
	if id == "" {
		return landingURL
	}
	book, err := s.accountsIn(r.Context())
	if err != nil {
		return landingURL // the click is recorded; the visitor lands
	}
	param := book.ClickIDParam(advertiser)
	if param == "" {
		return landingURL
	}
	return withParam(landingURL, param, id)
}

// withParam is u with param=value last in its query, in place of any
// param there, before its fragment. The rest of u stays as it was
// written: only the query after the path changes, never the host.
func withParam(u, param, value string) string {
	rest, fragment, hasFragment := strings.Cut(u, "#")
	base, query, _ := strings.Cut(rest, "?")
	// Its other pairs stay as written, empty ones too ("a=1&&b"): the
	// site may check its own URL as it gave it.
	var kept []string
	if query != "" {
		for kv := range strings.SplitSeq(query, "&") {
			k, _, _ := strings.Cut(kv, "=")
			if uk, err := url.QueryUnescape(k); k == param || err == nil && uk == param {
				continue
			}
			kept = append(kept, kv)
		}
	}
	others := strings.Join(kept, "&")
	var b strings.Builder
	b.WriteString(base)
	b.WriteByte('?')
	b.WriteString(others)
	if others != "" && !strings.HasSuffix(others, "&") {
		b.WriteByte('&')
	}
	b.WriteString(url.QueryEscape(param))
	b.WriteByte('=')
	b.WriteString(url.QueryEscape(value))
	if hasFragment {
		b.WriteByte('#')
		b.WriteString(fragment)
	}
	return b.String()
}
