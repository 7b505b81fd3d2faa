package pgstore_test

import (
	"strings"
	"testing"

	pgstore "github.com/adlink/adlink/backend/store/pg"
)

// TestOpenRefusesAPasswordThatEndsTheUserInfo: a '/' or '@' written as it
// is in a URL's password ends its user info early; the server and the
// report tool refuse the URL saying how to write it, and quote no part of
// the password.
func TestOpenRefusesAPasswordThatEndsTheUserInfo(t *testing.T) {
	for _, url := range []string{
		"postgres://adlink:pass/s3cr3t@127.0.0.1:1/adlink",
		"postgres://adlink:pass@s3cr3t@127.0.0.1:1/adlink",
	} {
		for name, open := range map[string]func() error{
			"Open":       func() error { _, err := pgstore.Open(t.Context(), url); return err },
			"OpenReader": func() error { _, err := pgstore.OpenReader(t.Context(), url); return err },
		} {
			err := open()
			if err == nil || !strings.Contains(err.Error(), "percent-encode") || strings.Contains(err.Error(), "s3cr3t") {
				t.Errorf("%s(%s) = %v, want an error that says to percent-encode and quotes no password", name, url, err)
			}
		}
	}
}
