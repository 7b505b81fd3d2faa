package api

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

func TestStripComments(t *testing.T) {
	src := "(function () {\n  // a comment\n  var a = 1; // kept after code\n\n  /* one\n   * block\n   */\n  var b = \"http://x/\";\n  /* a line */\n  /**/\n  /** doc */\n  return a + b;\n})();\n"
	want := widgetBanner + "(function () {\nvar a = 1; // kept after code\nvar b = \"http://x/\";\nreturn a + b;\n})();\n"
	if got := string(stripComments([]byte(src))); got != want {
		t.Errorf("stripComments:\n%s\nwant:\n%s", got, want)
	}
	// A magic comment on the first line stays there, before the banner;
	// one further down goes as any comment line.
	hint := "//# allFunctionsCalledOnLoad\n"
	if got := string(stripComments([]byte(hint + src))); got != hint+want {
		t.Errorf("stripComments with a compile hint:\n%s\nwant:\n%s", got, hint+want)
	}
	if got := string(stripComments([]byte("a();\n" + hint))); got != widgetBanner+"a();\n" {
		t.Errorf("stripComments with a compile hint further down: %q", got)
	}
	// Where lines alone cannot tell comments from code, nothing is
	// stripped: a template literal, a continued string, a carriage
	// return, a block comment after code (whose end a later line that
	// opens one would hide), "/*" or "*/" inside a line.
	for _, s := range []string{
		"var s = `\n// not a comment\n`;\n",
		"var s = \"a\\\n// not a comment\";\n",
		"var s = \"a\\\r\n// not a comment\";\r\n",
		"var x = 1; /* one\n/* two */\nx = 2; // */\nconsole.log(x);\n",
		"f(); /* a\n/* b\n*/ g();\n",
		"var re = /a*/;\n// c\n",
		"var u = \"/*\";\n// c\n",
		"/*/ still open\nx();\n*/\n",
	} {
		if got := string(stripComments([]byte(s))); got != s {
			t.Errorf("stripComments(%q) = %q, want it as it is", s, got)
		}
	}
}

// TestServedWidgetIsStripped: /widget.js is web/widget.js without its
// comment lines, and much smaller; the browser tests run the served one.
func TestServedWidgetIsStripped(t *testing.T) {
	src, err := os.ReadFile("../../web/widget.js")
	if err != nil {
		t.Fatal(err)
	}
	out := stripComments(src)
	if len(out) > len(src)*2/3 {
		t.Errorf("stripped widget.js is %d bytes of %d", len(out), len(src))
	}
	// The compile hint, then the banner.
	if !bytes.HasPrefix(out, []byte("//# allFunctionsCalledOnLoad\n"+widgetBanner)) {
		t.Errorf("served widget.js starts %q, want the compile hint and the banner", out[:min(len(out), 100)])
	}
	for _, line := range strings.Split(string(out), "\n")[2:] {
		if strings.HasPrefix(line, "//") || strings.HasPrefix(line, "/*") || strings.HasPrefix(line, " ") {
			t.Errorf("left in: %q", line)
		}
	}
	if !bytes.Contains(out, []byte("window.adlink = {")) {
		t.Error("the code is gone")
	}
}

// FuzzStripComments: every line served is a line of the source, trimmed,
// or what follows a block comment's end on one.
func FuzzStripComments(f *testing.F) {
	f.Add("a();\n// x\n/* y\n*/ b();\n")
	f.Add("/* a */ /* b */ c();\n")
	f.Fuzz(func(t *testing.T, s string) {
		out := string(stripComments([]byte(s)))
		if out == s {
			return
		}
		src := strings.Split(s, "\n")
		// The banner follows a magic comment kept first, if any.
		for _, line := range strings.Split(strings.Replace(out, widgetBanner, "", 1), "\n") {
			if line == "" {
				continue
			}
			ok := false
			for _, l := range src {
				if l = strings.TrimSpace(l); l == line || strings.HasSuffix(l, line) && strings.Contains(l, "*/") {
					ok = true
					break
				}
			}
			if !ok {
				t.Fatalf("%q: served line %q is in no source line", s, line)
			}
		}
	})
}
