package app

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strings"
	"syscall"

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
	// ps and ads are what the set was made of: a reload that keeps one
	// file's accounts pairs them with the other file's new ones.
	ps  []partners.Partner
	ads []accounts.AdvertiserAccount
	// partnersSum and advertisersSum hash the bytes of the files the
	// set's partners and advertisers were read from: a reload that finds
	// a file the same reads it no further.
	partnersSum, advertisersSum [sha256.Size]byte
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
	f.partners, pErr = readAccountFile("partners", cfg.PartnersFile)
	f.advertisers, aErr = readAccountFile("advertisers", cfg.AdvertisersFile)
	return f, errors.Join(pErr, aErr)
}

// maxAccountFileBytes bounds an accounts file, so that a path naming the
// wrong file (a log, a dump) fails the reload instead of filling the
// memory of the replica that serves.
const maxAccountFileBytes = 64 << 20

// readAccountFile reads the accounts file of kind at path; none ("")
// reads as empty. Its error names the file once: "partners file
// /etc/adlink/partners.json: no such file or directory".
func readAccountFile(kind, path string) ([]byte, error) {
	if path == "" {
		return nil, nil
	}
	b, err := readBounded(path, maxAccountFileBytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", fileName(kind, path), err)
	}
	return b, nil
}

// readBounded reads the regular file at path, of at most most bytes; its
// errors do not name the path, which the caller does. Anything else is
// refused before it is opened: opening a named pipe waits for a writer,
// and would hold the reload, and every reload after it, until one came.
// A path replaced by one between the check and the open is opened without
// waiting (O_NONBLOCK, which a regular file's reads ignore), and refused
// by the check of what was opened.
func readBounded(path string, most int64) ([]byte, error) {
	st, err := os.Stat(path)
	switch {
	case err != nil:
		return nil, withoutPath(err)
	case st.IsDir():
		return nil, errors.New("is a directory")
	case !st.Mode().IsRegular():
		return nil, fmt.Errorf("is no regular file but a %s", fileType(st.Mode()))
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, withoutPath(err)
	}
	defer f.Close()
	if st, err = f.Stat(); err != nil {
		return nil, withoutPath(err)
	}
	switch {
	case !st.Mode().IsRegular(): // replaced since
		return nil, fmt.Errorf("is no regular file but a %s", fileType(st.Mode()))
	case st.Size() > most:
		return nil, fmt.Errorf("%d bytes, more than the %d an accounts file may have", st.Size(), most)
	}
	// The file may grow while it is read: read one byte past the bound.
	b, err := io.ReadAll(io.LimitReader(f, most+1))
	if err != nil {
		return nil, withoutPath(err)
	}
	if int64(len(b)) > most {
		return nil, fmt.Errorf("more than the %d bytes an accounts file may have", most)
	}
	return b, nil
}

// fileType names the type of a file that is not a regular one.
func fileType(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "directory"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	}
	return "special file"
}

// withoutPath is err without the path and operation that an
// *fs.PathError adds ("open /x: permission denied" is "permission
// denied").
func withoutPath(err error) error {
	if pe, ok := errors.AsType[*fs.PathError](err); ok {
		return pe.Err
	}
	return err
}

// parse reads the partners and advertisers of f, with the demo's added
// when cfg asks for them; every problem of both files is reported.
func (f accountFiles) parse(cfg config.Config) ([]partners.Partner, []accounts.AdvertiserAccount, error) {
	ps, psErr := loadPartners(cfg, f.partners)
	ads, advErr := loadAdvertisers(cfg, f.advertisers)
	return ps, ads, errors.Join(psErr, advErr)
}

// newAccountSet checks partners and advertisers as New does (keys, sites,
// tokens, budgets) and returns their set, read from the files f, without
// a gate; every problem is reported, under the name of the file it is
// in.
func newAccountSet(cfg config.Config, ps []partners.Partner, ads []accounts.AdvertiserAccount, f accountFiles) (*accountSet, error) {
	acc, regErr, bookErr := buildAccountSet(ps, ads)
	if regErr != nil {
		regErr = fmt.Errorf("%s: %w", fileName("partners", cfg.PartnersFile), regErr)
	}
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
	acc.partnersSum, acc.advertisersSum = sha256.Sum256(f.partners), sha256.Sum256(f.advertisers)
	return acc, nil
}

// buildAccountSet makes the set of ps and ads, without a gate or sums;
// regErr is what the partners' own checks refuse (keys, sites), bookErr
// what the accounts' do (tokens, budgets), which may be the two files
// together: a report token given in both.
func buildAccountSet(ps []partners.Partner, ads []accounts.AdvertiserAccount) (acc *accountSet, regErr, bookErr error) {
	registry, regErr := partners.NewStatic(ps)
	book, bookErr := accounts.New(ps, ads)
	if regErr != nil || bookErr != nil {
		return nil, regErr, bookErr
	}
	var domains [][]string
	for _, p := range ps {
		for _, site := range p.Sites {
			domains = append(domains, site.Domains)
		}
	}
	return &accountSet{registry: registry, book: book, budgets: book.Budgets(), sites: pages.SitesOf(domains), ps: ps, ads: ads}, nil, nil
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
	c.Removed = lastBudgets(c.Removed, acc)
	return &version{api: &c, ads: v.ads, loadedAt: v.loadedAt, feeds: v.feeds, acc: acc}
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
// first a reload read (pending) whose budgets' currencies are the
// catalog's, else prev's; err says why none can serve the catalog.
func (l *live) accountsFor(ads []match.Ad, prev *version) (*accountSet, error) {
	for _, p := range l.pending {
		if budget.CheckCurrencies(ads, p.budgets) == nil {
			return p, nil
		}
	}
	if err := budget.CheckCurrencies(ads, prev.acc.budgets); err != nil {
		return nil, l.budgetsError(err)
	}
	return prev.acc, nil
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
// keep no catalog from being served. Each file is judged on its own too:
// one that fails or is refused keeps its accounts served, and the other's
// change is served with them. Result is the catalog's; Accounts,
// Partners and Advertisers the files'. Files as they were read last time
// change nothing.
func (l *live) refreshAll(ctx context.Context, force bool) api.Reload {
	rd := l.readAccounts(ctx)
	l.pending = rd.sets() // none: the files are as served, or bad
	defer func() { l.pending = nil }()
	res := l.refresh(ctx, force)
	cur := l.cur.Load()
	if len(l.pending) > 0 && res.Result != resultSwapped {
		// Judged alone, against the catalog served.
		if acc, err := l.accountsFor(cur.ads, cur); err == nil && acc != cur.acc {
			l.serve(cur.with(acc))
			// A budget changed is a removed ad's to share.
			l.noteRemoved(cur, l.cur.Load())
			l.saveRemoved(cur, l.cur.Load())
			cur = l.cur.Load()
		}
	}
	p, a, note := l.outcome(rd, cur)
	res.Partners, res.Advertisers = p.result, a.result
	res.Accounts = accountsResult(p.result, a.result)
	var msgs []string
	for _, f := range []struct {
		fileOutcome
		kind string
	}{{p, "partners"}, {a, "advertisers"}} {
		if failing(f.result) {
			why := f.kind + " file " + f.result
			if f.err != nil {
				why = summary(f.err)
			}
			msgs = append(msgs, why+"; the "+f.kind+" served stay")
		}
	}
	if note != "" {
		msgs = append(msgs, note)
	}
	res.AccountsError = strings.Join(msgs, "; ")
	return res
}

// accountsResult is the result of both files together: swapped when
// either was, else failed or refused when either was, failed first; ""
// when both are as served.
func accountsResult(partners, advertisers string) string {
	for _, r := range []string{resultSwapped, resultFailed, resultRefused} {
		if partners == r || advertisers == r {
			return r
		}
	}
	return ""
}

// fileOutcome is how one accounts file fared in a reload: swapped,
// refused (err says why), failed (err says why, naming the file), or ""
// when it is as served.
type fileOutcome struct {
	result string
	err    error
}

// accountsRead is what a reload made of the partners and advertisers
// files: how each fared on its own, and the pairs of their accounts it
// may serve.
type accountsRead struct {
	// partners and advertisers are how each file fared on its own: a
	// file swapped here passed its own checks, and is served if a pair
	// with it is.
	partners, advertisers fileOutcome
	// pairs are tried in turn, the first that passes the checks spanning
	// both files (a report token in both, the budgets' currencies against
	// the catalog) served: both new files, the new partners with the
	// advertisers served (a key revoked must not wait for the advertisers
	// file), the partners served with the new advertisers (only when the
	// new partners' tokens do not go with the advertisers served), and,
	// when the budgets served are not their gate's, the set served with
	// their gate made again. None served, the set served stays as it is.
	pairs []pair
	// note says what of the set served is not served yet: the budget
	// gate kept.
	note string
}

// pair is one pair of partners and advertisers a reload may serve, each
// file's new accounts or those served: set is their set, with its gate,
// or nil and err says why the report tokens of the two refuse it.
type pair struct {
	newPartners, newAdvertisers bool
	set                         *accountSet
	err                         error
}

// sets are the sets of the pairs that passed the token checks, in the
// order they are tried.
func (rd accountsRead) sets() []*accountSet {
	var sets []*accountSet
	for _, p := range rd.pairs {
		if p.set != nil {
			sets = append(sets, p.set)
		}
	}
	return sets
}

// outcome is how each file fared, cur being what is served after the
// reload: a file that passed its own checks and is not served is
// refused, saying why the pair of it with the other file as served now
// was not (its tokens, or its budgets' currencies against cur's
// catalog); note is what of the set served is not served yet.
func (l *live) outcome(rd accountsRead, cur *version) (p, a fileOutcome, note string) {
	served := cur.acc
	p, a = rd.partners, rd.advertisers
	if !maps.Equal(served.budgets, served.gateOf) {
		note = rd.note // the gate served is behind its budgets
	}
	var won pair
	for _, pr := range rd.pairs {
		if pr.set != nil && pr.set == served {
			won = pr
		}
	}
	if p.result == resultSwapped && !won.newPartners {
		p = l.refusal(rd, pair{newPartners: true, newAdvertisers: won.newAdvertisers}, "partners", cur)
	}
	if a.result == resultSwapped && !won.newAdvertisers {
		a = l.refusal(rd, pair{newPartners: won.newPartners, newAdvertisers: true}, "advertisers", cur)
	}
	if won.set != nil && !won.newPartners && !won.newAdvertisers && a.result == "" {
		a.result = resultSwapped // the budgets served, held by their gate at last
	}
	return p, a, note
}

// refusal is why the file of kind, which passed its own checks, is not
// served: the pair c of it with the other file, new or as served, was
// refused for its report tokens, or for its budgets' currencies against
// the catalog cur serves.
func (l *live) refusal(rd accountsRead, c pair, kind string, cur *version) fileOutcome {
	i := slices.IndexFunc(rd.pairs, func(pr pair) bool {
		return pr.newPartners == c.newPartners && pr.newAdvertisers == c.newAdvertisers
	})
	if i < 0 {
		return fileOutcome{resultRefused, nil}
	}
	if pr := rd.pairs[i]; pr.set == nil {
		other, otherNew := "advertisers", c.newAdvertisers
		if kind == "advertisers" {
			other, otherNew = "partners", c.newPartners
		}
		with := "the " + other + " served"
		if otherNew {
			with = "the new " + l.fileName(other)
		}
		return fileOutcome{resultRefused, fmt.Errorf("%s, with %s: %w", l.fileName(kind), with, pr.err)}
	}
	err := budget.CheckCurrencies(cur.ads, rd.pairs[i].set.budgets)
	if err != nil {
		err = l.budgetsError(err)
	}
	return fileOutcome{resultRefused, err}
}

// fileName names the accounts file of kind, partners or advertisers.
func (l *live) fileName(kind string) string {
	if kind == "advertisers" {
		return fileName(kind, l.cfg.AdvertisersFile)
	}
	return fileName(kind, l.cfg.PartnersFile)
}

// readAccounts reads the partners and advertisers files again and judges
// each on its own: one that cannot be read or parsed fails, one that its
// own checks refuse (keys, sites, tokens, budgets) is refused, one as
// served is left. The changed files that pass are then paired, with each
// other and with the accounts served of the other file, in the order the
// pairs are tried (accountsRead.pairs). When the day's spend cannot be
// read for new budgets, their pairs keep the gate served, and the note
// says so; the next reload tries again, whatever the files then.
func (l *live) readAccounts(ctx context.Context) accountsRead {
	cur := l.accounts()
	var rd accountsRead
	pb, pErr := readAccountFile("partners", l.cfg.PartnersFile)
	ab, aErr := readAccountFile("advertisers", l.cfg.AdvertisersFile)
	pSum, aSum := sha256.Sum256(pb), sha256.Sum256(ab)
	var (
		newPs  partnerSide
		newAds []accounts.AdvertiserAccount
	)
	switch {
	case pErr != nil:
		rd.partners = fileOutcome{resultFailed, pErr}
	case pSum != cur.partnersSum:
		newPs, rd.partners = judgePartners(l.cfg, pb, pSum)
	}
	switch {
	case aErr != nil:
		rd.advertisers = fileOutcome{resultFailed, aErr}
	case aSum != cur.advertisersSum:
		newAds, rd.advertisers = judgeAdvertisers(l.cfg, ab)
	}
	pNew, aNew := rd.partners.result == resultSwapped, rd.advertisers.result == resultSwapped
	for _, c := range []pair{{newPartners: true, newAdvertisers: true}, {newPartners: true}, {newAdvertisers: true}} {
		if c.newPartners && !pNew || c.newAdvertisers && !aNew {
			continue
		}
		if !c.newPartners && slices.ContainsFunc(rd.pairs, func(o pair) bool { return o.newPartners && !o.newAdvertisers && o.set != nil }) {
			continue // the new partners go with the advertisers served: revocation first
		}
		ps := partnerSide{ps: cur.ps, registry: cur.registry, sites: cur.sites, sum: cur.partnersSum}
		ads, adsSum := cur.ads, cur.advertisersSum
		if c.newPartners {
			ps = newPs
		}
		if c.newAdvertisers {
			ads, adsSum = newAds, aSum
		}
		c.set, c.err = ps.with(ads, adsSum)
		rd.pairs = append(rd.pairs, c)
	}
	// The budgets served may not be their gate's: a reload before could
	// not read the spend. Their gate is made again, with the files as
	// served, or behind new budgets the catalog may not fit.
	if l.newGate != nil && !maps.Equal(cur.budgets, cur.gateOf) {
		again := *cur
		rd.pairs = append(rd.pairs, pair{set: &again})
	}
	for i := range rd.pairs {
		pr := &rd.pairs[i]
		if pr.set == nil {
			continue
		}
		// Pairs of the same budgets share a gate, made or not once.
		if j := slices.IndexFunc(rd.pairs[:i], func(o pair) bool { return o.set != nil && maps.Equal(o.set.budgets, pr.set.budgets) }); j >= 0 {
			pr.set.gate, pr.set.gateOf = rd.pairs[j].set.gate, rd.pairs[j].set.gateOf
		} else if err := l.gateFor(ctx, pr.set, cur); err != nil {
			// The partners and tokens are served all the same: a key
			// revoked must not wait for the spend store.
			rd.note = gateNote(err)
		}
		if !pr.newPartners && !pr.newAdvertisers && !maps.Equal(pr.set.budgets, pr.set.gateOf) {
			pr.set = nil // as served; the next reload tries again
		}
	}
	return rd
}

// gateNote says that the budgets are not enforced yet, the day's spend
// not read for them (err).
func gateNote(err error) string {
	return "the new budgets are not enforced yet, the budget gate served stays " +
		"(the ledger still bills no click over a budget): " + summary(err)
}

// gateFor gives acc the gate of its budgets: cur's when it holds them,
// else one made now, which reads the day's spend so far, so that a new or
// changed budget counts it from the next click. When the spend cannot be
// read, acc keeps cur's gate, and the error says why.
func (l *live) gateFor(ctx context.Context, acc, cur *accountSet) error {
	acc.gate, acc.gateOf = cur.gate, cur.gateOf
	if l.newGate == nil || maps.Equal(acc.budgets, cur.gateOf) {
		return nil
	}
	gate, err := l.newGate(ctx, acc.budgets)
	if err != nil {
		return err
	}
	acc.gate, acc.gateOf = gate, acc.budgets
	return nil
}

// partnerSide is the partners of a partners file, new or served, as
// checked on their own: their registry, their sites' domains, and the
// sum of the file's bytes.
type partnerSide struct {
	ps       []partners.Partner
	registry *partners.Static
	sites    func(pageURL string) [][]string
	sum      [sha256.Size]byte
}

// with is the set of the partners and the advertisers ads, of the file
// whose bytes hash to adsSum, without a gate; the error is what the
// accounts' checks refuse of the two together (a report token in both).
func (s partnerSide) with(ads []accounts.AdvertiserAccount, adsSum [sha256.Size]byte) (*accountSet, error) {
	book, err := accounts.New(s.ps, ads)
	if err != nil {
		return nil, err
	}
	return &accountSet{registry: s.registry, book: book, budgets: book.Budgets(), sites: s.sites, ps: s.ps, ads: ads,
		partnersSum: s.sum, advertisersSum: adsSum}, nil
}

// judgePartners reads the partners of b, the partners file's bytes
// (hashing to sum), and checks them alone: keys, sites, the partners'
// report tokens. It returns them, swapped, or why the file failed or is
// refused.
func judgePartners(cfg config.Config, b []byte, sum [sha256.Size]byte) (partnerSide, fileOutcome) {
	ps, err := loadPartners(cfg, b)
	var none *noPartnersError
	switch {
	case errors.As(err, &none):
		// The file reads, and lists no partner: its checks refuse it,
		// as they refuse a key given twice.
		return partnerSide{}, fileOutcome{resultRefused, err}
	case err != nil:
		return partnerSide{}, fileOutcome{resultFailed, err}
	}
	acc, regErr, bookErr := buildAccountSet(ps, nil)
	if regErr != nil || bookErr != nil {
		return partnerSide{}, fileOutcome{resultRefused, fmt.Errorf("%s: %w", fileName("partners", cfg.PartnersFile), errors.Join(regErr, bookErr))}
	}
	return partnerSide{ps: ps, registry: acc.registry, sites: acc.sites, sum: sum}, fileOutcome{result: resultSwapped}
}

// judgeAdvertisers reads the advertisers of b, the advertisers file's
// bytes, and checks them alone: ids, tokens, budgets. It returns them,
// swapped, or why the file failed or is refused.
func judgeAdvertisers(cfg config.Config, b []byte) ([]accounts.AdvertiserAccount, fileOutcome) {
	ads, err := loadAdvertisers(cfg, b)
	if err != nil {
		return nil, fileOutcome{resultFailed, err}
	}
	if _, err := accounts.New(nil, ads); err != nil {
		return nil, fileOutcome{resultRefused, fmt.Errorf("%s: %w", fileName("advertisers", cfg.AdvertisersFile), err)}
	}
	return ads, fileOutcome{result: resultSwapped}
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
	// A file that lists none is refused with -demo too: it is more likely
	// a template gone wrong than a wish to revoke every partner but the
	// demo, which leaving -partners out says.
	if cfg.PartnersFile != "" && len(ps) == 0 {
		return nil, &noPartnersError{fmt.Sprintf("partners file %s: no partners; give some, or leave -partners out and give -demo for the demo partner alone", cfg.PartnersFile)}
	}
	if cfg.Demo {
		ps = partners.WithDemo(ps)
	}
	if len(ps) == 0 {
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
