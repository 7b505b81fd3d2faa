package web

import (
	"os"
	"regexp"
	"testing"
)

// TestWidgetHasNoBigIntLiterals: widget.js writes BigInt values by calls
// (BigInt(0)), not literals (0n), which a browser without BigInt refuses
// as a syntax error, losing the server's ads along with the page's
// matching. Comments are left out of the check.
func TestWidgetHasNoBigIntLiterals(t *testing.T) {
	src, err := os.ReadFile("widget.js")
	if err != nil {
		t.Fatal(err)
	}
	// Block comments, and line comments after white space (a URL's "//"
	// in a string has none before it).
	code := regexp.MustCompile(`/\*[\s\S]*?\*/|(?:^|\s)//[^\n]*`).ReplaceAll(src, nil)
	if lits := regexp.MustCompile(`\b(?:0x[0-9a-fA-F]+|[0-9]+)n\b`).FindAll(code, -1); len(lits) > 0 {
		t.Errorf("BigInt literals in widget.js: %q", lits)
	}
	if len(code) < len(src)/2 || regexp.MustCompile(`BigInt\(`).Find(code) == nil {
		t.Error("the check stripped the code that calls BigInt: it checks nothing")
	}
}
