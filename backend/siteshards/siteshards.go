// Package siteshards chooses what a site's pages download for the in-page
// matcher when the market's own shard is larger than a set budget: a shard
// of at most that many bytes (zstd, fragments included), cut from the ads
// most likely to match the site's pages.
//
// A site's profile is learned from the pages the server analysed for it
// (Observe): the criteria of the ads the server finds for each page, and
// their categories, over the site's latest pages. Its top set picks the
// ads: for each member, the ads a page saying it would show, as the server
// ranks them; then the market's head. The head is what a site never seen
// gets: the ads the top set of every site together finds, weighted by bid;
// before any page was analysed, the ads by bid and then the catalog's
// order.
//
// A site shard is an ordinary page shard (match.Index.EncodePage) of the
// ads it holds, content-addressed and immutable, so the module reads it as
// any other and answers as the server would from those ads. Shards are
// made by one builder, rate-limited across all sites and at most once per
// Debounce for a site, only when the site's top set changed (or the
// catalog did); they are kept in a cache bounded in count and bytes (least
// recently used go first) and keyed by the market and the top set, so
// sites whose profiles agree share one.
package siteshards

import (
	"container/list"
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/adlink/adlink/backend/shards"
	"github.com/adlink/adlink/match"
)

// Defaults of Options.
const (
	DefaultBudget       = 150_000
	DefaultPagesPerSite = 64
	DefaultMaxSites     = 10000
	DefaultMaxShards    = 512
	DefaultMaxBytes     = 256 << 20
	DefaultDebounce     = 10 * time.Minute
	DefaultBuildRate    = 1.0
	DefaultBuildBurst   = 8
	DefaultHeadWait     = 5 * time.Second
	DefaultSaveEvery    = 5 * time.Minute
	// MinBudget is the smallest budget: a few dozen ads.
	MinBudget = 8_000
)

// Sizes of the top sets.
const (
	siteTop   = 64
	marketTop = 256
	// queueLen bounds the builds waiting: a build the queue has no room
	// for is tried again at the site's next manifest.
	queueLen = 16
	// maxBuiltPerSite bounds the markets and catalog versions a site's
	// shards are remembered for.
	maxBuiltPerSite = 8
	// fragmentBytes cuts a site shard's strings into fragments of about
	// this many bytes when they are more, so that a page fetches the index
	// and the few fragments of the ads it shows rather than every ad's
	// strings.
	fragmentBytes = 4 << 10
	// bytesPerAd is fewer bytes with zstd than any ad costs in a shard: it
	// bounds how many ads a budget can hold.
	bytesPerAd = 12
)

// Options configure a Service. The zero value of each field is its
// default.
type Options struct {
	// Budget is the most bytes, with zstd, a page downloads for the
	// in-page matcher: a site shard and all its fragments. A market whose
	// own shard fits is served as it is. Negative turns site shards off.
	Budget int
	// PagesPerSite is how many of a site's latest analysed pages its
	// profile reads.
	PagesPerSite int
	// MaxSites bounds the sites whose profiles are kept; the one seen
	// least recently goes first.
	MaxSites int
	// MaxShards and MaxBytes bound the shards kept (every encoding of a
	// shard and its fragments counts); the least recently used go first.
	MaxShards int
	MaxBytes  int64
	// Debounce is the least time between two builds of a site's shard
	// because its profile changed, and between two of a market's head.
	Debounce time.Duration
	// BuildRate and BuildBurst bound the site shards built per second,
	// across all sites.
	BuildRate  float64
	BuildBurst int
	// HeadWait bounds how long a manifest waits for its market's first
	// head; meanwhile the market's own shard is served.
	HeadWait time.Duration
	// File, when set, keeps the sites' profiles across restarts and
	// crashes: read by New, written every SaveEvery while they change and
	// by Close (a crash loses at most SaveEvery of learning).
	File      string
	SaveEvery time.Duration
	// Store, when set, shares the shards this replica builds with the
	// other replicas of its deployment, and theirs with it: a page may
	// fetch the shard a manifest of one names from another. Shards no
	// manifest named for a day are dropped from it, a few every
	// SaveEvery.
	Store Store
	// Now is the clock of Debounce and BuildRate; tests set it.
	Now    func() time.Time
	Logger *slog.Logger
}

// Request is what a manifest asks: the shard for a site's pages in a
// market.
type Request struct {
	// Version is the catalog's version; Index the index that answers the
	// market (the one the market's shard is encoded from).
	Version string
	Index   *match.Index
	// MarketBytes is the bytes with zstd of the market's own shard and
	// all its fragments: it is served when they fit the budget.
	MarketBytes int
	// Site names the site, its key's and its own id; Country and Lang the
	// market as the manifest resolved them.
	Site, Country, Lang string
}

// Shard is a site shard, ready to serve.
type Shard struct {
	Blob      *shards.Blob
	Fragments []*shards.Blob
	// Index is the server's index of the shard's ads: the advertiser
	// groups the manifest names are its.
	Index *match.Index
	// Head tells a market's head from a site's own.
	Head bool
	// Ads is how many ads it holds.
	Ads int
	// Bytes is its bytes with zstd, fragments included.
	Bytes int

	// shared is when the Store last kept or named it, tried when it was
	// last asked to; the Service's lock guards them.
	shared, tried time.Time
}

// size is what the shard holds in memory, in every encoding.
func (s *Shard) size() int64 {
	n := 0
	for _, b := range append([]*shards.Blob{s.Blob}, s.Fragments...) {
		n += b.Size(shards.Zstd) + b.Size(shards.Gzip) + b.Size(shards.Identity)
	}
	return int64(n)
}

// Stats count what the service holds and did.
type Stats struct {
	Sites, Shards int
	Bytes         int64
	// Builds are the site shards built; HeadBuilds the heads; Refused the
	// builds the rate or the full queue put off.
	Builds, HeadBuilds, Refused int
	// Saves are the profiles written to Options.File while serving.
	Saves int
	// Shared are the shards written to or named again in Options.Store,
	// ShareFailed the writes that failed. Fetched are the shards another
	// replica built read from it, FetchMissed the names it had no shard
	// by (none listed, or none read), FetchFailed the reads and listings
	// that failed or gave bytes not served. Listings are the listings of
	// the store's names, Reads the reads of its rows.
	Shared, ShareFailed               int
	Fetched, FetchMissed, FetchFailed int
	Listings, Reads                   int
}

// Service keeps the sites' profiles and shards. Its methods are safe for
// concurrent use; a nil *Service serves every market's own shard.
type Service struct {
	o       Options
	limiter *rate.Limiter
	queue   chan *job
	stop    context.CancelFunc
	done    chan struct{}
	saving  chan struct{} // closed once the saver stopped
	// sharing queues the shards to share again (namedLocked); sharerDone
	// is closed once the sharer stopped; lookups bounds the store reads.
	sharing    chan *Shard
	sharerDone chan struct{}
	lookups    chan struct{}
	// readers counts the reads of the store under way, which Close waits
	// for; none starts once closed (guarded by mu) is set.
	readers sync.WaitGroup
	closed  bool

	mu      sync.Mutex
	sites   map[string]*site
	siteLRU *list.List     // of *site, most recent first
	market  map[string]int // how many sites' top sets hold each feature
	heads   map[string]*head
	cache   *cache
	pending map[string]bool    // build keys queued or building
	reading map[string]*lookup // shards being read from the store
	names   storeNames         // the shards the store keeps, by name
	// fetchLogged and shareLogged are when a failed read, and write, of
	// the store were last logged.
	fetchLogged, shareLogged time.Time
	inflight                 int           // builds queued or running, heads building, shards sharing again
	changed                  chan struct{} // closed and replaced when inflight falls
	stats                    Stats
	// learnt counts the profiles' changes; saved is its value in the
	// file the saver last wrote.
	learnt, saved uint64
}

// site is one site's profile and the shards built for it.
type site struct {
	key   string
	prof  *profile
	feats []feature
	sig   string
	built map[string]*builtRef // by market key
	// queued is the key of the site's build queued or running, if any.
	queued string
	elem   *list.Element
}

// builtRef is the shard a site's pages load in one market.
type builtRef struct {
	key string // the cache's
	sig string // the top set it was built from
	at  time.Time
}

// head is a market's head shard.
type head struct {
	key      string
	sig      string
	order    []int32
	shard    *Shard
	checked  time.Time
	building bool
	ready    chan struct{} // closed once the first build ended
}

// job is one site shard to build.
type job struct {
	key, site, mk string
	sig           string
	feats         []feature
	ix            *match.Index
	country, lang string
	head          []int32
}

// New returns a Service and starts its builder; Close stops it. It reads
// the profiles o.File keeps, if any: a file it cannot read is logged and
// the profiles start empty, as they are only what pages taught.
func New(o Options) *Service {
	if o.Budget == 0 {
		o.Budget = DefaultBudget
	}
	if o.Budget > 0 {
		o.Budget = max(o.Budget, MinBudget)
	}
	if o.PagesPerSite <= 0 {
		o.PagesPerSite = DefaultPagesPerSite
	}
	if o.MaxSites <= 0 {
		o.MaxSites = DefaultMaxSites
	}
	if o.MaxShards <= 0 {
		o.MaxShards = DefaultMaxShards
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.Debounce <= 0 {
		o.Debounce = DefaultDebounce
	}
	if o.BuildRate <= 0 {
		o.BuildRate = DefaultBuildRate
	}
	if o.BuildBurst <= 0 {
		o.BuildBurst = DefaultBuildBurst
	}
	if o.HeadWait <= 0 {
		o.HeadWait = DefaultHeadWait
	}
	if o.SaveEvery <= 0 {
		o.SaveEvery = DefaultSaveEvery
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Service{o: o, limiter: rate.NewLimiter(rate.Limit(o.BuildRate), o.BuildBurst),
		queue: make(chan *job, queueLen), stop: cancel, done: make(chan struct{}), saving: make(chan struct{}),
		sites: map[string]*site{}, siteLRU: list.New(), market: map[string]int{}, heads: map[string]*head{},
		cache: newCache(o.MaxShards, o.MaxBytes), pending: map[string]bool{}, changed: make(chan struct{}),
		sharing: make(chan *Shard, queueLen), sharerDone: make(chan struct{}), lookups: make(chan struct{}, maxLookups),
		reading: map[string]*lookup{}, names: storeNames{set: map[string]time.Time{}, wake: make(chan struct{}, 1), done: make(chan struct{})}}
	s.names.next = &listing{done: make(chan struct{})} // loaded at start
	s.names.wake <- struct{}{}
	if o.File != "" {
		if err := s.load(o.File); err != nil {
			o.Logger.Warn("site profiles not read: they start empty", "err", err)
		}
	}
	go s.build(ctx)
	go s.keep(ctx)
	go s.sharer(ctx)
	go s.lister(ctx)
	return s
}

// Budget is the most bytes a page downloads for the in-page matcher; 0
// when site shards are off.
func (s *Service) Budget() int {
	if s == nil || s.o.Budget < 0 {
		return 0
	}
	return s.o.Budget
}

// Close stops the builder, letting a build under way finish, waits for
// the reads of Options.Store under way, and writes the profiles to
// Options.File.
func (s *Service) Close() error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.stop()
	<-s.done
	<-s.saving
	<-s.sharerDone
	<-s.names.done
	s.readers.Wait()
	if s.o.File != "" {
		return s.save(s.o.File)
	}
	return nil
}

// keep writes the profiles to Options.File every SaveEvery while they
// change, so that a crash loses little of what pages taught. A write that
// fails is logged and tried again at the next tick. Each tick also drops
// from Options.Store the shards no manifest named for a day.
func (s *Service) keep(ctx context.Context) {
	defer close(s.saving)
	if s.o.File == "" && s.o.Store == nil {
		return
	}
	t := time.NewTicker(s.o.SaveEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.drop(ctx)
			if s.o.File == "" {
				continue
			}
			s.mu.Lock()
			changed := s.learnt != s.saved
			s.mu.Unlock()
			if !changed {
				continue
			}
			start := time.Now()
			if err := s.save(s.o.File); err != nil {
				s.o.Logger.Warn("site profiles not written; trying again", "err", err, "file", s.o.File)
				continue
			}
			s.mu.Lock()
			s.stats.Saves++
			s.mu.Unlock()
			s.o.Logger.Debug("site profiles written", "file", s.o.File, "duration_ms", time.Since(start).Milliseconds())
		}
	}
}

// SiteKey names a site by its key and id: a site id is its partner's own.
func SiteKey(apiKey, siteID string) string {
	return strconv.Itoa(len(apiKey)) + ":" + apiKey + siteID
}

// Observe learns from a page the server analysed for a site: ix is the
// index that matches it and q its page query, the page's own rather than
// a request's (the first request for a page is anyone's). A page already
// in the site's profile costs a map lookup.
func (s *Service) Observe(siteKey, pageURL string, ix *match.Index, q match.Query) {
	if s.Budget() == 0 {
		return
	}
	s.mu.Lock()
	if st := s.sites[siteKey]; st != nil {
		if _, ok := st.prof.pages[pageURL]; ok {
			s.mu.Unlock()
			return
		}
	}
	s.mu.Unlock()
	feats := pageFeatures(ix, q)
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.siteLocked(siteKey)
	if st.prof.add(pageURL, feats, s.o.PagesPerSite) {
		s.learnt++
		s.retopLocked(st)
	}
}

// retopLocked takes a site's top set again after its profile changed.
func (s *Service) retopLocked(st *site) {
	feats, sig := top(st.prof.df, siteTop)
	if sig != st.sig {
		s.marketAddLocked(st.feats, -1)
		st.feats, st.sig = feats, sig
		s.marketAddLocked(st.feats, 1)
	}
}

// siteLocked returns a site's state, made when new, dropping the site
// seen least recently beyond MaxSites.
func (s *Service) siteLocked(key string) *site {
	if st := s.sites[key]; st != nil {
		s.siteLRU.MoveToFront(st.elem)
		return st
	}
	st := &site{key: key, prof: newProfile(), built: map[string]*builtRef{}}
	st.elem = s.siteLRU.PushFront(st)
	s.sites[key] = st
	for len(s.sites) > s.o.MaxSites {
		old := s.siteLRU.Remove(s.siteLRU.Back()).(*site)
		s.marketAddLocked(old.feats, -1)
		delete(s.sites, old.key)
	}
	return st
}

// marketAddLocked adds a site's top set to the market's counts, or takes
// it away (d = -1).
func (s *Service) marketAddLocked(feats []feature, d int) {
	for _, f := range feats {
		if s.market[f.key] += d; s.market[f.key] <= 0 {
			delete(s.market, f.key)
		}
	}
}

// marketKey names the ads a request reads: a catalog version's index and
// the markets of it that country and lang filter in; "" when they filter
// in none. However a manifest spells its market, the keys are as few as
// the markets.
func marketKey(r *Request) string {
	bits := marketFilter(r.Index, r.Country, r.Lang)
	if bits == 0 {
		return ""
	}
	v := r.Version
	if v == "" {
		v = fmt.Sprintf("%p", r.Index) // a catalog that never changes
	}
	var sb strings.Builder
	sb.WriteString(v)
	sb.WriteByte('/')
	sb.WriteString(strconv.Itoa(r.Index.Len()))
	sb.WriteByte(0) // the version ends here (cutVersion)
	for k, m := range r.Index.Markets() {
		if bits&(1<<k) != 0 {
			sb.WriteString(m.String())
			sb.WriteByte(' ')
		}
	}
	return sb.String()
}

// Pick returns the shard a site's pages load in a market, or nil when the
// market's own shard is to be served: it fits the budget, site shards are
// off, or the market's head is not ready within HeadWait. A site whose
// shard is not built yet, or is being rebuilt, gets what it had, else the
// market's head, and its build is queued.
func (s *Service) Pick(ctx context.Context, r Request) *Shard {
	budget := s.Budget()
	if budget == 0 || r.Index == nil || r.MarketBytes <= budget {
		return nil
	}
	mk := marketKey(&r)
	if mk == "" {
		return nil
	}
	s.mu.Lock()
	ready := s.headLocked(mk, &r, s.o.Now()).ready
	s.mu.Unlock()
	select {
	case <-ready:
	default:
		t := time.NewTimer(s.o.HeadWait)
		defer t.Stop()
		select {
		case <-ready:
		case <-t.C:
			return nil
		case <-ctx.Done():
			return nil
		}
	}
	now := s.o.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.heads[mk]
	if h == nil { // dropped for a newer catalog meanwhile
		return nil
	}
	if st := s.sites[r.Site]; st != nil && st.sig != "" && h.order != nil {
		s.siteLRU.MoveToFront(st.elem)
		b := st.built[mk]
		// A build for the site at a time; a new catalog's at once, a new
		// top set's once the debounce has passed.
		if st.queued == "" && (b == nil || b.sig != st.sig && now.Sub(b.at) >= s.o.Debounce) {
			s.wantLocked(st, mk, &r, h, now)
			if nb := st.built[mk]; nb != nil {
				b = nb // a shard another site had built
			}
		}
		if b != nil {
			if sh := s.cache.get(b.key); sh != nil {
				return s.namedLocked(sh, now)
			}
			// Evicted: built again when the rate allows.
			delete(st.built, mk)
			s.wantLocked(st, mk, &r, h, now)
		}
	}
	if h.shard != nil && s.cache.get(h.key) == nil {
		s.cache.put(h.key, h.shard) // served: kept
	}
	return s.namedLocked(h.shard, now)
}

// wantLocked has a site's shard in a market built: taken from the cache
// when a site with the same top set had it built, else queued, when the
// rate allows.
func (s *Service) wantLocked(st *site, mk string, r *Request, h *head, now time.Time) {
	key := mk + "\x00" + st.sig
	if s.cache.peek(key) {
		st.built[mk] = &builtRef{key: key, sig: st.sig, at: now}
		return
	}
	if s.pending[key] {
		return
	}
	if !s.limiter.AllowN(now, 1) {
		s.stats.Refused++
		return
	}
	j := &job{key: key, site: st.key, mk: mk, sig: st.sig, feats: st.feats, ix: r.Index, country: r.Country, lang: r.Lang, head: h.order}
	select {
	case s.queue <- j:
		s.pending[key] = true
		st.queued = key
		s.inflight++
	default:
		s.stats.Refused++
	}
}

// headLocked returns a market's head, starting its first build, or a new
// one when its top set changed and Debounce has passed.
func (s *Service) headLocked(mk string, r *Request, now time.Time) *head {
	h := s.heads[mk]
	if h != nil && (h.building || now.Sub(h.checked) < s.o.Debounce) {
		return h
	}
	feats, sig := top(s.market, marketTop)
	if h != nil {
		h.checked = now
		if sig == h.sig {
			return h
		}
	} else {
		h = &head{ready: make(chan struct{}), checked: now}
		s.heads[mk] = h
		s.dropOldHeadsLocked(mk)
	}
	h.building = true
	s.inflight++
	ix, country, lang := r.Index, r.Country, r.Lang
	go func() {
		start := time.Now()
		sh, order, err := s.buildHead(ix, country, lang, feats)
		if err == nil {
			s.o.Logger.Info("market head shard built", "ads", sh.Ads, "zstd_bytes", sh.Bytes, "fragments", len(sh.Fragments),
				"features", len(feats), "duration_ms", time.Since(start).Milliseconds())
			s.share(sh) // before a manifest names it
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if err != nil {
			s.o.Logger.Warn("a market's head shard", "err", err)
		} else {
			h.shard, h.order, h.sig, h.key = sh, order, sig, mk+"\x00head\x00"+sig
			s.cache.put(h.key, sh)
			s.stats.HeadBuilds++
		}
		h.building = false
		select {
		case <-h.ready:
		default:
			close(h.ready)
		}
		s.doneLocked()
	}()
	return h
}

// dropOldHeadsLocked forgets the heads of other catalog versions of the
// market of mk: their shards stay in the cache while they are used.
func (s *Service) dropOldHeadsLocked(mk string) {
	_, market := cutVersion(mk)
	for k := range s.heads {
		if v, m := cutVersion(k); m == market && k != mk && v != "" {
			delete(s.heads, k)
		}
	}
}

func cutVersion(mk string) (version, market string) {
	for i := range len(mk) {
		if mk[i] == 0 {
			return mk[:i], mk[i:]
		}
	}
	return "", mk
}

// buildHead cuts a market's head shard.
func (s *Service) buildHead(ix *match.Index, country, lang string, feats []feature) (*Shard, []int32, error) {
	order := headOrder(ix, country, lang, feats, s.o.Budget/bytesPerAd)
	sh, err := s.cut(ix, order)
	if err != nil {
		return nil, nil, err
	}
	sh.Head = true
	return sh, order, nil
}

// cut packs order into the budget and compresses the shard.
func (s *Service) cut(ix *match.Index, order []int32) (*Shard, error) {
	b, err := pack(ix, order, s.o.Budget, fragmentBytes)
	if err != nil {
		return nil, err
	}
	blob, frags, err := blobs(b)
	if err != nil {
		return nil, err
	}
	sh := &Shard{Blob: blob, Fragments: frags, Index: b.index, Ads: b.ads}
	for _, x := range append([]*shards.Blob{blob}, frags...) {
		sh.Bytes += x.Size(shards.Zstd)
	}
	return sh, nil
}

// build runs the queued site shard builds until ctx ends.
func (s *Service) build(ctx context.Context) {
	defer close(s.done)
	for {
		select {
		case <-ctx.Done():
			return
		case j := <-s.queue:
			start := time.Now()
			order := siteOrder(j.ix, j.country, j.lang, j.feats, j.head, s.o.Budget/bytesPerAd)
			sh, err := s.cut(j.ix, order)
			if err == nil {
				s.o.Logger.Info("site shard built", "ads", sh.Ads, "zstd_bytes", sh.Bytes, "fragments", len(sh.Fragments),
					"features", len(j.feats), "duration_ms", time.Since(start).Milliseconds())
				s.share(sh) // before a manifest names it
			}
			s.mu.Lock()
			delete(s.pending, j.key)
			if st := s.sites[j.site]; st != nil && st.queued == j.key {
				st.queued = ""
			}
			if err != nil {
				s.o.Logger.Warn("a site's shard", "err", err)
			} else {
				s.cache.put(j.key, sh)
				s.stats.Builds++
				if st := s.sites[j.site]; st != nil {
					if len(st.built) >= maxBuiltPerSite {
						clear(st.built)
					}
					st.built[j.mk] = &builtRef{key: j.key, sig: j.sig, at: s.o.Now()}
				}
			}
			s.doneLocked()
			s.mu.Unlock()
		}
	}
}

func (s *Service) doneLocked() {
	s.inflight--
	close(s.changed)
	s.changed = make(chan struct{})
}

// Flush waits until no build, nor shard to share again, is queued or
// running, or ctx is done. Tests use it instead of sleeping.
func (s *Service) Flush(ctx context.Context) error {
	for {
		s.mu.Lock()
		n, ch := s.inflight, s.changed
		s.mu.Unlock()
		if n == 0 {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Shard returns a shard the service serves, by its SHA-256, with its
// fragments: one it built, else one another replica built, read from
// Options.Store; nil when neither has one by that name. A shard read from
// the store has no Index: it is only served.
func (s *Service) Shard(ctx context.Context, sha string) *Shard {
	if s == nil {
		return nil
	}
	if sh := s.local(sha); sh != nil {
		return sh
	}
	return s.fetch(ctx, sha)
}

// local returns a shard this replica holds by its SHA-256, or nil.
func (s *Service) local(sha string) *Shard {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sh := s.cache.bySHA(sha); sh != nil {
		return sh
	}
	for _, h := range s.heads {
		if h.shard != nil && h.shard.Blob.SHA256 == sha {
			return h.shard
		}
	}
	return nil
}

// Stats returns what the service holds and did.
func (s *Service) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	st.Sites = len(s.sites)
	st.Shards, st.Bytes = s.cache.len(), s.cache.bytes
	return st
}
