package app

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/adlink/adlink/backend/accounts"
	"github.com/adlink/adlink/backend/api"
	"github.com/adlink/adlink/backend/budget"
	"github.com/adlink/adlink/backend/config"
	"github.com/adlink/adlink/backend/pages"
	"github.com/adlink/adlink/backend/partners"
)

// accountSet is the partners and advertisers served with a catalog
// version: who may ask for ads, who reads which report, and the
// advertisers' budgets. A reload reads the files again and swaps in a new
// set with the catalog, or keeps this one.
type accountSet struct {
	registry *partners.Static
	book     *accounts.Book
	budgets  map[string]accounts.Budget
	// gate holds budgets; a set with the same budgets keeps the one
	// before, with what it knows of the day's spend.
	gate *budget.Gate
	// sites are the domains of every partner's site, for the pages'
	// redirects and canonical URLs (pages.Options.Sites).
	sites func(pageURL string) [][]string
	// sum hashes the bytes of the partners and advertisers files the set
	// was read from: a reload that finds them the same reads no further.
	sum [sha256.Size]byte
}

// accountFiles are the bytes of the partners and advertisers files.
type accountFiles struct {
	partners, advertisers []byte
}

// readAccountFiles reads the partners and advertisers files cfg names;
// a file not configured reads as empty.
func readAccountFiles(cfg config.Config) (accountFiles, error) {
	var f accountFiles
	var pErr, aErr error
	if cfg.PartnersFile != "" {
		f.partners, pErr = os.ReadFile(cfg.PartnersFile)
	}
	if cfg.AdvertisersFile != "" {
		f.advertisers, aErr = os.ReadFile(cfg.AdvertisersFile)
	}
	return f, errors.Join(pErr, aErr)
}

// sum hashes both files, each prefixed by its length so that no two
// pairs hash alike.
func (f accountFiles) sum() [sha256.Size]byte {
	h := sha256.New()
	fmt.Fprintf(h, "%d:", len(f.partners))
	h.Write(f.partners)
	fmt.Fprintf(h, "%d:", len(f.advertisers))
	h.Write(f.advertisers)
	var s [sha256.Size]byte
	h.Sum(s[:0])
	return s
}

// parse reads the partners and advertisers of f, with the demo's added
// when cfg asks for them; every problem of both files is reported.
func (f accountFiles) parse(cfg config.Config) ([]partners.Partner, []accounts.AdvertiserAccount, error) {
	ps, psErr := loadPartners(cfg, f.partners)
	ads, advErr := loadAdvertisers(cfg, f.advertisers)
	return ps, ads, errors.Join(psErr, advErr)
}

// newAccountSet checks partners and advertisers as New does (keys, sites,
// tokens, budgets) and returns their set, without a gate; every problem
// is reported, under the name of the file it is in.
func newAccountSet(cfg config.Config, ps []partners.Partner, ads []accounts.AdvertiserAccount, sum [sha256.Size]byte) (*accountSet, error) {
	registry, regErr := partners.NewStatic(ps)
	if regErr != nil {
		regErr = fmt.Errorf("%s: %w", fileName("partners", cfg.PartnersFile), regErr)
	}
	book, bookErr := accounts.New(ps, ads)
	if bookErr != nil {
		names := fileName("partners", cfg.PartnersFile)
		if cfg.AdvertisersFile != "" {
			names += ", " + fileName("advertisers", cfg.AdvertisersFile)
		}
		bookErr = fmt.Errorf("accounts (%s): %w", names, bookErr)
	}
	if err := errors.Join(regErr, bookErr); err != nil {
		return nil, err
	}
	var domains [][]string
	for _, p := range ps {
		for _, site := range p.Sites {
			domains = append(domains, site.Domains)
		}
	}
	return &accountSet{registry: registry, book: book, budgets: book.Budgets(), sites: pages.SitesOf(domains), sum: sum}, nil
}

// fileName names the file of kind at path, or the kind alone when the
// configuration names none (the demo's accounts).
func fileName(kind, path string) string {
	if path == "" {
		return kind
	}
	return kind + " file " + path
}

// with is v serving acc: the same catalog, with acc's partners, report
// readers and budgets.
func (v *version) with(acc *accountSet) *version {
	c := *v.api
	c.Partners, c.Accounts, c.Budget = acc.registry, acc.book, acc.gate
	return &version{api: &c, ads: v.ads, loadedAt: v.loadedAt, acc: acc}
}

// accounts is the account set served now.
func (l *live) accounts() *accountSet { return l.cur.Load().acc }

// nextAccounts is the account set a refresh serves with its catalog:
// the files' new one while a reload reads them, else prev's.
func (l *live) nextAccounts(prev *version) *accountSet {
	if l.pending != nil {
		return l.pending
	}
	return prev.acc
}

// budgetsError names the advertisers file in an error of
// budget.CheckCurrencies.
func (l *live) budgetsError(err error) error {
	if l.cfg.AdvertisersFile != "" {
		return fmt.Errorf("advertisers file %s: budgets: %w", l.cfg.AdvertisersFile, err)
	}
	return fmt.Errorf("budgets: %w", err)
}

// refreshAll reloads the partners and advertisers files and the catalog
// together: the files are read again, and when they changed, checked as
// at start-up and swapped in with the catalog (its budgets' currencies
// against the catalog's bids) or, whatever fails, the partners,
// advertisers and catalog served all stay. Files as they were read last
// time change nothing.
func (l *live) refreshAll(ctx context.Context, force bool) api.Reload {
	next, res := l.readAccounts(ctx)
	if res.Result != "" {
		return res
	}
	l.pending = next // nil: the files are as served
	defer func() { l.pending = nil }()
	res = l.refresh(ctx, force)
	switch {
	case next == nil:
		return res
	case res.Result == resultSwapped:
		res.Accounts = resultSwapped
		return res
	case res.Result != resultUnchanged:
		return res
	}
	cur := l.cur.Load()
	if err := budget.CheckCurrencies(cur.ads, next.budgets); err != nil {
		return api.Reload{Result: resultRefused, Error: summary(l.budgetsError(err))}
	}
	l.cur.Store(cur.with(next))
	return api.Reload{Result: resultSwapped, Accounts: resultSwapped}
}

// readAccounts reads the partners and advertisers files again and
// returns their account set, with its gate, or nil when both are as
// served. A file that cannot be read or parsed fails the reload; one
// whose accounts the checks refuse refuses it (res.Result says which).
func (l *live) readAccounts(ctx context.Context) (next *accountSet, res api.Reload) {
	cur := l.accounts()
	files, err := readAccountFiles(l.cfg)
	if err != nil {
		return nil, api.Reload{Result: resultFailed, Error: summary(err)}
	}
	sum := files.sum()
	if cur != nil && sum == cur.sum {
		return nil, api.Reload{}
	}
	ps, ads, err := files.parse(l.cfg)
	if err != nil {
		return nil, api.Reload{Result: resultFailed, Error: summary(err)}
	}
	if next, err = newAccountSet(l.cfg, ps, ads, sum); err != nil {
		return nil, api.Reload{Result: resultRefused, Error: summary(err)}
	}
	switch {
	case cur != nil && maps.Equal(next.budgets, cur.budgets):
		next.gate = cur.gate
	case l.newGate != nil:
		// The day's spend so far is read, so that a new or changed
		// budget counts it from the next click.
		if next.gate, err = l.newGate(ctx, next.budgets); err != nil {
			return nil, api.Reload{Result: resultFailed, Error: summary(err)}
		}
	}
	return next, api.Reload{}
}

// loadPartners reads the partners of b, the configured partners file's
// bytes, and adds the demo partner when it is asked for.
func loadPartners(cfg config.Config, b []byte) ([]partners.Partner, error) {
	var ps []partners.Partner
	if cfg.PartnersFile != "" {
		var err error
		if ps, err = partners.Parse(cfg.PartnersFile, b); err != nil {
			return nil, err
		}
	}
	if cfg.Demo {
		ps = partners.WithDemo(ps)
	}
	if len(ps) == 0 {
		if cfg.PartnersFile != "" {
			return nil, fmt.Errorf("partners file %s: no partners; give some, or -demo for the demo partner", cfg.PartnersFile)
		}
		return nil, errors.New("no partners: give -partners FILE for your partners, or -demo for the demo partner")
	}
	return ps, nil
}

// loadAdvertisers returns the advertisers of b, the configured
// advertisers file's bytes, and with -demo the demo's unless the file has
// them.
func loadAdvertisers(cfg config.Config, b []byte) ([]accounts.AdvertiserAccount, error) {
	var ads []accounts.AdvertiserAccount
	if cfg.AdvertisersFile != "" {
		var err error
		if ads, err = accounts.ParseAdvertisers(cfg.AdvertisersFile, b); err != nil {
			return nil, err
		}
	}
	if cfg.Demo {
		for _, d := range accounts.Demo() {
			if !slices.ContainsFunc(ads, func(a accounts.AdvertiserAccount) bool { return strings.EqualFold(a.ID, d.ID) }) {
				ads = append(ads, d)
			}
		}
	}
	return ads, nil
}
