package main

import (
	"context"
	"io"
	"net"
	"strings"
	"testing"
)

// adlink reload asks a listener on every address on loopback, and names
// what is wrong with its flags.
func TestReloadURL(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1:9464":    "http://127.0.0.1:9464/admin/reload",
		":9464":             "http://127.0.0.1:9464/admin/reload",
		"0.0.0.0:9464":      "http://127.0.0.1:9464/admin/reload",
		"[::]:9464":         "http://[::1]:9464/admin/reload",
		"[::1]:9464":        "http://[::1]:9464/admin/reload",
		"localhost:9464":    "http://localhost:9464/admin/reload",
		"10.0.0.5:9464":     "http://10.0.0.5:9464/admin/reload",
		"":                  "",
		"127.0.0.1":         "",
		"admin.example:80:": "",
	} {
		got, err := reloadURL(addr)
		if got != want || (err == nil) != (want != "") {
			t.Errorf("reloadURL(%q) = %q, %v; want %q", addr, got, err, want)
		}
	}
	for _, args := range [][]string{{"now"}, {"-timeout", "0s"}, {"-admin-addr", ""}, {"-admin-addr", "9464"}} {
		err := run(context.Background(), append([]string{"reload"}, args...), noEnv, io.Discard, io.Discard)
		if err == nil || !strings.HasPrefix(err.Error(), "reload: ") {
			t.Errorf("adlink reload %q: %v, want an error", args, err)
		}
	}
}

// adlink reload asking an address where no server listens (the server's
// -admin-addr is another) says to give it the server's -admin-addr.
func TestReloadNoListener(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	err = run(context.Background(), []string{"reload", "-admin-addr", addr, "-timeout", "10s"}, noEnv, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "no admin listener on "+addr) || !strings.Contains(err.Error(), "-admin-addr") {
		t.Errorf("adlink reload with no listener on %s: %v, want it to say so and name -admin-addr", addr, err)
	}
}
