package api

import (
	"bytes"
	"context"
	"io/fs"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/adlink/adlink/backend/shards"
	"github.com/adlink/adlink/backend/siteshards"
	"github.com/adlink/adlink/contract"
	"github.com/adlink/adlink/match"
)

// The handlers of what runs in the publisher's page: the market shards and
// their manifest, matcher.wasm, widget.js and the demo publisher pages.

// SiteShards choose the shard a site's pages load and learn from the pages
// the server answers for it; *siteshards.Service is the real one, and a
// nil one serves every market's own shard.
type SiteShards interface {
	// Pick returns the shard for a site's pages in a market, or nil for
	// the market's own.
	Pick(ctx context.Context, r siteshards.Request) *siteshards.Shard
	// Shard returns a shard Pick gave, here or on another replica, by
	// its SHA-256, or nil.
	Shard(ctx context.Context, sha string) *siteshards.Shard
	// Observe learns from a page the server analysed for a site (its
	// siteshards.SiteKey): ix matches it with the page query q, both the
	// page's own (its language's market), whatever the request asked.
	Observe(siteKey, pageURL string, ix *match.Index, q match.Query)
}

var _ SiteShards = (*siteshards.Service)(nil)

// shardManifest answers GET /v2/shards?api_key=..&site_id=..&loc=..&lang=..
// with the manifest of the shard that answers the market as /v2/search/link
// and /v2/page/link would (match.Index.ShardMarket), loc and lang as the
// server resolved them, and the site token the page's click URLs need.
// Where the market's shard is over the site shard budget, the manifest
// names the site's shard in its place (SiteShards), with "selection".
func (s *server) shardManifest(w http.ResponseWriter, r *http.Request) error {
	v, err := queryValues(r)
	if err != nil {
		return err
	}
	m, problems := contract.ParseManifest(v)
	if err := badRequest(problems); err != nil {
		return err
	}
	if _, err := s.authorize(r.Context(), m.APIKey, m.SiteID); err != nil {
		return err
	}
	set := s.catalogOf(r).Shards
	if set == nil {
		return problemError(http.StatusNotFound, contract.NoShards(), nil)
	}
	// The answer is cached publicly, so a cache must know which request
	// headers chose the market.
	country, lang := s.market(w, r, m.Country, m.Lang)
	// A new catalog makes a new manifest; a short lifetime lets pages pick
	// it up, while the shard it names is cached for good.
	w.Header().Set("Cache-Control", "public, max-age=300")
	// loc and lang as the server resolved them (use_geo, use_locale), so
	// that the page matches as the server would: a two-letter code or "".
	fields := []string{"loc", country, "lang", lang}
	if tok := s.siteToken(m.APIKey, m.SiteID); tok != "" {
		fields = append(fields, "tok", tok)
	}
	c := s.catalogOf(r)
	ix := s.index(c, country, lang)
	manifest := set.Manifest(country, lang)
	own := set.Pick(country, lang)
	if sh := s.sites.Pick(r.Context(), siteshards.Request{Version: c.Version, Index: ix, MarketBytes: zstdBytes(own, set.Fragments(own)),
		Site: siteshards.SiteKey(m.APIKey, m.SiteID), Country: country, Lang: lang}); sh != nil {
		// The budgets' advertiser groups are the site shard's own.
		manifest, ix = set.ManifestWith(country, lang, sh.Blob, len(sh.Fragments)), sh.Index
		sel := "site"
		if sh.Head {
			sel = "head"
		}
		fields = append(fields, "selection", sel)
	}
	respond(w, http.StatusOK, s.withBudget(r.Context(), withFields(manifest, fields...), ix), m.Callback)
	return nil
}

// zstdBytes is what a page downloads of a shard with zstd at most: the
// shard and all its fragments.
func zstdBytes(shard *shards.Blob, frags []*shards.Blob) int {
	n := shard.Size(shards.Zstd)
	for _, f := range frags {
		n += f.Size(shards.Zstd)
	}
	return n
}

// withBudget adds to a manifest what the budgets of the advertisers of
// ix, the index its shard is encoded from, ask of the page:
//
//	"exclude":[3,17],"pace":[{"group":5,"show":0.42}]
//
// exclude lists the advertiser groups whose ads the page leaves out
// (their budget is spent), pace those it shows with probability show
// (even pacing). Neither is there when empty.
func (s *server) withBudget(ctx context.Context, manifest []byte, ix *match.Index) []byte {
	exclude, paced := s.budgetIn(ctx).Page(ix)
	if (len(exclude) == 0 && len(paced) == 0) || len(manifest) == 0 || manifest[len(manifest)-1] != '}' {
		return manifest
	}
	// A copy: the shard set's manifest is shared.
	out := slices.Clip(manifest[:len(manifest)-1])
	if len(exclude) > 0 {
		out = append(out, `,"exclude":[`...)
		for i, g := range exclude {
			if i > 0 {
				out = append(out, ',')
			}
			out = strconv.AppendUint(out, uint64(g), 10)
		}
		out = append(out, ']')
	}
	if len(paced) > 0 {
		out = append(out, `,"pace":[`...)
		for i, p := range paced {
			if i > 0 {
				out = append(out, ',')
			}
			out = append(out, `{"group":`...)
			out = strconv.AppendUint(out, uint64(p.Group), 10)
			out = append(out, `,"show":`...)
			out = strconv.AppendFloat(out, p.Show, 'f', 3, 64)
			out = append(out, '}')
		}
		out = append(out, ']')
	}
	return append(out, '}')
}

// withFields adds string fields to a JSON object, name and value in turn:
// values with nothing to escape in JSON.
func withFields(object []byte, kv ...string) []byte {
	if len(object) == 0 || object[len(object)-1] != '}' {
		return object
	}
	n := len(object)
	for _, s := range kv {
		n += len(s) + 6
	}
	out := append(make([]byte, 0, n), object[:len(object)-1]...)
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, `,"`...)
		out = append(out, kv[i]...)
		out = append(out, `":"`...)
		out = append(out, kv[i+1]...)
		out = append(out, '"')
	}
	return append(out, '}')
}

// shard answers GET /v2/shards/{sha256}: content-addressed, so immutable.
func (s *server) shard(w http.ResponseWriter, r *http.Request) error {
	b, _ := s.findShard(w, r, r.PathValue("sha256"))
	if b == nil {
		return &Error{Status: http.StatusNotFound, Code: CodeNotFound, Message: "no shard " + quote(r.PathValue("sha256"))}
	}
	b.Serve(w, r, shards.Immutable)
	return nil
}

// findShard returns the shard named sha, with its fragments: a market
// shard of the catalog the request started with, or of one retired
// lately; a site or head shard this replica or another built
// (SiteShards, which reads Postgres only for a name it lists); else, while this replica reads a catalog another swapped
// in, a market shard of that one, once read (newerCatalog), as the
// manifest came from a replica that has it. Nil when none is.
func (s *server) findShard(w http.ResponseWriter, r *http.Request, sha string) (*shards.Blob, []*shards.Blob) {
	if b, set := s.catalogOf(r).shard(sha, s.now()); b != nil {
		return b, set.Fragments(b)
	}
	if sh := s.sites.Shard(r.Context(), sha); sh != nil {
		return sh.Blob, sh.Fragments
	}
	if !shards.ValidSHA256(sha) {
		return nil, nil
	}
	if r, ok := s.newerCatalog(w, r); ok {
		if b, set := s.catalogOf(r).shard(sha, s.now()); b != nil {
			return b, set.Fragments(b)
		}
	}
	return nil, nil
}

// fragment answers GET /v2/shards/{sha256}/{k}: fragment k of a shard cut
// in fragments, immutable as the shard is.
func (s *server) fragment(w http.ResponseWriter, r *http.Request) error {
	sha, k := r.PathValue("sha256"), r.PathValue("k")
	_, frags := s.findShard(w, r, sha)
	// One spelling per fragment: "7", not "07" or "+7".
	n, err := strconv.Atoi(k)
	if err != nil || n < 0 || n >= len(frags) || strconv.Itoa(n) != k {
		return &Error{Status: http.StatusNotFound, Code: CodeNotFound, Message: "no fragment " + quote(k) + " of shard " + quote(sha)}
	}
	frags[n].Serve(w, r, shards.Immutable)
	return nil
}

// matcherWasm answers GET /matcher.wasm. The manifest's URL carries the
// module's hash (?v=...) and is cached for good; the bare path briefly.
func (s *server) matcherWasm(w http.ResponseWriter, r *http.Request) error {
	set := s.catalogOf(r).Shards
	if set == nil || set.Matcher() == nil {
		return &Error{Status: http.StatusNotFound, Code: CodeNotFound, Message: "matcher.wasm is not built: run make wasm"}
	}
	cc := "public, max-age=300"
	if u := set.MatcherURL(); r.URL.RawQuery != "" && r.URL.RequestURI() == u {
		cc = shards.Immutable
	}
	set.Matcher().Serve(w, r, cc)
	return nil
}

// webFile serves one file of the web assets, read, passed through
// transform when it is not nil, and compressed once when the routes are
// set up, with the Cache-Control header cacheControl.
func (s *server) webFile(name, contentType string, transform func([]byte) []byte, cacheControl string) handlerFunc {
	var blob *shards.Blob
	err := fs.ErrNotExist
	if s.web != nil {
		var b []byte
		if b, err = fs.ReadFile(s.web, name); err == nil {
			if transform != nil {
				b = transform(b)
			}
			blob, err = shards.NewBlob(b, contentType)
		}
	}
	return func(w http.ResponseWriter, r *http.Request) error {
		if err != nil {
			return &Error{Status: http.StatusNotFound, Code: CodeNotFound, Message: "no such file: " + quote(name), Err: err}
		}
		blob.Serve(w, r, cacheControl)
		return nil
	}
}

// demo serves the demo publisher pages under /demo/, with -demo only: they
// show the demo partner, which exists only then. The demo catalog's logos
// (demo/logos/) are served too wherever that catalog is, with no -catalog.
func (s *server) demo() http.Handler {
	if s.web == nil || !s.cfg.Demo && len(s.cfg.Catalogs) > 0 {
		return s.plain(s.notFound)
	}
	sub, err := fs.Sub(s.web, "demo")
	if err != nil {
		return s.plain(s.notFound)
	}
	files := http.StripPrefix("/demo/", http.FileServerFS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		upath := strings.TrimPrefix(r.URL.Path, "/demo/")
		// A missing file is the API's 404, no-store: FileServerFS would
		// answer it without Cache-Control, which a cache may store.
		if listing(sub, upath) || missing(sub, upath) || !s.cfg.Demo && !strings.HasPrefix(path.Clean("/"+upath), "/logos/") {
			s.plain(s.noFile).ServeHTTP(w, r)
			return
		}
		w.Header().Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	})
}

// listing says whether http.FileServerFS would answer upath, a path under
// fsys, with a listing: a directory without an index.html. What it names
// is the server's to publish file by file, not to enumerate.
func listing(fsys fs.FS, upath string) bool {
	name := served(upath)
	st, err := fs.Stat(fsys, name)
	if err != nil || !st.IsDir() {
		return false
	}
	_, err = fs.Stat(fsys, path.Join(name, "index.html"))
	return err != nil
}

// missing says whether http.FileServerFS would find no file for upath.
func missing(fsys fs.FS, upath string) bool {
	_, err := fs.Stat(fsys, served(upath))
	return err != nil
}

// served is the name FileServerFS opens for upath.
func served(upath string) string {
	name := strings.TrimPrefix(path.Clean("/"+upath), "/")
	if name == "" {
		name = "."
	}
	return name
}

// noFile answers a path of the served files that names none.
func (s *server) noFile(w http.ResponseWriter, r *http.Request) error {
	return &Error{Status: http.StatusNotFound, Code: CodeNotFound, Message: "no such file: " + quote(r.URL.Path)}
}

// matcherLine is the line of widget.js where the server writes the
// versioned URL of matcher.wasm (Set.MatcherURL), so that a first view can
// start the module's download and compilation with its first request,
// before the manifest names it.
const matcherLine = `var MATCHER_URL = "";`

// servedWidget is widget.js as served: without its comments
// (stripComments), and with the URL of the module the server serves in its
// matcherLine. The module is the binary's own, the same for every catalog;
// a page whose cached widget names an older one (a deploy) finds another
// URL in the manifest and loads that one.
func (s *server) servedWidget(src []byte) []byte {
	out := stripComments(src)
	var set *shards.Set
	if c := s.catalog(); c != nil {
		set = c.Shards
	}
	if set == nil || set.MatcherURL() == "" {
		return out
	}
	// A URL of the form "/matcher.wasm?v=<hex>": nothing to escape.
	return bytes.Replace(out, []byte(matcherLine), []byte(`var MATCHER_URL = "`+set.MatcherURL()+`";`), 1)
}

// widgetBanner heads widget.js as served, which has no comments.
const widgetBanner = "/* adlink widget.js; the commented source is web/widget.js */\n"

// stripComments returns JavaScript source without its comments on lines
// of their own, its blank lines and its indentation: widget.js as served,
// far fewer bytes over the wire for every reader's first page. It only
// strips a source whose comments it can tell by lines alone, and returns
// any other as it is: one with a template literal, a line continuation or
// a carriage return (a line might then sit inside a string), or with a
// "/*" that does not start a line or a "*/" that does not end one (a block
// comment after code, or those characters in a string or a regular
// expression). A line that starts, after blanks,
// with "//" can then open no string or regular expression. Comments after
// code stay, and so do the line breaks between lines of code, so automatic
// semicolons fall as before. A magic comment on the first line ("//#",
// V8's compile hint allFunctionsCalledOnLoad) stays first, before the
// banner: V8 reads it only at the top of a script.
func stripComments(src []byte) []byte {
	if bytes.ContainsAny(src, "`\r") || bytes.Contains(src, []byte("\\\n")) {
		return src
	}
	lines := bytes.Split(src, []byte("\n"))
	for _, line := range lines {
		t := bytes.TrimSpace(line)
		open, end := bytes.Index(t, []byte("/*")), bytes.Index(t, []byte("*/"))
		if open > 0 || bytes.Count(t, []byte("/*")) > 1 || end >= 0 && end != len(t)-2 || bytes.Count(t, []byte("*/")) > 1 {
			return src
		}
	}
	var out []byte
	if bytes.HasPrefix(lines[0], []byte("//#")) {
		out = append(append(out, bytes.TrimSpace(lines[0])...), '\n')
		lines = lines[1:]
	}
	out = append(out, widgetBanner...)
	block := false
	for _, line := range lines {
		t := bytes.TrimSpace(line)
		block = block || bytes.HasPrefix(t, []byte("/*"))
		if block {
			block = !bytes.HasSuffix(t, []byte("*/")) || len(t) < 4 && bytes.HasPrefix(t, []byte("/*"))
			continue
		}
		if len(t) == 0 || bytes.HasPrefix(t, []byte("//")) {
			continue
		}
		out = append(append(out, t...), '\n')
	}
	return out
}
