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
	"github.com/adlink/adlink/match"
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
	// before, with what it knows of the day's spend. gateOf are the
	// budgets it holds: the set's, unless the day's spend could not be
	// read for them (then the gate before is kept, and a reload tries
	// again).
	gate   *budget.Gate
	gateOf map[string]accounts.Budget
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

// serve swaps in v, whose accounts may be new: their gate takes first
// what the one served learnt of today's spend since it was made
// (budget.Gate.Carry; no I/O, under mu).
func (l *live) serve(v *version) {
	if prev := l.cur.Load(); prev != nil && prev.acc != nil && v.acc != nil && v.acc.gate != prev.acc.gate {
		v.acc.gate.Carry(prev.acc.gate)
	}
	l.cur.Store(v)
}

// accounts is the account set served now.
func (l *live) accounts() *accountSet { return l.cur.Load().acc }

// accountsFor picks the account set a catalog of ads is served with: the
// one a reload read (pending), when its budgets' currencies are the
// catalog's, else prev's. accErr says why the pending set was not
// taken; err, why neither can serve the catalog.
func (l *live) accountsFor(ads []match.Ad, prev *version) (acc *accountSet, accErr, err error) {
	if l.pending != nil {
		if accErr = budget.CheckCurrencies(ads, l.pending.budgets); accErr == nil {
			return l.pending, nil, nil
		}
		accErr = l.budgetsError(accErr)
	}
	if err := budget.CheckCurrencies(ads, prev.acc.budgets); err != nil {
		return nil, accErr, l.budgetsError(err)
	}
	return prev.acc, accErr, nil
}

// budgetsError names the advertisers file in an error of
// budget.CheckCurrencies.
func (l *live) budgetsError(err error) error {
	if l.cfg.AdvertisersFile != "" {
		return fmt.Errorf("advertisers file %s: budgets: %w", l.cfg.AdvertisersFile, err)
	}
	return fmt.Errorf("budgets: %w", err)
}

// refreshAll reloads the partners and advertisers files and the catalog,
// each on its own: the files are read again and, when they changed,
// checked as at start-up and swapped in, with the catalog when it swaps
// (their budgets' currencies checked against it), else alone against the
// catalog served. A catalog that fails or is refused keeps no account
// file from being served, and account files that fail or are refused
// keep no catalog from being served. Result is the catalog's; Accounts
// the files'. Files as they were read last time change nothing.
func (l *live) refreshAll(ctx context.Context, force bool) api.Reload {
	next, acc := l.readAccounts(ctx)
	l.pending = next // nil: the files are as served, or bad
	defer func() { l.pending = nil }()
	res := l.refresh(ctx, force)
	switch {
	case acc.Accounts != "":
		res.Accounts, res.AccountsError = acc.Accounts, acc.AccountsError
		return res
	case next == nil:
		res.AccountsError = acc.AccountsError
		return res
	case l.accounts() == next:
		res.Accounts, res.AccountsError = resultSwapped, acc.AccountsError
		return res
	case res.Accounts != "":
		return res // refused against the catalog swapped in
	}
	cur := l.cur.Load()
	if err := budget.CheckCurrencies(cur.ads, next.budgets); err != nil {
		res.Accounts, res.AccountsError = resultRefused, summary(l.budgetsError(err))
		return res
	}
	l.serve(cur.with(next))
	res.Accounts, res.AccountsError = resultSwapped, acc.AccountsError
	return res
}

// readAccounts reads the partners and advertisers files again and
// returns their account set, with its gate, or nil when both are as
// served. A file that cannot be read or parsed fails (res.Accounts);
// one whose accounts the checks refuse is refused. When the day's spend
// cannot be read for new budgets, the set keeps the gate served, and
// res.AccountsError says so; the next reload tries again.
func (l *live) readAccounts(ctx context.Context) (next *accountSet, res api.Reload) {
	cur := l.accounts()
	files, err := readAccountFiles(l.cfg)
	if err != nil {
		return nil, api.Reload{Accounts: resultFailed, AccountsError: summary(err)}
	}
	sum := files.sum()
	if cur != nil && sum == cur.sum {
		if l.newGate == nil || maps.Equal(cur.budgets, cur.gateOf) {
			return nil, api.Reload{}
		}
		// The files are as served, but not their budgets' gate: a
		// reload before could not read the spend.
		again := *cur
		next = &again
	} else {
		ps, psErr := loadPartners(l.cfg, files.partners)
		ads, advErr := loadAdvertisers(l.cfg, files.advertisers)
		var none *noPartnersError
		switch {
		case advErr == nil && errors.As(psErr, &none):
			// The files read, and list no partner: their checks
			// refuse them, as they refuse a key given twice.
			return nil, api.Reload{Accounts: resultRefused, AccountsError: summary(psErr)}
		case psErr != nil || advErr != nil:
			return nil, api.Reload{Accounts: resultFailed, AccountsError: summary(errors.Join(psErr, advErr))}
		}
		var err error
		if next, err = newAccountSet(l.cfg, ps, ads, sum); err != nil {
			return nil, api.Reload{Accounts: resultRefused, AccountsError: summary(err)}
		}
	}
	switch {
	case cur != nil && maps.Equal(next.budgets, cur.gateOf):
		next.gate, next.gateOf = cur.gate, cur.gateOf
	case l.newGate != nil:
		// The day's spend so far is read, so that a new or changed
		// budget counts it from the next click.
		gate, err := l.newGate(ctx, next.budgets)
		if err != nil {
			note := api.Reload{AccountsError: "the new budgets are not enforced yet, the budget gate served stays " +
				"(the ledger still bills no click over a budget): " + summary(err)}
			if cur != nil && sum == cur.sum {
				return nil, note // as served; the next reload tries again
			}
			// The partners and tokens are served all the same: a key
			// revoked must not wait for the spend store.
			if cur != nil {
				next.gate, next.gateOf = cur.gate, cur.gateOf
			}
			return next, note
		}
		next.gate, next.gateOf = gate, next.budgets
	}
	return next, api.Reload{}
}

// noPartnersError is a partners file that lists none, without -demo: a
// file that reads, which its checks refuse.
type noPartnersError struct{ msg string }

func (e *noPartnersError) Error() string { return e.msg }

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
			return nil, &noPartnersError{fmt.Sprintf("partners file %s: no partners; give some, or -demo for the demo partner", cfg.PartnersFile)}
		}
		return nil, &noPartnersError{"no partners: give -partners FILE for your partners, or -demo for the demo partner"}
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
