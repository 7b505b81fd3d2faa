package api

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// TestDocLinksResolve keeps the links between the repository's markdown
// files whole: every relative link names a file that is there, and every
// #anchor a heading of the file it points to, as GitHub makes them. A
// heading renamed, or a link typed wrong, leaves a reader at the top of a
// long page or at a 404.
func TestDocLinksResolve(t *testing.T) {
	root := filepath.Join("..", "..")
	var docs []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			docs = append(docs, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) < 4 {
		t.Fatalf("found %d markdown files, want README.md, ARCHITECTURE.md and docs/: %v", len(docs), docs)
	}
	anchors := map[string]map[string]bool{}
	anchorsOf := func(path string) map[string]bool {
		if a, ok := anchors[path]; ok {
			return a
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		anchors[path] = headingAnchors(string(b))
		return anchors[path]
	}
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	links := 0
	for _, doc := range docs {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		name, _ := filepath.Rel(root, doc)
		for _, m := range link.FindAllStringSubmatch(prose(string(b)), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			links++
			file, anchor, _ := strings.Cut(target, "#")
			path := doc
			if file != "" {
				path = filepath.Join(filepath.Dir(doc), filepath.FromSlash(file))
				if _, err := os.Stat(path); err != nil {
					t.Errorf("%s: the link %s names no file: %v", name, target, err)
					continue
				}
			}
			if anchor != "" && strings.HasSuffix(path, ".md") && !anchorsOf(path)[anchor] {
				t.Errorf("%s: the link %s names no heading of %s", name, target, filepath.Base(path))
			}
		}
	}
	if links < 50 {
		t.Fatalf("found %d relative links in %d files, want the docs' many", links, len(docs))
	}
}

// TestHeadingAnchors holds headingAnchors to GitHub's anchors.
func TestHeadingAnchors(t *testing.T) {
	got := headingAnchors("# The adlink API\n### `GET /v2/report`: a partner's or advertiser's report\n" +
		"```sh\n# not a heading\n```\n## Clicks\n### Clicks\n")
	for _, want := range []string{"the-adlink-api", "get-v2report-a-partners-or-advertisers-report", "clicks", "clicks-1"} {
		if !got[want] {
			t.Errorf("no anchor %q in %v", want, got)
		}
	}
	if got["not-a-heading"] {
		t.Errorf("a comment in a code block made an anchor: %v", got)
	}
}

// prose is the markdown s without its fenced code blocks, whose text is
// shell and JSON, not markdown.
func prose(s string) string {
	var out strings.Builder
	fenced := false
	for line := range strings.Lines(s) {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			out.WriteString(line)
		}
	}
	return out.String()
}

// headingAnchors returns the anchors GitHub gives the headings of the
// markdown s: lower case, punctuation but '-' and '_' dropped, spaces as
// '-', and a repeated one numbered -1, -2...
func headingAnchors(s string) map[string]bool {
	heading := regexp.MustCompile(`(?m)^#{1,6} +(.+?) *#*$`)
	anchors := map[string]bool{}
	seen := map[string]int{}
	for _, m := range heading.FindAllStringSubmatch(prose(s), -1) {
		var a strings.Builder
		for _, r := range strings.ToLower(m[1]) {
			switch {
			case r == ' ':
				a.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				a.WriteRune(r)
			}
		}
		anchor := a.String()
		if n := seen[anchor]; n > 0 {
			seen[anchor]++
			anchor += "-" + strconv.Itoa(n)
		} else {
			seen[anchor] = 1
		}
		anchors[anchor] = true
	}
	return anchors
}
