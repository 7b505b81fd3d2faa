package api

import (
	"errors"
	"net/http"
	"net/url"

	"github.com/adlink/adlink/backend/pages"
	"github.com/adlink/adlink/contract"
	"github.com/adlink/adlink/match"
)

// The handlers read their requests with package contract, which the
// page's module shares; what is left here is the server's part: net/url,
// the page URL's canonical form, the market from the request's headers,
// and the redirect base and signature of the click URLs.

// queryValues reads a request's query string, refusing one that
// contract.MalformedQuery refuses, as the page's module does, with the same
// message.
func queryValues(r *http.Request) (url.Values, error) {
	if msg := contract.MalformedQuery(r.URL.RawQuery); msg != "" {
		return nil, &Error{Status: http.StatusBadRequest, Code: CodeInvalidParameter, Message: msg}
	}
	v, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil { // a GODEBUG urlmaxqueryparams below net/url's default
		return nil, &Error{Status: http.StatusBadRequest, Code: CodeInvalidParameter,
			Message: "the query string is malformed: " + err.Error()}
	}
	return v, nil
}

// badRequest returns nil, or one 400 for the problems of a request: the
// first problem's code and parameter, and every message.
func badRequest(problems []contract.Problem) error {
	if len(problems) == 0 {
		return nil
	}
	return problemError(http.StatusBadRequest, contract.Join(problems), nil)
}

// problemError is the Error of p with status, and err as its cause.
func problemError(status int, p contract.Problem, err error) *Error {
	return &Error{Status: status, Code: p.Code, Param: p.Param, Message: p.Message, Err: err}
}

// canonicalURL is contract.ParsePage's hook: the canonical form of a page
// URL (pages.Canonical), or the message that refuses it.
func canonicalURL(raw string) (string, string) {
	c, err := pages.Canonical(raw)
	var bad *pages.BadURLError
	switch {
	case errors.As(err, &bad):
		return "", bad.Error()
	case err != nil:
		return "", "url is not a valid page URL"
	}
	return c, ""
}

// market resolves loc=use_geo and lang=use_locale from the request's
// headers. An answer that depends on a request header says so, for caches.
func (s *server) market(w http.ResponseWriter, r *http.Request, country, lang string) (string, string) {
	if country == contract.UseGeo {
		country = s.geoCountry(r)
		w.Header().Add("Vary", s.cfg.CountryHeader)
	}
	if lang == contract.UseLocale {
		lang = localeLang(r)
		w.Header().Add("Vary", "Accept-Language")
	}
	return country, lang
}

// linkOptions completes a request's link values with the server's, the
// redirect base and the signature of each click URL, and returns the
// options that write them.
func (s *server) linkOptions(l *contract.Links) match.LinkOptions {
	l.Base = s.cfg.RedirectURL
	l.Sign = s.signLinks()
	return l.ServerOptions()
}

// callbackOf is the request's callback when it is given once and valid,
// else "": the error adapter's way to answer in the form the client asked.
func callbackOf(q url.Values) string {
	if vs := q["callback"]; len(vs) == 1 && contract.ValidCallback(vs[0]) {
		return vs[0]
	}
	return ""
}
