// Package evaluate measures the matcher against the world: graded relevance
// judgments (nDCG@10), a reference search engine on the same products and
// queries, and latency figures. Its benchmarks are what "make bench" prints
// for the search context.
package evaluate

import (
	"encoding/csv"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
)

// Judgments maps a query to the graded relevance of documents (0..3).
type Judgments map[string]map[string]int

// Queries returns the judged queries, sorted.
func (j Judgments) Queries() []string {
	qs := make([]string, 0, len(j))
	for q := range j {
		qs = append(qs, q)
	}
	slices.Sort(qs)
	return qs
}

// ReadJudgments parses "query,docid,rating" CSV with a header row. Ratings
// must be whole numbers from 0 to 3; a document judged twice for one query
// is an error.
func ReadJudgments(r io.Reader) (Judgments, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = 3
	head, err := cr.Read()
	if err != nil {
		return nil, errors.New("judgments: reading header: " + err.Error())
	}
	if head[0] != "query" || head[1] != "docid" || head[2] != "rating" {
		return nil, errors.New("judgments: header must be query,docid,rating")
	}
	j := Judgments{}
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, errors.New("judgments: " + err.Error())
		}
		line, _ := cr.FieldPos(0)
		where := "judgments: line " + strconv.Itoa(line) + ": "
		q, doc := strings.TrimSpace(rec[0]), strings.TrimSpace(rec[1])
		if q == "" || doc == "" {
			return nil, errors.New(where + "empty query or docid")
		}
		g, err := strconv.Atoi(rec[2])
		if err != nil || g < 0 || g > 3 {
			return nil, errors.New(where + "rating must be 0..3, got " + strconv.Quote(rec[2]))
		}
		if j[q] == nil {
			j[q] = map[string]int{}
		}
		if _, dup := j[q][doc]; dup {
			return nil, errors.New(where + "document " + doc + " judged twice for " + strconv.Quote(q))
		}
		j[q][doc] = g
	}
	if len(j) == 0 {
		return nil, errors.New("judgments: no rows")
	}
	return j, nil
}

// ReadJudgmentsFile reads a judgments file.
func ReadJudgmentsFile(path string) (Judgments, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadJudgments(f)
}

// NDCG returns nDCG@k of a ranking over judged documents only: unjudged
// documents are dropped from the ranking before cutting at k (a condensed
// list), so a system is neither rewarded nor punished for documents nobody
// judged. Gains are 2^rating-1. It also returns the share of the first k of
// the original ranking that was judged.
func NDCG(ranked []string, judged map[string]int, k int) (ndcg, judgedShare float64) {
	var dcg float64
	pos, seen := 0, 0
	for i, d := range ranked {
		g, ok := judged[d]
		if i < k && ok {
			seen++
		}
		if !ok || pos >= k {
			continue
		}
		dcg += (math.Exp2(float64(g)) - 1) / math.Log2(float64(pos)+2)
		pos++
	}
	ideal := make([]int, 0, len(judged))
	for _, g := range judged {
		ideal = append(ideal, g)
	}
	slices.Sort(ideal)
	slices.Reverse(ideal)
	var idcg float64
	for i, g := range ideal[:min(k, len(ideal))] {
		idcg += (math.Exp2(float64(g)) - 1) / math.Log2(float64(i)+2)
	}
	if idcg > 0 {
		ndcg = dcg / idcg
	}
	if n := min(k, len(ranked)); n > 0 {
		judgedShare = float64(seen) / float64(n)
	}
	return ndcg, judgedShare
}

// Percentile returns the p-th percentile (0..1) of xs, nearest rank.
func Percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	i := int(math.Ceil(p*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// PairedBootstrap returns the mean of a[i]-b[i] and its percentile
// bootstrap interval at the given confidence (0.95 for 95%), resampling
// queries with replacement reps times. a and b are per-query scores of two
// systems on the same queries; the seed makes the interval reproducible.
// It panics if the lengths differ.
func PairedBootstrap(a, b []float64, reps int, confidence float64, seed uint64) (mean, lo, hi float64) {
	if len(a) != len(b) {
		panic("evaluate: paired scores of different lengths")
	}
	n := len(a)
	if n == 0 || reps <= 0 {
		return 0, 0, 0
	}
	d := make([]float64, n)
	for i := range a {
		d[i] = a[i] - b[i]
		mean += d[i]
	}
	mean /= float64(n)
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	means := make([]float64, reps)
	for k := range means {
		var s float64
		for range n {
			s += d[r.IntN(n)]
		}
		means[k] = s / float64(n)
	}
	tail := (1 - confidence) / 2
	return mean, Percentile(means, tail), Percentile(means, 1-tail)
}
