package main

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/adlink/adlink/match"
	"github.com/goccy/go-json"
)

// With tok the module's answer is the server's made with a Sign hook that
// appends the same token, and every click URL ends in it.
func TestParityWithToken(t *testing.T) {
	const tok = "k1.1795352400.ha5b9usAq-QhxJxo-YxJvByjWmP9nol5kfpIt8pdvpY"
	ads := demoAds(t)
	c := newCorpus(t, ads)
	ctx := context.Background()
	links := 0
	for _, page := range []bool{false, true} {
		reqs := generate(ads, 60, 4, page)
		for i := range reqs {
			r := &reqs[i]
			s := c.pick(r.loc, r.lang)
			q, o := r.native()
			o.Sign = func(dst, _ []byte) []byte { return append(dst, "&tok="+tok...) }
			want := s.native.AppendResponse(nil, s.native.Match(&q), &o)
			call := s.in.searchJSON
			if page {
				call = s.in.pageJSON
			}
			got, err := call(ctx, r.guest()+"&tok="+tok)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Fatalf("request %s\nmodule: %s\nnative: %s", r.guest(), got, want)
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

func TestParseRequestToken(t *testing.T) {
	base := "q=handy&api_key=k&site_id=s&redirect_url=http://r"
	_, o, errs := parseRequest(base+"&tok=k1.17.AbC_-9", false, nil)
	if errs != nil || o.Sign == nil {
		t.Fatalf("%v, Sign %v", errs, o.Sign != nil)
	}
	if got := string(o.Sign([]byte("type=search"), nil)); got != "type=search&tok=k1.17.AbC_-9" {
		t.Errorf("Sign appends %q", got)
	}
	if _, o, _ := parseRequest(base, false, nil); o.Sign != nil {
		t.Error("a request without tok signs")
	}
	for _, bad := range []string{"a%26b%3Dc", "k1.1.x%20y", strings.Repeat("a", 129), "%3Cscript%3E"} {
		_, _, errs := parseRequest(base+"&tok="+bad, true, nil)
		if len(errs) != 1 || errs[0].Param != "tok" || errs[0].Code != match.ProblemInvalid {
			t.Errorf("tok=%s: %v", bad, errs)
		}
	}
}
