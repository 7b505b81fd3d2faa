package parity

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/goccy/go-json"

	"github.com/adlink/adlink/internal/testcatalog"
)

// With tok the module's answer is the native one made with the same token,
// and every click URL ends in it.
func TestParityWithToken(t *testing.T) {
	const tok = "k1.1795352400.ha5b9usAq-QhxJxo-YxJvByjWmP9nol5kfpIt8pdvpY"
	ads := demoAds(t)
	c := newCorpus(t, ads)
	ctx := context.Background()
	links := 0
	for _, page := range []bool{false, true} {
		reqs := testcatalog.Requests(ads, 60, 4, page)
		for i := range reqs {
			r := &reqs[i]
			s := c.pick(r.Loc, r.Lang)
			q, l := native(r)
			l.Tok = tok
			o := l.Options()
			want := s.native.AppendResponse(nil, s.native.Match(&q), &o)
			call := s.in.SearchJSON
			if page {
				call = s.in.PageJSON
			}
			got, err := call(ctx, r.Guest(redirectURL)+"&tok="+tok)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Fatalf("request %s\nmodule: %s\nnative: %s", r.Guest(redirectURL), got, want)
			}
			var resp struct{ Link []struct{ Ad string } }
			if err := json.Unmarshal(got, &resp); err != nil {
				t.Fatal(err)
			}
			for _, l := range resp.Link {
				u, err := url.Parse(l.Ad)
				if err != nil || u.Query().Get("tok") != tok || !strings.HasSuffix(l.Ad, "&tok="+tok) {
					t.Fatalf("click URL %s does not end in the token", l.Ad)
				}
				links++
			}
		}
	}
	if links == 0 {
		t.Fatal("no request matched anything: the test checks nothing")
	}
}
