package parity

import (
	"net/http"
	"testing"

	"github.com/adlink/adlink/backend/api"
	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/config"
	"github.com/adlink/adlink/backend/market"
	"github.com/adlink/adlink/backend/partners"
	"github.com/adlink/adlink/backend/store"
)

// newBackend is the real API handler over the corpus's indexes.
func newBackend(t testing.TB, ix market.Indexes) http.Handler {
	t.Helper()
	cfg := config.Default()
	cfg.RedirectURL = redirectURL
	reg, err := partners.NewStatic([]partners.Partner{partners.Demo()})
	if err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	cl, err := clicks.New(db)
	if err != nil {
		t.Fatal(err)
	}
	return api.NewServer(api.Deps{Config: cfg, Indexes: ix, Partners: reg, Clicks: cl})
}
