package main

import (
	"context"
	"net"
	"net/http"
	"testing"

	"github.com/adlink/adlink/backend/catalog"
)

// spoofedClient is a header for every way a client can claim another
// address or country than its connection's, and a request id of its
// choosing.
func spoofedClient() http.Header {
	h := browser()
	h.Set("X-Real-IP", "192.0.2.61")
	h.Set("Forwarded", "for=192.0.2.62")
	h.Set("True-Client-IP", "192.0.2.63")
	h.Set("CF-Connecting-IP", "192.0.2.64")
	h.Set("CF-IPCountry", "US")
	h.Set("X-Request-Id", "spoofed-request-id")
	return h
}

// fromAddress is a client whose connections come from the loopback
// address local and that follows no redirect.
func fromAddress(local string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	return &http.Client{
		Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return d.DialContext(ctx, network, addr)
		}},
		CheckRedirect: noFollow.CheckRedirect,
	}
}

// With the default -trusted-proxies, only 127.0.0.1 and ::1 speak for
// others: a client connecting from any other address, here 127.0.0.2,
// which is loopback but not the proxy, is recorded as its connection's
// address, whatever X-Forwarded-For or other header names another, gets
// no country from the country header and no request id of its own. The
// same headers from 127.0.0.1, a proxy the default trusts, are read, so
// the far client's are ignored by its address, not by the header's form.
func TestDefaultTrustBelievesNoClientsHeaders(t *testing.T) {
	ads, err := catalog.Demo(catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	srv := startServer(t, buildServer(t), data)
	ids := map[string]string{}
	for _, local := range []string{"127.0.0.2", "127.0.0.1"} {
		c := &fraudClient{tb: t, base: srv.base, ads: ads, http: fromAddress(local)}
		link := c.answer("192.0.2.60", "q=handy&loc=de")[0]
		req, err := http.NewRequest(http.MethodGet, srv.base+link, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header = spoofedClient()
		req.Header.Set("X-Forwarded-For", "192.0.2.60")
		res, err := c.http.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusFound {
			t.Fatalf("click from %s: %d, want 302", local, res.StatusCode)
		}
		ids[local] = res.Header.Get("X-Request-Id")
	}
	if ids["127.0.0.2"] == "spoofed-request-id" || ids["127.0.0.1"] != "spoofed-request-id" {
		t.Errorf("request ids %q; want the client's only from the trusted proxy", ids)
	}
	srv.stop()
	log := readClicks(t, data)
	if len(log) != 2 {
		t.Fatalf("%d clicks recorded, want 2", len(log))
	}
	got := map[string]string{}
	for _, c := range log {
		got[c.IP] = c.Country
	}
	if country, ok := got["127.0.0.2"]; !ok || country != "" {
		t.Errorf("clicks by address and country %q; want 127.0.0.2's recorded as itself, with no country", got)
	}
	if country, ok := got["192.0.2.60"]; !ok || country != "us" {
		t.Errorf("clicks by address and country %q; want the trusted proxy's client 192.0.2.60, in us", got)
	}
}
