package golden

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	for _, body := range []string{
		`{"link":[{"title":"Ärger \u003cb\u003e","ad":"http://x/?a=1\u0026b=2"}],"n":[1,2.5e3,null,true]}`,
		`/**/adlink.cb({"http_status":200,"link":[]});`,
		`/**/a.b({"s":"(x)"})`,
		`[]`,
		"not JSON (at all)\n\nwith a blank line",
		``,
	} {
		p := pretty([]byte(body))
		if got := compact(p); !bytes.Equal(got, []byte(body)) {
			t.Errorf("%q: pretty %q compacts to %q", body, p, got)
		}
		path := filepath.Join(t.TempDir(), "x.json")
		for _, head := range []string{"", "GET /x\nHTTP/1.1 200 OK\n\n"} {
			if err := write(path, head, []byte(body)); err != nil {
				t.Fatal(err)
			}
			gotHead, got, err := read(path, head != "")
			if err != nil || gotHead != head || string(got) != body {
				t.Errorf("%q, head %q: read back %q, %q, %v", body, head, gotHead, got, err)
			}
		}
	}
}

func TestPrettyIndents(t *testing.T) {
	got := string(pretty([]byte(`/**/cb({"a":[1,{"b":"c"}]});`)))
	want := "/**/cb({\n  \"a\": [\n    1,\n    {\n      \"b\": \"c\"\n    }\n  ]\n});"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// An answer that is JSON but not compact cannot be recorded: compared, it
// would never equal the compacted file.
func TestRefusesLooseJSON(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.json")
	for _, body := range []string{`{"a": 1}`, ` {"a":1}`, `/**/cb({"a": 1});`} {
		if err := write(path, "", []byte(body)); err == nil {
			t.Errorf("%q was recorded", body)
		}
	}
}

func TestReadChecksShape(t *testing.T) {
	dir := t.TempDir()
	noNewline := filepath.Join(dir, "a")
	os.WriteFile(noNewline, []byte(`{}`), 0o644)
	if _, err := Read(noNewline); err == nil {
		t.Error("a file without its final newline was read")
	}
	noHead := filepath.Join(dir, "b")
	os.WriteFile(noHead, []byte("{}\n"), 0o644)
	if _, _, err := ReadTranscript(noHead); err == nil {
		t.Error("a transcript without a head was read")
	}
}
