package api

import (
	"context"
	"go/token"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-json"

	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/config"
	"github.com/adlink/adlink/backend/store"
	"github.com/adlink/adlink/internal/srcconst"
)

// TestAPIDocListsEveryErrorCode keeps docs/API.md's error table whole: a
// client that gets a code finds it there, and no row names a code that
// nothing answers with. The codes are the Code constants of this package
// and of contract, which the page's module answers with too.
func TestAPIDocListsEveryErrorCode(t *testing.T) {
	codes := errorCodes(t)
	if len(codes) < 10 {
		t.Fatalf("found %d error code constants, want the whole set: %v", len(codes), codes)
	}
	rows := apiDocErrorRows(t)
	for code, constant := range codes {
		if _, ok := rows[code]; !ok {
			t.Errorf("docs/API.md's Errors table has no row for %q (%s)", code, constant)
		}
	}
	for code := range rows {
		if _, ok := codes[code]; !ok {
			t.Errorf("docs/API.md's Errors table lists %q, which no Code constant defines", code)
		}
	}
}

// errorCodes returns the string value of every constant named Code* in
// this package's and contract's source, with the constant's name.
func errorCodes(t *testing.T) map[string]string {
	t.Helper()
	consts, err := srcconst.Read(func(name string) bool { return strings.HasPrefix(name, "Code") }, "*.go", "../../contract/*.go")
	if err != nil || len(consts) == 0 {
		t.Fatalf("the Code constants: %v, %d read", err, len(consts))
	}
	codes := map[string]string{}
	for _, c := range consts {
		if c.Lit.Kind != token.STRING {
			continue
		}
		s, err := strconv.Unquote(c.Lit.Value)
		if err != nil {
			t.Fatal(err)
		}
		codes[s] = c.Name
	}
	return codes
}

// apiDocErrorRows returns the codes of the table under docs/API.md's
// "## Errors", each with its row.
func apiDocErrorRows(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "API.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Errors\n")
	if !ok {
		t.Fatal(`docs/API.md has no "## Errors" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	row := regexp.MustCompile("(?m)^\\| ([^|]+) \\| `([a-z_]+)` \\|.*$")
	rows := map[string]string{}
	for _, m := range row.FindAllStringSubmatch(section, -1) {
		if m[1] == "Status" {
			continue // the header
		}
		if _, dup := rows[m[2]]; dup {
			t.Errorf("docs/API.md's Errors table lists %q twice", m[2])
		}
		rows[m[2]] = m[0]
	}
	if len(rows) == 0 {
		t.Fatal("docs/API.md's Errors section has no table rows")
	}
	return rows
}

// docErrorExamples are the search examples of the docs that show an
// error, with the code each answers.
var docErrorExamples = map[string]string{
	"/v2/search/link?q=handy&api_key=demo&site_id=demo&size=0&loc=deu":        CodeInvalidParameter,
	"/v2/search/link?q=handy&api_key=nope&site_id=demo":                       CodeUnknownAPIKey,
	"/v2/search/link?q=handy&api_key=demo&site_id=demo&callback=alert(1)%3Bx": CodeInvalidParameter,
}

// TestDocSearchExamples runs every search curl of the README and
// docs/API.md over the demo catalog, as a reader would after make run:
// each answers ads (as JSONP when it has a callback), or the error
// docErrorExamples says it shows. A typo in an example's parameters is a
// 400 here.
func TestDocSearchExamples(t *testing.T) {
	env := demoEnv(t)
	example := regexp.MustCompile(`curl ((?:-H '[^']*' )*)"\$B(/v2/search/link\?[^"]*)"`)
	header := regexp.MustCompile(`-H '([^:']+): ([^']*)'`)
	examples := docExamples(t, example)
	for _, e := range examples {
		doc, m := e.doc, e.match
		h := http.Header{}
		for _, hm := range header.FindAllStringSubmatch(m[1], -1) {
			h.Set(hm[1], hm[2])
		}
		target := m[2]
		res := env.get(t, target, h, "")
		body := readBody(t, res)
		if code, ok := docErrorExamples[target]; ok {
			if res.StatusCode < 400 || !strings.Contains(string(body), `"code":"`+code+`"`) {
				t.Errorf("%s: %s shows the error %s, answers %s\n%s", doc, target, code, res.Status, body)
			}
			continue
		}
		if res.StatusCode != http.StatusOK {
			t.Errorf("%s: %s answers %s\n%s", doc, target, res.Status, body)
			continue
		}
		if cb := parseQuery(t, target).Get("callback"); cb != "" {
			if !strings.HasPrefix(string(body), "/**/"+cb+`({"http_status":200,"link":[{`) {
				t.Errorf("%s: %s answers no ads as JSONP:\n%s", doc, target, body)
			}
			continue
		}
		var answer struct {
			Link []json.RawMessage `json:"link"`
		}
		if err := json.Unmarshal(body, &answer); err != nil || len(answer.Link) == 0 {
			t.Errorf("%s: %s answers no ads (%v):\n%s", doc, target, err, body)
		}
	}
	if len(examples) < 20 {
		t.Fatalf("found %d search examples in the docs, want them all", len(examples))
	}
}

// docExample is one match of an example's pattern in a document.
type docExample struct {
	doc   string
	match []string
}

// docExamples is every match of example in the README and docs/API.md,
// in that order.
func docExamples(t *testing.T, example *regexp.Regexp) []docExample {
	t.Helper()
	var found []docExample
	for _, doc := range []string{"README.md", filepath.Join("docs", "API.md")} {
		b, err := os.ReadFile(filepath.Join("..", "..", doc))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range example.FindAllStringSubmatch(string(b), -1) {
			found = append(found, docExample{doc, m})
		}
	}
	return found
}

func parseQuery(t *testing.T, target string) url.Values {
	t.Helper()
	_, q, _ := strings.Cut(target, "?")
	v, err := url.ParseQuery(q)
	if err != nil {
		t.Fatalf("%s: %v", target, err)
	}
	return v
}

// TestDocRedirectExamples follows every click example of the README and
// docs/API.md over the demo catalog: each lands, a 302 to the ad's
// landing page, and is in the click log.
func TestDocRedirectExamples(t *testing.T) {
	env := demoEnv(t)
	db, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	log, err := clicks.New(db)
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.RedirectURL = "http://localhost:8080"
	env.handler = NewServer(Deps{Config: cfg, Indexes: env.indexes, Partners: testPartners(t), Clicks: log})
	example := regexp.MustCompile(`curl -i "\$B(/v1/redirect\?[^"]*)"`)
	examples := docExamples(t, example)
	seen := len(examples)
	for _, e := range examples {
		res := env.get(t, e.match[1], nil, "")
		body := readBody(t, res)
		if res.StatusCode != http.StatusFound || !strings.HasPrefix(res.Header.Get("Location"), "https://") {
			t.Errorf("%s: %s answers %s, Location %q\n%s", e.doc, e.match[1], res.Status, res.Header.Get("Location"), body)
		}
	}
	if seen < 2 {
		t.Fatalf("found %d click examples in the docs, want the README's and API.md's", seen)
	}
	n := 0
	if err := log.Scan(context.Background(), time.Unix(0, 0), time.Now().Add(time.Hour), func(clicks.Click) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	if n != seen {
		t.Errorf("the click log holds %d clicks, want the %d examples'", n, seen)
	}
}
