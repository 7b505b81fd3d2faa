package evaluate

import (
	"math"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadJudgments(t *testing.T) {
	j, err := ReadJudgments(strings.NewReader("query,docid,rating\nlaptop,1,3\nlaptop,2,0\n\"aa battery\",7,2\n"))
	if err != nil {
		t.Fatal(err)
	}
	if j["laptop"]["1"] != 3 || j["aa battery"]["7"] != 2 || len(j.Queries()) != 2 {
		t.Fatalf("%v", j)
	}
	for _, bad := range []string{
		"",
		"q,d,r\nx,1,1\n",
		"query,docid,rating\n",
		"query,docid,rating\nx,1,4\n",
		"query,docid,rating\nx,1,-1\n",
		"query,docid,rating\nx,1,high\n",
		"query,docid,rating\nx,1\n",
		"query,docid,rating\n,1,1\n",
		"query,docid,rating\nx,1,1\nx,1,2\n",
	} {
		if _, err := ReadJudgments(strings.NewReader(bad)); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

func TestNDCG(t *testing.T) {
	judged := map[string]int{"a": 3, "b": 2, "c": 0}
	if n, s := NDCG([]string{"a", "b", "c"}, judged, 10); math.Abs(n-1) > 1e-12 || s != 1 {
		t.Errorf("ideal ranking: %v %v", n, s)
	}
	// Unjudged documents are condensed away but lower the judged share.
	if n, s := NDCG([]string{"x", "a", "y", "b"}, judged, 10); math.Abs(n-1) > 1e-12 || s != 0.5 {
		t.Errorf("condensed: %v %v", n, s)
	}
	if n, _ := NDCG([]string{"c", "b", "a"}, judged, 10); n >= 1 || n <= 0 {
		t.Errorf("reversed ranking scored %v", n)
	}
	if n, s := NDCG(nil, judged, 10); n != 0 || s != 0 {
		t.Errorf("empty ranking: %v %v", n, s)
	}
}

func TestPercentile(t *testing.T) {
	xs := []float64{5, 1, 4, 2, 3}
	if Percentile(xs, 0.5) != 3 || Percentile(xs, 0.99) != 5 || Percentile(xs, 0) != 1 || Percentile(nil, 0.5) != 0 {
		t.Fatal("wrong percentiles")
	}
}

func TestRealJudgmentsParse(t *testing.T) {
	needData(t)
	j, err := ReadJudgmentsFile(filepath.Join(sharedData, "relevance", "judgments-dev.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(j.Queries()); n != 60 {
		t.Fatalf("%d queries, want 60", n)
	}
}

func FuzzReadJudgments(f *testing.F) {
	f.Add("query,docid,rating\nlaptop,1,3\n")
	f.Add("query,docid,rating\n\"a,b\",1,0\n")
	f.Fuzz(func(t *testing.T, s string) {
		j, err := ReadJudgments(strings.NewReader(s))
		if err != nil {
			return
		}
		for _, q := range j.Queries() {
			for _, g := range j[q] {
				if g < 0 || g > 3 {
					t.Fatalf("rating %d accepted", g)
				}
			}
		}
	})
}

func TestPairedBootstrap(t *testing.T) {
	// A constant difference has a zero-width interval at that difference.
	m, lo, hi := PairedBootstrap([]float64{0.5, 0.7, 0.9}, []float64{0.4, 0.6, 0.8}, 1000, 0.95, 1)
	if math.Abs(m-0.1) > 1e-12 || math.Abs(lo-0.1) > 1e-12 || math.Abs(hi-0.1) > 1e-12 {
		t.Errorf("constant difference: %v [%v, %v]", m, lo, hi)
	}
	// Differences of both signs give an interval around the mean that
	// crosses zero, and the same seed gives the same interval.
	a := []float64{1, 0, 1, 0, 1, 0, 1, 0, 0.6, 0.4}
	b := []float64{0, 1, 0, 1, 0, 1, 0, 1, 0.5, 0.5}
	m, lo, hi = PairedBootstrap(a, b, 2000, 0.95, 7)
	if !(lo < 0 && 0 < hi && lo <= m && m <= hi) {
		t.Errorf("mixed difference: %v [%v, %v]", m, lo, hi)
	}
	m2, lo2, hi2 := PairedBootstrap(a, b, 2000, 0.95, 7)
	if m2 != m || lo2 != lo || hi2 != hi {
		t.Errorf("not reproducible: [%v, %v] then [%v, %v]", lo, hi, lo2, hi2)
	}
	// A wider confidence never gives a narrower interval.
	_, lo3, hi3 := PairedBootstrap(a, b, 2000, 0.5, 7)
	if lo3 < lo || hi3 > hi {
		t.Errorf("50%% interval [%v, %v] wider than 95%% [%v, %v]", lo3, hi3, lo, hi)
	}
	if m, lo, hi := PairedBootstrap(nil, nil, 100, 0.95, 1); m != 0 || lo != 0 || hi != 0 {
		t.Errorf("empty: %v [%v, %v]", m, lo, hi)
	}
	defer func() {
		if recover() == nil {
			t.Error("unequal lengths did not panic")
		}
	}()
	PairedBootstrap([]float64{1}, nil, 10, 0.95, 1)
}
