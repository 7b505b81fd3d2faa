package clicks

import (
	"net/http"
	"strings"
)

// Intent is what the browser said about why it made a request: its Fetch
// Metadata (Sec-Fetch-Mode, -Dest, -User) and any speculative-load purpose
// (Sec-Purpose, Purpose, X-Moz). Browsers set these headers themselves; a
// page's script cannot.
type Intent struct {
	Mode, Dest, User string
	// Purpose joins every purpose header sent, lower-cased.
	Purpose string
}

// IntentOf reads the intent headers of h.
func IntentOf(h http.Header) Intent {
	var purpose []string
	for _, name := range [...]string{"Sec-Purpose", "Purpose", "X-Moz", "X-Purpose"} {
		purpose = append(purpose, h.Values(name)...)
	}
	return Intent{
		Mode:    strings.TrimSpace(h.Get("Sec-Fetch-Mode")),
		Dest:    strings.TrimSpace(h.Get("Sec-Fetch-Dest")),
		User:    strings.TrimSpace(h.Get("Sec-Fetch-User")),
		Purpose: strings.ToLower(strings.Join(purpose, ",")),
	}
}

// Reason is why the request is not a person navigating to the link, or
// "" when it is: a top-level navigation (Sec-Fetch-Mode: navigate,
// Sec-Fetch-Dest: document), by the user when the browser says
// (Sec-Fetch-User, sent only for a user's activation, is ?1 when present),
// and no prefetch or prerender. A request without the Fetch Metadata
// headers proves no intent: ReasonNoIntent. A browser whose userAgent says
// it sends Sec-Fetch-User for every navigation a person starts (Chromium,
// Firefox: sendsUser) and sent none was navigated by a page's script
// (location, a synthetic click, a form submitted by script, a meta
// refresh): ReasonNotNavigation. Safari, and every browser on iOS, never
// sends Sec-Fetch-User, so there its absence says nothing.
func (i Intent) Reason(userAgent string) string {
	switch {
	case strings.Contains(i.Purpose, "prefetch") || strings.Contains(i.Purpose, "prerender") || strings.Contains(i.Purpose, "preview"):
		return ReasonPrefetch
	case i.Mode == "" && i.Dest == "" && i.User == "":
		return ReasonNoIntent
	case !strings.EqualFold(i.Mode, "navigate") || !strings.EqualFold(i.Dest, "document"):
		return ReasonNotNavigation
	case i.User != "" && i.User != "?1":
		return ReasonNotNavigation
	case i.User == "" && sendsUser(userAgent):
		return ReasonNotNavigation
	}
	return ""
}

// sendsUser reports whether userAgent is of a browser that sends
// Sec-Fetch-User: ?1 with every navigation a user's activation starts:
// Chromium's (Chrome/: Chrome, Edge, Opera, Samsung Internet, Android's
// WebView) and Firefox's (Firefox/), which send the Fetch Metadata headers
// together since Chrome 80 and Firefox 90, so an older one sends no
// Sec-Fetch-Dest either. On iOS they run WebKit and name themselves
// CriOS/, FxiOS/ and EdgiOS/: not these.
func sendsUser(userAgent string) bool {
	_, engine, ok := strings.Cut(userAgent, ")")
	return ok && (strings.Contains(engine, " Chrome/") || strings.Contains(engine, " Firefox/"))
}

// Navigation is the intent a browser declares for a person's click on a
// link in a page: what tests and tools send for a click that may bill.
var Navigation = Intent{Mode: "navigate", Dest: "document", User: "?1"}

// Header sets i's headers on h, as a browser would send them.
func (i Intent) Header(h http.Header) {
	for name, v := range map[string]string{"Sec-Fetch-Mode": i.Mode, "Sec-Fetch-Dest": i.Dest, "Sec-Fetch-User": i.User, "Sec-Purpose": i.Purpose} {
		if v != "" {
			h.Set(name, v)
		}
	}
}
