package parity

import (
	"net/http"
	"testing"

	"github.com/adlink/adlink/backend/app"
	"github.com/adlink/adlink/backend/config"
	"github.com/adlink/adlink/match"
)

// newBackend is the whole server as the binary builds it, serving ads to
// the demo partner.
func newBackend(t testing.TB, ads []match.Ad) http.Handler {
	t.Helper()
	cfg := config.Default()
	cfg.RedirectURL = redirectURL
	cfg.DataDir = t.TempDir()
	cfg.Demo = true
	// Every request comes from one client; the limits are not what is
	// compared.
	cfg.KeyRate, cfg.KeyBurst = 1e9, 1e9
	a, err := app.New(cfg, app.Options{Ads: ads})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a.Handler
}
