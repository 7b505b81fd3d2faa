package api

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/goccy/go-json"

	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/config"
	"github.com/adlink/adlink/backend/pages"
	"github.com/adlink/adlink/internal/golden"
)

// openAPIDoc is openapi.json decoded, with a resolver of its "$ref"s.
type openAPIDoc struct {
	root map[string]any
}

func loadOpenAPI(t *testing.T) *openAPIDoc {
	t.Helper()
	var root map[string]any
	if err := json.Unmarshal(OpenAPI, &root); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	if root["openapi"] != "3.1.0" {
		t.Fatalf("openapi version %v", root["openapi"])
	}
	return &openAPIDoc{root: root}
}

// ref resolves a local "#/a/b" pointer.
func (d *openAPIDoc) ref(r string) (map[string]any, error) {
	if !strings.HasPrefix(r, "#/") {
		return nil, fmt.Errorf("non-local $ref %q", r)
	}
	var cur any = d.root
	for _, part := range strings.Split(r[2:], "/") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("$ref %q: %q is not in an object", r, part)
		}
		if cur, ok = m[part]; !ok {
			return nil, fmt.Errorf("$ref %q: no %q", r, part)
		}
	}
	m, ok := cur.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("$ref %q is not an object", r)
	}
	return m, nil
}

// deref follows m's "$ref", if any, keeping m's own fields over the target's.
func (d *openAPIDoc) deref(t *testing.T, m map[string]any) map[string]any {
	t.Helper()
	r, ok := m["$ref"].(string)
	if !ok {
		return m
	}
	target, err := d.ref(r)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]any{}
	for k, v := range d.deref(t, target) {
		out[k] = v
	}
	for k, v := range m {
		if k != "$ref" {
			out[k] = v
		}
	}
	return out
}

func (d *openAPIDoc) op(t *testing.T, path, method string) map[string]any {
	t.Helper()
	item, _ := d.root["paths"].(map[string]any)[path].(map[string]any)
	op, _ := item[method].(map[string]any)
	return op
}

// docParam is one query parameter of an operation.
type docParam struct {
	name     string
	required bool
	schema   map[string]any
	example  any
}

func (d *openAPIDoc) params(t *testing.T, op map[string]any) []docParam {
	t.Helper()
	var out []docParam
	for _, raw := range op["parameters"].([]any) {
		p := d.deref(t, raw.(map[string]any))
		if p["in"] != "query" {
			continue
		}
		req, _ := p["required"].(bool)
		out = append(out, docParam{name: p["name"].(string), required: req, schema: d.deref(t, p["schema"].(map[string]any)), example: p["example"]})
	}
	return out
}

// valueOf is a parameter's value as a query string holds it.
func valueOf(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return fmt.Sprint(v)
}

// validValues are values the document allows for p: its example, each of
// its enum, each item of its list, its bounds.
func validValues(p docParam) []string {
	var vs []string
	if p.example != nil {
		vs = append(vs, valueOf(p.example))
	}
	for _, e := range asList(p.schema["enum"]) {
		vs = append(vs, valueOf(e))
	}
	for _, e := range asList(p.schema["x-list-of"]) {
		vs = append(vs, valueOf(e))
	}
	for _, k := range []string{"minimum", "maximum"} {
		if m, ok := p.schema[k]; ok {
			vs = append(vs, valueOf(m))
		}
	}
	return vs
}

func asList(v any) []any { l, _ := v.([]any); return l }

// queryOps are the operations with query parameters, with the handler
// function each starts from.
var queryOps = []struct{ path, handler string }{
	{"/v2/search/link", "search"},
	{"/v2/page/link", "page"},
	{"/v1/redirect", "redirect"},
	{"/v2/shards", "shardManifest"},
}

// TestOpenAPIParametersAcceptedByHandlers sends every documented value of
// every documented parameter to the real handler: none is refused as bad,
// and a value outside an enum or a bound is refused naming the parameter.
func TestOpenAPIParametersAcceptedByHandlers(t *testing.T) {
	doc := loadOpenAPI(t)
	pe := newPageEnv(t, 0, pages.FetchOptions{AllowPrivate: true})
	cfg := config.Default()
	cfg.RedirectURL = "https://r.example"
	cfg.KeyRate, cfg.KeyBurst = 1e9, 1e9
	pe.handler = NewServer(Deps{Config: cfg, Indexes: pe.indexes, Partners: testPartners(t), Pages: pe.svc,
		Clicks: &clickRecorder{AppendFn: func(context.Context, clicks.Click) error { return nil }}})
	for _, o := range queryOps {
		t.Run(strings.TrimPrefix(o.path, "/"), func(t *testing.T) {
			op := doc.op(t, o.path, "get")
			if op == nil {
				t.Fatalf("%s is not documented", o.path)
			}
			params := doc.params(t, op)
			base := url.Values{}
			for _, p := range params {
				if p.required {
					if p.example == nil {
						t.Fatalf("required %s has no example", p.name)
					}
					base.Set(p.name, valueOf(p.example))
				}
			}
			send := func(v url.Values) (int, errorResponse) {
				res := pe.get(t, o.path+"?"+v.Encode(), nil, "")
				body := readBody(t, res)
				var e errorResponse
				if res.StatusCode >= 400 {
					json.Unmarshal(body, &e)
				}
				return res.StatusCode, e
			}
			if status, e := send(base); status >= 400 && status != http.StatusNotFound {
				t.Fatalf("the required parameters' examples: %d %+v", status, e)
			}
			for _, p := range params {
				for _, val := range validValues(p) {
					v := cloneValues(base)
					v.Set(p.name, val)
					if status, e := send(v); status == http.StatusBadRequest {
						t.Errorf("%s=%s (documented) refused: %s", p.name, val, e.Error.Message)
					}
				}
				var bad []string
				if _, ok := p.schema["enum"]; ok {
					bad = append(bad, "no-such-value")
				}
				if m, ok := p.schema["maximum"].(float64); ok {
					bad = append(bad, valueOf(m+1))
				}
				for _, val := range bad {
					v := cloneValues(base)
					v.Set(p.name, val)
					if status, e := send(v); status != http.StatusBadRequest || e.Error.Param != p.name {
						t.Errorf("%s=%s (not allowed by the document): %d %+v", p.name, val, status, e)
					}
				}
			}
		})
	}
}

func cloneValues(v url.Values) url.Values {
	out := url.Values{}
	for k, vs := range v {
		out[k] = slices.Clone(vs)
	}
	return out
}

// handlerParams reads the source of the package and of package contract,
// whose parsers the handlers call, and returns, for each function and
// method, the parameter names it reads through values (Required,
// Optional, Get, Parse) and the names of the functions it calls.
func handlerParams(t *testing.T) (reads, calls map[string][]string) {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	more, err := filepath.Glob("../../contract/*.go")
	if err != nil || len(more) == 0 {
		t.Fatalf("contract's source: %v", err)
	}
	files = append(files, more...)
	reads, calls = map[string][]string{}, map[string][]string{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				var callee string
				onValues := false // a method of the handler's values, p
				switch f := call.Fun.(type) {
				case *ast.Ident:
					callee = f.Name
				case *ast.SelectorExpr:
					callee = f.Sel.Name
					x, ok := f.X.(*ast.Ident)
					onValues = ok && x.Name == "p"
				}
				switch {
				case onValues && (callee == "Required" || callee == "Optional" || callee == "Get" || callee == "Parse"):
					if len(call.Args) >= 1 {
						if lit, ok := call.Args[0].(*ast.BasicLit); ok && lit.Kind == token.STRING {
							s, _ := strconv.Unquote(lit.Value)
							reads[fn.Name.Name] = append(reads[fn.Name.Name], s)
						}
					}
				default:
					calls[fn.Name.Name] = append(calls[fn.Name.Name], callee)
				}
				return true
			})
		}
	}
	return reads, calls
}

// TestOpenAPIDocumentsEveryParameter checks that each parameter a
// handler reads, directly or through the functions it calls, is in the
// document for that endpoint.
func TestOpenAPIDocumentsEveryParameter(t *testing.T) {
	doc := loadOpenAPI(t)
	reads, calls := handlerParams(t)
	for _, o := range queryOps {
		seen := map[string]bool{}
		var read []string
		var walk func(string)
		walk = func(fn string) {
			if seen[fn] {
				return
			}
			seen[fn] = true
			read = append(read, reads[fn]...)
			for _, c := range calls[fn] {
				walk(c)
			}
		}
		walk(o.handler)
		if len(read) == 0 {
			t.Errorf("%s: found no parameter read from %s", o.path, o.handler)
		}
		var documented []string
		for _, p := range doc.params(t, doc.op(t, o.path, "get")) {
			documented = append(documented, p.name)
		}
		for _, name := range read {
			if !slices.Contains(documented, name) {
				t.Errorf("%s reads %q, which openapi.json does not document", o.path, name)
			}
		}
	}
}

// TestOpenAPIDocumentsEveryRoute checks routes.go against the document's
// paths and methods, both ways.
func TestOpenAPIDocumentsEveryRoute(t *testing.T) {
	doc := loadOpenAPI(t)
	src, err := os.ReadFile("routes.go")
	if err != nil {
		t.Fatal(err)
	}
	routes := map[string]bool{}
	for _, m := range regexp.MustCompile(`mux\.Handle\("([A-Z]+) ([^"]+)"`).FindAllStringSubmatch(string(src), -1) {
		method, path := strings.ToLower(m[1]), m[2]
		if strings.HasSuffix(path, "/") {
			// A subtree: every documented path under it.
			n := 0
			for p := range doc.root["paths"].(map[string]any) {
				if strings.HasPrefix(p, path) && doc.op(t, p, method) != nil {
					routes[method+" "+p] = true
					n++
				}
			}
			if n == 0 {
				t.Errorf("route %s %s: nothing under it is documented", m[1], path)
			}
			continue
		}
		routes[method+" "+path] = true
		if doc.op(t, path, method) == nil {
			t.Errorf("route %s %s is not documented", m[1], path)
		}
	}
	for p, item := range doc.root["paths"].(map[string]any) {
		for method := range item.(map[string]any) {
			if !routes[method+" "+p] {
				t.Errorf("documented %s %s has no route", method, p)
			}
		}
	}
}

// TestOpenAPIValidatesGoldenResponses checks every golden response, JSON
// or JSONP, against the schema of its operation and status.
func TestOpenAPIValidatesGoldenResponses(t *testing.T) {
	doc := loadOpenAPI(t)
	files, err := filepath.Glob(filepath.Join(goldenDir, "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	for _, f := range files {
		head, body, err := golden.ReadTranscript(f)
		if err != nil {
			t.Fatal(err)
		}
		r := bufio.NewReader(strings.NewReader(head))
		reqLine, _ := r.ReadString('\n')
		res, err := http.ReadResponse(r, nil)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		fields := strings.Fields(reqLine)
		u, err := url.Parse(fields[1])
		if err != nil {
			t.Fatal(err)
		}
		op := doc.op(t, u.Path, strings.ToLower(fields[0]))
		if op == nil {
			t.Errorf("%s: %s %s is not documented", f, fields[0], u.Path)
			continue
		}
		if err := doc.validateResponse(t, op, res.StatusCode, res.Header.Get("Content-Type"), body); err != nil {
			t.Errorf("%s: %v", filepath.Base(f), err)
		}
	}
	// The page context's golden bodies carry no status: each must be one
	// of the operation's JSON answers, a JSONP one by its http_status.
	pageOp := doc.op(t, "/v2/page/link", "get")
	pageFiles, _ := filepath.Glob(filepath.Join("testdata", "page", "*"))
	for _, f := range pageFiles {
		body, err := golden.Read(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(f, ".js") {
			if err := doc.validateResponse(t, pageOp, http.StatusOK, "text/javascript; charset=utf-8", body); err != nil {
				t.Errorf("%s: %v", f, err)
			}
			continue
		}
		var errs []string
		for status := range pageOp["responses"].(map[string]any) {
			code, _ := strconv.Atoi(status)
			err := doc.validateResponse(t, pageOp, code, "application/json", body)
			if err == nil {
				errs = nil
				break
			}
			errs = append(errs, status+": "+err.Error())
		}
		if errs != nil {
			t.Errorf("%s matches no response: %s", f, strings.Join(errs, "\n"))
		}
	}
}

// TestOpenAPIValidatesLiveErrors checks answers no golden file holds: a
// rate-limited request and a too-long URL in JSON and JSONP, readyz and
// healthz.
func TestOpenAPIValidatesLiveErrors(t *testing.T) {
	doc := loadOpenAPI(t)
	env := limitedEnv(t, nil)
	op := doc.op(t, "/v2/search/link", "get")
	for i := range 7 {
		target := "/v2/search/link?q=handy&api_key=demo&site_id=demo"
		if i%2 == 1 {
			target += "&callback=cb"
		}
		res := env.get(t, target, nil, "")
		if err := doc.validateResponse(t, op, res.StatusCode, res.Header.Get("Content-Type"), readBody(t, res)); err != nil {
			t.Errorf("request %d: %v", i, err)
		}
	}
	// A URL too long to read, in JSON and JSONP.
	for _, callback := range []string{"", "&callback=cb"} {
		target := "/v2/search/link?q=handy&api_key=demo&site_id=demo" + callback + "&pad=" + strings.Repeat("x", MaxURLBytes)
		res := env.get(t, target, nil, "")
		if err := doc.validateResponse(t, op, res.StatusCode, res.Header.Get("Content-Type"), readBody(t, res)); err != nil {
			t.Errorf("a too-long URL%s: %v", callback, err)
		}
	}
	for _, path := range []string{"/healthz", "/readyz", "/v2/nothing"} {
		res := env.get(t, path, nil, "")
		op := doc.op(t, path, "get")
		if path == "/v2/nothing" {
			op = doc.op(t, "/v2/shards/{sha256}", "get") // any 404 is the same error
		}
		if err := doc.validateResponse(t, op, res.StatusCode, res.Header.Get("Content-Type"), readBody(t, res)); err != nil {
			t.Errorf("%s: %v", path, err)
		}
	}
}

// validateResponse checks body against op's response for status; JSONP is
// unwrapped and checked against the response its http_status names.
func (d *openAPIDoc) validateResponse(t *testing.T, op map[string]any, status int, contentType string, body []byte) error {
	t.Helper()
	if strings.HasPrefix(contentType, "text/javascript") {
		m := regexp.MustCompile(`(?s)^/\*\*/[A-Za-z_$][\w$.]*\((.*)\);$`).FindSubmatch(bytes.TrimSpace(body))
		if m == nil || status != http.StatusOK {
			return fmt.Errorf("JSONP answer %d %.80s", status, body)
		}
		var obj map[string]any
		if err := json.Unmarshal(m[1], &obj); err != nil {
			return err
		}
		inner, ok := obj["http_status"].(float64)
		if !ok {
			return fmt.Errorf("JSONP answer without http_status")
		}
		delete(obj, "http_status")
		body, _ = json.Marshal(obj)
		status, contentType = int(inner), "application/json"
	}
	resp, ok := op["responses"].(map[string]any)[strconv.Itoa(status)].(map[string]any)
	if !ok {
		return fmt.Errorf("status %d is not documented", status)
	}
	resp = d.deref(t, resp)
	content, _ := resp["content"].(map[string]any)
	media, ok := content[strings.TrimSpace(strings.Split(contentType, ";")[0])].(map[string]any)
	if !ok {
		return fmt.Errorf("status %d: content type %q is not documented", status, contentType)
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("status %d: %v", status, err)
	}
	return validate(v, media["schema"].(map[string]any), d.ref, "body")
}

// TestServeOpenAPI checks /openapi.json serves the embedded document.
func TestServeOpenAPI(t *testing.T) {
	env := newEnv(t, fixture())
	rec := httptest.NewRecorder()
	env.handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/openapi.json", nil))
	res := rec.Result()
	if body := readBody(t, res); res.StatusCode != http.StatusOK || !bytes.Equal(body, OpenAPI) ||
		res.Header.Get("Content-Type") != "application/json" {
		t.Errorf("/openapi.json: %s %s", res.Status, res.Header.Get("Content-Type"))
	}
}
