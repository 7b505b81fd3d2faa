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
