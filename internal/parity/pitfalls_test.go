package parity

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/adlink/adlink/internal/testcatalog"
	"github.com/adlink/adlink/internal/wasmhost"
)

// pitfallCorpus is a catalog big enough that matching allocates, cut in
// fragments, with searches over it.
func pitfallCorpus(t *testing.T) (*corpus, []testcatalog.Request) {
	ads := testcatalog.Generate(2000, 11)
	return newCorpus(t, ads), testcatalog.Requests(ads, 64, 5, false)
}

// keptResult answers the corpus's request i without a market and keeps
// the answer in the guest's memory at p (n bytes), unread; want is the
// native answer.
func keptResult(t *testing.T, i int) (in *wasmhost.Instance, reqs []testcatalog.Request, p, n uint32, want []byte) {
	c, reqs := pitfallCorpus(t)
	ctx := context.Background()
	in = c.all.in
	r := &reqs[i]
	r.Loc, r.Lang = "", ""
	want, _ = c.want(r)
	// The answer's fragments loaded first, CallKeep gets the answer itself.
	if _, err := in.SearchJSON(ctx, r.Guest(redirectURL)); err != nil {
		t.Fatal(err)
	}
	p, n, err := in.CallKeep(ctx, in.Search, r.Guest(redirectURL))
	if err != nil {
		t.Fatal(err)
	}
	return in, reqs, p, n, want
}

// TestResultSurvivesGC keeps a result unread while the guest allocates
// and collects many times over; pinned, it must still be intact.
func TestResultSurvivesGC(t *testing.T) {
	ctx := context.Background()
	in, reqs, p, n, want := keptResult(t, 0)
	// Churn: many answers and large buffers come and go, so the guest's GC
	// runs repeatedly and reuses freed memory.
	for i := range 300 {
		if _, err := in.SearchJSON(ctx, reqs[i%len(reqs)].Guest(redirectURL)); err != nil {
			t.Fatal(err)
		}
		res, err := in.Alloc.Call(ctx, 256<<10)
		if err != nil {
			t.Fatal(err)
		}
		in.Free.Call(ctx, res[0])
	}
	got, err := in.Read(p, n)
	if err != nil {
		t.Fatal(err)
	}
	in.Free.Call(ctx, uint64(p))
	if !bytes.Equal(got, want) {
		t.Fatalf("the kept result changed under GC churn:\n got %.200s\nwant %.200s", got, want)
	}
}

// TestMemoryGrowth reads a result, copies it, then makes the guest grow
// its memory: the copy stays right and a fresh read agrees.
func TestMemoryGrowth(t *testing.T) {
	ctx := context.Background()
	in, _, p, n, want := keptResult(t, 1)
	copied, err := in.Read(p, n)
	if err != nil {
		t.Fatal(err)
	}
	before := in.Mod.Memory().Size()
	big, err := in.Alloc.Call(ctx, uint64(before)+32<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Free.Call(ctx, big[0])
	if after := in.Mod.Memory().Size(); after <= before {
		t.Fatalf("memory did not grow: %d -> %d bytes", before, after)
	}
	again, err := in.Read(p, n)
	if err != nil {
		t.Fatal(err)
	}
	in.Free.Call(ctx, uint64(p))
	if !bytes.Equal(copied, want) || !bytes.Equal(again, want) {
		t.Fatalf("result wrong after growth:\ncopy  %.200s\nfresh %.200s\nwant  %.200s", copied, again, want)
	}
}

// TestConcurrentInstances runs eight goroutines at once, each with its own
// instance of the one compiled module, each answering every request.
func TestConcurrentInstances(t *testing.T) {
	c, reqs := pitfallCorpus(t)
	for i := range reqs {
		reqs[i].Loc, reqs[i].Lang = "", ""
	}
	want := make([][]byte, len(reqs))
	for i := range reqs {
		want[i], _ = c.want(&reqs[i])
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			in, err := wasmhost.Shared(t).Instantiate(ctx)
			if err != nil {
				errs <- err
				return
			}
			defer in.Close(ctx)
			in.Frags = c.all.frags
			if err := in.LoadShard(ctx, c.all.bytes); err != nil {
				errs <- err
				return
			}
			for k := range reqs {
				i := (k + g*7) % len(reqs)
				got, err := in.SearchJSON(ctx, reqs[i].Guest(redirectURL))
				if err != nil {
					errs <- err
					return
				}
				if !bytes.Equal(got, want[i]) {
					t.Errorf("goroutine %d, request %d: wrong answer", g, i)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestBadShardsRejected: truncated, corrupt and foreign bytes fail
// load_shard with a status, and the instance keeps working.
func TestBadShardsRejected(t *testing.T) {
	c, reqs := pitfallCorpus(t)
	ctx := context.Background()
	in := wasmhost.NewInstance(t, nil, c.all.frags...)
	good := c.all.bytes
	flip := func(i int) []byte {
		b := bytes.Clone(good)
		b[i] ^= 0x5a
		return b
	}
	cases := map[string][]byte{
		"empty":          {},
		"magic only":     good[:8],
		"header only":    good[:24],
		"truncated half": good[:len(good)/2],
		"truncated 1":    good[:len(good)-1],
		"flipped header": flip(9),
		"flipped body":   flip(len(good) / 2),
		"flipped last":   flip(len(good) - 1),
		"not a shard":    []byte(strings.Repeat("<html>", 100)),
	}
	for name, b := range cases {
		if err := in.LoadShard(ctx, b); err == nil {
			t.Errorf("%s: load_shard accepted a bad shard", name)
		}
	}
	// Before any good shard, a match call answers an error, not a trap.
	got, err := in.SearchJSON(ctx, reqs[0].Guest(redirectURL))
	if err != nil || !strings.Contains(string(got), `"no_shard"`) {
		t.Fatalf("match before load: %s, %v", got, err)
	}
	if err := in.LoadShard(ctx, good); err != nil {
		t.Fatalf("a good shard after bad ones: %v", err)
	}
	r := &reqs[0]
	r.Loc, r.Lang = "", ""
	want, _ := c.want(r)
	if got, err := in.SearchJSON(ctx, r.Guest(redirectURL)); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("after bad shards: %s, %v", got, err)
	}
	// A length beyond the buffer is refused before it is read.
	res, err := in.Load.Call(ctx, 8, uint64(in.Mod.Memory().Size())+1)
	if err != nil || res[0] != wasmhost.StatusBadArgs {
		t.Fatalf("load_shard on a foreign buffer: %v, %v", res, err)
	}
}

// TestBadFragmentsRejected: a fragment under another number, damaged,
// cut short or outside memory fails load_fragment with a status, and the
// instance then answers as the server does once the right ones load.
func TestBadFragmentsRejected(t *testing.T) {
	c, reqs := pitfallCorpus(t)
	if len(c.all.frags) < 2 {
		t.Fatalf("the pitfall catalog's shard is not cut in fragments (%d): the test tests nothing", len(c.all.frags))
	}
	ctx := context.Background()
	in := wasmhost.NewInstance(t, c.all.bytes, c.all.frags...)
	good := c.all.frags[1]
	flipped := bytes.Clone(good)
	flipped[len(flipped)/2] ^= 0x5a
	for _, tt := range []struct {
		name string
		k    uint64
		b    []byte
	}{
		{"another's number", 0, good},
		{"past the last", uint64(len(c.all.frags)), good},
		{"flipped", 1, flipped},
		{"cut short", 1, good[:len(good)-1]},
		{"one byte more", 1, append(bytes.Clone(good), 'x')},
		{"empty", 1, nil},
	} {
		p, err := in.Write(ctx, tt.b)
		if err != nil {
			t.Fatal(err)
		}
		res, err := in.LoadFrag.Call(ctx, tt.k, uint64(p), uint64(len(tt.b)))
		in.Free.Call(ctx, uint64(p))
		if err != nil || res[0] != wasmhost.StatusBadShard {
			t.Errorf("%s: load_fragment = %v, %v; want status %d", tt.name, res, err, wasmhost.StatusBadShard)
		}
	}
	res, err := in.LoadFrag.Call(ctx, 1, 8, uint64(in.Mod.Memory().Size())+1)
	if err != nil || res[0] != wasmhost.StatusBadArgs {
		t.Errorf("load_fragment on a foreign buffer: %v, %v", res, err)
	}
	matched := 0
	for i := range reqs {
		r := &reqs[i]
		r.Loc, r.Lang = "", ""
		want, _ := c.want(r)
		got, err := in.SearchJSON(ctx, r.Guest(redirectURL))
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("after bad fragments: %.200s, %v\nwant %.200s", got, err, want)
		}
		if !bytes.HasPrefix(want, []byte(`{"link":[]`)) {
			matched++
		}
	}
	if matched == 0 {
		t.Error("no request matched: the fragments were never needed")
	}
}

// TestRequestErrors: bad options answer the server's error body.
func TestRequestErrors(t *testing.T) {
	c, _ := pitfallCorpus(t)
	ctx := context.Background()
	for req, want := range map[string]string{
		"api_key=demo&site_id=demo&redirect_url=x":                                  `{"error":{"code":"missing_parameter","message":"q is required","param":"q"}}`,
		"q=a&api_key=demo&site_id=demo&redirect_url=x&ctx.dist=far":                 `"param":"ctx.dist"`,
		"q=a&api_key=demo&site_id=demo&redirect_url=x&q_operator=and&ctx.dist=high": `"param":"q_operator"`,
		"q=a&api_key=demo&site_id=demo&redirect_url=x&size=51":                      `"param":"size"`,
		"q=a&api_key=demo&site_id=demo&redirect_url=x&loc=deu":                      `"param":"loc"`,
		"q=a&q=b&api_key=demo&site_id=demo&redirect_url=x":                          `"param":"q"`,
		"q=a&api_key=demo&site_id=demo&redirect_url=x&fields=price,%3Cb%3E":         `\u003cb\u003e`,
	} {
		got, err := c.all.in.SearchJSON(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(got), want) {
			t.Errorf("%s:\n got %s\nwant %s", req, got, want)
		}
	}
}
