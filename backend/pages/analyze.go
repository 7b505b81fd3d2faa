package pages

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/RadhiFadlillah/whatlanggo"
	trafilatura "github.com/markusmobius/go-trafilatura"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// Limits of what an analysis keeps.
const (
	maxHeadings     = 64
	maxHeadingBytes = 256
	maxTitleBytes   = 4 << 10
	// MaxTextBytes bounds the main text kept for matching (match.MaxPageBytes).
	MaxTextBytes = 256 << 10
	// maxTreeNodes makes trafilatura give up on absurdly large documents.
	maxTreeNodes = 200000
)

// Extract is what a page says: its title, headings, main text (without
// navigation, footers, cookie banners), language and the canonical URL it
// declares.
type Extract struct {
	Title    string
	Headings []string
	Text     string
	// Lang is an ISO 639-1 code, or "" when unknown.
	Lang string
	// Canonical is the page's <link rel=canonical> resolved against its
	// URL, as written (not yet canonicalised), or "".
	Canonical string
}

// ExtractPage reads a page's HTML. pageURL resolves relative links. It never
// panics: a document the extractor cannot handle is an error.
func ExtractPage(doc string, pageURL string) (ex *Extract, err error) {
	defer func() {
		if r := recover(); r != nil {
			ex, err = nil, fmt.Errorf("extracting main text: %v", r)
		}
	}()
	root, err := html.Parse(strings.NewReader(doc))
	if err != nil {
		return nil, err
	}
	base, _ := url.Parse(pageURL)
	ex = &Extract{}
	var title string
	walkHead(root, base, ex, &title, 0)

	opts := trafilatura.Options{
		OriginalURL:     base,
		ExcludeComments: true,
		HtmlDateMode:    trafilatura.Disabled,
		MaxTreeSize:     maxTreeNodes,
		// The readability and distiller fallbacks triple the CPU and do
		// not improve the article benchmark's metric.
		EnableFallback: false,
	}
	res, err := trafilatura.ExtractDocument(root, opts)
	if err == nil && res != nil {
		ex.Text = res.ContentText
		if res.Metadata.Title != "" {
			title = res.Metadata.Title
		}
		// The page's own <html lang> wins over the language read from
		// its text: it is what the widget in the page goes by.
		if l := langCode(res.Metadata.Language); l != "" && ex.Lang == "" {
			ex.Lang = l
		}
	}
	ex.Title = clip(collapse(title), maxTitleBytes)
	ex.Text = clip(ex.Text, MaxTextBytes)
	if ex.Lang == "" && ex.Text != "" {
		sample := clip(ex.Text, 4<<10)
		if info := whatlanggo.Detect(sample); info.IsReliable() {
			ex.Lang = info.Lang.Iso6391()
		}
	}
	return ex, nil
}

// walkHead collects the <title>, <html lang>, <link rel=canonical> and the
// h1-h3 headings outside navigation, header, footer and aside elements.
func walkHead(n *html.Node, base *url.URL, ex *Extract, title *string, depth int) {
	if depth > 512 {
		return
	}
	if n.Type == html.ElementNode {
		switch n.DataAtom {
		case atom.Html:
			if l := langCode(attr(n, "lang")); l != "" {
				ex.Lang = l
			}
		case atom.Title:
			if *title == "" {
				*title = textOf(n)
			}
			return
		case atom.Link:
			if ex.Canonical == "" && hasToken(attr(n, "rel"), "canonical") {
				if href := strings.TrimSpace(attr(n, "href")); href != "" && base != nil {
					if u, err := base.Parse(href); err == nil {
						ex.Canonical = u.String()
					}
				}
			}
			return
		case atom.Nav, atom.Footer, atom.Aside, atom.Script, atom.Style, atom.Noscript, atom.Template:
			return
		case atom.H1, atom.H2, atom.H3:
			if len(ex.Headings) < maxHeadings {
				if h := clip(collapse(textOf(n)), maxHeadingBytes); h != "" {
					ex.Headings = append(ex.Headings, h)
				}
			}
			return
		}
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		walkHead(c, base, ex, title, depth+1)
	}
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func hasToken(list, tok string) bool {
	for _, f := range strings.Fields(list) {
		if strings.EqualFold(f, tok) {
			return true
		}
	}
	return false
}

func textOf(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node, int)
	walk = func(n *html.Node, depth int) {
		if depth > 64 || b.Len() > maxTitleBytes {
			return
		}
		switch n.Type {
		case html.TextNode:
			b.WriteString(n.Data)
			b.WriteByte(' ')
		case html.ElementNode:
			if n.DataAtom == atom.Script || n.DataAtom == atom.Style {
				return
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c, depth+1)
		}
	}
	walk(n, 0)
	return b.String()
}

func collapse(s string) string { return strings.Join(strings.Fields(s), " ") }

// clip cuts s to at most n bytes at a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

// langCode returns the ISO 639-1 part of a language tag ("de-AT" -> "de").
func langCode(tag string) string {
	tag = strings.ToLower(strings.TrimSpace(tag))
	if i := strings.IndexAny(tag, "-_"); i >= 0 {
		tag = tag[:i]
	}
	if len(tag) != 2 || tag[0] < 'a' || tag[0] > 'z' || tag[1] < 'a' || tag[1] > 'z' {
		return ""
	}
	return tag
}
