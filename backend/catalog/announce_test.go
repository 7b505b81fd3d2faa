package catalog

import (
	"strings"
	"testing"
)

// TestParseAnnouncement: what a replica announces reads back; what
// another process could put on the shared channel is refused, naming
// what is wrong.
func TestParseAnnouncement(t *testing.T) {
	a := Announcement{Version: "3f9a0c41d2b7e865", From: "r-0a1b2c3d"}
	if got, err := ParseAnnouncement(a.String()); err != nil || got != a {
		t.Fatalf("ParseAnnouncement(%q) = %+v, %v", a.String(), got, err)
	}
	for _, c := range []struct{ in, want string }{
		{"", "want \"v1"},
		{"v2 3f9a0c41d2b7e865 r1", "want \"v1"},
		{"v1 3f9a0c41d2b7e865", "want \"v1"},
		{"v1 3f9a0c41d2b7e865 r1 extra", "want \"v1"},
		{"v1  3f9a0c41d2b7e865 r1", "version"},
		{"v1 3F9A0C41D2B7E865 r1", "version"},
		{"v1 3f9a0c41d2b7e86 r1", "version"},
		{"v1 ../../etc/passwd0 r1", "version"},
		{"v1 3f9a0c41d2b7e865 ", "replica"},
		{"v1 3f9a0c41d2b7e865 r\n1", "replica"},
		{"v1 3f9a0c41d2b7e865 " + strings.Repeat("r", 65), "replica"},
	} {
		if got, err := ParseAnnouncement(c.in); err == nil || !strings.Contains(err.Error(), c.want) || !got.IsZero() && got.Check() == nil {
			t.Errorf("ParseAnnouncement(%q) = %+v, %v; want an error about %s", c.in, got, err, c.want)
		}
	}
}

// FuzzParseAnnouncement: no input crashes the parser, and whatever it
// accepts is valid and written back as it came.
func FuzzParseAnnouncement(f *testing.F) {
	f.Add("v1 3f9a0c41d2b7e865 r-0a1b2c3d")
	f.Add("v1 0000000000000000 _")
	f.Add("v1 3f9a0c41d2b7e865 r1 x")
	f.Add("v1\x003f9a0c41d2b7e865 r")
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParseAnnouncement(s)
		if err != nil {
			if !a.IsZero() && a.Check() == nil {
				t.Fatalf("%q refused, yet its fields are valid: %v", s, err)
			}
			return
		}
		if a.Check() != nil || a.String() != s {
			t.Fatalf("%q accepted as %+v, written back as %q", s, a, a.String())
		}
	})
}
