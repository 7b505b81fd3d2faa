package match

// Index is the flat inverted index over a catalog. TEMPORARY STUB: being written.
type Index struct {
	strs string
	ads  []adRec
}

type strRef struct{ off, n uint32 }

type adRec struct {
	id, title, manufacturer, model, category, description, gtin, currency, logo, landing, advertiser strRef
	price                                                                                            int64
	kindv                                                                                            uint32
}

func (a adRec) kind() Kind { return Kind(a.kindv) }

func (ix *Index) rec(i int) adRec     { return ix.ads[i] }
func (ix *Index) str(r strRef) string { return ix.strs[r.off : r.off+r.n] }

func Build(ads []Ad) (*Index, error)              { return &Index{}, nil }
func Open(b []byte) (*Index, error)               { return &Index{}, nil }
func (ix *Index) Encode() []byte                  { return nil }
func (ix *Index) Len() int                        { return len(ix.ads) }
func (ix *Index) Ad(i int) Ad                     { return Ad{} }
func (ix *Index) Lookup(id string) (int, bool)    { return 0, false }
func (ix *Index) Markets() []Market               { return nil }
func (ix *Index) Match(q *Query) []Hit            { return nil }
func (ix *Index) Reduce(title, text string) (string, string) { return title, text }
func Normalize(s string) string                   { return s }
